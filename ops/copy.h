#pragma once
// The one path for copies between devices, which every backend's copy_ kernel reaches.
// See Note [Copies between devices] in ops/shape.cpp.
#include <strata/tensor/tensor.h>

namespace strata::detail {

// Copies src, broadcast to dst's shape and converted to dst's dtype, into dst when the two live
// on different devices (CPU and a device, or two devices of one type); neither may be Meta.
// Layout and dtype are converted once, on one side, by that side's own copy_; the device
// hooks' copy_bytes moves dense bytes of one dtype between the two.
void copy_across_devices(const Tensor& dst, const Tensor& src, bool non_blocking);

}  // namespace strata::detail
