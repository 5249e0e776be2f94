// Statistical reductions: var and std (with Bessel's correction by default), logsumexp and
// the vector norm over all elements. Schemas, CPU compute, derivatives and free functions; the
// shape functions are in shapes/reduce.h and the Meta kernels derive from them. The layout and
// fold loop are shared (ops/reduce.h).
#include <strata/ops/reduce.h>

#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/ops/eigen_math.h>
#include <strata/ops/lane_sum.h>
#include <strata/ops/structured.h>

#include <cmath>
#include <limits>

namespace strata {
namespace {

using detail::ReduceLayout;
using detail::ReduceShape;

template <class C>
bool is_nan(C value) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(value);
  else return false;
}

using shapes::floating_shape;
using shapes::logsumexp_shape;

// Folds self, cast to the output's dtype, over `shape` into `out` with the reducer made by
// make_reducer(T* out) for that dtype. A strided `out` is filled through a contiguous
// temporary (writable_output).
template <class MakeReducer>
void fold_floating(const Tensor& out, const Tensor& self, const ReduceShape& shape, const MakeReducer& make_reducer) {
  if (out.numel() == 0) return;
  const Tensor target = detail::writable_output(out, self);
  ReduceLayout layout;
  const Tensor input =
      detail::reduce_input(self.dtype() == shape.dtype ? self : detail::cast_to(self, shape.dtype), shape, layout,
                           detail::FoldOrder::any);
  visit_dtype(shape.dtype, [&]<class T>() {
    if constexpr (is_floating_point(scalar_type_of<T>))
      detail::fold_layout<T>(detail::data_of<T>(input), layout, make_reducer(detail::data_of<T>(target)));
  });
  detail::finish_output(out, target);
}

std::optional<IntArrayRef> dims_or_all(IntArrayRef dims) {
  return dims.empty() ? std::nullopt : std::optional<IntArrayRef>(dims);
}

// ---------------------------------------------------------------------------------------
// var and std. Note [Variance]
// Welford's algorithm in double: one pass, no catastrophic cancellation (a contiguous run of
// float32 or float64 takes two passes instead, mean then deviations, also in double). The sum of squared
// deviations is divided by max(N - correction, 0), correction 1 when unbiased: one element
// with the correction gives NaN (0/0), as in PyTorch. std is the square root of var.

template <class T, bool take_root>
struct VarianceReducer {
  struct Acc {
    int64_t count;
    double mean, squares;
  };
  T* out;
  double divisor;
  Acc init() const { return {0, 0.0, 0.0}; }
  void fold(Acc& acc, compute_type_t<T> value, int64_t) const {
    const double x = static_cast<double>(value);
    ++acc.count;
    const double delta = x - acc.mean;
    acc.mean += delta / static_cast<double>(acc.count);
    acc.squares += delta * (x - acc.mean);
  }
  // A whole run in two passes over double lanes (Note [Lane sums]): the mean, then the squared
  // deviations from it. As accurate as Welford's one pass, and free of its division per element.
  Acc fold_row(const T* row, int64_t n) const {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const double mean = n > 0 ? detail::chunked_lane_sum(row, n, [](auto v) { return v; }) / static_cast<double>(n)
                                : 0.0;
      const double squares = detail::chunked_lane_sum(row, n, [mean](auto v) { return (v - mean) * (v - mean); });
      return {n, mean, squares};
    }
    return detail::fold_each(*this, row, n);
  }
  void store(int64_t index, const Acc& acc) const {
    const double variance = acc.squares / divisor;
    out[index] = static_cast<T>(take_root ? std::sqrt(variance) : variance);
  }
};

double variance_divisor(const ReduceShape& shape, bool unbiased) {
  return static_cast<double>(std::max<int64_t>(shape.count - (unbiased ? 1 : 0), 0));
}

template <bool take_root>
void variance_out_cpu(const Tensor& out, const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased,
                      bool keepdim) {
  const ReduceShape shape = floating_shape(take_root ? "std" : "var", self, dim, keepdim);
  const double divisor = variance_divisor(shape, unbiased);
  fold_floating(out, self, shape, [divisor]<class T>(T* y) { return VarianceReducer<T, take_root>{y, divisor}; });
}

// The ATen overloads without dims: composites of the .dim ops.
Tensor var_all(const Tensor& self, bool unbiased) { return var(self, {}, unbiased); }
Tensor std_all(const Tensor& self, bool unbiased) { return std(self, {}, unbiased); }

// ---------------------------------------------------------------------------------------
// logsumexp. Note [Stable logsumexp]
// One pass keeps the running maximum m and s = sum exp(x - m), rescaling s whenever m grows,
// so no exp overflows: the result m + log s is log sum exp x computed with the maximum
// subtracted. Values equal to an infinite m add exactly 1 (exp(inf - inf) would be NaN), so
// an all -inf group gives -inf and any +inf gives +inf; NaN propagates; an empty group is
// -inf. Integral and bool inputs compute in float32.

template <class T>
struct LogSumExpReducer {
  using C = compute_type_t<T>;
  struct Acc {
    C max, sum;
  };
  T* out;
  Acc init() const { return {-std::numeric_limits<C>::infinity(), C(0)}; }
  void fold(Acc& acc, C value, int64_t) const {
    if (value > acc.max) {
      acc.sum = acc.sum * std::exp(acc.max - value) + C(1);
      acc.max = value;
    } else if (value == acc.max) {
      acc.sum += C(1);
    } else {
      acc.sum += std::exp(value - acc.max);
    }
  }
  // A whole row: its maximum, then one vectorised pass of exp (Note [Eigen exp underflow] in
  // ops/eigen_math.h). An infinite maximum takes the element-by-element rules above; NaN
  // anywhere makes the sum (or the maximum) NaN.
  Acc fold_row(const T* row, int64_t n) const {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (n > 0) {
        const Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> in(row, n);
        const T max = in.maxCoeff();
        if (!std::isinf(max)) return {max, detail::full_range_exp(in - max).sum()};
      }
    }
    return detail::fold_each(*this, row, n);
  }
  void store(int64_t index, const Acc& acc) const { out[index] = static_cast<T>(acc.max + std::log(acc.sum)); }
};

void logsumexp_out_cpu(const Tensor& out, const Tensor& self, IntArrayRef dims, bool keepdim) {
  fold_floating(out, self, logsumexp_shape(self, dims, keepdim), []<class T>(T* y) { return LogSumExpReducer<T>{y}; });
}

// ---------------------------------------------------------------------------------------
// norm over all elements: (sum |x|^p)^(1/p), with p = 0 counting nonzeros and p = +-inf the
// largest / smallest |x|. Accumulates in double; floating inputs only, as in PyTorch.

enum class NormKind { zero, two, infinity, negative_infinity, general };

NormKind norm_kind(double p) {
  if (p == 0) return NormKind::zero;
  if (p == 2) return NormKind::two;
  if (std::isinf(p)) return p > 0 ? NormKind::infinity : NormKind::negative_infinity;
  return NormKind::general;
}

template <class T>
struct NormReducer {
  using Acc = double;
  T* out;
  NormKind kind;
  double p;
  Acc init() const { return kind == NormKind::negative_infinity ? std::numeric_limits<double>::infinity() : 0.0; }
  void fold(Acc& acc, compute_type_t<T> value, int64_t) const {
    const double magnitude = std::abs(static_cast<double>(value));
    switch (kind) {
      case NormKind::zero: acc += value != 0 ? 1.0 : 0.0; break;
      case NormKind::two: acc += magnitude * magnitude; break;
      case NormKind::infinity: acc = is_nan(acc) || acc >= magnitude ? acc : magnitude; break;
      case NormKind::negative_infinity: acc = is_nan(acc) || acc <= magnitude ? acc : magnitude; break;
      case NormKind::general: acc += std::pow(magnitude, p); break;
    }
  }
  // A whole run: the 2-norm's squares in double lanes (Note [Lane sums]); the other kinds one by one.
  Acc fold_row(const T* row, int64_t n) const {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (kind == NormKind::two) return detail::chunked_lane_sum(row, n, [](auto v) { return v * v; });
    }
    return detail::fold_each(*this, row, n);
  }
  void store(int64_t index, const Acc& acc) const {
    if (kind == NormKind::two) out[index] = static_cast<T>(std::sqrt(acc));
    else if (kind == NormKind::general) out[index] = static_cast<T>(std::pow(acc, 1.0 / p));
    else out[index] = static_cast<T>(acc);
  }
};

void norm_out_cpu(const Tensor& out, const Tensor& self, const Scalar& p) {
  const ReduceShape shape = floating_shape("norm", self, std::nullopt, false);
  const double order = p.to_double();
  const NormKind kind = norm_kind(order);
  fold_floating(out, self, shape, [kind, order]<class T>(T* y) { return NormReducer<T>{y, kind, order}; });
}

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  using detail::def_structured;
  def_structured<&shapes::var_dim>(m, "var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor");
  def_structured<&shapes::std_dim>(m, "std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor");
  m.def("var(Tensor self, bool unbiased=True) -> Tensor", &var_all);
  m.def("std(Tensor self, bool unbiased=True) -> Tensor", &std_all);
  def_structured<&shapes::logsumexp>(m, "logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor");
  def_structured<&shapes::norm_Scalar>(m, "norm.Scalar(Tensor self, Scalar p=2) -> Tensor");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  using detail::structured;
  m.impl("var.dim", structured<&shapes::var_dim, &variance_out_cpu<false>>());
  m.impl("std.dim", structured<&shapes::std_dim, &variance_out_cpu<true>>());
  m.impl("logsumexp", structured<&shapes::logsumexp, &logsumexp_out_cpu>());
  m.impl("norm.Scalar", structured<&shapes::norm_Scalar, &norm_out_cpu>());
}

// ---------------------------------------------------------------------------------------
// Derivatives, in strata ops (so they differentiate again). The output gradient is first
// reshaped to the input's rank with the reduced dims kept as 1, then broadcasts.

namespace {
using autograd::AutogradContext;

using VarianceSignature = Tensor(const Tensor&, std::optional<IntArrayRef>, bool, bool);

Tensor group_mean(const Tensor& self, const std::optional<std::vector<int64_t>>& dims) {
  return dims ? mean(self, *dims, /*keepdim=*/true) : mean(self);
}

// var: 2 (x - mean) / divisor. std: (x - mean) / (divisor std), and 0 where std is 0.
template <bool take_root>
struct VarianceFunction : autograd::Function<VarianceFunction<take_root>> {
  static constexpr std::string_view name() { return take_root ? "StdBackward" : "VarBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, std::optional<IntArrayRef> dims, bool unbiased,
                        bool keepdim) {
    static const auto op = find_op(take_root ? "strata::std.dim" : "strata::var.dim").typed<VarianceSignature>();
    const ReduceShape shape = floating_shape(take_root ? "std" : "var", self, dims, keepdim);
    Tensor result = op.call(self, dims, unbiased, keepdim);
    ctx->save_for_backward({self, take_root ? result : Tensor()});
    ctx->saved_data["kept"] = shape.kept_sizes.vec();
    ctx->saved_data["divisor"] = variance_divisor(shape, unbiased);
    if (dims && !dims->empty()) ctx->saved_data["dims"] = *dims;
    return result;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = autograd::detail::saved_tensors(*ctx);
    const std::vector<int64_t>& kept = ctx->saved_data["kept"].to_int_list();
    const std::optional<std::vector<int64_t>> dims =
        ctx->saved_data.contains("dims") ? std::optional(ctx->saved_data["dims"].to_int_list()) : std::nullopt;
    const Tensor deviation = saved[0] - group_mean(saved[0], dims);
    const double divisor = ctx->saved_data["divisor"].to_double();
    const Tensor g = grads[0].reshape(kept);
    if (!take_root)
      return autograd::detail::gradients_in(std::move(grads), g * deviation * (2.0 / divisor), Tensor(), Tensor(),
                                            Tensor());
    const Tensor root = saved[1].reshape(kept);
    const Tensor grad = where(eq(root, 0), zeros({}, g.options()), g * deviation / (root * divisor));
    return autograd::detail::gradients_in(std::move(grads), grad, Tensor(), Tensor(), Tensor());
  }
};

// d logsumexp / dx = exp(x - logsumexp), the softmax over the group.
struct LogSumExpFunction : autograd::Function<LogSumExpFunction> {
  static constexpr std::string_view name() { return "LogsumexpBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, IntArrayRef dims, bool keepdim) {
    Tensor result = logsumexp(self, dims, keepdim);
    ctx->save_for_backward({self, result});
    ctx->saved_data["kept"] = logsumexp_shape(self, dims, keepdim).kept_sizes.vec();
    return result;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = autograd::detail::saved_tensors(*ctx);
    const std::vector<int64_t>& kept = ctx->saved_data["kept"].to_int_list();
    return autograd::detail::gradients_in(
        std::move(grads), grads[0].reshape(kept) * exp(saved[0] - saved[1].reshape(kept)), Tensor(), Tensor());
  }
};

// Note [norm gradient]
// p = 2: g x / norm; p = +-inf: g sign(x) shared evenly by the elements with |x| == norm;
// p = 0: zero; otherwise g sign(x) |x|^(p-1) / norm^(p-1), taken as 0 where x == 0. Every
// case is 0 where the norm is 0.
Tensor norm_derivative(const Tensor& g, const Tensor& self, const Tensor& norm, double p) {
  const Tensor zero = zeros({}, g.options());
  switch (norm_kind(p)) {
    case NormKind::zero: return zeros_like(self);
    case NormKind::two: return where(eq(norm, 0), zero, g * self / norm);
    case NormKind::infinity:
    case NormKind::negative_infinity: {
      const Tensor picked = eq(abs(self), norm);
      return where(picked, g * sign(self) / sum(picked), zero);
    }
    case NormKind::general: break;
  }
  const Tensor scaled = where(eq(self, 0), zero, sign(self) * pow(abs(self), p - 1));
  return where(eq(norm, 0), zero, g * scaled / pow(norm, p - 1));
}

struct NormFunction : autograd::Function<NormFunction> {
  static constexpr std::string_view name() { return "NormBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Scalar& p) {
    Tensor result = norm(self, p);
    ctx->save_for_backward({self, result});
    ctx->saved_data["p"] = p.to_double();
    return result;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = autograd::detail::saved_tensors(*ctx);
    return autograd::detail::gradients_in(
        std::move(grads), norm_derivative(grads[0], saved[0], saved[1], ctx->saved_data["p"].to_double()), Tensor());
  }
};

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("var.dim", autograd::kernel<VarianceFunction<false>>());
  m.impl("std.dim", autograd::kernel<VarianceFunction<true>>());
  m.impl("logsumexp", autograd::kernel<LogSumExpFunction>());
  m.impl("norm.Scalar", autograd::kernel<NormFunction>());
}
}  // namespace

// ---------------------------------------------------------------------------------------
// Free functions. An empty dims list reduces every dim.

Tensor var(const Tensor& self, IntArrayRef dims, bool unbiased, bool keepdim) {
  static const auto op = find_op("strata::var.dim").typed<VarianceSignature>();
  return op.call(self, dims_or_all(dims), unbiased, keepdim);
}
Tensor std(const Tensor& self, IntArrayRef dims, bool unbiased, bool keepdim) {
  static const auto op = find_op("strata::std.dim").typed<VarianceSignature>();
  return op.call(self, dims_or_all(dims), unbiased, keepdim);
}
Tensor logsumexp(const Tensor& self, IntArrayRef dims, bool keepdim) {
  static const auto op = find_op("strata::logsumexp").typed<Tensor(const Tensor&, IntArrayRef, bool)>();
  return op.call(self, dims, keepdim);
}
Tensor norm(const Tensor& self, const Scalar& p) {
  static const auto op = find_op("strata::norm.Scalar").typed<Tensor(const Tensor&, const Scalar&)>();
  return op.call(self, p);
}

}  // namespace strata
