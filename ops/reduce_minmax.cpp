// Reductions that pick an element: max and min over all elements or along one dim (values
// and indices), argmax and argmin. Schema, shape/dtype function, CPU and Meta kernels,
// derivatives and free functions. The layout and fold loop are shared (ops/reduce.h).
#include <strata/ops/reduce.h>

#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>

#include <cmath>
#include <tuple>

namespace strata {
namespace {

using detail::ReduceLayout;
using detail::ReduceShape;

// ---------------------------------------------------------------------------------------
// Shape and dtype. Note [Extremum reductions]
// Values keep the input's dtype (bool included); indices are int64. A reduction over no
// elements has no answer and throws IndexError. NaN wins over every number (the first NaN
// is picked), and among equal values the first one is picked, so indices are deterministic.

IntArrayRef single_dim(const int64_t& dim) { return IntArrayRef(&dim, 1); }

ReduceShape extremum_shape(const char* op, const Tensor& self, std::optional<int64_t> dim, bool keepdim,
                           ScalarType dtype) {
  const std::optional<IntArrayRef> dims = dim ? std::optional<IntArrayRef>(single_dim(*dim)) : std::nullopt;
  ReduceShape shape = detail::reduce_shape(op, self, dims, keepdim, dtype);
  detail::check_nonempty_reduction(op, self, shape);
  return shape;
}

template <class C>
bool is_nan(C value) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(value);
  else return false;
}

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
// Kernels.

template <bool is_max>
Tensor extremum_all_cpu(const Tensor& self) {
  const ReduceShape shape = extremum_shape(extremum_name(is_max), self, std::nullopt, false, self.dtype());
  Tensor values = detail::make_empty(shape.out_sizes, self.dtype(), self.device());
  compute_extremum<is_max>(self, shape, values, Tensor());
  return values;
}

template <bool is_max>
Tensor extremum_all_meta(const Tensor& self) {
  const ReduceShape shape = extremum_shape(extremum_name(is_max), self, std::nullopt, false, self.dtype());
  return detail::make_empty(shape.out_sizes, self.dtype(), self.device());
}

template <bool is_max>
std::tuple<Tensor, Tensor> extremum_dim_cpu(const Tensor& self, int64_t dim, bool keepdim) {
  const ReduceShape shape = extremum_shape(extremum_name(is_max), self, dim, keepdim, self.dtype());
  Tensor values = detail::make_empty(shape.out_sizes, self.dtype(), self.device());
  Tensor indices = detail::make_empty(shape.out_sizes, kInt64, self.device());
  compute_extremum<is_max>(self, shape, values, indices);
  return {values, indices};
}

template <bool is_max>
std::tuple<Tensor, Tensor> extremum_dim_meta(const Tensor& self, int64_t dim, bool keepdim) {
  const ReduceShape shape = extremum_shape(extremum_name(is_max), self, dim, keepdim, self.dtype());
  return {detail::make_empty(shape.out_sizes, self.dtype(), self.device()),
          detail::make_empty(shape.out_sizes, kInt64, self.device())};
}

// With no dim, the index is into the flattened (row-major) input; see Note [Reduction layout].
template <bool is_max>
Tensor arg_extremum_cpu(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const ReduceShape shape = extremum_shape(arg_name(is_max), self, dim, keepdim, kInt64);
  Tensor indices = detail::make_empty(shape.out_sizes, kInt64, self.device());
  compute_extremum<is_max>(self, shape, Tensor(), indices);
  return indices;
}

template <bool is_max>
Tensor arg_extremum_meta(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const ReduceShape shape = extremum_shape(arg_name(is_max), self, dim, keepdim, kInt64);
  return detail::make_empty(shape.out_sizes, kInt64, self.device());
}

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  m.def("max(Tensor self) -> Tensor");
  m.def("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  m.def("min(Tensor self) -> Tensor");
  m.def("min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  m.def("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
  m.def("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  m.impl("max", &extremum_all_cpu<true>);
  m.impl("max.dim", &extremum_dim_cpu<true>);
  m.impl("min", &extremum_all_cpu<false>);
  m.impl("min.dim", &extremum_dim_cpu<false>);
  m.impl("argmax", &arg_extremum_cpu<true>);
  m.impl("argmin", &arg_extremum_cpu<false>);
}

STRATA_LIBRARY_IMPL(strata, Meta, m) {
  m.impl("max", &extremum_all_meta<true>);
  m.impl("max.dim", &extremum_dim_meta<true>);
  m.impl("min", &extremum_all_meta<false>);
  m.impl("min.dim", &extremum_dim_meta<false>);
  m.impl("argmax", &arg_extremum_meta<true>);
  m.impl("argmin", &arg_extremum_meta<false>);
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
    const tensor_list saved = ctx->get_saved_variables();
    const Tensor &self = saved[0], &result = saved[1];
    const Tensor picked = where(ne(result, result), ne(self, self), eq(self, result));
    const Tensor share = grads[0] / sum(picked);
    return {where(picked, share, zeros({}, share.options()))};
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
    ctx->saved_data["sizes"] = self.sizes();
    ctx->saved_data["kept"] = shape.kept_sizes.vec();
    ctx->saved_data["dim"] = self.dim() == 0 ? int64_t{0} : wrap_dim(dim, self.dim(), extremum_name(is_max));
    return {values, indices};
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const std::vector<int64_t>& sizes = ctx->saved_data["sizes"].to_int_list();
    const std::vector<int64_t>& kept = ctx->saved_data["kept"].to_int_list();
    const Tensor g = grads[0].reshape(kept);
    if (sizes.empty()) return {g, Tensor(), Tensor()};
    const int64_t dim = ctx->saved_data["dim"].to_int();
    std::vector<int64_t> line(sizes.size(), 1);
    line[static_cast<size_t>(dim)] = sizes[static_cast<size_t>(dim)];
    const Tensor positions = arange(sizes[static_cast<size_t>(dim)], TensorOptions(kInt64).device(g.device()));
    const Tensor hit = eq(positions.view(line), ctx->get_saved_variables()[0].reshape(kept));
    return {where(hit, g, zeros({}, g.options())), Tensor(), Tensor()};
  }
};

template <bool is_max>
std::tuple<Tensor, Tensor> extremum_dim_autograd(const Tensor& self, int64_t dim, bool keepdim) {
  tensor_list outputs = ExtremumDimFunction<is_max>::apply(self, dim, keepdim);
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
