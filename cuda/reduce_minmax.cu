// CUDA kernels of ops/reduce_minmax.cpp: max and min over all elements or along one dim
// (values and indices), argmax and argmin. Shape functions are ops/shapes/reduce.h's; the
// kernels are cuda/reduce.cuh's. NaN beats every number and the lowest position wins ties
// (Note [Extremum reductions] in ops/shapes/reduce.h), so results match the CPU's exactly.
#include <strata/cuda/reduce.cuh>
#include <strata/dispatch/library.h>
#include <strata/ops/shapes/reduce.h>
#include <strata/ops/structured.h>

namespace strata {
namespace {

using cuda::detail::combine_extremum;
using cuda::detail::Extremum;
using cuda::detail::kMaxReduceOutputs;
using shapes::extremum_shape;
using shapes::ReduceShape;

// Writes the value (output slot 0) and/or the position (slot 1); a null pointer skips it.
template <class T, bool is_max>
struct ExtremumOps {
  using In = T;
  using C = compute_type_t<T>;
  using Acc = Extremum<C>;
  void* values;
  int64_t* indices;

  __device__ Acc identity() const { return Acc{C(), -1}; }
  __device__ Acc fold(const Acc& acc, C value, int64_t r) const { return combine(acc, Acc{value, r}); }
  __device__ Acc combine(const Acc& a, const Acc& b) const { return combine_extremum<is_max>(a, b); }
  __device__ void write(const int64_t (&offsets)[kMaxReduceOutputs], const Acc& acc) const {
    if (values) cuda::detail::store<T>(values, offsets[0], acc.value);
    if (indices) indices[offsets[1]] = acc.index;
  }
};

// Fills values and/or indices (either may be undefined) for the reduction `shape` of self.
template <bool is_max>
void compute_extremum(const char* op, const Tensor& self, const ReduceShape& shape, const Tensor& values,
                      const Tensor& indices) {
  const Tensor& first = values.defined() ? values : indices;
  const Tensor& second = indices.defined() ? indices : values;
  if (first.numel() == 0) return;
  const cuda::detail::ReducePlan plan = cuda::detail::plan_reduction(op, self, shape, {&first, &second});
  visit_dtype(self.dtype(), [&]<class T>() {
    const ExtremumOps<T, is_max> ops{values.defined() ? values.data_ptr() : nullptr,
                                     indices.defined() ? indices.data_ptr<int64_t>() : nullptr};
    cuda::detail::launch_reduce(op, plan, self, ops, first.device().index());
  });
}

constexpr const char* extremum_name(bool is_max) { return is_max ? "max" : "min"; }
constexpr const char* arg_name(bool is_max) { return is_max ? "argmax" : "argmin"; }

template <bool is_max>
void extremum_all_out_cuda(const Tensor& values, const Tensor& self) {
  const ReduceShape shape = extremum_shape(extremum_name(is_max), self, std::nullopt, false, self.dtype());
  compute_extremum<is_max>(extremum_name(is_max), self, shape, values, Tensor());
}

template <bool is_max>
void extremum_dim_out_cuda(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim,
                           bool keepdim) {
  const ReduceShape shape = extremum_shape(extremum_name(is_max), self, dim, keepdim, self.dtype());
  compute_extremum<is_max>(extremum_name(is_max), self, shape, values, indices);
}

// With no dim, the index is into the flattened (row-major) input: the plan's positions are
// row-major over the reduced dims (Note [Reduction plans]).
template <bool is_max>
void arg_extremum_out_cuda(const Tensor& indices, const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const ReduceShape shape = extremum_shape(arg_name(is_max), self, dim, keepdim, kInt64);
  compute_extremum<is_max>(arg_name(is_max), self, shape, Tensor(), indices);
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  using detail::structured;
  m.impl("max", structured<&shapes::max, &extremum_all_out_cuda<true>>());
  m.impl("max.dim", structured<&shapes::max_dim, &extremum_dim_out_cuda<true>>());
  m.impl("min", structured<&shapes::min, &extremum_all_out_cuda<false>>());
  m.impl("min.dim", structured<&shapes::min_dim, &extremum_dim_out_cuda<false>>());
  m.impl("argmax", structured<&shapes::argmax, &arg_extremum_out_cuda<true>>());
  m.impl("argmin", structured<&shapes::argmin, &arg_extremum_out_cuda<false>>());
}

}  // namespace strata
