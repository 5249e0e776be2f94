// Reductions: sum, mean and prod over all dims or some dims (with sum and mean out= forms);
// the reduction layout shared with reduce_minmax.cpp and reduce_stats.cpp (see ops/reduce.h);
// and sum_to. The shape functions are in shapes/reduce.h and the Meta kernels derive from them.
#include <strata/ops/reduce.h>

#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/ops/structured.h>
#include <strata/tensor/dim_order.h>

#include <cstring>
#include <span>
#include <vector>

namespace strata {
namespace detail {

// ---------------------------------------------------------------------------------------
// Shape and layout (ops/reduce.h).

namespace {

// The dims of a dense input outermost first in memory order, when the fold can read it in
// place: kept dims (and for FoldOrder::row_major reduced dims) in their logical order, so that
// the output is written in its own order and positions are row-major flat indices.
std::optional<DimVector> memory_order(const Tensor& input, const ReduceShape& shape, FoldOrder order) {
  const auto ndim = static_cast<size_t>(input.dim());
  DimVector dims(ndim);
  if (input.is_contiguous()) {
    for (size_t d = 0; d < ndim; ++d) dims[d] = static_cast<int64_t>(d);
    return dims;
  }
  if (!input.is_non_overlapping_and_dense()) return std::nullopt;
  const IntArrayRef strides = input.strides();
  const DimVector inner_first = innermost_first(input.sizes(), std::span<const IntArrayRef>(&strides, 1));
  int64_t last_kept = -1, last_reduced = -1;
  for (size_t i = 0; i < ndim; ++i) {
    const int64_t d = inner_first[ndim - 1 - i];
    dims[i] = d;
    if (input.sizes()[static_cast<size_t>(d)] == 1) continue;
    int64_t& last = shape.reduced[static_cast<size_t>(d)] ? last_reduced : last_kept;
    if (d < last && (&last == &last_kept || order == FoldOrder::row_major)) return std::nullopt;
    last = d;
  }
  return dims;
}

// An input that is one block in memory order with its reduced dims (ignoring size 1) in one
// run maps onto a layout directly; anything else is permuted to (kept..., reduced...) and
// copied once.
std::optional<ReduceLayout> direct_layout(const Tensor& input, const ReduceShape& shape, FoldOrder order) {
  const std::optional<DimVector> dims = memory_order(input, shape, order);
  if (!dims) return std::nullopt;
  ReduceLayout layout;
  int phase = 0;  // 0: before the reduced run, 1: inside it, 2: after it
  for (const int64_t d : *dims) {
    const int64_t size = input.sizes()[static_cast<size_t>(d)];
    if (size == 1) continue;
    if (shape.reduced[d]) {
      if (phase == 2) return std::nullopt;
      phase = 1;
      layout.reduced *= size;
    } else if (phase == 0) {
      layout.outer *= size;
    } else {
      phase = 2;
      layout.inner *= size;
    }
  }
  return layout;
}

Tensor kept_then_reduced(const Tensor& input, const ReduceShape& shape, ReduceLayout& layout) {
  DimVector sizes, strides;
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t d = 0; d < input.dim(); ++d) {
      if (shape.reduced[d] != pass) continue;
      sizes.push_back(input.sizes()[d]);
      strides.push_back(input.strides()[d]);
      (pass == 0 ? layout.outer : layout.reduced) *= input.sizes()[d];
    }
  }
  return cast_to(make_view(input, sizes, strides, input.storage_offset()), input.dtype());
}

}  // namespace

Tensor reduce_input(const Tensor& self, const ReduceShape& shape, ReduceLayout& layout, FoldOrder order) {
  if (std::optional<ReduceLayout> direct = direct_layout(self, shape, order)) {
    layout = *direct;
    return self;
  }
  layout = ReduceLayout{};
  return kept_then_reduced(self, shape, layout);
}

}  // namespace detail

namespace {
using detail::ReduceLayout;
using detail::ReduceShape;
using detail::reduce_shape;
using shapes::single_dim;

// ---------------------------------------------------------------------------------------
// Summation loops.

// Integers accumulate in uint64 (wrapping, like PyTorch's int64 sum); floats in their compute
// type, double for double.
template <class T>
using sum_acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t,
                                     std::conditional_t<std::is_same_v<T, double>, double, float>>;

// Note [Pairwise summation]
// Floating sums are pairwise (cascade) like NumPy's: blocks of 128 are summed with 8
// independent accumulators, which the compiler vectorises without reassociating anything,
// and the blocks are combined in a binary tree. The rounding error grows with log(n) rather
// than n, so a float32 sum of 1e7 ones is exact. Large sums are split into fixed chunks
// summed in parallel and combined pairwise, so the result does not depend on thread count.
constexpr int64_t kPairwiseBlock = 128;
constexpr int kLanes = 8;

// The kLanes accumulators as one GCC vector: lane k adds x[i + k] in the same order as a scalar
// array of accumulators would, so the bits are the same, but it is one vector add per step.
// The array form relied on the SLP vectoriser, which this build turns off for GCC 12 (see
// CMakeLists.txt), and ran as eight scalar chains: 0.3 ns an element, LibTorch 0.05-0.13.
template <class A>
struct LaneVectorOf;
template <>
struct LaneVectorOf<float> {
  typedef float type __attribute__((vector_size(kLanes * sizeof(float))));
};
template <>
struct LaneVectorOf<double> {
  typedef double type __attribute__((vector_size(kLanes * sizeof(double))));
};
template <class A>
using LaneVector = typename LaneVectorOf<A>::type;
static_assert(sizeof(LaneVector<float>) == kLanes * sizeof(float) &&
              sizeof(LaneVector<double>) == kLanes * sizeof(double));

template <class A, class T>
A pairwise_sum(const T* x, int64_t n) {
  if (n <= kPairwiseBlock) {
    A lanes[kLanes] = {};
    int64_t i = 0;
    if constexpr (std::is_same_v<A, T> && std::is_floating_point_v<A>) {
      LaneVector<A> sums = {};
      for (; i + kLanes <= n; i += kLanes) {
        LaneVector<A> values;
        std::memcpy(&values, x + i, sizeof(values));
        sums += values;
      }
      std::memcpy(lanes, &sums, sizeof(sums));
    } else {
      for (; i + kLanes <= n; i += kLanes)
        for (int k = 0; k < kLanes; ++k) lanes[k] += static_cast<A>(x[i + k]);
    }
    A total = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (; i < n; ++i) total += static_cast<A>(x[i]);
    return total;
  }
  const int64_t half = (n / 2) / kLanes * kLanes;
  return pairwise_sum<A>(x, half) + pairwise_sum<A>(x + half, n - half);
}

constexpr int64_t kSumChunk = kDefaultGrainSize;

template <class A, class T>
A parallel_sum(const T* x, int64_t n) {
  if (n <= 2 * kSumChunk) return pairwise_sum<A>(x, n);
  const int64_t chunks = (n + kSumChunk - 1) / kSumChunk;
  std::vector<A> partials(static_cast<size_t>(chunks));
  A* partial = partials.data();
  parallel_for(0, chunks, 1, [x, n, partial](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) partial[c] = pairwise_sum<A>(x + c * kSumChunk, std::min(kSumChunk, n - c * kSumChunk));
  });
  return pairwise_sum<A>(partial, chunks);
}

// Column sums of a [rows, width] block with row stride `stride`, pairwise over rows.
constexpr int64_t kColumnWidth = 128;

template <class A, class T>
void column_pairwise(const T* x, int64_t rows, int64_t stride, int64_t width, A* result) {
  if (rows <= kPairwiseBlock) {
    std::fill(result, result + width, A(0));
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = x + r * stride;
      for (int64_t j = 0; j < width; ++j) result[j] += static_cast<A>(row[j]);
    }
    return;
  }
  const int64_t half = rows / 2;
  A other[kColumnWidth];
  column_pairwise<A>(x, half, stride, width, result);
  column_pairwise<A>(x + half * stride, rows - half, stride, width, other);
  for (int64_t j = 0; j < width; ++j) result[j] += other[j];
}

template <class O, class A>
O finish_sum(A total) {
  if constexpr (std::is_same_v<A, uint64_t>) return detail::convert<O>(static_cast<int64_t>(total));
  else return detail::convert<O>(total);
}

template <class T, class O>
void sum_layout(const T* x, O* y, const ReduceLayout& layout) {
  using A = sum_acc_t<T>;
  const int64_t reduced = layout.reduced, inner = layout.inner;
  if (inner == 1) {
    if (layout.outer == 1 || reduced >= 4 * kDefaultGrainSize) {
      for (int64_t o = 0; o < layout.outer; ++o) y[o] = finish_sum<O>(parallel_sum<A>(x + o * reduced, reduced));
      return;
    }
    parallel_for(0, layout.outer, std::max<int64_t>(1, kDefaultGrainSize / reduced), [=](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) y[o] = finish_sum<O>(pairwise_sum<A>(x + o * reduced, reduced));
    });
    return;
  }
  const int64_t blocks_per_outer = (inner + kColumnWidth - 1) / kColumnWidth;
  const int64_t grain = std::max<int64_t>(1, kDefaultGrainSize / (reduced * kColumnWidth));
  parallel_for(0, layout.outer * blocks_per_outer, grain, [=](int64_t begin, int64_t end) {
    A totals[kColumnWidth];
    for (int64_t task = begin; task < end; ++task) {
      const int64_t o = task / blocks_per_outer, column = (task % blocks_per_outer) * kColumnWidth;
      const int64_t width = std::min(kColumnWidth, inner - column);
      column_pairwise<A>(x + o * reduced * inner + column, reduced, inner, width, totals);
      for (int64_t j = 0; j < width; ++j) y[o * inner + column + j] = finish_sum<O>(totals[j]);
    }
  });
}

// out (contiguous, shape's sizes and dtype) = the sum of self over `shape`.
void sum_into(const Tensor& out, const Tensor& self, const ReduceShape& shape, std::optional<ScalarType> dtype) {
  if (out.numel() == 0) return;
  Tensor input = dtype && *dtype != self.dtype() ? detail::cast_to(self, *dtype) : self;
  if (input.numel() == 0) {
    std::memset(out.impl()->data(), 0, static_cast<size_t>(out.nbytes()));
    return;
  }
  ReduceLayout layout;
  input = detail::reduce_input(input, shape, layout, detail::FoldOrder::any);
  visit_dtype(input.dtype(), [&]<class T>() {
    const T* x = detail::data_of<T>(input);
    if (out.dtype() == input.dtype()) sum_layout<T, T>(x, detail::data_of<T>(out), layout);
    else sum_layout<T, int64_t>(x, detail::data_of<int64_t>(out), layout);
  });
}

// mean: the sum divided by the count (NaN for an empty reduction), computed in the result
// dtype (the input is cast to it first).
void mean_into(const Tensor& out, const Tensor& self, const ReduceShape& shape) {
  sum_into(out, self, shape, shape.dtype);
  const int64_t count = shape.count;
  visit_dtype(out.dtype(), [&]<class T>() {
    using C = compute_type_t<T>;
    if constexpr (std::is_floating_point_v<C>)
      detail::unary_kernel<T>(out, out, [count](C total) { return total / static_cast<C>(count); });
  });
}

// ---------------------------------------------------------------------------------------
// prod: dtypes as sum (integral and bool inputs multiply into int64, wrapping); the empty
// product is 1.

template <class T>
struct ProdReducer {
  using Acc = sum_acc_t<T>;
  T* out;
  Acc init() const { return Acc(1); }
  void fold(Acc& acc, compute_type_t<T> value, int64_t) const { acc *= static_cast<Acc>(value); }
  void store(int64_t index, const Acc& acc) const {
    if constexpr (std::is_same_v<Acc, uint64_t>) out[index] = static_cast<T>(static_cast<int64_t>(acc));
    else out[index] = static_cast<T>(acc);
  }
};

void prod_into(const Tensor& out, const Tensor& self, const ReduceShape& shape) {
  if (out.numel() == 0) return;
  ReduceLayout layout;
  const Tensor input = detail::reduce_input(self.dtype() == shape.dtype ? self : detail::cast_to(self, shape.dtype),
                                            shape, layout, detail::FoldOrder::any);
  visit_dtype(shape.dtype, [&]<class T>() {
    detail::fold_layout<T>(detail::data_of<T>(input), layout, ProdReducer<T>{detail::data_of<T>(out)});
  });
}

// ---------------------------------------------------------------------------------------
// CPU compute (Note [Structured ops]): `out` has the shape function's sizes and dtype and may
// be a strided out= tensor; see writable_output.

template <class Fill>
void fill_output(const Tensor& out, const Tensor& self, const Fill& fill) {
  const Tensor target = detail::writable_output(out, self);
  fill(target);
  detail::finish_output(out, target);
}

void sum_out_cpu(const Tensor& out, const Tensor& self, std::optional<ScalarType> dtype) {
  fill_output(out, self, [&](const Tensor& target) {
    sum_into(target, self, reduce_shape("sum", self, std::nullopt, false, dtype), dtype);
  });
}
void sum_dim_out_cpu(const Tensor& out, const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim,
                     std::optional<ScalarType> dtype) {
  fill_output(out, self, [&](const Tensor& target) {
    sum_into(target, self, reduce_shape("sum", self, dim, keepdim, dtype), dtype);
  });
}
void mean_out_cpu(const Tensor& out, const Tensor& self, std::optional<ScalarType> dtype) {
  fill_output(out, self, [&](const Tensor& target) {
    mean_into(target, self, shapes::mean_shape(self, std::nullopt, false, dtype));
  });
}
void mean_dim_out_cpu(const Tensor& out, const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim,
                      std::optional<ScalarType> dtype) {
  fill_output(out, self, [&](const Tensor& target) {
    mean_into(target, self, shapes::mean_shape(self, dim, keepdim, dtype));
  });
}
void prod_out_cpu(const Tensor& out, const Tensor& self, std::optional<ScalarType> dtype) {
  fill_output(out, self, [&](const Tensor& target) {
    prod_into(target, self, reduce_shape("prod", self, std::nullopt, false, dtype));
  });
}
void prod_dim_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, bool keepdim,
                      std::optional<ScalarType> dtype) {
  fill_output(out, self, [&](const Tensor& target) {
    prod_into(target, self, reduce_shape("prod", self, shapes::single_dim(dim), keepdim, dtype));
  });
}

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  using detail::def_structured, detail::def_structured_out;
  def_structured<&shapes::sum>(m, "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor");
  def_structured<&shapes::sum_dim_IntList>(
      m, "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor");
  def_structured<&shapes::mean>(m, "mean(Tensor self, *, ScalarType? dtype=None) -> Tensor");
  def_structured<&shapes::mean_dim>(
      m, "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor");
  def_structured<&shapes::prod>(m, "prod(Tensor self, *, ScalarType? dtype=None) -> Tensor");
  def_structured<&shapes::prod_dim_int>(
      m, "prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor");
  def_structured_out<&shapes::sum_dim_IntList, "sum.IntList_out">(
      m, "sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) "
         "-> Tensor(a!)");
  def_structured_out<&shapes::mean_dim, "mean.out">(
      m, "mean.out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) "
         "-> Tensor(a!)");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  using detail::structured, detail::structured_out;
  m.impl("sum", structured<&shapes::sum, &sum_out_cpu>());
  m.impl("sum.dim_IntList", structured<&shapes::sum_dim_IntList, &sum_dim_out_cpu>());
  m.impl("mean", structured<&shapes::mean, &mean_out_cpu>());
  m.impl("mean.dim", structured<&shapes::mean_dim, &mean_dim_out_cpu>());
  m.impl("prod", structured<&shapes::prod, &prod_out_cpu>());
  m.impl("prod.dim_int", structured<&shapes::prod_dim_int, &prod_dim_out_cpu>());
  m.impl("sum.IntList_out", structured_out<&shapes::sum_dim_IntList, &sum_dim_out_cpu, "sum.IntList_out">());
  m.impl("mean.out", structured_out<&shapes::mean_dim, &mean_dim_out_cpu, "mean.out">());
}

// ---------------------------------------------------------------------------------------
// Derivatives: the gradient of a sum is the output gradient broadcast back over the
// reduced dims.

namespace {
using autograd::AutogradContext;

// sum and prod to an integral dtype carry no gradient (as in PyTorch): the result is marked
// non-differentiable rather than refused.
struct SumFunction : autograd::Function<SumFunction> {
  static constexpr std::string_view name() { return "SumBackward"; }
  static Tensor forward(AutogradContext* /*ctx*/, const Tensor& self, std::optional<ScalarType> dtype) {
    Tensor out = sum(self, dtype);
    return out;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), grads[0].expand(ctx->input_sizes(0)), Tensor());
  }
};

struct SumDimFunction : autograd::Function<SumDimFunction> {
  static constexpr std::string_view name() { return "SumBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, std::optional<IntArrayRef> dims, bool keepdim,
                        std::optional<ScalarType> dtype) {
    Tensor out = call_sum_dim(self, dims, keepdim, dtype);
    // The output's shape with the reduced dims kept as 1: the gradient is viewed to it.
    ctx->saved_data["kept"] = reduce_shape("sum", self, dims, true, dtype).out_sizes.vec();
    return out;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    Tensor kept = grads[0].reshape(ctx->saved_data["kept"].to_int_list());
    return autograd::detail::gradients_in(std::move(grads), kept.expand(ctx->input_sizes(0)), Tensor(), Tensor(),
                                          Tensor());
  }
  static Tensor call_sum_dim(const Tensor& self, std::optional<IntArrayRef> dims, bool keepdim,
                                        std::optional<ScalarType> dtype) {
    static const auto op = find_op("strata::sum.dim_IntList")
                               .typed<Tensor(const Tensor&, std::optional<IntArrayRef>, bool, std::optional<ScalarType>)>();
    return op.call(self, dims, keepdim, dtype);
  }
};

using MeanDimSignature = Tensor(const Tensor&, std::optional<IntArrayRef>, bool, std::optional<ScalarType>);

// mean: the gradient spread evenly over the reduced elements.
struct MeanFunction : autograd::Function<MeanFunction> {
  static constexpr std::string_view name() { return "MeanBackward"; }
  static Tensor forward(AutogradContext* /*ctx*/, const Tensor& self, std::optional<ScalarType> dtype) {
    return mean(self, dtype);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const IntArrayRef sizes = ctx->input_sizes(0);
    int64_t count = 1;
    for (int64_t size : sizes) count *= size;
    return autograd::detail::gradients_in(std::move(grads), grads[0].expand(sizes) / count, Tensor());
  }
};

struct MeanDimFunction : autograd::Function<MeanDimFunction> {
  static constexpr std::string_view name() { return "MeanBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, std::optional<IntArrayRef> dims, bool keepdim,
                        std::optional<ScalarType> dtype) {
    static const auto op = find_op("strata::mean.dim").typed<MeanDimSignature>();
    const ReduceShape shape = reduce_shape("mean", self, dims, keepdim, dtype);
    ctx->saved_data["kept"] = shape.kept_sizes.vec();
    ctx->saved_data["count"] = shape.count;
    return op.call(self, dims, keepdim, dtype);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    Tensor kept = grads[0].reshape(ctx->saved_data["kept"].to_int_list());
    return autograd::detail::gradients_in(std::move(grads),
                                          kept.expand(ctx->input_sizes(0)) / ctx->saved_data["count"].to_int(),
                                          Tensor(), Tensor(), Tensor());
  }
};

// Note [prod gradient]
// d prod / d x_i is the product of the other elements of x_i's group. Dividing the product by
// x_i fails at zeros, so it is computed from the product of the nonzero elements P and the
// number of zeros Z in the group: P / x_i when Z == 0; for a zero x_i, P when Z == 1; 0 in
// every other case. Built from differentiable ops, so prod has a second derivative.
Tensor prod_of_others(const Tensor& self, std::optional<int64_t> dim) {
  const Tensor zero_mask = eq(self, 0);
  const Tensor nonzero = where(zero_mask, ones({}, self.options()), self);
  const Tensor product = dim ? prod(nonzero, *dim, /*keepdim=*/true) : prod(nonzero);
  const Tensor zero_count = dim ? sum(zero_mask, {*dim}, /*keepdim=*/true) : sum(zero_mask);
  const Tensor zero = zeros({}, self.options());
  return where(zero_mask, where(eq(zero_count, 1), product, zero), where(eq(zero_count, 0), product / nonzero, zero));
}

struct ProdFunction : autograd::Function<ProdFunction> {
  static constexpr std::string_view name() { return "ProdBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, std::optional<ScalarType> dtype) {
    ctx->save_for_backward({self});
    Tensor out = prod(self, dtype);
    return out;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(
        std::move(grads), grads[0] * prod_of_others(autograd::detail::saved_tensors(*ctx)[0], std::nullopt), Tensor());
  }
};

struct ProdDimFunction : autograd::Function<ProdDimFunction> {
  static constexpr std::string_view name() { return "ProdBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, int64_t dim, bool keepdim,
                        std::optional<ScalarType> dtype) {
    ctx->save_for_backward({self});
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["kept"] = reduce_shape("prod", self, single_dim(dim), keepdim, dtype).kept_sizes.vec();
    Tensor out = prod(self, dim, keepdim, dtype);
    return out;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    Tensor kept = grads[0].reshape(ctx->saved_data["kept"].to_int_list());
    const Tensor self = autograd::detail::saved_tensors(*ctx)[0];
    return autograd::detail::gradients_in(
        std::move(grads), kept * prod_of_others(self, ctx->saved_data["dim"].to_int()), Tensor(), Tensor(), Tensor());
  }
};

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("sum", autograd::kernel<SumFunction>());
  m.impl("sum.dim_IntList", autograd::kernel<SumDimFunction>());
  m.impl("mean", autograd::kernel<MeanFunction>());
  m.impl("mean.dim", autograd::kernel<MeanDimFunction>());
  m.impl("prod", autograd::kernel<ProdFunction>());
  m.impl("prod.dim_int", autograd::kernel<ProdDimFunction>());
}
}  // namespace

Tensor mean(const Tensor& self, std::optional<ScalarType> dtype) {
  static const auto op = find_op("strata::mean").typed<Tensor(const Tensor&, std::optional<ScalarType>)>();
  return op.call(self, dtype);
}

Tensor mean(const Tensor& self, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  static const auto op = find_op("strata::mean.dim").typed<MeanDimSignature>();
  return op.call(self, dims, keepdim, dtype);
}

Tensor prod(const Tensor& self, std::optional<ScalarType> dtype) {
  static const auto op = find_op("strata::prod").typed<Tensor(const Tensor&, std::optional<ScalarType>)>();
  return op.call(self, dtype);
}

Tensor prod(const Tensor& self, int64_t dim, bool keepdim, std::optional<ScalarType> dtype) {
  static const auto op =
      find_op("strata::prod.dim_int").typed<Tensor(const Tensor&, int64_t, bool, std::optional<ScalarType>)>();
  return op.call(self, dim, keepdim, dtype);
}

Tensor sum(const Tensor& self, std::optional<ScalarType> dtype) {
  static const auto op = find_op("strata::sum").typed<Tensor(const Tensor&, std::optional<ScalarType>)>();
  return op.call(self, dtype);
}

Tensor sum(const Tensor& self, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  static const auto op = find_op("strata::sum.dim_IntList")
                             .typed<Tensor(const Tensor&, std::optional<IntArrayRef>, bool, std::optional<ScalarType>)>();
  return op.call(self, dims, keepdim, dtype);
}

// out= variants (LibTorch's at::sum_out order: out first).
const Tensor& sum_out(const Tensor& out, const Tensor& self, IntArrayRef dims, bool keepdim,
                      std::optional<ScalarType> dtype) {
  static const auto op =
      find_op("strata::sum.IntList_out")
          .typed<Tensor(const Tensor&, std::optional<IntArrayRef>, bool, std::optional<ScalarType>, const Tensor&)>();
  op.call(self, dims, keepdim, dtype, out);
  return out;
}
const Tensor& mean_out(const Tensor& out, const Tensor& self, IntArrayRef dims, bool keepdim,
                       std::optional<ScalarType> dtype) {
  static const auto op =
      find_op("strata::mean.out")
          .typed<Tensor(const Tensor&, std::optional<IntArrayRef>, bool, std::optional<ScalarType>, const Tensor&)>();
  op.call(self, dims, keepdim, dtype, out);
  return out;
}

// Sums the dims that broadcasting added (leading) or expanded (size 1 in `shape`), keeping
// t's dtype: the reduction a broadcast input's gradient needs.
Tensor sum_to(const Tensor& t, IntArrayRef shape) {
  if (t.sizes() == shape) return t;
  const int64_t leading = t.dim() - static_cast<int64_t>(shape.size());
  STRATA_CHECK_VALUE(leading >= 0, "[sum_to] shape ", shape, " has more dims than the tensor's shape ", t.sizes());
  DimVector dims;
  for (int64_t d = 0; d < leading; ++d) dims.push_back(d);
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t size = t.sizes()[leading + static_cast<int64_t>(i)];
    if (shape[i] == 1 && size != 1) dims.push_back(leading + static_cast<int64_t>(i));
    else STRATA_CHECK_VALUE(shape[i] == size, "[sum_to] shape ", shape, " is not broadcastable to ", t.sizes());
  }
  Tensor result = dims.empty() ? t : sum(t, dims, /*keepdim=*/true, t.dtype());
  return leading > 0 ? result.view(shape) : result;
}

}  // namespace strata
