// Events on the device hooks.
#include <strata/tensor/event.h>

#include <utility>

#include <strata/tensor/device_hooks.h>
#include <strata/tensor/errors.h>

namespace strata {

namespace {
const DeviceHooks& event_hooks(DeviceType type, std::string_view op) {
  STRATA_CHECK_VALUE(type != kCPU && type != kMeta, "[", op, "] ", type, " devices have no events");
  return detail::require_device_hooks(type, op);
}
}  // namespace

Event::~Event() {
  if (!handle_) return;
  // Hooks gone means the backend unloaded first: its events went with it.
  if (const DeviceHooks* hooks = detail::device_hooks(type_)) hooks->destroy_event(handle_, device_index_);
}

Event::Event(Event&& other) noexcept
    : type_(other.type_), enable_timing_(other.enable_timing_), device_index_(other.device_index_),
      handle_(std::exchange(other.handle_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Event discarded(std::move(*this));
    type_ = other.type_;
    enable_timing_ = other.enable_timing_;
    device_index_ = other.device_index_;
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

Device Event::device() const {
  STRATA_CHECK(handle_ != nullptr, "[Event.device] the event has not been recorded yet, so it has no device");
  return Device(type_, device_index_);
}

void Event::record(const Stream& stream) {
  STRATA_CHECK_VALUE(stream.device().type() == type_, "[Event.record] a ", type_, " event cannot record ", stream);
  const DeviceHooks& hooks = event_hooks(type_, "Event.record");
  detail::check_device_in_range(hooks, stream.device(), "Event.record");
  STRATA_CHECK_VALUE(!handle_ || stream.device().index() == device_index_, "[Event.record] the event belongs to ",
                     Device(type_, device_index_), " and cannot record ", stream);
  hooks.record_event(&handle_, stream, enable_timing_);
  device_index_ = stream.device().index();
}

void Event::record() {
  const DeviceHooks& hooks = event_hooks(type_, "Event.record");
  record(hooks.current_stream(handle_ ? device_index_ : hooks.current_device()));
}

void Event::block(const Stream& stream) const {
  if (!handle_) return;  // nothing to wait for
  STRATA_CHECK_VALUE(stream.device().type() == type_, "[Event.block] a ", type_, " event cannot block ", stream);
  const DeviceHooks& hooks = event_hooks(type_, "Event.block");
  detail::check_device_in_range(hooks, stream.device(), "Event.block");
  hooks.block_event(handle_, stream);
}

bool Event::query() const { return !handle_ || event_hooks(type_, "Event.query").query_event(handle_); }

void Event::synchronize() const {
  if (handle_) event_hooks(type_, "Event.synchronize").synchronize_event(handle_);
}

double Event::elapsed_time(const Event& end) const {
  STRATA_CHECK_VALUE(end.type_ == type_, "[Event.elapsed_time] cannot time a ", type_, " event against a ",
                     end.type_, " event");
  STRATA_CHECK(enable_timing_ && end.enable_timing_,
               "[Event.elapsed_time] both events need enable_timing=true to be timed");
  STRATA_CHECK(handle_ && end.handle_, "[Event.elapsed_time] both events must be recorded first");
  return event_hooks(type_, "Event.elapsed_time").elapsed_time(handle_, end.handle_);
}

}  // namespace strata
