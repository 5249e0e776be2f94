// Unary math and activations: neg abs sign exp log sqrt rsqrt sin cos tanh sigmoid relu silu
// gelu clamp, the in-place relu_ clamp_ zero_ fill_, and gelu_backward (gelu's derivative as
// an op of its own, so that it has a derivative too). Schema, shape/dtype function, CPU and
// Meta kernels, derivatives and free functions, side by side.
#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>

#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/ops/blockwise.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <string>

namespace strata {
namespace {

// ---------------------------------------------------------------------------------------
// Shape and dtype: every unary op keeps its input's shape.

// Note [Unary dtype rules]
// As in PyTorch: exp, log, sqrt, rsqrt, sin, cos, tanh and sigmoid compute integral and bool
// inputs in the default float dtype (float32); gelu and silu accept floating inputs only;
// neg and relu keep the dtype but refuse bool; abs and sign keep every dtype (identity on
// bool). float16 and bfloat16 keep their dtype and compute in float.
enum class DtypeRule { keep, keep_no_bool, promote_to_float, floating_only };

ScalarType unary_dtype(const char* op, ScalarType input, DtypeRule rule) {
  switch (rule) {
    case DtypeRule::keep: return input;
    case DtypeRule::keep_no_bool:
      STRATA_CHECK_TYPE(input != kBool, "[", op, "] Boolean inputs are not supported",
                        std::string_view(op).starts_with("neg") ? "; to invert a mask use logical_not()" : "");
      return input;
    case DtypeRule::promote_to_float: return is_floating_point(input) ? input : kFloat32;
    case DtypeRule::floating_only:
      STRATA_CHECK_TYPE(is_floating_point(input), "[", op, "] expected a floating point input, got ", input);
      return input;
  }
  return input;
}

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

// relu(NaN) is NaN. The gradient passes where the result is positive.
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
    return where(gt(result, 0), g, zero_scalar_like(g));
  }
};

struct ExpOp {
  static constexpr const char* name = "exp";
  static constexpr std::string_view backward_name = "ExpBackward";
  static constexpr DtypeRule rule = DtypeRule::promote_to_float;
  static constexpr bool saves_self = false, saves_result = true;
  template <class X>
  static auto array(const X& x) { return x.exp(); }
  static Tensor call(const Tensor& x) { return exp(x); }
  static Tensor derivative(const Tensor& g, const Tensor&, const Tensor& result) { return g * result; }
};

struct LogOp {
  static constexpr const char* name = "log";
  static constexpr std::string_view backward_name = "LogBackward";
  static constexpr DtypeRule rule = DtypeRule::promote_to_float;
  static constexpr bool saves_self = true, saves_result = false;
  template <class X>
  static auto array(const X& x) { return x.log(); }
  static Tensor call(const Tensor& x) { return log(x); }
  static Tensor derivative(const Tensor& g, const Tensor& self, const Tensor&) { return g / self; }
};

struct SqrtOp {
  static constexpr const char* name = "sqrt";
  static constexpr std::string_view backward_name = "SqrtBackward";
  static constexpr DtypeRule rule = DtypeRule::promote_to_float;
  static constexpr bool saves_self = false, saves_result = true;
  template <class X>
  static auto array(const X& x) { return x.sqrt(); }
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
  static auto array(const X& x) { return x.rsqrt(); }
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
  static Tensor derivative(const Tensor& g, const Tensor&, const Tensor& result) {
    return g * (1 - result * result);
  }
};

struct SigmoidOp {
  static constexpr const char* name = "sigmoid";
  static constexpr std::string_view backward_name = "SigmoidBackward";
  static constexpr DtypeRule rule = DtypeRule::promote_to_float;
  static constexpr bool saves_self = false, saves_result = true;
  template <class X>
  static auto array(const X& x) { return x.logistic(); }
  static Tensor call(const Tensor& x) { return sigmoid(x); }
  static Tensor derivative(const Tensor& g, const Tensor&, const Tensor& result) {
    return g * result * (1 - result);
  }
};

// silu(x) = x sigmoid(x); silu'(x) = s (1 + x (1 - s)) with s = sigmoid(x).
struct SiluOp {
  static constexpr const char* name = "silu";
  static constexpr std::string_view backward_name = "SiluBackward";
  static constexpr DtypeRule rule = DtypeRule::floating_only;
  static constexpr bool saves_self = true, saves_result = false;
  template <class X>
  static auto array(const X& x) { return x * x.logistic(); }
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
enum class GeluForm { none, tanh };
constexpr double kSqrtHalf = std::numbers::sqrt2 / 2;
constexpr double kInvSqrt2Pi = std::numbers::inv_sqrtpi / std::numbers::sqrt2;
constexpr double kGeluK = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;  // sqrt(2 / pi)
constexpr double kGeluC = 0.044715;

GeluForm gelu_form(const char* op, std::string_view approximate) {
  if (approximate == "none") return GeluForm::none;
  STRATA_CHECK_VALUE(approximate == "tanh", "[", op, "] approximate must be 'none' or 'tanh', got '", approximate, "'");
  return GeluForm::tanh;
}

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
    return g * (C(0.5) * (C(1) + (x * C(kSqrtHalf)).erf()) + x * (x.square() * C(-0.5)).exp() * C(kInvSqrt2Pi));
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

template <class Op>
Tensor unary_cpu(const Tensor& self) {
  const ScalarType dtype = unary_dtype(Op::name, self.dtype(), Op::rule);
  Tensor out = detail::make_empty(self.sizes(), dtype, self.device());
  compute_unary(out, converted(self, dtype), Op{});
  return out;
}

template <class Op>
Tensor unary_meta(const Tensor& self) {
  return detail::make_empty(self.sizes(), unary_dtype(Op::name, self.dtype(), Op::rule), self.device());
}

Tensor relu_in_place_cpu(const Tensor& self) {
  (void)unary_dtype("relu_", self.dtype(), DtypeRule::keep_no_bool);
  detail::check_no_internal_overlap("relu_", self);
  compute_unary(self, self, ReluOp{});
  return self;
}

Tensor relu_in_place_meta(const Tensor& self) {
  (void)unary_dtype("relu_", self.dtype(), DtypeRule::keep_no_bool);
  return self;
}

Tensor gelu_cpu(const Tensor& self, std::string_view approximate) {
  const GeluForm form = gelu_form("gelu", approximate);
  Tensor out = detail::make_empty(self.sizes(), unary_dtype("gelu", self.dtype(), DtypeRule::floating_only),
                                  self.device());
  if (form == GeluForm::none) compute_unary(out, self, GeluErfOp{});
  else compute_unary(out, self, GeluTanhOp{});
  return out;
}

Tensor gelu_meta(const Tensor& self, std::string_view approximate) {
  (void)gelu_form("gelu", approximate);
  return detail::make_empty(self.sizes(), unary_dtype("gelu", self.dtype(), DtypeRule::floating_only), self.device());
}

struct GeluBackwardShape {
  DimVector sizes;
  ScalarType dtype;
};

GeluBackwardShape gelu_backward_shape(const Tensor& grad_output, const Tensor& self, std::string_view approximate) {
  (void)gelu_form("gelu_backward", approximate);
  detail::check_same_device("gelu_backward", grad_output, self);
  const ScalarType dtype = result_type(grad_output, self);
  STRATA_CHECK_TYPE(is_floating_point(dtype), "[gelu_backward] expected floating point inputs, got ",
                    grad_output.dtype(), " and ", self.dtype());
  return {broadcast_shapes(grad_output.sizes(), self.sizes(), "gelu_backward"), dtype};
}

Tensor gelu_backward_cpu(const Tensor& grad_output, const Tensor& self, std::string_view approximate) {
  const GeluBackwardShape shape = gelu_backward_shape(grad_output, self, approximate);
  Tensor out = detail::make_empty(shape.sizes, shape.dtype, self.device());
  const Tensor g = converted(grad_output, shape.dtype), x = converted(self, shape.dtype);
  const GeluForm form = gelu_form("gelu_backward", approximate);
  detail::visit_floating(shape.dtype, [&]<class T>() {
    detail::blockwise_binary<T>(out, g, x, [form](const auto* dy, const auto* input, auto* dx, int64_t n) {
      if (form == GeluForm::none) as_array(dx, n) = GeluErfBackwardOp::array(as_array(dy, n), as_array(input, n));
      else as_array(dx, n) = GeluTanhBackwardOp::array(as_array(dy, n), as_array(input, n));
    });
  });
  return out;
}

Tensor gelu_backward_meta(const Tensor& grad_output, const Tensor& self, std::string_view approximate) {
  const GeluBackwardShape shape = gelu_backward_shape(grad_output, self, approximate);
  return detail::make_empty(shape.sizes, shape.dtype, self.device());
}

// ---------------------------------------------------------------------------------------
// clamp. Note [clamp dtype]
// Like PyTorch, a floating self keeps its dtype; otherwise the bounds take part in type
// promotion as Scalars (int32 clamped to 0.5 gives float32). Bool results are refused.
// clamp_ requires the promoted dtype to be self's. A missing bound is the dtype's extreme,
// NaN inputs stay NaN, and min > max gives max everywhere.
ScalarType clamp_dtype(const char* op, const Tensor& self, const std::optional<Scalar>& min,
                       const std::optional<Scalar>& max) {
  STRATA_CHECK_VALUE(min || max, "[", op, "] at least one of 'min' or 'max' must not be None");
  ScalarType dtype = self.dtype();
  if (!is_floating_point(dtype)) {
    const bool floating = (min && min->is_floating_point()) || (max && max->is_floating_point());
    const bool integral = (min && min->is_integral()) || (max && max->is_integral());
    dtype = result_type(self, floating ? Scalar(0.0) : integral ? Scalar(int64_t{0}) : Scalar(false));
  }
  STRATA_CHECK_TYPE(dtype != kBool, "[", op, "] Boolean inputs are not supported");
  return dtype;
}

void compute_clamp(const char* op, const Tensor& out, const Tensor& input, const std::optional<Scalar>& min,
                   const std::optional<Scalar>& max) {
  visit_dtype(out.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      using C = compute_type_t<T>;
      using Limits = std::numeric_limits<C>;
      const C lowest = Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
      const C highest = Limits::has_infinity ? Limits::infinity() : Limits::max();
      const C low = min ? detail::checked_scalar<T>(*min, op) : lowest;
      const C high = max ? detail::checked_scalar<T>(*max, op) : highest;
      detail::unary_kernel<T>(out, input, [low, high](C x) {
        const C raised = x < low ? low : x;
        return raised > high ? high : raised;
      });
    }
  });
}

Tensor clamp_cpu(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  const ScalarType dtype = clamp_dtype("clamp", self, min, max);
  Tensor out = detail::make_empty(self.sizes(), dtype, self.device());
  compute_clamp("clamp", out, converted(self, dtype), min, max);
  return out;
}

Tensor clamp_meta(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return detail::make_empty(self.sizes(), clamp_dtype("clamp", self, min, max), self.device());
}

void check_clamp_in_place(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  const ScalarType dtype = clamp_dtype("clamp_", self, min, max);
  STRATA_CHECK_TYPE(dtype == self.dtype(), "[clamp_] result type ", dtype, " can't be cast to the desired output type ",
                    self.dtype());
  detail::check_no_internal_overlap("clamp_", self);
}

Tensor clamp_in_place_cpu(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  check_clamp_in_place(self, min, max);
  compute_clamp("clamp_", self, self, min, max);
  return self;
}

Tensor clamp_in_place_meta(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  check_clamp_in_place(self, min, max);
  return self;
}

// ---------------------------------------------------------------------------------------
// fill_ and zero_: the value converts with overflow checks (Note [Checked scalar conversion]).

Tensor fill_cpu(const Tensor& self, const Scalar& value) {
  detail::fill_kernel(self, value, "fill_");
  return self;
}

Tensor fill_meta(const Tensor& self, const Scalar& value) {
  visit_dtype(self.dtype(), [&]<class T>() { (void)detail::checked_scalar<T>(value, "fill_"); });
  return self;
}

Tensor zero_cpu(const Tensor& self) { return fill_cpu(self, 0); }
Tensor zero_meta(const Tensor& self) { return fill_meta(self, 0); }

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  for (const char* name : {"neg", "abs", "sign", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
                           "relu", "silu"})
    m.def(std::string(name) + "(Tensor self) -> Tensor");
  m.def("gelu(Tensor self, *, str approximate='none') -> Tensor");
  m.def("gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor");
  m.def("clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor");
  m.def("relu_(Tensor(a!) self) -> Tensor(a!)");
  m.def("clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)");
  m.def("zero_(Tensor(a!) self) -> Tensor(a!)");
  m.def("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  m.impl("neg", &unary_cpu<NegOp>);
  m.impl("abs", &unary_cpu<AbsOp>);
  m.impl("sign", &unary_cpu<SignOp>);
  m.impl("exp", &unary_cpu<ExpOp>);
  m.impl("log", &unary_cpu<LogOp>);
  m.impl("sqrt", &unary_cpu<SqrtOp>);
  m.impl("rsqrt", &unary_cpu<RsqrtOp>);
  m.impl("sin", &unary_cpu<SinOp>);
  m.impl("cos", &unary_cpu<CosOp>);
  m.impl("tanh", &unary_cpu<TanhOp>);
  m.impl("sigmoid", &unary_cpu<SigmoidOp>);
  m.impl("relu", &unary_cpu<ReluOp>);
  m.impl("silu", &unary_cpu<SiluOp>);
  m.impl("gelu", &gelu_cpu);
  m.impl("gelu_backward", &gelu_backward_cpu);
  m.impl("clamp", &clamp_cpu);
  m.impl("relu_", &relu_in_place_cpu);
  m.impl("clamp_", &clamp_in_place_cpu);
  m.impl("zero_", &zero_cpu);
  m.impl("fill_.Scalar", &fill_cpu);
}

STRATA_LIBRARY_IMPL(strata, Meta, m) {
  m.impl("neg", &unary_meta<NegOp>);
  m.impl("abs", &unary_meta<AbsOp>);
  m.impl("sign", &unary_meta<SignOp>);
  m.impl("exp", &unary_meta<ExpOp>);
  m.impl("log", &unary_meta<LogOp>);
  m.impl("sqrt", &unary_meta<SqrtOp>);
  m.impl("rsqrt", &unary_meta<RsqrtOp>);
  m.impl("sin", &unary_meta<SinOp>);
  m.impl("cos", &unary_meta<CosOp>);
  m.impl("tanh", &unary_meta<TanhOp>);
  m.impl("sigmoid", &unary_meta<SigmoidOp>);
  m.impl("relu", &unary_meta<ReluOp>);
  m.impl("silu", &unary_meta<SiluOp>);
  m.impl("gelu", &gelu_meta);
  m.impl("gelu_backward", &gelu_backward_meta);
  m.impl("clamp", &clamp_meta);
  m.impl("relu_", &relu_in_place_meta);
  m.impl("clamp_", &clamp_in_place_meta);
  m.impl("zero_", &zero_meta);
  m.impl("fill_.Scalar", &fill_meta);
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
    const tensor_list saved = ctx->get_saved_variables();
    return {Op::derivative(grads[0], saved[0], saved[1])};
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
    return {ReluOp::derivative(grads[0], Tensor(), ctx->get_saved_variables()[0])};
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
    return {gelu_backward(grads[0], ctx->get_saved_variables()[0], ctx->saved_data["approximate"].to_string()),
            Tensor()};
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
    const tensor_list saved = ctx->get_saved_variables();
    const std::string approximate = ctx->saved_data["approximate"].to_string();
    const Tensor& gg = grads[0];
    Tensor grad_grad_output = ctx->needs_input_grad(0) ? gelu_backward(gg, saved[1], approximate) : Tensor();
    Tensor grad_self = ctx->needs_input_grad(1)
                           ? gg * saved[0] * gelu_second_derivative(saved[1], gelu_form("gelu", approximate))
                           : Tensor();
    return {grad_grad_output, grad_self, Tensor()};
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
    return {clamp_derivative(grads[0], ctx->get_saved_variables()[0], ctx->saved_data["min"], ctx->saved_data["max"]),
            Tensor(), Tensor()};
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
  static tensor_list backward(AutogradContext*, tensor_list grads) { return {zeros_like(grads[0]), Tensor()}; }
};

struct ZeroFunction : autograd::Function<ZeroFunction> {
  static constexpr std::string_view name() { return "ZeroBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self) {
    zero_(self);
    ctx->mark_dirty({self});
    return self;
  }
  static tensor_list backward(AutogradContext*, tensor_list grads) { return {zeros_like(grads[0])}; }
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

}  // namespace strata
