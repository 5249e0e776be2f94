// Binary math beyond the four arithmetic ops: pow (tensor and scalar exponents), maximum and
// minimum, with out= variants. Schemas, CPU compute, derivatives, registrations and free
// functions; the shape functions are in shapes/binary.h and the Meta kernels derive from them.
#include <Eigen/Core>

#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/ops/blockwise.h>
#include <strata/ops/eigen_math.h>
#include <strata/ops/shapes/binary.h>
#include <strata/ops/structured.h>

#include <cmath>

namespace strata {
namespace {

template <class C>
using ArrayX = Eigen::Array<C, Eigen::Dynamic, 1>;
template <class C>
Eigen::Map<const ArrayX<C>> as_array(const C* data, int64_t count) {
  return Eigen::Map<const ArrayX<C>>(data, count);
}
template <class C>
Eigen::Map<ArrayX<C>> as_array(C* data, int64_t count) {
  return Eigen::Map<ArrayX<C>>(data, count);
}

Tensor converted(const Tensor& t, ScalarType dtype) { return t.dtype() == dtype ? t : detail::cast_to(t, dtype); }

// ---------------------------------------------------------------------------------------
// pow (Note [pow dtypes] in shapes/binary.h).

template <class C>
C integer_pow(C base, C exponent) {
  if constexpr (std::is_signed_v<C>) {
    if (exponent < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exponent & 1) ? -1 : 1;
      return 0;
    }
  }
  C result = 1;
  while (exponent != 0) {
    if (exponent & 1) result = detail::wrapping_mul(result, base);
    exponent = static_cast<C>(exponent >> 1);
    base = detail::wrapping_mul(base, base);
  }
  return result;
}

// Note [pow of floating types]
// Eigen 3.4's vectorised pow loses the sign of odd integer powers of -0 and -inf (pow(-inf,
// 5.0) came out +inf, pow(-0.0, -3.0) +inf, in float and double packets alike), so the general
// case takes std::pow, which follows C's rules as LibTorch does.
template <class C>
auto general_pow(const Eigen::ArrayBase<C>& base, typename C::Scalar exponent) {
  return base.unaryExpr([exponent](auto value) { return std::pow(value, exponent); });
}

template <class C>
void pow_block(const C* x, C* y, int64_t n, double exponent) {
  const auto in = as_array(x, n);
  auto out = as_array(y, n);
  if (exponent == 0) out.setConstant(C(1));
  else if (exponent == 1) out = in;
  else if (exponent == 2) out = in.square();
  else if (exponent == 3) out = in.cube();
  else if (exponent == 0.5) out = in.unaryExpr([](C value) { return std::sqrt(value); });  // see SqrtOp in unary.cpp
  else if (exponent == -0.5) out = detail::reciprocal_sqrt(in);  // as rsqrt
  else if (exponent == -1) out = in.inverse();
  else out = general_pow(in, C(exponent));
}

// CPU compute (Note [Structured ops]): out has the shape function's sizes and dtype; it may be
// strided, or an input of the same geometry (out=).
void pow_scalar_out_cpu(const Tensor& out, const Tensor& self, const Scalar& exponent) {
  const ScalarType dtype = out.dtype();
  const Tensor input = converted(self, dtype);
  visit_dtype(dtype, [&]<class T>() {
    using C = compute_type_t<T>;
    if constexpr (std::is_floating_point_v<C>) {
      const double e = exponent.to_double();
      detail::blockwise_unary<T>(out, input, [e](const C* x, C* y, int64_t n) { pow_block(x, y, n, e); });
    } else if constexpr (!std::is_same_v<T, bool>) {
      const C e = detail::checked_scalar<T>(exponent, "pow");
      detail::unary_kernel<T>(out, input, [e](C x) { return integer_pow(x, e); });
    }
  });
}

void pow_tensor_out_cpu(const Tensor& out, const Tensor& self, const Tensor& exponent) {
  const ScalarType dtype = out.dtype();
  const Tensor base = converted(self, dtype), power = converted(exponent, dtype);
  visit_dtype(dtype, [&]<class T>() {
    using C = compute_type_t<T>;
    if constexpr (std::is_floating_point_v<C>) {
      detail::blockwise_binary<T>(out, base, power, [](const C* x, const C* e, C* y, int64_t n) {
        // See Note [pow of floating types].
        as_array(y, n) = as_array(x, n).binaryExpr(as_array(e, n), [](C a, C b) { return std::pow(a, b); });
      });
    } else if constexpr (!std::is_same_v<T, bool>) {
      detail::binary_kernel<T>(out, base, power, [](C x, C e) { return integer_pow(x, e); });
    }
  });
}

// ---------------------------------------------------------------------------------------
// maximum and minimum: every dtype (bool: or / and); NaN in either operand gives NaN.

template <class C>
bool is_nan(C x) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(x);
  else return false;
}

template <bool is_max>
struct ExtremumOp {
  template <class C>
  C operator()(C x, C y) const {
    const bool pick_x = is_max ? x > y : x < y;
    return pick_x || is_nan(x) ? x : y;
  }
};

template <bool is_max>
void extremum_out_cpu(const Tensor& out, const Tensor& self, const Tensor& other) {
  const Tensor a = converted(self, out.dtype()), b = converted(other, out.dtype());
  visit_dtype(out.dtype(), [&]<class T>() { detail::binary_kernel<T>(out, a, b, ExtremumOp<is_max>{}); });
}

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  using detail::def_structured, detail::def_structured_out;
  def_structured<&shapes::pow_tensor_tensor>(m, "pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor");
  def_structured<&shapes::pow_tensor_scalar>(m, "pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor");
  def_structured<&shapes::maximum>(m, "maximum(Tensor self, Tensor other) -> Tensor");
  def_structured<&shapes::minimum>(m, "minimum(Tensor self, Tensor other) -> Tensor");
  def_structured_out<&shapes::pow_tensor_tensor, "pow.Tensor_Tensor_out">(
      m, "pow.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::pow_tensor_scalar, "pow.Tensor_Scalar_out">(
      m, "pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::maximum, "maximum.out">(
      m, "maximum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::minimum, "minimum.out">(
      m, "minimum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  using detail::structured, detail::structured_out;
  m.impl("pow.Tensor_Tensor", structured<&shapes::pow_tensor_tensor, &pow_tensor_out_cpu>());
  m.impl("pow.Tensor_Scalar", structured<&shapes::pow_tensor_scalar, &pow_scalar_out_cpu>());
  m.impl("maximum", structured<&shapes::maximum, &extremum_out_cpu<true>>());
  m.impl("minimum", structured<&shapes::minimum, &extremum_out_cpu<false>>());
  m.impl("pow.Tensor_Tensor_out",
         structured_out<&shapes::pow_tensor_tensor, &pow_tensor_out_cpu, "pow.Tensor_Tensor_out">());
  m.impl("pow.Tensor_Scalar_out",
         structured_out<&shapes::pow_tensor_scalar, &pow_scalar_out_cpu, "pow.Tensor_Scalar_out">());
  m.impl("maximum.out", structured_out<&shapes::maximum, &extremum_out_cpu<true>, "maximum.out">());
  m.impl("minimum.out", structured_out<&shapes::minimum, &extremum_out_cpu<false>, "minimum.out">());
}

// ---------------------------------------------------------------------------------------
// Derivatives, in strata ops (they differentiate again under create_graph). Gradients of
// broadcast inputs come back in the output's shape and are summed by the Function machinery.

namespace {
using autograd::AutogradContext;

Tensor zero_scalar_like(const Tensor& t) { return zeros({}, t.options()); }

// d(x^e)/dx = e x^(e-1), and 0 for e == 0 (also at x == 0, where x^-1 is infinite).
struct PowScalarFunction : autograd::Function<PowScalarFunction> {
  static constexpr std::string_view name() { return "PowBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Scalar& exponent) {
    ctx->save_for_backward({self});
    ctx->saved_data["exponent"] = exponent;
    return pow(self, exponent);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const Tensor self = autograd::detail::saved_tensors(*ctx)[0];
    const Scalar e = ctx->saved_data["exponent"].to_scalar();
    if (e.to_double() == 0) return autograd::detail::gradients_in(std::move(grads), zeros_like(grads[0]), Tensor());
    const Scalar lowered = e.is_floating_point() ? Scalar(e.to_double() - 1) : Scalar(e.to_long() - 1);
    return autograd::detail::gradients_in(std::move(grads), grads[0] * pow(self, lowered) * e, Tensor());
  }
};

// d/dx = e x^(e-1) (0 where e == 0); d/de = x^e log x (0 where x == 0 and e >= 0).
struct PowTensorFunction : autograd::Function<PowTensorFunction> {
  static constexpr std::string_view name() { return "PowBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& exponent) {
    Tensor result = pow(self, exponent);
    ctx->save_for_backward({self, exponent, ctx->needs_input_grad(1) ? result : Tensor()});
    return result;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = autograd::detail::saved_tensors(*ctx);
    const Tensor &self = saved[0], &exponent = saved[1], &g = grads[0];
    const Tensor zero = zero_scalar_like(g);
    Tensor grad_self, grad_exponent;
    if (ctx->needs_input_grad(0))
      grad_self = where(eq(exponent, 0), zero, g * exponent * pow(self, exponent - 1));
    if (ctx->needs_input_grad(1))
      grad_exponent = where(mul(eq(self, 0), ge(exponent, 0)), zero, g * saved[2] * log(self));
    return autograd::detail::gradients_in(std::move(grads), grad_self, grad_exponent);
  }
};

// The gradient goes to the operand that was picked; ties split it evenly, as in PyTorch.
template <bool is_max>
struct ExtremumFunction : autograd::Function<ExtremumFunction<is_max>> {
  static constexpr std::string_view name() { return is_max ? "MaximumBackward" : "MinimumBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& other) {
    ctx->save_for_backward({self, other});
    return is_max ? maximum(self, other) : minimum(self, other);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = autograd::detail::saved_tensors(*ctx);
    const Tensor &self = saved[0], &other = saved[1], &g = grads[0];
    const Tensor zero = zero_scalar_like(g);
    const Tensor shared = where(eq(self, other), g * 0.5, g);
    Tensor grad_self, grad_other;
    if (ctx->needs_input_grad(0)) grad_self = where(is_max ? lt(self, other) : gt(self, other), zero, shared);
    if (ctx->needs_input_grad(1)) grad_other = where(is_max ? gt(self, other) : lt(self, other), zero, shared);
    return autograd::detail::gradients_in(std::move(grads), grad_self, grad_other);
  }
};

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("pow.Tensor_Tensor", autograd::kernel<PowTensorFunction>());
  m.impl("pow.Tensor_Scalar", autograd::kernel<PowScalarFunction>());
  m.impl("maximum", autograd::kernel<ExtremumFunction<true>>());
  m.impl("minimum", autograd::kernel<ExtremumFunction<false>>());
}
}  // namespace

// ---------------------------------------------------------------------------------------
// Free functions.

Tensor pow(const Tensor& self, const Tensor& exponent) {
  static const auto op = find_op("strata::pow.Tensor_Tensor").typed<Tensor(const Tensor&, const Tensor&)>();
  return op.call(self, exponent);
}
Tensor pow(const Tensor& self, const Scalar& exponent) {
  static const auto op = find_op("strata::pow.Tensor_Scalar").typed<Tensor(const Tensor&, const Scalar&)>();
  return op.call(self, exponent);
}
Tensor maximum(const Tensor& self, const Tensor& other) {
  static const auto op = find_op("strata::maximum").typed<Tensor(const Tensor&, const Tensor&)>();
  return op.call(self, other);
}
Tensor minimum(const Tensor& self, const Tensor& other) {
  static const auto op = find_op("strata::minimum").typed<Tensor(const Tensor&, const Tensor&)>();
  return op.call(self, other);
}

// out= variants (LibTorch's at::pow_out order: out first).
const Tensor& pow_out(const Tensor& out, const Tensor& self, const Tensor& exponent) {
  static const auto op =
      find_op("strata::pow.Tensor_Tensor_out").typed<Tensor(const Tensor&, const Tensor&, const Tensor&)>();
  op.call(self, exponent, out);
  return out;
}
const Tensor& pow_out(const Tensor& out, const Tensor& self, const Scalar& exponent) {
  static const auto op =
      find_op("strata::pow.Tensor_Scalar_out").typed<Tensor(const Tensor&, const Scalar&, const Tensor&)>();
  op.call(self, exponent, out);
  return out;
}
const Tensor& maximum_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  static const auto op = find_op("strata::maximum.out").typed<Tensor(const Tensor&, const Tensor&, const Tensor&)>();
  op.call(self, other, out);
  return out;
}
const Tensor& minimum_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  static const auto op = find_op("strata::minimum.out").typed<Tensor(const Tensor&, const Tensor&, const Tensor&)>();
  op.call(self, other, out);
  return out;
}

}  // namespace strata
