#pragma once
// Internal to cuda/: filling a CUDA tensor with one value (fill_, zero_, ones, full).
#include <strata/tensor/tensor.h>

namespace strata::cuda::detail {

// Sets every element of dst (any strides) to value, converted with overflow checks like the
// CPU's fill (Note [Checked scalar conversion] in ops/elementwise.h); errors name `op`.
// Ordered on the current stream; the host does not wait.
void fill_kernel(const Tensor& dst, const Scalar& value, const char* op);

}  // namespace strata::cuda::detail
