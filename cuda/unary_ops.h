#pragma once
// Internal to cuda/: the math of the unary kernels (cuda/unary.cu) as functors that run on the
// host and the device alike, so the host tests check what the kernels compute against the CPU
// ops. No CUDA header: plain C++ on the host. Functors take and return compute types (float
// for the 16-bit floats); the semantics are ops/unary.cpp's.
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <type_traits>

#include <strata/cuda/indexing.h>

namespace strata::cuda::detail {

// ---------------------------------------------------------------------------------------
// Arithmetic helpers shared by the elementwise functors.

// Integer arithmetic that wraps like PyTorch's (two's complement) instead of overflowing into
// undefined behaviour; bool and floating types compute as usual.
template <class C>
STRATA_HOST_DEVICE constexpr C wrapping_add(C x, C y) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
    return static_cast<C>(static_cast<std::make_unsigned_t<C>>(x) + static_cast<std::make_unsigned_t<C>>(y));
  else return static_cast<C>(x + y);
}
template <class C>
STRATA_HOST_DEVICE constexpr C wrapping_sub(C x, C y) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
    return static_cast<C>(static_cast<std::make_unsigned_t<C>>(x) - static_cast<std::make_unsigned_t<C>>(y));
  else return static_cast<C>(x - y);
}
template <class C>
STRATA_HOST_DEVICE constexpr C wrapping_mul(C x, C y) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
    return static_cast<C>(static_cast<std::make_unsigned_t<C>>(x) * static_cast<std::make_unsigned_t<C>>(y));
  else return static_cast<C>(x * y);
}

// Note [Fused multiply-add]
// The CPU build (GCC with -march=native, contraction on) compiles x + a * b into one fused
// multiply-add, rounding once. Kernels whose CPU results are exact up to that rounding (add
// and sub with alpha, arange, linspace) call fma explicitly, so that they round the same way
// whatever nvcc decides to contract; alpha = 1 still gives exactly x + y.

template <class C>
STRATA_HOST_DEVICE constexpr bool is_nan(C x) {
  if constexpr (std::is_floating_point_v<C>) return x != x;
  else return false;
}

// ---------------------------------------------------------------------------------------
// Ops that keep integral dtypes (Note [Unary dtype rules] in ops/shapes/unary.h).

// Integers wrap: neg(INT8_MIN) is INT8_MIN.
struct NegOp {
  static constexpr const char* name = "neg";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) return wrapping_sub(C(0), x);
    else return -x;
  }
};

struct AbsOp {
  static constexpr const char* name = "abs";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C> || std::is_same_v<C, bool>) return x;
    else if constexpr (std::is_integral_v<C>) return x < 0 ? wrapping_sub(C(0), x) : x;
    else return std::abs(x);
  }
};

// sign(NaN) is 0, as in PyTorch.
struct SignOp {
  static constexpr const char* name = "sign";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C> || std::is_same_v<C, bool>) return static_cast<C>(x != 0);
    else return static_cast<C>((C(0) < x) - (x < C(0)));
  }
};

// relu(NaN) is NaN (NaN < 0 is false).
struct ReluOp {
  static constexpr const char* name = "relu";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C> || std::is_same_v<C, bool>) return x;
    else return x < C(0) ? C(0) : x;
  }
};

// clamp (Note [clamp dtype] in ops/shapes/unary.h): a missing bound is the type's extreme;
// NaN stays NaN (both comparisons are false) and min > max gives max.
template <class C>
struct ClampOp {
  C low, high;
  STRATA_HOST_DEVICE C operator()(C x) const {
    const C raised = x < low ? low : x;
    return raised > high ? high : raised;
  }
};

// The bounds a missing min or max stands for.
template <class C>
constexpr C clamp_lowest() {
  using Limits = std::numeric_limits<C>;
  return Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
}
template <class C>
constexpr C clamp_highest() {
  using Limits = std::numeric_limits<C>;
  return Limits::has_infinity ? Limits::infinity() : Limits::max();
}

// fill_, zero_, ones, full: every element becomes `value`.
template <class C>
struct FillOp {
  C value;
  STRATA_HOST_DEVICE C operator()() const { return value; }
};

// ---------------------------------------------------------------------------------------
// Floating math (integral inputs were converted to float32 by the caller).

struct ExpOp {
  static constexpr const char* name = "exp";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x) const { return std::exp(x); }
};
struct LogOp {
  static constexpr const char* name = "log";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x) const { return std::log(x); }
};
struct SqrtOp {
  static constexpr const char* name = "sqrt";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x) const { return std::sqrt(x); }
};
// rsqrt(0) is inf and rsqrt(-0) is -inf, as 1 / sqrt gives.
struct RsqrtOp {
  static constexpr const char* name = "rsqrt";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x) const { return C(1) / std::sqrt(x); }
};
struct SinOp {
  static constexpr const char* name = "sin";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x) const { return std::sin(x); }
};
struct CosOp {
  static constexpr const char* name = "cos";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x) const { return std::cos(x); }
};
struct TanhOp {
  static constexpr const char* name = "tanh";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x) const { return std::tanh(x); }
};
// 1 / (1 + e^-x): 0 for very negative x (e^-x is inf), 1 for very positive x.
struct SigmoidOp {
  static constexpr const char* name = "sigmoid";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x) const { return C(1) / (C(1) + std::exp(-x)); }
};
struct SiluOp {
  static constexpr const char* name = "silu";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x) const { return x * SigmoidOp{}(x); }
};

// gelu and its derivative in both forms; see Note [gelu forms] in ops/unary.cpp.
inline constexpr double kSqrtHalf = std::numbers::sqrt2 / 2;
inline constexpr double kInvSqrt2Pi = std::numbers::inv_sqrtpi / std::numbers::sqrt2;
inline constexpr double kGeluK = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;  // sqrt(2 / pi)
inline constexpr double kGeluC = 0.044715;

struct GeluErfOp {
  static constexpr const char* name = "gelu";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x) const {
    return x * C(0.5) * (C(1) + std::erf(x * C(kSqrtHalf)));
  }
};
struct GeluTanhOp {
  static constexpr const char* name = "gelu";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x) const {
    return x * C(0.5) * (C(1) + std::tanh((x + x * x * x * C(kGeluC)) * C(kGeluK)));
  }
};

// tanh_backward and sigmoid_backward from the outputs y: g (1 - y^2) and g y (1 - y).
struct TanhBackwardOp {
  static constexpr const char* name = "tanh_backward";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C g, C y) const {
    return g * (C(1) - y * y);
  }
};
struct SigmoidBackwardOp {
  static constexpr const char* name = "sigmoid_backward";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C g, C y) const {
    return g * y * (C(1) - y);
  }
};

// g gelu'(x): g (Phi(x) + x phi(x)), and g ((1 + t) / 2 + x (1 - t^2) u' / 2).
struct GeluErfBackwardOp {
  static constexpr const char* name = "gelu_backward";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C g, C x) const {
    const C cdf = C(0.5) * (C(1) + std::erf(x * C(kSqrtHalf)));
    return g * (cdf + x * std::exp(x * x * C(-0.5)) * C(kInvSqrt2Pi));
  }
};
struct GeluTanhBackwardOp {
  static constexpr const char* name = "gelu_backward";
  template <class C>
  STRATA_HOST_DEVICE C operator()(C g, C x) const {
    const C t = std::tanh((x + x * x * x * C(kGeluC)) * C(kGeluK));
    const C du = (C(1) + x * x * C(3 * kGeluC)) * C(kGeluK);
    return g * (C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * du);
  }
};

}  // namespace strata::cuda::detail
