#pragma once
// Internal to ops/ and read only by .cpp files (it includes Eigen; it is not installed): Eigen
// array math with the edge cases IEEE and PyTorch give. See Note [Eigen exp underflow].
#include <Eigen/Core>

#include <cmath>
#include <limits>

namespace strata::detail {

// Note [Eigen exp underflow]
// Eigen 3.4's packet exp clamps its argument from below (about -88.4 for float, -709.4 for
// double) and returns exp of the clamp for anything smaller, -inf included: exp(-inf) came out
// as 5.6e-309 in double, and 2.9e-39 in float on SSE builds. So softmax gave masked (-inf)
// entries a tiny nonzero probability and silu(-inf) was -inf instead of NaN. Below
// log(smallest normal) the true result is subnormal or zero; these helpers return 0 there, so
// -inf gives exactly 0 on every instruction set, and subnormal results are flushed to zero (the
// loss is below the smallest normal number). The comparison is false for NaN, which stays NaN.
template <class C>
inline const C kExpUnderflow = static_cast<C>(std::log(std::numeric_limits<C>::min()));

// exp(x) for an Eigen array expression x of scalar C.
template <class X>
auto exp_or_zero(const Eigen::ArrayBase<X>& x) {
  using C = typename X::Scalar;
  return (x < kExpUnderflow<C>).select(C(0), x.exp());
}

// sigmoid(x) = 1 / (1 + exp(-x)), which is exp(x) to within rounding where exp(x) underflows.
template <class X>
auto logistic_or_zero(const Eigen::ArrayBase<X>& x) {
  using C = typename X::Scalar;
  return (x < kExpUnderflow<C>).select(C(0), x.logistic());
}

}  // namespace strata::detail
