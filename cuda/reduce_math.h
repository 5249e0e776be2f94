#pragma once
// Internal to cuda/: the running states of the CUDA reductions and how two of them combine,
// on the host and the device alike, so the host tests check what the kernels compute. No CUDA
// header. Each state has a fold (one more input value at position r) and a combine (two
// partial states; `a` came from the threads with the lower positions, though the extremum
// rules compare positions explicitly and do not depend on it).
#include <math.h>

#include <cstdint>
#include <type_traits>

#include <strata/cuda/indexing.h>

namespace strata::cuda::detail {

template <class C>
STRATA_HOST_DEVICE constexpr bool is_nan_value(C value) {
  if constexpr (std::is_floating_point_v<C>) return value != value;
  else return false;
}

// The C math library by type (both sides of nvcc have expf/exp and friends).
STRATA_HOST_DEVICE inline float exp_of(float x) { return ::expf(x); }
STRATA_HOST_DEVICE inline double exp_of(double x) { return ::exp(x); }
STRATA_HOST_DEVICE inline float log_of(float x) { return ::logf(x); }
STRATA_HOST_DEVICE inline double log_of(double x) { return ::log(x); }
STRATA_HOST_DEVICE inline float log1p_of(float x) { return ::log1pf(x); }
STRATA_HOST_DEVICE inline double log1p_of(double x) { return ::log1p(x); }
STRATA_HOST_DEVICE inline float sqrt_of(float x) { return ::sqrtf(x); }
STRATA_HOST_DEVICE inline double sqrt_of(double x) { return ::sqrt(x); }

// ---------------------------------------------------------------------------------------
// max, min, argmax, argmin. See Note [Extremum reductions] in ops/shapes/reduce.h: NaN beats
// every number, and among equal values (or NaNs) the lowest position wins, so the result does
// not depend on how the positions were split between threads.

template <class C>
struct Extremum {
  C value;
  int64_t index;  // -1: nothing folded yet
};

template <bool is_max, class C>
STRATA_HOST_DEVICE Extremum<C> combine_extremum(const Extremum<C>& a, const Extremum<C>& b) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  const bool a_nan = is_nan_value(a.value), b_nan = is_nan_value(b.value);
  if (a_nan != b_nan) return a_nan ? a : b;
  if (a_nan || a.value == b.value) return a.index <= b.index ? a : b;
  return (is_max ? b.value > a.value : b.value < a.value) ? b : a;
}

// ---------------------------------------------------------------------------------------
// var and std. Note [Parallel Welford]
// Each thread runs Welford's update over its positions (as the CPU does over all of them, in
// double; see Note [Variance] in ops/reduce_stats.cpp); two partial states (n_a, mean_a, M2_a)
// and (n_b, mean_b, M2_b) combine as Chan et al. give it:
//   n = n_a + n_b,  delta = mean_b - mean_a,
//   mean = mean_a + delta * n_b / n,  M2 = M2_a + M2_b + delta^2 * n_a * n_b / n.
// An empty state is the identity.

struct Welford {
  int64_t count;
  double mean, squares;  // squares: M2, the sum of squared deviations from the mean
};

STRATA_HOST_DEVICE inline Welford welford_fold(Welford state, double x) {
  ++state.count;
  const double delta = x - state.mean;
  state.mean += delta / static_cast<double>(state.count);
  state.squares += delta * (x - state.mean);
  return state;
}

STRATA_HOST_DEVICE inline Welford welford_combine(const Welford& a, const Welford& b) {
  if (a.count == 0) return b;
  if (b.count == 0) return a;
  const int64_t count = a.count + b.count;
  const double delta = b.mean - a.mean;
  const double b_share = static_cast<double>(b.count) / static_cast<double>(count);
  return Welford{count, a.mean + delta * b_share,
                 a.squares + b.squares + delta * delta * static_cast<double>(a.count) * b_share};
}

// ---------------------------------------------------------------------------------------
// logsumexp: the running maximum and the sum of exp(x - max). See Note [Stable logsumexp] in
// ops/reduce_stats.cpp for the fold; two states combine by rescaling the smaller maximum's
// sum, and equal maxima (infinite ones included) simply add.

template <class C>
struct LogSumExp {
  C max, sum;
};

template <class C>
STRATA_HOST_DEVICE LogSumExp<C> log_sum_exp_fold(LogSumExp<C> state, C value) {
  if (value > state.max) {
    state.sum = state.sum * exp_of(state.max - value) + C(1);
    state.max = value;
  } else if (value == state.max) {
    state.sum += C(1);
  } else {
    state.sum += exp_of(value - state.max);
  }
  return state;
}

template <class C>
STRATA_HOST_DEVICE LogSumExp<C> log_sum_exp_combine(const LogSumExp<C>& a, const LogSumExp<C>& b) {
  if (a.max == b.max) return {a.max, a.sum + b.sum};
  if (a.max > b.max) return {a.max, a.sum + b.sum * exp_of(b.max - a.max)};
  return {b.max, b.sum + a.sum * exp_of(a.max - b.max)};
}

template <class C>
STRATA_HOST_DEVICE C log_sum_exp_result(const LogSumExp<C>& state) {
  return state.max + log_of(state.sum);
}

// ---------------------------------------------------------------------------------------
// norm over all elements, accumulated in double as the CPU does (ops/reduce_stats.cpp):
// sums of |x|^p (p = 0 counts nonzeros), or the largest / smallest |x| for p = +-inf, NaN
// propagating.

enum class NormKind : int { zero, two, infinity, negative_infinity, general };

STRATA_HOST_DEVICE inline double norm_identity(NormKind kind) {
  return kind == NormKind::negative_infinity ? static_cast<double>(INFINITY) : 0.0;
}

STRATA_HOST_DEVICE inline double norm_combine(NormKind kind, double a, double b) {
  switch (kind) {
    case NormKind::infinity: return is_nan_value(a) || a >= b ? a : b;
    case NormKind::negative_infinity: return is_nan_value(a) || a <= b ? a : b;
    default: return a + b;
  }
}

STRATA_HOST_DEVICE inline double norm_fold(NormKind kind, double p, double acc, double value) {
  const double magnitude = ::fabs(value);
  switch (kind) {
    case NormKind::zero: return acc + (value != 0 ? 1.0 : 0.0);
    case NormKind::two: return acc + magnitude * magnitude;
    case NormKind::general: return acc + ::pow(magnitude, p);
    default: return norm_combine(kind, acc, magnitude);
  }
}

STRATA_HOST_DEVICE inline double norm_result(NormKind kind, double p, double acc) {
  if (kind == NormKind::two) return ::sqrt(acc);
  if (kind == NormKind::general) return ::pow(acc, 1.0 / p);
  return acc;
}

}  // namespace strata::cuda::detail
