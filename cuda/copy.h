#pragma once
// Internal to cuda/: same-device copies with dtype conversion, which most kernels' callers use.
#include <strata/tensor/tensor.h>

namespace strata::cuda::detail {

// Copies src, broadcast to dst's sizes and converted to dst's dtype, into dst; both on one
// CUDA device. Ordered on the current stream; the host does not wait.
void copy_kernel(const Tensor& dst, const Tensor& src);
// t itself when it already has `dtype`, else a new contiguous tensor with its values converted.
Tensor converted(const Tensor& t, ScalarType dtype);

}  // namespace strata::cuda::detail
