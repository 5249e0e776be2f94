// The registry of device hooks: one slot per device type.
#include <strata/tensor/device_hooks.h>

#include <array>
#include <atomic>
#include <cctype>
#include <string>

#include <strata/tensor/errors.h>

namespace strata {

// Note [Device hooks]
// tensor/ knows devices only by their type and index; everything that needs a device's runtime
// (its current device, streams, events, allocators, generators, byte copies) goes through the
// DeviceHooks its backend registers when the backend library loads, and unregisters when it
// unloads (c10's DeviceGuardImplInterface plays this part in PyTorch). A lookup is one atomic
// load from an array indexed by the device type. CPU and Meta have no hooks: tensor/ serves
// them directly, so the CPU paths (allocation above all) never look anything up. Without hooks,
// queries answer "nothing there" (device_count() is 0) and everything else throws Error naming
// the missing backend. Unregistering does not wait for callers still inside a hook: a backend
// unloads only when none of its tensors, streams, events or guards is alive.
namespace {
std::array<std::atomic<const DeviceHooks*>, kNumDeviceTypes> registry{};

std::atomic<const DeviceHooks*>& slot(DeviceType type) { return registry[static_cast<size_t>(type)]; }

std::string upper_name(DeviceType type) {
  std::string name(device_type_name(type));
  for (char& letter : name) letter = static_cast<char>(std::toupper(static_cast<unsigned char>(letter)));
  return name;
}
}  // namespace

int DeviceHooks::exchange_device(int index) const {
  const int previous = current_device();
  if (previous != index) set_device(index);
  return previous;
}

namespace detail {

void register_device_hooks(DeviceType type, const DeviceHooks* hooks) {
  STRATA_CHECK_VALUE(type != kCPU && type != kMeta, "[register_device_hooks] ", type,
                     " devices are served by tensor/ itself and take no hooks");
  STRATA_CHECK_VALUE(hooks != nullptr, "[register_device_hooks] expected hooks for ", type, ", got null");
  STRATA_CHECK_VALUE(hooks->type() == type, "[register_device_hooks] hooks for ", hooks->type(),
                     " cannot be registered for ", type);
  const DeviceHooks* expected = nullptr;
  STRATA_CHECK(slot(type).compare_exchange_strong(expected, hooks, std::memory_order_acq_rel),
               "[register_device_hooks] a ", upper_name(type), " backend is already loaded");
}

void unregister_device_hooks(DeviceType type, const DeviceHooks* hooks) noexcept {
  const DeviceHooks* expected = hooks;
  slot(type).compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
}

const DeviceHooks* exchange_device_hooks(DeviceType type, const DeviceHooks* hooks) {
  STRATA_CHECK_VALUE(type != kCPU && type != kMeta, "[exchange_device_hooks] ", type,
                     " devices are served by tensor/ itself and take no hooks");
  STRATA_CHECK_VALUE(hooks == nullptr || hooks->type() == type, "[exchange_device_hooks] hooks for ", hooks->type(),
                     " cannot be registered for ", type);
  return slot(type).exchange(hooks, std::memory_order_acq_rel);
}

const DeviceHooks* device_hooks(DeviceType type) noexcept { return slot(type).load(std::memory_order_acquire); }

Device current_device(DeviceType type) {
  if (type == kCPU || type == kMeta) return Device(type);
  const DeviceHooks* hooks = device_hooks(type);
  return Device(type, hooks != nullptr && hooks->device_count() > 0 ? hooks->current_device() : 0);
}

const DeviceHooks& require_device_hooks(DeviceType type, std::string_view op) {
  const DeviceHooks* hooks = device_hooks(type);
  if (!hooks) [[unlikely]] {
    if (type == kCPU || type == kMeta)
      throw_error<ValueError>("[", op, "] ", type, " devices have no backend hooks");
    throw_error<Error>("[", device_type_name(type), "] no ", upper_name(type), " backend is loaded (", op,
                       " needs one)");
  }
  return *hooks;
}

void check_device_in_range(const DeviceHooks& hooks, Device device, std::string_view op) {
  const int count = hooks.device_count();
  if (count == 0) [[unlikely]] {
    const std::string reason = hooks.unavailable_reason();
    if (!reason.empty())
      throw_error<Error>("[", device_type_name(device.type()), "] ", upper_name(device.type()),
                         " is not available: ", reason, " (", op, " needs a device)");
    throw_error<Error>("[", device_type_name(device.type()), "] no ", upper_name(device.type()),
                       " device is present (", op, " needs one)");
  }
  if (device.index() >= count) [[unlikely]]
    throw_error<IndexError>("[", op, "] ", device, " is out of range: there ", count == 1 ? "is " : "are ", count,
                            " ", upper_name(device.type()), count == 1 ? " device" : " devices");
}

}  // namespace detail
}  // namespace strata
