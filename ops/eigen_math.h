#pragma once
// Internal to ops/ and read only by .cpp files (it includes Eigen; it is not installed): Eigen
// array math with the edge cases IEEE and PyTorch give. See Note [Eigen exp underflow].
#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace strata::detail {

// Note [Eigen exp underflow]
// Eigen 3.4's packet exp clamps its argument from below (about -88.4 for float, -709.4 for
// double) and returns exp of the clamp for anything smaller, -inf included: exp(-inf) came out
// as 5.6e-309 in double, and 2.9e-39 in float on SSE builds. So softmax gave masked (-inf)
// entries a tiny nonzero probability and silu(-inf) was -inf instead of NaN. Below
// log(smallest normal) the true result is subnormal or zero, so there the packet version
// computes exp(x / 2)^2, as it does near the top (Note [Eigen exp overflow]): x / 2 is far
// inside the normal range, and the square rounds once to the subnormal result (exp(-88.5f) is
// 3.7e-39, as std::exp and LibTorch give), or to 0 below half the smallest subnormal. Below
// twice log(smallest normal) the square is 0 in any case and the result is set to 0 outright,
// so -inf gives exactly 0 on every instruction set. The comparisons are false for NaN, which
// stays NaN. The scalar version is std::exp, right at both ends. The helpers are Eigen functors
// with packet versions: Eigen 3.4 does not vectorise select(), and an expression built on it
// ran coefficient by coefficient through the scalar exp (softmax was ten times slower).
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
struct FullRangeExpOp {
  C operator()(const C& x) const { return std::exp(x); }
  template <class Packet>
  Packet packetOp(const Packet& x) const {
    using namespace Eigen::internal;
    // Outside [log(smallest normal), (m_max - 0.5) ln 2] exp(x) is exp(x / 2)^2: Notes [Eigen
    // exp underflow] and [Eigen exp overflow].
    const Packet halved = por(pcmp_lt(x, pset1<Packet>(exp_underflow<C>())),
                              pcmp_lt(pset1<Packet>(exp_packet_overflow<C>()), x));
    const Packet result = pexp(pselect(halved, pmul(x, pset1<Packet>(C(0.5))), x));
    return pselect(pcmp_lt(x, pset1<Packet>(C(2) * exp_underflow<C>())), pzero(x),
                   pselect(halved, pmul(result, result), result));
  }
};

// Note [Sigmoid from exp]
// sigmoid(x) = 1 / (1 + exp(-x)) with the exp above, as LibTorch computes it. Eigen 3.4's
// logistic (a rational approximation, scalar and packet alike) was off by 9.6e-5 relative at
// x = -9.25f (sigmoid 9.6111653e-05 against 9.61024155e-05), which silu's gradient showed.
// exp(-x) is 0 below twice the underflow (see the Notes above) and inf beyond exp's overflow,
// giving 1 and 0 exactly; in between the result may be subnormal (sigmoid(-88.5f) = 3.7e-39,
// as in LibTorch). NaN stays NaN.
template <class C>
struct SigmoidFromExpOp {
  C operator()(const C& x) const { return C(1) / (C(1) + FullRangeExpOp<C>()(-x)); }
  template <class Packet>
  Packet packetOp(const Packet& x) const {
    using namespace Eigen::internal;
    const Packet one = pset1<Packet>(C(1));
    return pdiv(one, padd(one, FullRangeExpOp<C>().packetOp(pnegate(x))));
  }
};

// Note [Eigen log of subnormals]
// Eigen 3.4's packet log reads subnormal inputs as the smallest normal number: log(1e-45f)
// came out -87.34 (its value is -103.28), log(5e-324) -708.40 (not -744.44). The packet version
// here scales subnormals up by 2^k into the normal range and subtracts k ln 2 (exact in the
// product's rounding); 0, negatives, inf and NaN go through plog unchanged.
template <class C>
struct LogWithSubnormalsOp {
  static constexpr int kShift = std::is_same_v<C, float> ? 24 : 54;  // 2^-149 * 2^24, 2^-1074 * 2^54 are normal
  C operator()(const C& x) const { return Eigen::numext::log(x); }
  template <class Packet>
  Packet packetOp(const Packet& x) const {
    using namespace Eigen::internal;
    const Packet subnormal = pand(pcmp_lt(pzero(x), x), pcmp_lt(x, pset1<Packet>(std::numeric_limits<C>::min())));
    const Packet scaled = pselect(subnormal, pmul(x, pset1<Packet>(C(std::int64_t{1} << kShift))), x);
    const Packet result = plog(scaled);
    return pselect(subnormal, psub(result, pset1<Packet>(C(kShift * 0.69314718055994530942))), result);
  }
};

template <class X>
auto log_with_subnormals(const Eigen::ArrayBase<X>& x) {
  return x.unaryExpr(LogWithSubnormalsOp<typename X::Scalar>());
}

// 1 / std::sqrt(x), as LibTorch's rsqrt: Eigen's rsqrt() is an estimate refined by Newton steps
// that went wrong on subnormals (4.0e22 for rsqrt(1e-45f), whose value is 2.7e22; NaN for
// rsqrt(5e-324)). GCC vectorises this into the exact sqrt and divide instructions.
template <class X>
auto reciprocal_sqrt(const Eigen::ArrayBase<X>& x) {
  return x.unaryExpr([](typename X::Scalar value) { return typename X::Scalar(1) / std::sqrt(value); });
}

// exp(x) for an Eigen array expression x of scalar C, subnormal results and -inf included:
// Note [Eigen exp underflow].
template <class X>
auto full_range_exp(const Eigen::ArrayBase<X>& x) {
  return x.unaryExpr(FullRangeExpOp<typename X::Scalar>());
}

// sigmoid(x) = 1 / (1 + exp(-x)); see Note [Sigmoid from exp].
template <class X>
auto sigmoid_from_exp(const Eigen::ArrayBase<X>& x) {
  return x.unaryExpr(SigmoidFromExpOp<typename X::Scalar>());
}

}  // namespace strata::detail

namespace Eigen::internal {
template <class C>
struct functor_traits<strata::detail::FullRangeExpOp<C>> {
  enum { Cost = functor_traits<scalar_exp_op<C>>::Cost + 2 * NumTraits<C>::AddCost, PacketAccess = packet_traits<C>::HasExp };
};
template <class C>
struct functor_traits<strata::detail::LogWithSubnormalsOp<C>> {
  enum { Cost = functor_traits<scalar_log_op<C>>::Cost + 4 * NumTraits<C>::AddCost, PacketAccess = packet_traits<C>::HasLog };
};
template <class C>
struct functor_traits<strata::detail::SigmoidFromExpOp<C>> {
  enum {
    Cost = functor_traits<strata::detail::FullRangeExpOp<C>>::Cost + 2 * NumTraits<C>::AddCost + NumTraits<C>::MulCost,
    PacketAccess = functor_traits<strata::detail::FullRangeExpOp<C>>::PacketAccess && packet_traits<C>::HasDiv
  };
};
}  // namespace Eigen::internal
