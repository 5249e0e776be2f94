// Reductions that pick an element: max and min over all elements or along one dim (values
// and indices), argmax and argmin. Schemas, CPU compute, derivatives and free functions; the
// shape functions are in shapes/reduce.h and the Meta kernels derive from them. The layout and
// fold loop are shared (ops/reduce.h).
#include <strata/ops/reduce.h>

#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/ops/structured.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>
#include <type_traits>

namespace strata {
namespace {

using detail::ReduceLayout;
using detail::ReduceShape;

using shapes::extremum_shape;
using shapes::single_dim;

// See Note [Extremum reductions] in shapes/reduce.h.
template <class C>
bool is_nan(C value) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(value);
  else return false;
}

// Note [Extremum lanes]
// A float max or min over a contiguous row (dim=-1, or all elements) runs in vector lanes:
// lane l folds positions l, l + kWidth, l + 2 kWidth, ... by fold's rule, keeping its best
// value and the first position it was found at. The lanes then combine by the same rule, with
// ties (equal values, or NaN against NaN) going to the smaller position, and the remainder is
// folded after them. The result is what the scalar fold gives, the first NaN or else the first
// position of the best value, and -0.0 and 0.0 keep whichever comes first. Positions are
// lanes of the value's width (int32 for float), so rows up to kLargestRow take this path.
// Along a dim with neighbours (max(x, 0)), each lane follows one output column instead.
template <class T>
struct ExtremumLanes {
  static constexpr int64_t kWidth = 64 / sizeof(T);
  using Position = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  typedef T Values __attribute__((vector_size(64)));
  typedef Position Positions __attribute__((vector_size(64)));
  static constexpr int64_t kLargestRow = std::numeric_limits<Position>::max() - 2 * kWidth;
};

template <class T, bool is_max>
struct ExtremumReducer {
  using C = compute_type_t<T>;
  struct Acc {
    C value;
    int64_t index;
  };
  T* values;         // null when only indices are wanted
  int64_t* indices;  // null when only values are wanted

  Acc init() const { return {C(), -1}; }
  void fold(Acc& acc, C value, int64_t r) const {
    if (acc.index < 0 || better(value, acc.value)) acc = {value, r};
  }
  static bool better(C value, C current) {
    if (is_nan(current)) return false;
    if (is_nan(value)) return true;
    return is_max ? value > current : value < current;
  }
  void store(int64_t position, const Acc& acc) const {
    if (values) values[position] = static_cast<T>(acc.value);
    if (indices) indices[position] = acc.index;
  }

  // See Note [Extremum lanes].
  Acc fold_row(const T* row, int64_t n) const requires(std::is_same_v<T, float> || std::is_same_v<T, double>) {
    using Lanes = ExtremumLanes<T>;
    using V = typename Lanes::Values;
    using P = typename Lanes::Positions;
    constexpr int64_t kWidth = Lanes::kWidth;
    Acc acc = init();
    int64_t i = 0;
    if (n >= 2 * kWidth && n <= Lanes::kLargestRow) {
      V best, value;
      __builtin_memcpy(&best, row, sizeof(V));
      P position, current;
      for (int64_t l = 0; l < kWidth; ++l) position[l] = l;
      current = position;
      for (i = kWidth; i + kWidth <= n; i += kWidth) {
        __builtin_memcpy(&value, row + i, sizeof(V));
        current += kWidth;
        // better(value, best) lane by lane: a NaN beats a number; a number beats a number
        // strictly (so each lane keeps the first position of its best value).
        const P take = (is_max ? value > best : value < best) | ((value != value) & (best == best));
        best = take ? value : best;
        position = take ? current : position;
      }
      for (int64_t l = 0; l < kWidth; ++l) {
        const C candidate = best[l];
        const int64_t at = position[l];
        if (acc.index < 0 || better(candidate, acc.value) || (!better(acc.value, candidate) && at < acc.index))
          acc = {candidate, at};
      }
    }
    for (; i < n; ++i) fold(acc, row[i], i);
    return acc;
  }

  // See Note [Extremum lanes]: here lane l of a vector follows column j + l of the block to the
  // end, so no lanes combine. Out of line, so the generic column loop compiles as it would.
  [[gnu::noinline]] void fold_columns(const T* block, int64_t reduced, int64_t stride, int64_t width,
                                      int64_t first) const
    requires(std::is_same_v<T, float> || std::is_same_v<T, double>)
  {
    using Lanes = ExtremumLanes<T>;
    using V = typename Lanes::Values;
    using P = typename Lanes::Positions;
    using Position = typename Lanes::Position;
    constexpr int64_t kWidth = Lanes::kWidth;
    int64_t j = 0;
    if (reduced <= Lanes::kLargestRow) {
      for (; j + kWidth <= width; j += kWidth) {
        V best, value;
        __builtin_memcpy(&best, block + j, sizeof(V));
        P position = {};
        for (int64_t r = 1; r < reduced; ++r) {
          __builtin_memcpy(&value, block + r * stride + j, sizeof(V));
          const P take = (is_max ? value > best : value < best) | ((value != value) & (best == best));
          best = take ? value : best;
          position = take ? P{} + static_cast<Position>(r) : position;
        }
        for (int64_t l = 0; l < kWidth; ++l) store(first + j + l, Acc{best[l], position[l]});
      }
    }
    for (; j < width; ++j) {
      Acc acc = init();
      for (int64_t r = 0; r < reduced; ++r) fold(acc, block[r * stride + j], r);
      store(first + j, acc);
    }
  }
};

// Fills values and/or indices (either may be undefined) for the reduction `shape` of self.
template <bool is_max>
void compute_extremum(const Tensor& self, const ReduceShape& shape, const Tensor& values, const Tensor& indices) {
  const Tensor& out = values.defined() ? values : indices;
  if (out.numel() == 0) return;
  ReduceLayout layout;
  const Tensor input = detail::reduce_input(self, shape, layout);
  visit_dtype(self.dtype(), [&]<class T>() {
    const ExtremumReducer<T, is_max> reducer{values.defined() ? detail::data_of<T>(values) : nullptr,
                                             indices.defined() ? detail::data_of<int64_t>(indices) : nullptr};
    detail::fold_layout<T>(detail::data_of<T>(input), layout, reducer);
  });
}

constexpr const char* extremum_name(bool is_max) { return is_max ? "max" : "min"; }
constexpr const char* arg_name(bool is_max) { return is_max ? "argmax" : "argmin"; }

// ---------------------------------------------------------------------------------------
// CPU compute (Note [Structured ops]): outputs have the shape functions' sizes and dtypes; a
// strided output is filled through a contiguous temporary (writable_output).

template <bool is_max>
void extremum_all_out_cpu(const Tensor& values, const Tensor& self) {
  const ReduceShape shape = extremum_shape(extremum_name(is_max), self, std::nullopt, false, self.dtype());
  const Tensor target = detail::writable_output(values, self);
  compute_extremum<is_max>(self, shape, target, Tensor());
  detail::finish_output(values, target);
}

template <bool is_max>
void extremum_dim_out_cpu(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t dim, bool keepdim) {
  const ReduceShape shape = extremum_shape(extremum_name(is_max), self, dim, keepdim, self.dtype());
  const Tensor values_target = detail::writable_output(values, self);
  const Tensor indices_target = detail::writable_output(indices, self);
  compute_extremum<is_max>(self, shape, values_target, indices_target);
  detail::finish_output(values, values_target);
  detail::finish_output(indices, indices_target);
}

// With no dim, the index is into the flattened (row-major) input; see Note [Reduction layout].
template <bool is_max>
void arg_extremum_out_cpu(const Tensor& indices, const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const ReduceShape shape = extremum_shape(arg_name(is_max), self, dim, keepdim, kInt64);
  const Tensor target = detail::writable_output(indices, self);
  compute_extremum<is_max>(self, shape, Tensor(), target);
  detail::finish_output(indices, target);
}

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  using detail::def_structured;
  def_structured<&shapes::max>(m, "max(Tensor self) -> Tensor");
  def_structured<&shapes::max_dim>(m, "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  def_structured<&shapes::min>(m, "min(Tensor self) -> Tensor");
  def_structured<&shapes::min_dim>(m, "min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  def_structured<&shapes::argmax>(m, "argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
  def_structured<&shapes::argmin>(m, "argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  using detail::structured;
  m.impl("max", structured<&shapes::max, &extremum_all_out_cpu<true>>());
  m.impl("max.dim", structured<&shapes::max_dim, &extremum_dim_out_cpu<true>>());
  m.impl("min", structured<&shapes::min, &extremum_all_out_cpu<false>>());
  m.impl("min.dim", structured<&shapes::min_dim, &extremum_dim_out_cpu<false>>());
  m.impl("argmax", structured<&shapes::argmax, &arg_extremum_out_cpu<true>>());
  m.impl("argmin", structured<&shapes::argmin, &arg_extremum_out_cpu<false>>());
}

// ---------------------------------------------------------------------------------------
// Derivatives. argmax and argmin have none (their Autograd slot falls through).

namespace {
using autograd::AutogradContext;

// max() and min() over all elements: the gradient is shared evenly by every element equal
// to the result (every NaN when the result is NaN), as in PyTorch. The NaN case is chosen
// by `where` on the device, not by reading the result on the host, so backward runs on any
// device (Meta included).
template <bool is_max>
struct ExtremumAllFunction : autograd::Function<ExtremumAllFunction<is_max>> {
  static constexpr std::string_view name() { return is_max ? "MaxBackward" : "MinBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self) {
    Tensor result = is_max ? max(self) : min(self);
    ctx->save_for_backward({self, result});
    return result;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = autograd::detail::saved_tensors(*ctx);
    const Tensor &self = saved[0], &result = saved[1];
    const Tensor picked = where(ne(result, result), ne(self, self), eq(self, result));
    const Tensor share = grads[0] / sum(picked);
    return autograd::detail::gradients_in(std::move(grads), where(picked, share, zeros({}, share.options())));
  }
};

// max.dim and min.dim: the gradient goes to the element each index names. The hit mask
// compares the index, kept as a size-1 dim, with the positions along the dim.
template <bool is_max>
struct ExtremumDimFunction : autograd::Function<ExtremumDimFunction<is_max>> {
  static constexpr std::string_view name() { return is_max ? "MaxBackward" : "MinBackward"; }
  static tensor_list forward(AutogradContext* ctx, const Tensor& self, int64_t dim, bool keepdim) {
    auto [values, indices] = is_max ? max(self, dim, keepdim) : min(self, dim, keepdim);
    const ReduceShape shape = detail::reduce_shape(extremum_name(is_max), self, single_dim(dim), true, kInt64);
    ctx->mark_non_differentiable({indices});
    ctx->save_for_backward({indices});
    ctx->saved_data["kept"] = shape.kept_sizes.vec();
    ctx->saved_data["dim"] = self.dim() == 0 ? int64_t{0} : wrap_dim(dim, self.dim(), extremum_name(is_max));
    return {values, indices};
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const IntArrayRef sizes = ctx->input_sizes(0);
    const std::vector<int64_t>& kept = ctx->saved_data["kept"].to_int_list();
    const Tensor g = grads[0].reshape(kept);
    if (sizes.empty()) return autograd::detail::gradients_in(std::move(grads), g, Tensor(), Tensor());
    const int64_t dim = ctx->saved_data["dim"].to_int();
    std::vector<int64_t> line(sizes.size(), 1);
    line[static_cast<size_t>(dim)] = sizes[static_cast<size_t>(dim)];
    const Tensor positions = arange(sizes[static_cast<size_t>(dim)], TensorOptions(kInt64).device(g.device()));
    const Tensor hit = eq(positions.view(line), autograd::detail::saved_tensors(*ctx)[0].reshape(kept));
    return autograd::detail::gradients_in(std::move(grads), where(hit, g, zeros({}, g.options())), Tensor(), Tensor());
  }
};

template <bool is_max>
std::tuple<Tensor, Tensor> extremum_dim_autograd(const Tensor& self, int64_t dim, bool keepdim) {
  tensor_list outputs = ExtremumDimFunction<is_max>::apply_op(self, dim, keepdim);
  return {std::move(outputs[0]), std::move(outputs[1])};
}

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("max", autograd::kernel<ExtremumAllFunction<true>>());
  m.impl("min", autograd::kernel<ExtremumAllFunction<false>>());
  m.impl("max.dim", &extremum_dim_autograd<true>);
  m.impl("min.dim", &extremum_dim_autograd<false>);
}

using DimSignature = std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool);
using ArgSignature = Tensor(const Tensor&, std::optional<int64_t>, bool);
}  // namespace

// ---------------------------------------------------------------------------------------
// Free functions.

Tensor max(const Tensor& self) {
  static const auto op = find_op("strata::max").typed<Tensor(const Tensor&)>();
  return op.call(self);
}
Tensor min(const Tensor& self) {
  static const auto op = find_op("strata::min").typed<Tensor(const Tensor&)>();
  return op.call(self);
}
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim) {
  static const auto op = find_op("strata::max.dim").typed<DimSignature>();
  return op.call(self, dim, keepdim);
}
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim) {
  static const auto op = find_op("strata::min.dim").typed<DimSignature>();
  return op.call(self, dim, keepdim);
}
Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  static const auto op = find_op("strata::argmax").typed<ArgSignature>();
  return op.call(self, dim, keepdim);
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  static const auto op = find_op("strata::argmin").typed<ArgSignature>();
  return op.call(self, dim, keepdim);
}

}  // namespace strata
