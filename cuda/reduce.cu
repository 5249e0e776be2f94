// CUDA kernels of ops/reduce.cpp: sum, mean and prod over all dims or some dims, and the
// out= forms of sum and mean. Shape functions are ops/shapes/reduce.h's; the kernels are
// cuda/reduce.cuh's (one group of threads per output element, no atomics). Accumulation
// types are the CPU's: uint64 for integers and bool (wrapping), double for double, float
// otherwise (see sum_acc_t).
#include <strata/cuda/copy.h>
#include <strata/cuda/reduce.cuh>
#include <strata/dispatch/library.h>
#include <strata/ops/shapes/reduce.h>
#include <strata/ops/structured.h>

namespace strata {
namespace {

using cuda::detail::ArithmeticOps;
using cuda::detail::sum_acc_t;
using shapes::reduce_shape;
using shapes::ReduceShape;

// out = the sum (or product) of `input` over `shape`, divided by `divisor` when floating (a
// mean). The input already has the dtype to accumulate from: out's dtype, or any integral
// dtype (bool included) for an int64 sum. Compute functions get `out` with any strides and
// write it directly (the plan knows its strides).
template <bool multiply>
void arithmetic_into(const char* op, const Tensor& out, const Tensor& input, const ReduceShape& shape, double divisor) {
  if (out.numel() == 0) return;
  const cuda::detail::ReducePlan plan = cuda::detail::plan_reduction(op, input, shape, {&out, &out});
  const int device = out.device().index();
  visit_dtype(input.dtype(), [&]<class T>() {
    using Acc = sum_acc_t<T>;
    const Acc scale = static_cast<Acc>(divisor);
    if (out.dtype() == input.dtype()) {
      cuda::detail::launch_reduce(op, plan, input, ArithmeticOps<T, T, Acc, multiply>{out.data_ptr(), scale}, device);
    } else if constexpr (std::is_integral_v<T> && !multiply) {
      cuda::detail::launch_reduce(op, plan, input, ArithmeticOps<T, int64_t, Acc, false>{out.data_ptr(), scale},
                                  device);
    } else {
      STRATA_CHECK(false, "[", op, "] internal error: no CUDA kernel from ", input.dtype(), " to ", out.dtype());
    }
  });
}

// sum: the input converted to the dtype argument first, as the CPU does.
void sum_into(const Tensor& out, const Tensor& self, const ReduceShape& shape, std::optional<ScalarType> dtype) {
  const Tensor input = dtype ? cuda::detail::converted(self, *dtype) : self;
  arithmetic_into<false>("sum", out, input, shape, 1.0);
}

void sum_out_cuda(const Tensor& out, const Tensor& self, std::optional<ScalarType> dtype) {
  sum_into(out, self, reduce_shape("sum", self, std::nullopt, false, dtype), dtype);
}
void sum_dim_out_cuda(const Tensor& out, const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim,
                      std::optional<ScalarType> dtype) {
  sum_into(out, self, reduce_shape("sum", self, dim, keepdim, dtype), dtype);
}

// mean: the sum divided by the count in the same kernel (0 / 0 = NaN for an empty reduction),
// in the result dtype's accumulation type.
void mean_into(const Tensor& out, const Tensor& self, const ReduceShape& shape) {
  arithmetic_into<false>("mean", out, cuda::detail::converted(self, shape.dtype), shape,
                         static_cast<double>(shape.count));
}

void mean_out_cuda(const Tensor& out, const Tensor& self, std::optional<ScalarType> dtype) {
  mean_into(out, self, shapes::mean_shape(self, std::nullopt, false, dtype));
}
void mean_dim_out_cuda(const Tensor& out, const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim,
                       std::optional<ScalarType> dtype) {
  mean_into(out, self, shapes::mean_shape(self, dim, keepdim, dtype));
}

// prod: the input converted to the result dtype first (int64 for integral and bool inputs),
// as the CPU does; the empty product is 1.
void prod_into(const Tensor& out, const Tensor& self, const ReduceShape& shape) {
  arithmetic_into<true>("prod", out, cuda::detail::converted(self, shape.dtype), shape, 1.0);
}

void prod_out_cuda(const Tensor& out, const Tensor& self, std::optional<ScalarType> dtype) {
  prod_into(out, self, reduce_shape("prod", self, std::nullopt, false, dtype));
}
void prod_dim_out_cuda(const Tensor& out, const Tensor& self, int64_t dim, bool keepdim,
                       std::optional<ScalarType> dtype) {
  prod_into(out, self, reduce_shape("prod", self, shapes::single_dim(dim), keepdim, dtype));
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  using cuda::detail::copy_kernel;
  using detail::structured, detail::structured_out;
  m.impl("sum", structured<&shapes::sum, &sum_out_cuda>());
  m.impl("sum.dim_IntList", structured<&shapes::sum_dim_IntList, &sum_dim_out_cuda>());
  m.impl("mean", structured<&shapes::mean, &mean_out_cuda>());
  m.impl("mean.dim", structured<&shapes::mean_dim, &mean_dim_out_cuda>());
  m.impl("prod", structured<&shapes::prod, &prod_out_cuda>());
  m.impl("prod.dim_int", structured<&shapes::prod_dim_int, &prod_dim_out_cuda>());
  m.impl("sum.IntList_out",
         structured_out<&shapes::sum_dim_IntList, &sum_dim_out_cuda, "sum.IntList_out", &copy_kernel>());
  m.impl("mean.out", structured_out<&shapes::mean_dim, &mean_dim_out_cuda, "mean.out", &copy_kernel>());
}

}  // namespace strata
