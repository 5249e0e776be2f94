// Unary math and activations: neg abs sign exp log sqrt rsqrt sin cos tanh sigmoid relu silu
// gelu clamp, the in-place relu_ clamp_ zero_ fill_, gelu_backward, tanh_backward and
// sigmoid_backward (derivatives as ops of their own: one kernel, and a derivative of their own
// too), and out= variants of the math ops.
// Schemas, CPU compute, derivatives, registrations and free functions; the shape functions are
// in shapes/unary.h and the Meta kernels derive from them.
#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>

#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/ops/blockwise.h>
#include <strata/ops/eigen_math.h>
#include <strata/ops/shapes/unary.h>
#include <strata/ops/structured.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <string>

namespace strata {
namespace {

// Dtypes: Note [Unary dtype rules] in shapes/unary.h.
using shapes::DtypeRule;
using shapes::GeluForm;
using shapes::gelu_form;

constexpr bool uses_vector_math(DtypeRule rule) {
  return rule == DtypeRule::promote_to_float || rule == DtypeRule::floating_only;
}

// Ops that name a rule keeping integral dtypes compute element by element (`scalar`).
template <class Op>
constexpr bool is_scalar_op() {
  if constexpr (requires { Op::rule; }) return !uses_vector_math(Op::rule);
  else return false;
}

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

Tensor zero_scalar_like(const Tensor& t) { return zeros({}, t.options()); }

// The dispatched derivative ops (internal: reached by name, as PyTorch's at::tanh_backward).
Tensor tanh_backward(const Tensor& grad_output, const Tensor& output) {
  static const auto op = find_op("strata::tanh_backward").typed<Tensor(const Tensor&, const Tensor&)>();
  return op.call(grad_output, output);
}
Tensor sigmoid_backward(const Tensor& grad_output, const Tensor& output) {
  static const auto op = find_op("strata::sigmoid_backward").typed<Tensor(const Tensor&, const Tensor&)>();
  return op.call(grad_output, output);
}

// ---------------------------------------------------------------------------------------
// The ops. Each names itself, its dtype rule and its math: `scalar` for the ops that keep
// integral dtypes (a plain loop the compiler vectorises), `array` for the floating ones (an
// Eigen array expression; see Note [Blockwise loops]). `derivative(grad, self, result)` is
// written in strata ops, so it differentiates again under create_graph.

struct NegOp {
  static constexpr const char* name = "neg";
  static constexpr std::string_view backward_name = "NegBackward";
  static constexpr DtypeRule rule = DtypeRule::keep_no_bool;
  static constexpr bool saves_self = false, saves_result = false;
  template <class C>
  static C scalar(C x) {
    if constexpr (std::is_integral_v<C>) return detail::wrapping_sub(C(0), x);
    else return -x;
  }
  static Tensor call(const Tensor& x) { return neg(x); }
  static Tensor derivative(const Tensor& g, const Tensor&, const Tensor&) { return neg(g); }
};

struct AbsOp {
  static constexpr const char* name = "abs";
  static constexpr std::string_view backward_name = "AbsBackward";
  static constexpr DtypeRule rule = DtypeRule::keep;
  static constexpr bool saves_self = true, saves_result = false;
  template <class C>
  static C scalar(C x) {
    if constexpr (std::is_unsigned_v<C> || std::is_same_v<C, bool>) return x;
    else if constexpr (std::is_integral_v<C>) return x < 0 ? detail::wrapping_sub(C(0), x) : x;
    else return std::abs(x);
  }
  static Tensor call(const Tensor& x) { return abs(x); }
  static Tensor derivative(const Tensor& g, const Tensor& self, const Tensor&) { return g * sign(self); }
};

// sign(NaN) is 0, as in PyTorch; the derivative is zero everywhere (almost).
struct SignOp {
  static constexpr const char* name = "sign";
  static constexpr std::string_view backward_name = "SignBackward";
  static constexpr DtypeRule rule = DtypeRule::keep;
  static constexpr bool saves_self = false, saves_result = false;
  template <class C>
  static C scalar(C x) {
    if constexpr (std::is_unsigned_v<C> || std::is_same_v<C, bool>) return static_cast<C>(x != 0);
    else return static_cast<C>((C(0) < x) - (x < C(0)));
  }
  static Tensor call(const Tensor& x) { return sign(x); }
  static Tensor derivative(const Tensor& g, const Tensor&, const Tensor&) { return zeros_like(g); }
};

// relu(NaN) is NaN. The gradient passes except where the result is <= 0 (LibTorch's
// threshold_backward), so a NaN input passes it on.
struct ReluOp {
  static constexpr const char* name = "relu";
  static constexpr std::string_view backward_name = "ReluBackward";
  static constexpr DtypeRule rule = DtypeRule::keep_no_bool;
  static constexpr bool saves_self = false, saves_result = true;
  template <class C>
  static C scalar(C x) {
    if constexpr (std::is_unsigned_v<C> || std::is_same_v<C, bool>) return x;
    else return x < C(0) ? C(0) : x;
  }
  static Tensor call(const Tensor& x) { return relu(x); }
  static Tensor derivative(const Tensor& g, const Tensor&, const Tensor& result) {
    return where(le(result, 0), zero_scalar_like(g), g);
  }
};

struct ExpOp {
  static constexpr const char* name = "exp";
  static constexpr std::string_view backward_name = "ExpBackward";
  static constexpr DtypeRule rule = DtypeRule::promote_to_float;
  static constexpr bool saves_self = false, saves_result = true;
  template <class X>
  static auto array(const X& x) { return detail::full_range_exp(x); }  // Note [Eigen exp underflow]
  static Tensor call(const Tensor& x) { return exp(x); }
  static Tensor derivative(const Tensor& g, const Tensor&, const Tensor& result) { return g * result; }
};

struct LogOp {
  static constexpr const char* name = "log";
  static constexpr std::string_view backward_name = "LogBackward";
  static constexpr DtypeRule rule = DtypeRule::promote_to_float;
  static constexpr bool saves_self = true, saves_result = false;
  template <class X>
  static auto array(const X& x) { return detail::log_with_subnormals(x); }  // Note [Eigen log of subnormals]
  static Tensor call(const Tensor& x) { return log(x); }
  static Tensor derivative(const Tensor& g, const Tensor& self, const Tensor&) { return g / self; }
};

struct SqrtOp {
  static constexpr const char* name = "sqrt";
  static constexpr std::string_view backward_name = "SqrtBackward";
  static constexpr DtypeRule rule = DtypeRule::promote_to_float;
  static constexpr bool saves_self = false, saves_result = true;
  // Not Eigen's sqrt(): with EIGEN_FAST_MATH (its default) the float and double packets give
  // NaN for +inf, +0 for -0 and 0 for subnormals. std::sqrt is IEEE's correctly rounded sqrt,
  // and without errno (CMakeLists.txt) GCC vectorises it into the exact sqrt instruction.
  template <class X>
  static auto array(const X& x) {
    return x.unaryExpr([](auto value) { return std::sqrt(value); });
  }
  static Tensor call(const Tensor& x) { return sqrt(x); }
  static Tensor derivative(const Tensor& g, const Tensor&, const Tensor& result) { return g / (result * 2); }
};

// d/dx x^(-1/2) = -1/2 x^(-3/2) = -1/2 result^3.
struct RsqrtOp {
  static constexpr const char* name = "rsqrt";
  static constexpr std::string_view backward_name = "RsqrtBackward";
  static constexpr DtypeRule rule = DtypeRule::promote_to_float;
  static constexpr bool saves_self = false, saves_result = true;
  template <class X>
  static auto array(const X& x) { return detail::reciprocal_sqrt(x); }
  static Tensor call(const Tensor& x) { return rsqrt(x); }
  static Tensor derivative(const Tensor& g, const Tensor&, const Tensor& result) {
    return g * (result * result * result) * -0.5;
  }
};

struct SinOp {
  static constexpr const char* name = "sin";
  static constexpr std::string_view backward_name = "SinBackward";
  static constexpr DtypeRule rule = DtypeRule::promote_to_float;
  static constexpr bool saves_self = true, saves_result = false;
  template <class X>
  static auto array(const X& x) { return x.sin(); }
  static Tensor call(const Tensor& x) { return sin(x); }
  static Tensor derivative(const Tensor& g, const Tensor& self, const Tensor&) { return g * cos(self); }
};

struct CosOp {
  static constexpr const char* name = "cos";
  static constexpr std::string_view backward_name = "CosBackward";
  static constexpr DtypeRule rule = DtypeRule::promote_to_float;
  static constexpr bool saves_self = true, saves_result = false;
  template <class X>
  static auto array(const X& x) { return x.cos(); }
  static Tensor call(const Tensor& x) { return cos(x); }
  static Tensor derivative(const Tensor& g, const Tensor& self, const Tensor&) { return neg(g * sin(self)); }
};

struct TanhOp {
  static constexpr const char* name = "tanh";
  static constexpr std::string_view backward_name = "TanhBackward";
  static constexpr DtypeRule rule = DtypeRule::promote_to_float;
  static constexpr bool saves_self = false, saves_result = true;
  template <class X>
  static auto array(const X& x) { return x.tanh(); }
  static Tensor call(const Tensor& x) { return tanh(x); }
  static Tensor derivative(const Tensor& g, const Tensor&, const Tensor& result) { return tanh_backward(g, result); }
};

struct SigmoidOp {
  static constexpr const char* name = "sigmoid";
  static constexpr std::string_view backward_name = "SigmoidBackward";
  static constexpr DtypeRule rule = DtypeRule::promote_to_float;
  static constexpr bool saves_self = false, saves_result = true;
  template <class X>
  static auto array(const X& x) { return detail::sigmoid_from_exp(x); }
  static Tensor call(const Tensor& x) { return sigmoid(x); }
  static Tensor derivative(const Tensor& g, const Tensor&, const Tensor& result) {
    return sigmoid_backward(g, result);
  }
};

// silu(x) = x sigmoid(x); silu'(x) = s (1 + x (1 - s)) with s = sigmoid(x).
struct SiluOp {
  static constexpr const char* name = "silu";
  static constexpr std::string_view backward_name = "SiluBackward";
  static constexpr DtypeRule rule = DtypeRule::floating_only;
  static constexpr bool saves_self = true, saves_result = false;
  template <class X>
  static auto array(const X& x) { return x * detail::sigmoid_from_exp(x); }
  static Tensor call(const Tensor& x) { return silu(x); }
  static Tensor derivative(const Tensor& g, const Tensor& self, const Tensor&) {
    const Tensor s = sigmoid(self);
    return g * s * (1 + self * (1 - s));
  }
};

// ---------------------------------------------------------------------------------------
// gelu. Note [gelu forms]
// approximate='none' is the exact form x Phi(x) = x/2 (1 + erf(x / sqrt 2)); 'tanh' is
// x/2 (1 + tanh(k (x + c x^3))) with k = sqrt(2/pi), c = 0.044715. gelu_backward(g, x) is
// g gelu'(x); its own derivative needs gelu''(x), written in strata ops below:
//   none: gelu'' = phi(x) (2 - x^2), phi the standard normal density;
//   tanh: with u = k (x + c x^3), t = tanh u: gelu'' = (1 - t^2) (u' - x t u'^2 + x u''/2).
constexpr double kSqrtHalf = std::numbers::sqrt2 / 2;
constexpr double kInvSqrt2Pi = std::numbers::inv_sqrtpi / std::numbers::sqrt2;
constexpr double kGeluK = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;  // sqrt(2 / pi)
constexpr double kGeluC = 0.044715;

struct GeluErfOp {
  template <class X>
  static auto array(const X& x) {
    using C = typename X::Scalar;
    return x * C(0.5) * (C(1) + (x * C(kSqrtHalf)).erf());
  }
};
struct GeluTanhOp {
  template <class X>
  static auto array(const X& x) {
    using C = typename X::Scalar;
    return x * C(0.5) * (C(1) + ((x + x.cube() * C(kGeluC)) * C(kGeluK)).tanh());
  }
};

// g * gelu'(x) for each form: Phi(x) + x phi(x), and (1 + t)/2 + x (1 - t^2) u' / 2.
struct GeluErfBackwardOp {
  template <class X>
  static auto array(const X& g, const X& x) {
    using C = typename X::Scalar;
    return g * (C(0.5) * (C(1) + (x * C(kSqrtHalf)).erf()) +
                x * detail::full_range_exp(x.square() * C(-0.5)) * C(kInvSqrt2Pi));
  }
};
struct GeluTanhBackwardOp {
  template <class X>
  static auto array(const X& g, const X& x) {
    using C = typename X::Scalar;
    const auto t = ((x + x.cube() * C(kGeluC)) * C(kGeluK)).tanh();
    const auto du = (C(1) + x.square() * C(3 * kGeluC)) * C(kGeluK);
    return g * (C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t.square()) * du);
  }
};

Tensor gelu_second_derivative(const Tensor& x, GeluForm form) {
  if (form == GeluForm::none) return exp(x * x * -0.5) * kInvSqrt2Pi * (2 - x * x);
  const Tensor t = tanh((x + x * x * x * kGeluC) * kGeluK);
  const Tensor du = (1 + x * x * (3 * kGeluC)) * kGeluK;
  const Tensor ddu = x * (6 * kGeluC * kGeluK);
  return (1 - t * t) * (du - x * t * du * du + x * ddu * 0.5);
}

// ---------------------------------------------------------------------------------------
// CPU computation.

// out = op(input); input has out's dtype.
template <class Op>
void compute_unary(const Tensor& out, const Tensor& input, const Op& op) {
  if constexpr (is_scalar_op<Op>()) {
    visit_dtype(out.dtype(), [&]<class T>() {
      detail::unary_kernel<T>(out, input, [](compute_type_t<T> x) { return Op::scalar(x); });
    });
  } else {
    detail::visit_floating(out.dtype(), [&]<class T>() {
      detail::blockwise_unary<T>(out, input, [&op](const auto* x, auto* y, int64_t n) {
        as_array(y, n) = op.array(as_array(x, n));
      });
    });
  }
}

Tensor converted(const Tensor& t, ScalarType dtype) { return t.dtype() == dtype ? t : detail::cast_to(t, dtype); }

// CPU compute (Note [Structured ops]): out has the shape function's sizes and dtype; it may be
// strided, or self itself (in place, out=).
template <class Op>
void unary_out_cpu(const Tensor& out, const Tensor& self) {
  compute_unary(out, converted(self, out.dtype()), Op{});
}

void gelu_out_cpu(const Tensor& out, const Tensor& self, std::string_view approximate) {
  if (gelu_form("gelu", approximate) == GeluForm::none) compute_unary(out, self, GeluErfOp{});
  else compute_unary(out, self, GeluTanhOp{});
}

void gelu_backward_out_cpu(const Tensor& out, const Tensor& grad_output, const Tensor& self,
                           std::string_view approximate) {
  const ScalarType dtype = out.dtype();
  const Tensor g = converted(grad_output, dtype), x = converted(self, dtype);
  const GeluForm form = gelu_form("gelu_backward", approximate);
  detail::visit_floating(dtype, [&]<class T>() {
    detail::blockwise_binary<T>(out, g, x, [form](const auto* dy, const auto* input, auto* dx, int64_t n) {
      if (form == GeluForm::none) as_array(dx, n) = GeluErfBackwardOp::array(as_array(dy, n), as_array(input, n));
      else as_array(dx, n) = GeluTanhBackwardOp::array(as_array(dy, n), as_array(input, n));
    });
  });
}

// g (1 - y^2) and g y (1 - y). (1 - y^2 may be one fused multiply-add where the target has one,
// as on CUDA, so tanh's gradient can differ from the composite g * (1 - y * y) in the last bit.)
template <bool Tanh>
void activation_backward_out_cpu(const Tensor& out, const Tensor& grad_output, const Tensor& output) {
  const ScalarType dtype = out.dtype();
  const Tensor g = converted(grad_output, dtype), y = converted(output, dtype);
  detail::visit_floating(dtype, [&]<class T>() {
    detail::blockwise_binary<T>(out, g, y, [](const auto* dy, const auto* result, auto* dx, int64_t n) {
      using C = std::remove_cvref_t<decltype(*result)>;
      const auto r = as_array(result, n);
      if constexpr (Tanh) as_array(dx, n) = as_array(dy, n) * (C(1) - r * r);
      else as_array(dx, n) = as_array(dy, n) * r * (C(1) - r);
    });
  });
}

// clamp (Note [clamp dtype] in shapes/unary.h): the shape function has checked the bounds.
void clamp_out_cpu(const Tensor& out, const Tensor& self, const std::optional<Scalar>& min,
                   const std::optional<Scalar>& max) {
  const Tensor input = converted(self, out.dtype());
  visit_dtype(out.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      using C = compute_type_t<T>;
      using Limits = std::numeric_limits<C>;
      const C lowest = Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
      const C highest = Limits::has_infinity ? Limits::infinity() : Limits::max();
      const C low = min ? detail::checked_scalar<T>(*min, "clamp") : lowest;
      const C high = max ? detail::checked_scalar<T>(*max, "clamp") : highest;
      detail::unary_kernel<T>(out, input, [low, high](C x) {
        const C raised = x < low ? low : x;
        return raised > high ? high : raised;
      });
    }
  });
}

// fill_ and zero_: the value converts with overflow checks (Note [Checked scalar conversion]).
void fill_out_cpu(const Tensor& out, const Tensor&, const Scalar& value) { detail::fill_kernel(out, value, "fill_"); }
void zero_out_cpu(const Tensor& out, const Tensor&) { detail::fill_kernel(out, 0, "zero_"); }

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  using detail::def_structured, detail::def_structured_in_place, detail::def_structured_out;
  def_structured<&shapes::neg>(m, "neg(Tensor self) -> Tensor");
  def_structured<&shapes::abs>(m, "abs(Tensor self) -> Tensor");
  def_structured<&shapes::sign>(m, "sign(Tensor self) -> Tensor");
  def_structured<&shapes::exp>(m, "exp(Tensor self) -> Tensor");
  def_structured<&shapes::log>(m, "log(Tensor self) -> Tensor");
  def_structured<&shapes::sqrt>(m, "sqrt(Tensor self) -> Tensor");
  def_structured<&shapes::rsqrt>(m, "rsqrt(Tensor self) -> Tensor");
  def_structured<&shapes::sin>(m, "sin(Tensor self) -> Tensor");
  def_structured<&shapes::cos>(m, "cos(Tensor self) -> Tensor");
  def_structured<&shapes::tanh>(m, "tanh(Tensor self) -> Tensor");
  def_structured<&shapes::sigmoid>(m, "sigmoid(Tensor self) -> Tensor");
  def_structured<&shapes::relu>(m, "relu(Tensor self) -> Tensor");
  def_structured<&shapes::silu>(m, "silu(Tensor self) -> Tensor");
  def_structured<&shapes::gelu>(m, "gelu(Tensor self, *, str approximate='none') -> Tensor");
  def_structured<&shapes::tanh_backward>(m, "tanh_backward(Tensor grad_output, Tensor output) -> Tensor");
  def_structured<&shapes::sigmoid_backward>(m, "sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor");
  def_structured<&shapes::gelu_backward>(
      m, "gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor");
  def_structured<&shapes::clamp>(m, "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor");
  def_structured_in_place<&shapes::relu_in_place, "relu_">(m, "relu_(Tensor(a!) self) -> Tensor(a!)");
  def_structured_in_place<&shapes::clamp_in_place, "clamp_">(
      m, "clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)");
  // Note [Idempotent in-place ops] in structured.h: self may be expanded.
  def_structured_in_place<&shapes::zero_in_place, "zero_", detail::SelfOverlap::allow>(
      m, "zero_(Tensor(a!) self) -> Tensor(a!)");
  def_structured_in_place<&shapes::fill_scalar_in_place, "fill_", detail::SelfOverlap::allow>(
      m, "fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)");
  def_structured_out<&shapes::neg, "neg.out">(m, "neg.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::abs, "abs.out">(m, "abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::sign, "sign.out">(m, "sign.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::exp, "exp.out">(m, "exp.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::log, "log.out">(m, "log.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::sqrt, "sqrt.out">(m, "sqrt.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::rsqrt, "rsqrt.out">(m, "rsqrt.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::sin, "sin.out">(m, "sin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::cos, "cos.out">(m, "cos.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::tanh, "tanh.out">(m, "tanh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::sigmoid, "sigmoid.out">(m, "sigmoid.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::silu, "silu.out">(m, "silu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::gelu, "gelu.out">(
      m, "gelu.out(Tensor self, *, str approximate='none', Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::clamp, "clamp.out">(
      m, "clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out) -> Tensor(a!)");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  using detail::structured, detail::structured_in_place, detail::structured_out;
  m.impl("neg", structured<&shapes::neg, &unary_out_cpu<NegOp>>());
  m.impl("abs", structured<&shapes::abs, &unary_out_cpu<AbsOp>>());
  m.impl("sign", structured<&shapes::sign, &unary_out_cpu<SignOp>>());
  m.impl("exp", structured<&shapes::exp, &unary_out_cpu<ExpOp>>());
  m.impl("log", structured<&shapes::log, &unary_out_cpu<LogOp>>());
  m.impl("sqrt", structured<&shapes::sqrt, &unary_out_cpu<SqrtOp>>());
  m.impl("rsqrt", structured<&shapes::rsqrt, &unary_out_cpu<RsqrtOp>>());
  m.impl("sin", structured<&shapes::sin, &unary_out_cpu<SinOp>>());
  m.impl("cos", structured<&shapes::cos, &unary_out_cpu<CosOp>>());
  m.impl("tanh", structured<&shapes::tanh, &unary_out_cpu<TanhOp>>());
  m.impl("sigmoid", structured<&shapes::sigmoid, &unary_out_cpu<SigmoidOp>>());
  m.impl("relu", structured<&shapes::relu, &unary_out_cpu<ReluOp>>());
  m.impl("silu", structured<&shapes::silu, &unary_out_cpu<SiluOp>>());
  m.impl("gelu", structured<&shapes::gelu, &gelu_out_cpu>());
  m.impl("gelu_backward", structured<&shapes::gelu_backward, &gelu_backward_out_cpu>());
  m.impl("tanh_backward", structured<&shapes::tanh_backward, &activation_backward_out_cpu<true>>());
  m.impl("sigmoid_backward", structured<&shapes::sigmoid_backward, &activation_backward_out_cpu<false>>());
  m.impl("clamp", structured<&shapes::clamp, &clamp_out_cpu>());
  m.impl("relu_", structured_in_place<&shapes::relu_in_place, &unary_out_cpu<ReluOp>, "relu_">());
  m.impl("clamp_", structured_in_place<&shapes::clamp_in_place, &clamp_out_cpu, "clamp_">());
  constexpr auto allow = detail::SelfOverlap::allow;
  m.impl("zero_", structured_in_place<&shapes::zero_in_place, &zero_out_cpu, "zero_", &detail::copy_kernel, allow>());
  m.impl("fill_.Scalar",
         structured_in_place<&shapes::fill_scalar_in_place, &fill_out_cpu, "fill_", &detail::copy_kernel, allow>());
  m.impl("neg.out", structured_out<&shapes::neg, &unary_out_cpu<NegOp>, "neg.out">());
  m.impl("abs.out", structured_out<&shapes::abs, &unary_out_cpu<AbsOp>, "abs.out">());
  m.impl("sign.out", structured_out<&shapes::sign, &unary_out_cpu<SignOp>, "sign.out">());
  m.impl("exp.out", structured_out<&shapes::exp, &unary_out_cpu<ExpOp>, "exp.out">());
  m.impl("log.out", structured_out<&shapes::log, &unary_out_cpu<LogOp>, "log.out">());
  m.impl("sqrt.out", structured_out<&shapes::sqrt, &unary_out_cpu<SqrtOp>, "sqrt.out">());
  m.impl("rsqrt.out", structured_out<&shapes::rsqrt, &unary_out_cpu<RsqrtOp>, "rsqrt.out">());
  m.impl("sin.out", structured_out<&shapes::sin, &unary_out_cpu<SinOp>, "sin.out">());
  m.impl("cos.out", structured_out<&shapes::cos, &unary_out_cpu<CosOp>, "cos.out">());
  m.impl("tanh.out", structured_out<&shapes::tanh, &unary_out_cpu<TanhOp>, "tanh.out">());
  m.impl("sigmoid.out", structured_out<&shapes::sigmoid, &unary_out_cpu<SigmoidOp>, "sigmoid.out">());
  m.impl("silu.out", structured_out<&shapes::silu, &unary_out_cpu<SiluOp>, "silu.out">());
  m.impl("gelu.out", structured_out<&shapes::gelu, &gelu_out_cpu, "gelu.out">());
  m.impl("clamp.out", structured_out<&shapes::clamp, &clamp_out_cpu, "clamp.out">());
}

// ---------------------------------------------------------------------------------------
// Derivatives.

namespace {
using autograd::AutogradContext;

template <class Op>
struct UnaryFunction : autograd::Function<UnaryFunction<Op>> {
  static constexpr std::string_view name() { return Op::backward_name; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self) {
    Tensor result = Op::call(self);
    ctx->save_for_backward({Op::saves_self ? self : Tensor(), Op::saves_result ? result : Tensor()});
    return result;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = autograd::detail::saved_tensors(*ctx);
    return autograd::detail::gradients_in(std::move(grads), Op::derivative(grads[0], saved[0], saved[1]));
  }
};

struct ReluInplaceFunction : autograd::Function<ReluInplaceFunction> {
  static constexpr std::string_view name() { return "ReluBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self) {
    relu_(self);
    ctx->mark_dirty({self});
    ctx->save_for_backward({self});
    return self;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(
        std::move(grads), ReluOp::derivative(grads[0], Tensor(), autograd::detail::saved_tensors(*ctx)[0]));
  }
};

struct GeluFunction : autograd::Function<GeluFunction> {
  static constexpr std::string_view name() { return "GeluBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, std::string_view approximate) {
    ctx->save_for_backward({self});
    ctx->saved_data["approximate"] = approximate;
    return gelu(self, approximate);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(
        std::move(grads),
        gelu_backward(grads[0], autograd::detail::saved_tensors(*ctx)[0], ctx->saved_data["approximate"].to_string()),
        Tensor());
  }
};

// d(g gelu'(x)) = (dg gelu'(x), dg g gelu''(x)). See Note [gelu forms].
struct GeluBackwardFunction : autograd::Function<GeluBackwardFunction> {
  static constexpr std::string_view name() { return "GeluBackwardBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& grad_output, const Tensor& self,
                        std::string_view approximate) {
    ctx->save_for_backward({grad_output, self});
    ctx->saved_data["approximate"] = approximate;
    return gelu_backward(grad_output, self, approximate);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = autograd::detail::saved_tensors(*ctx);
    const std::string approximate = ctx->saved_data["approximate"].to_string();
    const Tensor& gg = grads[0];
    Tensor grad_grad_output = ctx->needs_input_grad(0) ? gelu_backward(gg, saved[1], approximate) : Tensor();
    Tensor grad_self = ctx->needs_input_grad(1)
                           ? gg * saved[0] * gelu_second_derivative(saved[1], gelu_form("gelu", approximate))
                           : Tensor();
    return autograd::detail::gradients_in(std::move(grads), grad_grad_output, grad_self, Tensor());
  }
};

// d(g (1 - y^2)) = (dg (1 - y^2), -2 dg g y); d(g y (1 - y)) = (dg y (1 - y), dg g (1 - 2y)).
template <bool Tanh>
struct ActivationBackwardFunction : autograd::Function<ActivationBackwardFunction<Tanh>> {
  static constexpr std::string_view name() { return Tanh ? "TanhBackwardBackward" : "SigmoidBackwardBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& grad_output, const Tensor& output) {
    ctx->save_for_backward({grad_output, output});
    return Tanh ? tanh_backward(grad_output, output) : sigmoid_backward(grad_output, output);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = autograd::detail::saved_tensors(*ctx);
    const Tensor& gg = grads[0];
    const Tensor &g = saved[0], &y = saved[1];
    Tensor grad_grad_output, grad_output;
    if (ctx->needs_input_grad(0)) grad_grad_output = Tanh ? tanh_backward(gg, y) : sigmoid_backward(gg, y);
    if (ctx->needs_input_grad(1)) grad_output = Tanh ? gg * g * y * -2 : gg * g * (1 - 2 * y);
    return autograd::detail::gradients_in(std::move(grads), grad_grad_output, grad_output);
  }
};

// The gradient passes where min <= self <= max (bounds included), as in PyTorch.
Tensor clamp_derivative(const Tensor& g, const Tensor& self, const IValue& min, const IValue& max) {
  Tensor inside;
  if (!min.is_none()) inside = ge(self, min.to_scalar());
  if (!max.is_none()) inside = inside.defined() ? mul(inside, le(self, max.to_scalar())) : le(self, max.to_scalar());
  return where(inside, g, zero_scalar_like(g));
}

struct ClampFunction : autograd::Function<ClampFunction> {
  static constexpr std::string_view name() { return "ClampBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const std::optional<Scalar>& min,
                        const std::optional<Scalar>& max) {
    ctx->save_for_backward({self});
    ctx->saved_data["min"] = min;
    ctx->saved_data["max"] = max;
    return clamp(self, min, max);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads),
                                          clamp_derivative(grads[0], autograd::detail::saved_tensors(*ctx)[0],
                                                           ctx->saved_data["min"], ctx->saved_data["max"]),
                                          Tensor(), Tensor());
  }
};

// clamp_ needs self's old values for its mask: it keeps a copy when a gradient is wanted.
struct ClampInplaceFunction : autograd::Function<ClampInplaceFunction> {
  static constexpr std::string_view name() { return "ClampBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const std::optional<Scalar>& min,
                        const std::optional<Scalar>& max) {
    Tensor original = ctx->needs_input_grad(0) ? self.clone() : Tensor();
    clamp_(self, min, max);
    ctx->mark_dirty({self});
    ctx->save_for_backward({original});
    ctx->saved_data["min"] = min;
    ctx->saved_data["max"] = max;
    return self;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return ClampFunction::backward(ctx, std::move(grads));
  }
};

// Filling cuts self off from its history: the gradient to the old values is zero.
struct FillFunction : autograd::Function<FillFunction> {
  static constexpr std::string_view name() { return "FillBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Scalar& value) {
    fill_(self, value);
    ctx->mark_dirty({self});
    return self;
  }
  static tensor_list backward(AutogradContext*, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), zeros_like(grads[0]), Tensor());
  }
};

struct ZeroFunction : autograd::Function<ZeroFunction> {
  static constexpr std::string_view name() { return "ZeroBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self) {
    zero_(self);
    ctx->mark_dirty({self});
    return self;
  }
  static tensor_list backward(AutogradContext*, tensor_list grads) {
    return autograd::detail::gradients_in(std::move(grads), zeros_like(grads[0]));
  }
};

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("neg", autograd::kernel<UnaryFunction<NegOp>>());
  m.impl("abs", autograd::kernel<UnaryFunction<AbsOp>>());
  m.impl("sign", autograd::kernel<UnaryFunction<SignOp>>());
  m.impl("exp", autograd::kernel<UnaryFunction<ExpOp>>());
  m.impl("log", autograd::kernel<UnaryFunction<LogOp>>());
  m.impl("sqrt", autograd::kernel<UnaryFunction<SqrtOp>>());
  m.impl("rsqrt", autograd::kernel<UnaryFunction<RsqrtOp>>());
  m.impl("sin", autograd::kernel<UnaryFunction<SinOp>>());
  m.impl("cos", autograd::kernel<UnaryFunction<CosOp>>());
  m.impl("tanh", autograd::kernel<UnaryFunction<TanhOp>>());
  m.impl("sigmoid", autograd::kernel<UnaryFunction<SigmoidOp>>());
  m.impl("relu", autograd::kernel<UnaryFunction<ReluOp>>());
  m.impl("silu", autograd::kernel<UnaryFunction<SiluOp>>());
  m.impl("gelu", autograd::kernel<GeluFunction>());
  m.impl("gelu_backward", autograd::kernel<GeluBackwardFunction>());
  m.impl("tanh_backward", autograd::kernel<ActivationBackwardFunction<true>>());
  m.impl("sigmoid_backward", autograd::kernel<ActivationBackwardFunction<false>>());
  m.impl("clamp", autograd::kernel<ClampFunction>());
  m.impl("relu_", autograd::kernel<ReluInplaceFunction>());
  m.impl("clamp_", autograd::kernel<ClampInplaceFunction>());
  m.impl("zero_", autograd::kernel<ZeroFunction>());
  m.impl("fill_.Scalar", autograd::kernel<FillFunction>());
}

using UnaryHandle = TypedOperatorHandle<Tensor(const Tensor&)>;
UnaryHandle unary_handle(const char* name) { return find_op(name).typed<Tensor(const Tensor&)>(); }
using ClampSignature = Tensor(const Tensor&, const std::optional<Scalar>&, const std::optional<Scalar>&);
}  // namespace

// ---------------------------------------------------------------------------------------
// Free functions.

Tensor neg(const Tensor& self) { static const UnaryHandle op = unary_handle("strata::neg"); return op.call(self); }
Tensor abs(const Tensor& self) { static const UnaryHandle op = unary_handle("strata::abs"); return op.call(self); }
Tensor sign(const Tensor& self) { static const UnaryHandle op = unary_handle("strata::sign"); return op.call(self); }
Tensor exp(const Tensor& self) { static const UnaryHandle op = unary_handle("strata::exp"); return op.call(self); }
Tensor log(const Tensor& self) { static const UnaryHandle op = unary_handle("strata::log"); return op.call(self); }
Tensor sqrt(const Tensor& self) { static const UnaryHandle op = unary_handle("strata::sqrt"); return op.call(self); }
Tensor rsqrt(const Tensor& self) { static const UnaryHandle op = unary_handle("strata::rsqrt"); return op.call(self); }
Tensor sin(const Tensor& self) { static const UnaryHandle op = unary_handle("strata::sin"); return op.call(self); }
Tensor cos(const Tensor& self) { static const UnaryHandle op = unary_handle("strata::cos"); return op.call(self); }
Tensor tanh(const Tensor& self) { static const UnaryHandle op = unary_handle("strata::tanh"); return op.call(self); }
Tensor sigmoid(const Tensor& self) {
  static const UnaryHandle op = unary_handle("strata::sigmoid");
  return op.call(self);
}
Tensor relu(const Tensor& self) { static const UnaryHandle op = unary_handle("strata::relu"); return op.call(self); }
Tensor silu(const Tensor& self) { static const UnaryHandle op = unary_handle("strata::silu"); return op.call(self); }

Tensor gelu(const Tensor& self, std::string_view approximate) {
  static const auto op = find_op("strata::gelu").typed<Tensor(const Tensor&, std::string_view)>();
  return op.call(self, approximate);
}
Tensor gelu_backward(const Tensor& grad_output, const Tensor& self, std::string_view approximate) {
  static const auto op =
      find_op("strata::gelu_backward").typed<Tensor(const Tensor&, const Tensor&, std::string_view)>();
  return op.call(grad_output, self, approximate);
}

Tensor clamp(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  static const auto op = find_op("strata::clamp").typed<ClampSignature>();
  return op.call(self, min, max);
}
const Tensor& clamp_(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  static const auto op = find_op("strata::clamp_").typed<ClampSignature>();
  op.call(self, min, max);
  return self;
}
const Tensor& relu_(const Tensor& self) {
  static const UnaryHandle op = unary_handle("strata::relu_");
  op.call(self);
  return self;
}
const Tensor& zero_(const Tensor& self) {
  static const UnaryHandle op = unary_handle("strata::zero_");
  op.call(self);
  return self;
}
const Tensor& fill_(const Tensor& self, const Scalar& value) {
  static const auto op = find_op("strata::fill_.Scalar").typed<Tensor(const Tensor&, const Scalar&)>();
  op.call(self, value);
  return self;
}

// out= variants (LibTorch's at::exp_out order: out first).
namespace {
using UnaryOutHandle = TypedOperatorHandle<Tensor(const Tensor&, const Tensor&)>;
UnaryOutHandle unary_out_handle(const char* name) { return find_op(name).typed<Tensor(const Tensor&, const Tensor&)>(); }
const Tensor& call_unary_out(const UnaryOutHandle& op, const Tensor& out, const Tensor& self) {
  op.call(self, out);
  return out;
}
}  // namespace

const Tensor& neg_out(const Tensor& out, const Tensor& self) {
  static const UnaryOutHandle op = unary_out_handle("strata::neg.out");
  return call_unary_out(op, out, self);
}
const Tensor& abs_out(const Tensor& out, const Tensor& self) {
  static const UnaryOutHandle op = unary_out_handle("strata::abs.out");
  return call_unary_out(op, out, self);
}
const Tensor& sign_out(const Tensor& out, const Tensor& self) {
  static const UnaryOutHandle op = unary_out_handle("strata::sign.out");
  return call_unary_out(op, out, self);
}
const Tensor& exp_out(const Tensor& out, const Tensor& self) {
  static const UnaryOutHandle op = unary_out_handle("strata::exp.out");
  return call_unary_out(op, out, self);
}
const Tensor& log_out(const Tensor& out, const Tensor& self) {
  static const UnaryOutHandle op = unary_out_handle("strata::log.out");
  return call_unary_out(op, out, self);
}
const Tensor& sqrt_out(const Tensor& out, const Tensor& self) {
  static const UnaryOutHandle op = unary_out_handle("strata::sqrt.out");
  return call_unary_out(op, out, self);
}
const Tensor& rsqrt_out(const Tensor& out, const Tensor& self) {
  static const UnaryOutHandle op = unary_out_handle("strata::rsqrt.out");
  return call_unary_out(op, out, self);
}
const Tensor& sin_out(const Tensor& out, const Tensor& self) {
  static const UnaryOutHandle op = unary_out_handle("strata::sin.out");
  return call_unary_out(op, out, self);
}
const Tensor& cos_out(const Tensor& out, const Tensor& self) {
  static const UnaryOutHandle op = unary_out_handle("strata::cos.out");
  return call_unary_out(op, out, self);
}
const Tensor& tanh_out(const Tensor& out, const Tensor& self) {
  static const UnaryOutHandle op = unary_out_handle("strata::tanh.out");
  return call_unary_out(op, out, self);
}
const Tensor& sigmoid_out(const Tensor& out, const Tensor& self) {
  static const UnaryOutHandle op = unary_out_handle("strata::sigmoid.out");
  return call_unary_out(op, out, self);
}
const Tensor& silu_out(const Tensor& out, const Tensor& self) {
  static const UnaryOutHandle op = unary_out_handle("strata::silu.out");
  return call_unary_out(op, out, self);
}

const Tensor& gelu_out(const Tensor& out, const Tensor& self, std::string_view approximate) {
  static const auto op =
      find_op("strata::gelu.out").typed<Tensor(const Tensor&, std::string_view, const Tensor&)>();
  op.call(self, approximate, out);
  return out;
}
const Tensor& clamp_out(const Tensor& out, const Tensor& self, const std::optional<Scalar>& min,
                        const std::optional<Scalar>& max) {
  static const auto op = find_op("strata::clamp.out")
                             .typed<Tensor(const Tensor&, const std::optional<Scalar>&, const std::optional<Scalar>&,
                                           const Tensor&)>();
  op.call(self, min, max, out);
  return out;
}

}  // namespace strata
