// CUDA kernels of ops/binary.cpp: pow (tensor and scalar exponents), maximum and minimum, and
// their out= variants. Shape functions and checks are ops/shapes/binary.h's (Note [pow
// dtypes]); the math is cuda/binary_ops.h's (host-tested).
#include <strata/cuda/binary_ops.h>
#include <strata/cuda/copy.h>
#include <strata/cuda/elementwise.cuh>
#include <strata/dispatch/library.h>
#include <strata/ops/shapes/binary.h>
#include <strata/ops/structured.h>

namespace strata {
namespace {

using cuda::detail::converted, cuda::detail::launch_elementwise;

// CUDA compute (Note [Structured ops]): out has the shape function's sizes and dtype (never
// bool for pow); it may be strided, or an input of the same geometry (out=).
void pow_tensor_out_cuda(const Tensor& out, const Tensor& self, const Tensor& exponent) {
  const Tensor base = converted(self, out.dtype()), power = converted(exponent, out.dtype());
  visit_dtype(out.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) launch_elementwise<T, T, T>("pow", cuda::detail::PowOp{}, out, base, power);
  });
}

void pow_scalar_out_cuda(const Tensor& out, const Tensor& self, const Scalar& exponent) {
  const Tensor base = converted(self, out.dtype());
  visit_dtype(out.dtype(), [&]<class T>() {
    using C = compute_type_t<T>;
    if constexpr (std::is_floating_point_v<C>) {
      const double e = exponent.to_double();
      launch_elementwise<T, T>("pow", cuda::detail::PowScalarOp<C>{cuda::detail::pow_form(e), static_cast<C>(e)}, out,
                               base);
    } else if constexpr (!std::is_same_v<T, bool>) {
      const C e = strata::detail::checked_scalar<T>(exponent, "pow");
      launch_elementwise<T, T>("pow", cuda::detail::WithScalar<cuda::detail::PowOp, C>{{}, e}, out, base);
    }
  });
}

// maximum and minimum: every dtype; NaN in either operand gives NaN.
template <bool is_max>
void extremum_out_cuda(const Tensor& out, const Tensor& self, const Tensor& other) {
  const Tensor a = converted(self, out.dtype()), b = converted(other, out.dtype());
  visit_dtype(out.dtype(), [&]<class T>() {
    launch_elementwise<T, T, T>(is_max ? "maximum" : "minimum", cuda::detail::ExtremumOp<is_max>{}, out, a, b);
  });
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  using detail::structured, detail::structured_out;
  using cuda::detail::copy_kernel;
  m.impl("pow.Tensor_Tensor", structured<&shapes::pow_tensor_tensor, &pow_tensor_out_cuda>());
  m.impl("pow.Tensor_Scalar", structured<&shapes::pow_tensor_scalar, &pow_scalar_out_cuda>());
  m.impl("maximum", structured<&shapes::maximum, &extremum_out_cuda<true>>());
  m.impl("minimum", structured<&shapes::minimum, &extremum_out_cuda<false>>());
  m.impl("pow.Tensor_Tensor_out",
         structured_out<&shapes::pow_tensor_tensor, &pow_tensor_out_cuda, "pow.Tensor_Tensor_out", &copy_kernel>());
  m.impl("pow.Tensor_Scalar_out",
         structured_out<&shapes::pow_tensor_scalar, &pow_scalar_out_cuda, "pow.Tensor_Scalar_out", &copy_kernel>());
  m.impl("maximum.out", structured_out<&shapes::maximum, &extremum_out_cuda<true>, "maximum.out", &copy_kernel>());
  m.impl("minimum.out", structured_out<&shapes::minimum, &extremum_out_cuda<false>, "minimum.out", &copy_kernel>());
}

}  // namespace strata
