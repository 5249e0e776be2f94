// CUDA kernels of masked_fill (ops/index.cpp; the rest of that family is cuda/index.cu's):
// value where the mask holds, self elsewhere, self and mask broadcast together. Shape functions
// and checks are ops/shapes/index.h's; the math is cuda/binary_ops.h's (host-tested).
#include <strata/cuda/binary_ops.h>
#include <strata/cuda/copy.h>
#include <strata/cuda/elementwise.cuh>
#include <strata/dispatch/library.h>
#include <strata/ops/shapes/index.h>
#include <strata/ops/structured.h>

namespace strata {
namespace {

using cuda::detail::converted, cuda::detail::launch_elementwise;

// CUDA compute (Note [Structured ops]): out is fresh, with self's dtype.
void masked_fill_scalar_out_cuda(const Tensor& out, const Tensor& self, const Tensor& mask, const Scalar& value) {
  visit_dtype(out.dtype(), [&]<class T>() {
    using C = compute_type_t<T>;
    const C fill = strata::detail::checked_scalar<T>(value, "masked_fill");
    launch_elementwise<T, bool, T>("masked_fill", cuda::detail::MaskedFillOp<C>{fill}, out, mask, self);
  });
}

// Note [masked_fill with a tensor value]
// The value is a 0-dimensional tensor on self's device. Every thread reads it from device
// memory (broadcast, converted to self's dtype on the device) rather than the host reading it
// with a synchronisation, so a value out of self's dtype's range converts like a copy where
// the CPU, which reads it on the host, throws.
void masked_fill_tensor_out_cuda(const Tensor& out, const Tensor& self, const Tensor& mask, const Tensor& value) {
  const Tensor fill = converted(value, out.dtype());
  visit_dtype(out.dtype(), [&]<class T>() {
    launch_elementwise<T, bool, T, T>("masked_fill", cuda::detail::MaskedFillTensorOp{}, out, mask, self, fill);
  });
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  using detail::structured;
  m.impl("masked_fill.Scalar", structured<&shapes::masked_fill_scalar, &masked_fill_scalar_out_cuda>());
  m.impl("masked_fill.Tensor", structured<&shapes::masked_fill_tensor, &masked_fill_tensor_out_cuda>());
}

}  // namespace strata
