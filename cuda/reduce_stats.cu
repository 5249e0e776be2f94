// CUDA kernels of ops/reduce_stats.cpp: var and std over some dims (Welford in double with a
// parallel combine, Note [Parallel Welford] in reduce_math.h), logsumexp (running maximum,
// Note [Stable logsumexp] in ops/reduce_stats.cpp) and the vector norm over all elements (in
// double). Shape functions are ops/shapes/reduce.h's; the kernels are cuda/reduce.cuh's.
#include <strata/cuda/copy.h>
#include <strata/cuda/reduce.cuh>
#include <strata/dispatch/library.h>
#include <strata/ops/shapes/reduce.h>
#include <strata/ops/structured.h>

#include <cmath>

namespace strata {
namespace {

using cuda::detail::kMaxReduceOutputs;
using cuda::detail::NormKind;
using cuda::detail::Welford;
using shapes::ReduceShape;

// Runs the Ops that make_ops<T>() gives for the output's dtype (always floating here) over
// self converted to that dtype.
template <class MakeOps>
void reduce_floating(const char* op, const Tensor& out, const Tensor& self, const ReduceShape& shape,
                     const MakeOps& make_ops) {
  if (out.numel() == 0) return;
  const Tensor input = cuda::detail::converted(self, shape.dtype);
  const cuda::detail::ReducePlan plan = cuda::detail::plan_reduction(op, input, shape, {&out, &out});
  visit_dtype(shape.dtype, [&]<class T>() {
    if constexpr (is_floating_point(scalar_type_of<T>))
      cuda::detail::launch_reduce(op, plan, input, make_ops.template operator()<T>(), out.device().index());
  });
}

// ---------------------------------------------------------------------------------------
// var and std: the sum of squared deviations divided by max(N - correction, 0), as the CPU
// (Note [Variance] in ops/reduce_stats.cpp).

template <class T, bool take_root>
struct VarianceOps {
  using In = T;
  using Acc = Welford;
  void* out;
  double divisor;

  __device__ Acc identity() const { return Acc{0, 0.0, 0.0}; }
  __device__ Acc fold(const Acc& acc, compute_type_t<T> value, int64_t) const {
    return cuda::detail::welford_fold(acc, static_cast<double>(value));
  }
  __device__ Acc combine(const Acc& a, const Acc& b) const { return cuda::detail::welford_combine(a, b); }
  __device__ void write(const int64_t (&offsets)[kMaxReduceOutputs], const Acc& acc) const {
    const double variance = acc.squares / divisor;
    cuda::detail::store<T>(out, offsets[0], take_root ? cuda::detail::sqrt_of(variance) : variance);
  }
};

template <bool take_root>
void variance_out_cuda(const Tensor& out, const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased,
                       bool keepdim) {
  const char* op = take_root ? "std" : "var";
  const ReduceShape shape = shapes::floating_shape(op, self, dim, keepdim);
  const double divisor = static_cast<double>(std::max<int64_t>(shape.count - (unbiased ? 1 : 0), 0));
  reduce_floating(op, out, self, shape, [&]<class T>() { return VarianceOps<T, take_root>{out.data_ptr(), divisor}; });
}

// ---------------------------------------------------------------------------------------
// logsumexp, in the output's compute type; integral and bool inputs compute in float32.

template <class T>
struct LogSumExpOps {
  using In = T;
  using C = compute_type_t<T>;
  using Acc = cuda::detail::LogSumExp<C>;
  void* out;

  __device__ Acc identity() const { return Acc{-static_cast<C>(INFINITY), C(0)}; }
  __device__ Acc fold(const Acc& acc, C value, int64_t) const { return cuda::detail::log_sum_exp_fold(acc, value); }
  __device__ Acc combine(const Acc& a, const Acc& b) const { return cuda::detail::log_sum_exp_combine(a, b); }
  __device__ void write(const int64_t (&offsets)[kMaxReduceOutputs], const Acc& acc) const {
    cuda::detail::store<T>(out, offsets[0], cuda::detail::log_sum_exp_result(acc));
  }
};

void logsumexp_out_cuda(const Tensor& out, const Tensor& self, IntArrayRef dims, bool keepdim) {
  reduce_floating("logsumexp", out, self, shapes::logsumexp_shape(self, dims, keepdim),
                  [&]<class T>() { return LogSumExpOps<T>{out.data_ptr()}; });
}

// ---------------------------------------------------------------------------------------
// norm over all elements: (sum |x|^p)^(1/p), p = 0 counting nonzeros, p = +-inf the largest /
// smallest |x|; accumulated in double.

template <class T>
struct NormOps {
  using In = T;
  using Acc = double;
  void* out;
  NormKind kind;
  double p;

  __device__ Acc identity() const { return cuda::detail::norm_identity(kind); }
  __device__ Acc fold(Acc acc, compute_type_t<T> value, int64_t) const {
    return cuda::detail::norm_fold(kind, p, acc, static_cast<double>(value));
  }
  __device__ Acc combine(const Acc& a, const Acc& b) const { return cuda::detail::norm_combine(kind, a, b); }
  __device__ void write(const int64_t (&offsets)[kMaxReduceOutputs], const Acc& acc) const {
    cuda::detail::store<T>(out, offsets[0], cuda::detail::norm_result(kind, p, acc));
  }
};

NormKind norm_kind(double p) {
  if (p == 0) return NormKind::zero;
  if (p == 2) return NormKind::two;
  if (std::isinf(p)) return p > 0 ? NormKind::infinity : NormKind::negative_infinity;
  return NormKind::general;
}

void norm_out_cuda(const Tensor& out, const Tensor& self, const Scalar& p) {
  const double order = p.to_double();
  const NormKind kind = norm_kind(order);
  reduce_floating("norm", out, self, shapes::floating_shape("norm", self, std::nullopt, false),
                  [&]<class T>() { return NormOps<T>{out.data_ptr(), kind, order}; });
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  using detail::structured;
  m.impl("var.dim", structured<&shapes::var_dim, &variance_out_cuda<false>>());
  m.impl("std.dim", structured<&shapes::std_dim, &variance_out_cuda<true>>());
  m.impl("logsumexp", structured<&shapes::logsumexp, &logsumexp_out_cuda>());
  m.impl("norm.Scalar", structured<&shapes::norm_Scalar, &norm_out_cuda>());
}

}  // namespace strata
