// CUDA kernels of ops/pointwise.cpp: add, sub, mul, div with tensor and scalar operands, their
// in-place and out= variants. Shape functions and checks are ops/shapes/pointwise.h's (Note
// [Arithmetic dtype rules]); the math is cuda/binary_ops.h's (host-tested).
#include <strata/cuda/binary_ops.h>
#include <strata/cuda/copy.h>
#include <strata/cuda/elementwise.cuh>
#include <strata/dispatch/library.h>
#include <strata/ops/shapes/pointwise.h>
#include <strata/ops/structured.h>

namespace strata {
namespace {

using cuda::detail::converted, cuda::detail::launch_elementwise;
using shapes::Arith;

using shapes::arith_name;

// The result dtypes each op can have: sub refuses bool, div's results are floating.
template <Arith kind, class T>
constexpr bool serves() {
  if constexpr (kind == Arith::div) return is_floating_point(scalar_type_of<T>);
  else if constexpr (kind == Arith::sub) return !std::is_same_v<T, bool>;
  else return true;
}

// The functor of `kind` in T's compute type; alpha converts with overflow checks like the CPU's.
template <Arith kind, class T>
auto arith_op(const Scalar& alpha) {
  using C = compute_type_t<T>;
  if constexpr (kind == Arith::add) return cuda::detail::AddOp<C>{strata::detail::checked_scalar<T>(alpha, "add")};
  else if constexpr (kind == Arith::sub) return cuda::detail::SubOp<C>{strata::detail::checked_scalar<T>(alpha, "sub")};
  else if constexpr (kind == Arith::mul) return cuda::detail::MulOp<C>{};
  else return cuda::detail::DivOp<C>{};
}

// CUDA compute (Note [Structured ops]): out has the shape function's sizes and dtype, the
// dtype the operands are converted to; it may be self (in place) or a strided out=.
// Alpha-less schemas compute with alpha = 1.
template <Arith kind>
void binary_out_cuda(const Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha) {
  const ScalarType dtype = out.dtype();
  const Tensor a = converted(self, dtype), b = converted(other, dtype);
  visit_dtype(dtype, [&]<class T>() {
    if constexpr (serves<kind, T>()) launch_elementwise<T, T, T>(arith_name(kind), arith_op<kind, T>(alpha), out, a, b);
  });
}

template <Arith kind>
void scalar_out_cuda(const Tensor& out, const Tensor& self, const Scalar& other, const Scalar& alpha) {
  const ScalarType dtype = out.dtype();
  const Tensor a = converted(self, dtype);
  visit_dtype(dtype, [&]<class T>() {
    if constexpr (serves<kind, T>()) {
      using C = compute_type_t<T>;
      const C value = strata::detail::checked_scalar<T>(other, arith_name(kind));
      using Op = decltype(arith_op<kind, T>(alpha));
      launch_elementwise<T, T>(arith_name(kind), cuda::detail::WithScalar<Op, C>{arith_op<kind, T>(alpha), value}, out,
                               a);
    }
  });
}

template <Arith kind>
void binary_out_cuda_no_alpha(const Tensor& out, const Tensor& self, const Tensor& other) {
  binary_out_cuda<kind>(out, self, other, 1);
}
template <Arith kind>
void scalar_out_cuda_no_alpha(const Tensor& out, const Tensor& self, const Scalar& other) {
  scalar_out_cuda<kind>(out, self, other, 1);
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  using namespace shapes;
  using detail::structured, detail::structured_in_place, detail::structured_out;
  using cuda::detail::copy_kernel;
  m.impl("add.Tensor", structured<&add_tensor, &binary_out_cuda<Arith::add>>());
  m.impl("add.Scalar", structured<&add_scalar, &scalar_out_cuda<Arith::add>>());
  m.impl("sub.Tensor", structured<&sub_tensor, &binary_out_cuda<Arith::sub>>());
  m.impl("sub.Scalar", structured<&sub_scalar, &scalar_out_cuda<Arith::sub>>());
  m.impl("mul.Tensor", structured<&mul_tensor, &binary_out_cuda_no_alpha<Arith::mul>>());
  m.impl("mul.Scalar", structured<&mul_scalar, &scalar_out_cuda_no_alpha<Arith::mul>>());
  m.impl("div.Tensor", structured<&div_tensor, &binary_out_cuda_no_alpha<Arith::div>>());
  m.impl("div.Scalar", structured<&div_scalar, &scalar_out_cuda_no_alpha<Arith::div>>());
  m.impl("add_.Tensor",
         structured_in_place<&add_tensor_in_place, &binary_out_cuda<Arith::add>, "add_", &copy_kernel>());
  m.impl("add_.Scalar",
         structured_in_place<&add_scalar_in_place, &scalar_out_cuda<Arith::add>, "add_", &copy_kernel>());
  m.impl("sub_.Tensor",
         structured_in_place<&sub_tensor_in_place, &binary_out_cuda<Arith::sub>, "sub_", &copy_kernel>());
  m.impl("sub_.Scalar",
         structured_in_place<&sub_scalar_in_place, &scalar_out_cuda<Arith::sub>, "sub_", &copy_kernel>());
  m.impl("mul_.Tensor",
         structured_in_place<&mul_tensor_in_place, &binary_out_cuda_no_alpha<Arith::mul>, "mul_", &copy_kernel>());
  m.impl("mul_.Scalar",
         structured_in_place<&mul_scalar_in_place, &scalar_out_cuda_no_alpha<Arith::mul>, "mul_", &copy_kernel>());
  m.impl("div_.Tensor",
         structured_in_place<&div_tensor_in_place, &binary_out_cuda_no_alpha<Arith::div>, "div_", &copy_kernel>());
  m.impl("div_.Scalar",
         structured_in_place<&div_scalar_in_place, &scalar_out_cuda_no_alpha<Arith::div>, "div_", &copy_kernel>());
  m.impl("add.out", structured_out<&add_tensor, &binary_out_cuda<Arith::add>, "add.out", &copy_kernel>());
  m.impl("sub.out", structured_out<&sub_tensor, &binary_out_cuda<Arith::sub>, "sub.out", &copy_kernel>());
  m.impl("mul.out", structured_out<&mul_tensor, &binary_out_cuda_no_alpha<Arith::mul>, "mul.out", &copy_kernel>());
  m.impl("div.out", structured_out<&div_tensor, &binary_out_cuda_no_alpha<Arith::div>, "div.out", &copy_kernel>());
}

}  // namespace strata
