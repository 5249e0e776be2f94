#pragma once
// Internal to cuda/: the math of the two-operand kernels (cuda/pointwise.cu, binary.cu,
// compare.cu, masked_fill.cu) as functors that run on the host and the device alike, so the
// host tests check them against the CPU ops. No CUDA header. Functors take and return compute
// types (float for the 16-bit floats); the semantics are those of the matching ops/ files.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <strata/cuda/unary_ops.h>
#include <strata/ops/shapes/compare.h>

namespace strata::cuda::detail {

// op(x, value) for a value fixed on the host: the Scalar overloads.
template <class Op, class C>
struct WithScalar {
  Op op;
  C value;
  template <class X>
  STRATA_HOST_DEVICE auto operator()(X x) const {
    return op(x, value);
  }
};

// ---------------------------------------------------------------------------------------
// Arithmetic (ops/pointwise.cpp): integers wrap; div is true division, on floating compute
// types only (integral inputs were promoted to float32). alpha * y fuses into the add (Note
// [Fused multiply-add] in unary_ops.h).

template <class C>
struct AddOp {
  C alpha;
  STRATA_HOST_DEVICE C operator()(C x, C y) const {
    if constexpr (std::is_floating_point_v<C>) return std::fma(alpha, y, x);
    else return wrapping_add(x, wrapping_mul(alpha, y));
  }
};
template <class C>
struct SubOp {
  C alpha;
  STRATA_HOST_DEVICE C operator()(C x, C y) const {
    if constexpr (std::is_floating_point_v<C>) return std::fma(-alpha, y, x);
    else return wrapping_sub(x, wrapping_mul(alpha, y));
  }
};
template <class C>
struct MulOp {
  STRATA_HOST_DEVICE C operator()(C x, C y) const { return wrapping_mul(x, y); }
};
template <class C>
struct DivOp {
  static_assert(std::is_floating_point_v<C>, "div computes in a floating type");
  STRATA_HOST_DEVICE C operator()(C x, C y) const { return x / y; }
};

// ---------------------------------------------------------------------------------------
// pow (Note [pow dtypes] in ops/shapes/binary.h).

// Repeated squaring, wrapping on overflow. A negative exponent gives 1 for base 1, +-1 for
// base -1 and 0 otherwise (integer division's answer), as in PyTorch.
template <class C>
STRATA_HOST_DEVICE constexpr C integer_pow(C base, C exponent) {
  if constexpr (std::is_signed_v<C>) {
    if (exponent < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exponent & 1) ? C(-1) : C(1);
      return 0;
    }
  }
  C result = 1;
  while (exponent != 0) {
    if (exponent & 1) result = wrapping_mul(result, base);
    exponent = static_cast<C>(exponent >> 1);
    base = wrapping_mul(base, base);
  }
  return result;
}

// pow with a tensor exponent; pow with an integral Scalar exponent is WithScalar<PowOp, C>.
struct PowOp {
  template <class C>
  STRATA_HOST_DEVICE C operator()(C base, C exponent) const {
    if constexpr (std::is_floating_point_v<C>) return std::pow(base, exponent);
    else return integer_pow(base, exponent);
  }
};

// A floating Scalar exponent: the CPU's shortcuts (exact for 0, 1, 2, 3, -1; sqrt for 0.5,
// so (-inf)^0.5 is NaN as there) are chosen on the host from the exponent as a double.
enum class PowForm : int8_t { zero, one, square, cube, sqrt, rsqrt, reciprocal, general };

inline PowForm pow_form(double exponent) {
  if (exponent == 0) return PowForm::zero;
  if (exponent == 1) return PowForm::one;
  if (exponent == 2) return PowForm::square;
  if (exponent == 3) return PowForm::cube;
  if (exponent == 0.5) return PowForm::sqrt;
  if (exponent == -0.5) return PowForm::rsqrt;
  if (exponent == -1) return PowForm::reciprocal;
  return PowForm::general;
}

template <class C>
struct PowScalarOp {
  PowForm form;
  C exponent;  // used by PowForm::general
  STRATA_HOST_DEVICE C operator()(C x) const {
    switch (form) {
      case PowForm::zero: return C(1);
      case PowForm::one: return x;
      case PowForm::square: return x * x;
      case PowForm::cube: return x * x * x;
      case PowForm::sqrt: return std::sqrt(x);
      case PowForm::rsqrt: return C(1) / std::sqrt(x);
      case PowForm::reciprocal: return C(1) / x;
      case PowForm::general: break;
    }
    return std::pow(x, exponent);
  }
};

// ---------------------------------------------------------------------------------------
// maximum and minimum: NaN in either operand gives NaN; bool computes or / and.

template <bool is_max>
struct ExtremumOp {
  template <class C>
  STRATA_HOST_DEVICE C operator()(C x, C y) const {
    const bool pick_x = is_max ? x > y : x < y;
    return pick_x || is_nan(x) ? x : y;
  }
};

// ---------------------------------------------------------------------------------------
// Comparisons (ops/compare.cpp): one functor for the six, picked at run time, so each dtype
// has one kernel rather than six; the branch is uniform across the launch.

using shapes::Comparison;

struct CompareOp {
  Comparison kind;
  template <class C>
  STRATA_HOST_DEVICE bool operator()(C x, C y) const {
    switch (kind) {
      case Comparison::eq: return x == y;
      case Comparison::ne: return x != y;
      case Comparison::lt: return x < y;
      case Comparison::le: return x <= y;
      case Comparison::gt: return x > y;
      case Comparison::ge: return x >= y;
    }
    return false;
  }
};

struct LogicalNotOp {
  template <class C>
  STRATA_HOST_DEVICE bool operator()(C x) const {
    return x == C(0);
  }
};

struct WhereOp {
  template <class C>
  STRATA_HOST_DEVICE C operator()(bool condition, C x, C y) const {
    return condition ? x : y;
  }
};

// masked_fill: value where the mask holds, self elsewhere (the value fixed on the host, or
// read from a one-element tensor by every thread).
template <class C>
struct MaskedFillOp {
  C value;
  STRATA_HOST_DEVICE C operator()(bool mask, C x) const { return mask ? value : x; }
};
struct MaskedFillTensorOp {
  template <class C>
  STRATA_HOST_DEVICE C operator()(bool mask, C x, C value) const {
    return mask ? value : x;
  }
};

}  // namespace strata::cuda::detail
