// Streams and StreamGuard on the device hooks. See Note [Streams as values] in stream.h.
#include <strata/tensor/stream.h>

#include <strata/tensor/device_hooks.h>
#include <strata/tensor/errors.h>

namespace strata {

namespace {
bool has_runtime(Device device) { return !device.is_cpu() && !device.is_meta(); }

const DeviceHooks& hooks_for(Device device, std::string_view op) {
  const DeviceHooks& hooks = detail::require_device_hooks(device.type(), op);
  detail::check_device_in_range(hooks, device, op);
  return hooks;
}
}  // namespace

bool Stream::query() const { return !has_runtime(device_) || hooks_for(device_, "Stream.query").query_stream(*this); }

void Stream::synchronize() const {
  if (has_runtime(device_)) hooks_for(device_, "Stream.synchronize").synchronize_stream(*this);
}

Stream Stream::create(Device device) {
  if (!has_runtime(device)) return Stream(device, 0);
  return hooks_for(device, "Stream.create").create_stream(device.index());
}

Stream Stream::default_stream(Device device) {
  if (!has_runtime(device)) return Stream(device, 0);
  return hooks_for(device, "Stream.default_stream").default_stream(device.index());
}

Stream Stream::current_stream(Device device) {
  if (!has_runtime(device)) return Stream(device, 0);
  return hooks_for(device, "Stream.current_stream").current_stream(device.index());
}

std::ostream& operator<<(std::ostream& out, const Stream& stream) {
  return out << "stream " << stream.id() << " on " << stream.device();
}

StreamGuard::StreamGuard(const Stream& stream) : original_stream_(stream), current_stream_(stream) {
  const Device device = stream.device();
  if (!has_runtime(device)) return;
  const DeviceHooks& hooks = hooks_for(device, "StreamGuard");
  original_device_ = hooks.exchange_device(device.index());
  try {
    original_stream_ = hooks.exchange_stream(stream);
  } catch (...) {
    hooks.set_device(original_device_);
    throw;
  }
  hooks_ = &hooks;
}

StreamGuard::~StreamGuard() {
  if (!hooks_) return;
  try {
    hooks_->exchange_stream(original_stream_);
    hooks_->set_device(original_device_);
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
}

}  // namespace strata
