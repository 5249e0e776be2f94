#pragma once
#include <optional>

#include <strata/tensor/device.h>
#include <strata/tensor/layout.h>
#include <strata/tensor/scalar_type.h>

namespace strata {

// What a new tensor should be: dtype, device, layout, pinned memory, memory format,
// requires_grad. Unset fields take defaults (dtype from the values or get_default_dtype(),
// device kCPU, kStrided, not pinned, contiguous, no grad). As in LibTorch, a layout other
// than kStrided, pinned memory off the CPU, or a channels-last format of the wrong rank is
// refused by the op that makes the tensor, naming itself.
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
  TensorOptions layout(Layout layout) const {
    TensorOptions copy = *this;
    copy.layout_ = layout;
    return copy;
  }
  // Page-locked host memory (see Tensor::pin_memory): CPU tensors only, needs the CUDA backend.
  TensorOptions pinned_memory(bool pinned_memory) const {
    TensorOptions copy = *this;
    copy.pinned_memory_ = pinned_memory;
    return copy;
  }
  // Read by empty and the *_like functions; the other factories make contiguous tensors.
  TensorOptions memory_format(MemoryFormat memory_format) const {
    TensorOptions copy = *this;
    copy.memory_format_ = memory_format;
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
  Layout layout() const { return layout_.value_or(kStrided); }
  bool pinned_memory() const { return pinned_memory_.value_or(false); }
  bool has_dtype() const { return dtype_.has_value(); }
  bool has_device() const { return device_.has_value(); }
  bool has_layout() const { return layout_.has_value(); }
  bool has_pinned_memory() const { return pinned_memory_.has_value(); }
  bool has_memory_format() const { return memory_format_.has_value(); }
  std::optional<ScalarType> dtype_opt() const { return dtype_; }
  std::optional<Layout> layout_opt() const { return layout_; }
  std::optional<bool> pinned_memory_opt() const { return pinned_memory_; }
  std::optional<MemoryFormat> memory_format_opt() const { return memory_format_; }
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
    if (layout_) result.layout_ = layout_;
    if (pinned_memory_) result.pinned_memory_ = pinned_memory_;
    if (memory_format_) result.memory_format_ = memory_format_;
    result.requires_grad_ = requires_grad_ || defaults.requires_grad_;
    return result;
  }

 private:
  // CPU and Meta have one device each: their index is always 0.
  static bool has_current(DeviceType type) { return type != kCPU && type != kMeta; }

  std::optional<ScalarType> dtype_;
  std::optional<Device> device_;
  bool current_index_ = false;  // device_ was a bare DeviceType: Note [Bare device types]
  bool requires_grad_ = false;
  std::optional<Layout> layout_;
  std::optional<bool> pinned_memory_;
  std::optional<MemoryFormat> memory_format_;
};

inline TensorOptions dtype(ScalarType type) { return TensorOptions().dtype(type); }
inline TensorOptions device(Device device) { return TensorOptions().device(device); }
inline TensorOptions device(DeviceType device) { return TensorOptions().device(device); }
inline TensorOptions layout(Layout layout) { return TensorOptions().layout(layout); }
inline TensorOptions memory_format(MemoryFormat memory_format) { return TensorOptions().memory_format(memory_format); }
inline TensorOptions requires_grad(bool requires_grad = true) { return TensorOptions().requires_grad(requires_grad); }

}  // namespace strata
