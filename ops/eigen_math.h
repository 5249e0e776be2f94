#pragma once
// Internal to ops/ and read only by .cpp files (it includes Eigen; it is not installed): Eigen
// array math with the edge cases IEEE and PyTorch give. See Note [Eigen exp underflow].
#include <Eigen/Core>

#include <type_traits>

namespace strata::detail {

// Note [Eigen exp underflow]
// Eigen 3.4's packet exp clamps its argument from below (about -88.4 for float, -709.4 for
// double) and returns exp of the clamp for anything smaller, -inf included: exp(-inf) came out
// as 5.6e-309 in double, and 2.9e-39 in float on SSE builds. So softmax gave masked (-inf)
// entries a tiny nonzero probability and silu(-inf) was -inf instead of NaN. Below
// log(smallest normal) the true result is subnormal or zero; these helpers return 0 there, so
// -inf gives exactly 0 on every instruction set, and subnormal results are flushed to zero (the
// loss is below the smallest normal number). The comparison is false for NaN, which stays NaN.
// The helpers are Eigen functors with packet versions: Eigen 3.4 does not vectorise select(),
// and an expression built on it ran coefficient by coefficient through the scalar exp (softmax
// was ten times slower).
template <class C>
constexpr C exp_underflow() {  // log of the smallest normal number
  static_assert(std::is_same_v<C, float> || std::is_same_v<C, double>, "float or double");
  if constexpr (std::is_same_v<C, float>) return -87.33654475f;
  else return -708.3964185322641;
}

// Note [Eigen exp overflow]
// Eigen 3.4's packet exp scales by 2^m with m = round(x / ln 2), and 2^128 (float) or 2^1024
// (double) is already infinite: exp(88.5f) came out inf on the vectorised path, where the
// result, 2.7e38, is finite (std::exp and LibTorch give it). Above (m_max - 0.5) ln 2 the
// packet version computes exp(x / 2)^2 instead: halving x is exact (x - ln 2 would round x at
// 1e-6 relative there), and squaring at most doubles exp's error of about an ulp.
template <class C>
constexpr C exp_packet_overflow() {  // (127.5 or 1023.5) * ln 2, a little below
  if constexpr (std::is_same_v<C, float>) return 88.3762f;
  else return 709.436;
}

template <class C>
struct ExpOrZeroOp {
  C operator()(const C& x) const { return x < exp_underflow<C>() ? C(0) : Eigen::numext::exp(x); }
  template <class Packet>
  Packet packetOp(const Packet& x) const {
    using namespace Eigen::internal;
    const Packet large = pcmp_lt(pset1<Packet>(exp_packet_overflow<C>()), x);  // See Note [Eigen exp overflow]
    const Packet result = pexp(pselect(large, pmul(x, pset1<Packet>(C(0.5))), x));
    return pselect(pcmp_lt(x, pset1<Packet>(exp_underflow<C>())), pzero(x),
                   pselect(large, pmul(result, result), result));
  }
};

template <class C>
struct LogisticOrZeroOp {
  C operator()(const C& x) const {
    return x < exp_underflow<C>() ? C(0) : Eigen::internal::scalar_logistic_op<C>()(x);
  }
  template <class Packet>
  Packet packetOp(const Packet& x) const {
    using namespace Eigen::internal;
    return pselect(pcmp_lt(x, pset1<Packet>(exp_underflow<C>())), pzero(x),
                   scalar_logistic_op<C>().packetOp(x));
  }
};

// exp(x) for an Eigen array expression x of scalar C.
template <class X>
auto exp_or_zero(const Eigen::ArrayBase<X>& x) {
  return x.unaryExpr(ExpOrZeroOp<typename X::Scalar>());
}

// sigmoid(x) = 1 / (1 + exp(-x)), which is exp(x) to within rounding where exp(x) underflows.
template <class X>
auto logistic_or_zero(const Eigen::ArrayBase<X>& x) {
  return x.unaryExpr(LogisticOrZeroOp<typename X::Scalar>());
}

}  // namespace strata::detail

namespace Eigen::internal {
template <class C>
struct functor_traits<strata::detail::ExpOrZeroOp<C>> {
  enum { Cost = functor_traits<scalar_exp_op<C>>::Cost + 2 * NumTraits<C>::AddCost, PacketAccess = packet_traits<C>::HasExp };
};
template <class C>
struct functor_traits<strata::detail::LogisticOrZeroOp<C>> {
  enum {
    Cost = functor_traits<scalar_logistic_op<C>>::Cost + 2 * NumTraits<C>::AddCost,
    PacketAccess = functor_traits<scalar_logistic_op<C>>::PacketAccess
  };
};
}  // namespace Eigen::internal
