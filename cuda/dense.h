#pragma once
// Internal to cuda/: dense (contiguous) working copies for kernels that index memory
// directly, the CUDA counterparts of ops/'s as_contiguous and cast_to. No CUDA header.
#include <strata/cuda/copy.h>
#include <strata/tensor/tensor.h>
#include <strata/tensor/tensor_impl.h>

namespace strata::cuda::detail {

// t itself when it is contiguous and of `dtype`, else a new contiguous tensor of its values
// converted to `dtype` (same device; ordered on the current stream).
inline Tensor dense(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype && t.is_contiguous()) return t;
  Tensor copy = strata::detail::make_empty(t.sizes(), dtype, t.device());
  copy_kernel(copy, t);
  return copy;
}
inline Tensor dense(const Tensor& t) { return dense(t, t.dtype()); }

// Where a kernel writing dense `dtype` memory puts the values of `out`: out itself when it is
// contiguous of that dtype, else a temporary that write_back copies into out.
inline Tensor dense_destination(const Tensor& out, ScalarType dtype) {
  return out.dtype() == dtype && out.is_contiguous() ? out : strata::detail::make_empty(out.sizes(), dtype, out.device());
}
inline void write_back(const Tensor& out, const Tensor& result) {
  if (!result.is_same(out)) copy_kernel(out, result);
}

// True when a and b are views of the same storage (a kernel writing one may change the other).
inline bool shares_storage(const Tensor& a, const Tensor& b) { return a.impl()->storage() == b.impl()->storage(); }

}  // namespace strata::cuda::detail
