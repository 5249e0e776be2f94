// CUDA kernels of ops/compare.cpp: eq ne lt le gt ge (Tensor and Scalar overloads, kBool
// results), logical_not and where. Shape functions and checks are ops/shapes/compare.h's (Note
// [Comparison dtypes]); the math is cuda/binary_ops.h's (host-tested). equal and allclose are
// plain CPU functions, not ops.
#include <strata/cuda/binary_ops.h>
#include <strata/cuda/copy.h>
#include <strata/cuda/elementwise.cuh>
#include <strata/dispatch/library.h>
#include <strata/ops/shapes/compare.h>
#include <strata/ops/structured.h>

namespace strata {
namespace {

using cuda::detail::Comparison, cuda::detail::CompareOp;
using cuda::detail::converted, cuda::detail::launch_elementwise;

using shapes::comparison_name;

// Both operands in their result_type, compared into out (kBool). One kernel per dtype serves
// the six comparisons (see CompareOp).
void compare_tensors(Comparison kind, const Tensor& out, const Tensor& self, const Tensor& other) {
  const ScalarType compute = result_type(self, other);
  const Tensor a = converted(self, compute), b = converted(other, compute);
  visit_dtype(compute, [&]<class T>() {
    launch_elementwise<bool, T, T>(comparison_name(kind), CompareOp{kind}, out, a, b);
  });
}

// self in result_type(self, other), compared with the value converted (checked) on the host.
void compare_with_scalar(Comparison kind, const Tensor& out, const Tensor& self, const Scalar& other) {
  const ScalarType compute = result_type(self, other);
  const Tensor a = converted(self, compute);
  visit_dtype(compute, [&]<class T>() {
    using C = compute_type_t<T>;
    const C value = strata::detail::checked_scalar<T>(other, comparison_name(kind));
    launch_elementwise<bool, T>(comparison_name(kind), cuda::detail::WithScalar<CompareOp, C>{{kind}, value}, out, a);
  });
}

// CUDA compute (Note [Structured ops]): out is a kBool tensor of the shape function's sizes.
template <Comparison kind>
void compare_out_cuda(const Tensor& out, const Tensor& self, const Tensor& other) {
  compare_tensors(kind, out, self, other);
}
template <Comparison kind>
void compare_scalar_out_cuda(const Tensor& out, const Tensor& self, const Scalar& other) {
  compare_with_scalar(kind, out, self, other);
}

void logical_not_out_cuda(const Tensor& out, const Tensor& self) {
  visit_dtype(self.dtype(), [&]<class T>() {
    launch_elementwise<bool, T>("logical_not", cuda::detail::LogicalNotOp{}, out, self);
  });
}

// where(condition, self, other): self and other in out's dtype (their result_type).
void where_out_cuda(const Tensor& out, const Tensor& condition, const Tensor& self, const Tensor& other) {
  const Tensor a = converted(self, out.dtype()), b = converted(other, out.dtype());
  visit_dtype(out.dtype(), [&]<class T>() {
    launch_elementwise<T, bool, T, T>("where", cuda::detail::WhereOp{}, out, condition, a, b);
  });
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  using detail::structured;
  m.impl("eq.Tensor", structured<&shapes::eq_tensor, &compare_out_cuda<Comparison::eq>>());
  m.impl("ne.Tensor", structured<&shapes::ne_tensor, &compare_out_cuda<Comparison::ne>>());
  m.impl("lt.Tensor", structured<&shapes::lt_tensor, &compare_out_cuda<Comparison::lt>>());
  m.impl("le.Tensor", structured<&shapes::le_tensor, &compare_out_cuda<Comparison::le>>());
  m.impl("gt.Tensor", structured<&shapes::gt_tensor, &compare_out_cuda<Comparison::gt>>());
  m.impl("ge.Tensor", structured<&shapes::ge_tensor, &compare_out_cuda<Comparison::ge>>());
  m.impl("eq.Scalar", structured<&shapes::eq_scalar, &compare_scalar_out_cuda<Comparison::eq>>());
  m.impl("ne.Scalar", structured<&shapes::ne_scalar, &compare_scalar_out_cuda<Comparison::ne>>());
  m.impl("lt.Scalar", structured<&shapes::lt_scalar, &compare_scalar_out_cuda<Comparison::lt>>());
  m.impl("le.Scalar", structured<&shapes::le_scalar, &compare_scalar_out_cuda<Comparison::le>>());
  m.impl("gt.Scalar", structured<&shapes::gt_scalar, &compare_scalar_out_cuda<Comparison::gt>>());
  m.impl("ge.Scalar", structured<&shapes::ge_scalar, &compare_scalar_out_cuda<Comparison::ge>>());
  m.impl("logical_not", structured<&shapes::logical_not, &logical_not_out_cuda>());
  m.impl("where.self", structured<&shapes::where_self, &where_out_cuda>());
}

}  // namespace strata
