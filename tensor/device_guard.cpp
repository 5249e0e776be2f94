// DeviceGuard on the device hooks.
#include <strata/tensor/device_guard.h>

#include <strata/tensor/device_hooks.h>
#include <strata/tensor/errors.h>

namespace strata {

DeviceGuard::DeviceGuard(Device device) : original_(device), current_(device) {
  if (device.is_cpu() || device.is_meta()) return;
  const DeviceHooks& hooks = detail::require_device_hooks(device.type(), "DeviceGuard");
  detail::check_device_in_range(hooks, device, "DeviceGuard");
  original_ = Device(device.type(), hooks.exchange_device(device.index()));
  hooks_ = &hooks;
}

DeviceGuard::~DeviceGuard() {
  if (!hooks_) return;  // restored even when unchanged: code in the scope may have set another device
  try {
    hooks_->set_device(original_.index());
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw; the device stays set
  }
}

void DeviceGuard::set_device(Device device) {
  STRATA_CHECK_VALUE(device.type() == original_.type(), "[DeviceGuard] a guard for ", original_.type(),
                     " cannot switch to ", device);
  if (!hooks_) return;
  detail::check_device_in_range(*hooks_, device, "DeviceGuard");
  hooks_->set_device(device.index());
  current_ = device;
}

}  // namespace strata
