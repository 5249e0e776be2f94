#pragma once
// DeviceGuard: the current device for a scope.
#include <strata/tensor/device.h>

namespace strata {

class DeviceHooks;

// Makes `device` the calling thread's current device of its type and restores the previous one
// on scope exit (like c10::DeviceGuard). A CPU or Meta device has no current device: the guard
// does nothing. Throws Error when the device's backend is not loaded or the index is out of
// range.
class DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

  // Switches to another device of the same type; the original is still what gets restored.
  void set_device(Device device);
  Device original_device() const { return original_; }
  Device current_device() const { return current_; }

 private:
  const DeviceHooks* hooks_ = nullptr;  // null for CPU and Meta
  Device original_;
  Device current_;
};

}  // namespace strata
