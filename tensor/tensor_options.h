#pragma once
#include <optional>

#include <strata/tensor/device.h>
#include <strata/tensor/scalar_type.h>

namespace strata {

// What a new tensor should be: dtype, device, requires_grad. Unset fields take defaults
// (dtype from the values or get_default_dtype(), device kCPU, no grad).
//
// Note [Bare device types]
// A Device always has an index (Device(kCUDA) is cuda:0, by the API contract), but a bare
// DeviceType given as options (TensorOptions(kCUDA), .device(kCUDA), x.to(kCUDA)) means the
// current device of that type, as a Device without an index does in LibTorch. It is looked up
// when the options are used, not when they are made, so options made once and used under a
// DeviceGuard follow the guard.
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType dtype) : dtype_(dtype) {}  // NOLINT: implicit by contract
  TensorOptions(Device device) : device_(device) {}   // NOLINT
  TensorOptions(DeviceType device) : device_(device), current_index_(has_current(device)) {}  // NOLINT

  TensorOptions dtype(ScalarType dtype) const {
    TensorOptions copy = *this;
    copy.dtype_ = dtype;
    return copy;
  }
  TensorOptions device(Device device) const {
    TensorOptions copy = *this;
    copy.device_ = device;
    copy.current_index_ = false;
    return copy;
  }
  TensorOptions device(DeviceType device) const {  // the current device of that type
    TensorOptions copy = *this;
    copy.device_ = device;
    copy.current_index_ = has_current(device);
    return copy;
  }
  // No default argument: `options.requires_grad()` is the getter below (LibTorch's spelling).
  TensorOptions requires_grad(bool requires_grad) const {
    TensorOptions copy = *this;
    copy.requires_grad_ = requires_grad;
    return copy;
  }

  ScalarType dtype() const { return dtype_.value_or(get_default_dtype()); }
  Device device() const {
    if (!device_) return Device(kCPU);
    return current_index_ ? detail::current_device(device_->type()) : *device_;
  }
  bool requires_grad() const { return requires_grad_; }
  bool has_dtype() const { return dtype_.has_value(); }
  bool has_device() const { return device_.has_value(); }
  std::optional<ScalarType> dtype_opt() const { return dtype_; }
  std::optional<Device> device_opt() const {
    if (device_ && current_index_) return detail::current_device(device_->type());
    return device_;
  }

  // Fields set here override; unset fields come from `defaults`.
  TensorOptions merged_with(const TensorOptions& defaults) const {
    TensorOptions result = defaults;
    if (dtype_) result.dtype_ = dtype_;
    if (device_) {
      result.device_ = device_;
      result.current_index_ = current_index_;
    }
    result.requires_grad_ = requires_grad_ || defaults.requires_grad_;
    return result;
  }

 private:
  std::optional<ScalarType> dtype_;
  // CPU and Meta have one device each: their index is always 0.
  static bool has_current(DeviceType type) { return type != kCPU && type != kMeta; }

  std::optional<Device> device_;
  bool current_index_ = false;  // device_ was a bare DeviceType: Note [Bare device types]
  bool requires_grad_ = false;
};

inline TensorOptions dtype(ScalarType type) { return TensorOptions().dtype(type); }
inline TensorOptions device(Device device) { return TensorOptions().device(device); }
inline TensorOptions device(DeviceType device) { return TensorOptions().device(device); }
inline TensorOptions requires_grad(bool requires_grad = true) { return TensorOptions().requires_grad(requires_grad); }

}  // namespace strata
