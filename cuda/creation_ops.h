#pragma once
// Internal to cuda/: the values the creation kernels (cuda/creation.cu) write at each index,
// on the host and the device alike, so the host tests check them against the CPU ops. No CUDA
// header. Each functor maps an element's linear index to its value, so a value never depends
// on how the kernel is launched.
#include <cmath>
#include <cstdint>
#include <numbers>

#include <strata/cuda/philox.h>
#include <strata/cuda/unary_ops.h>

namespace strata::cuda::detail {

// ---------------------------------------------------------------------------------------
// arange, linspace, eye (Notes [arange length] in ops/shapes/creation.h, [linspace values] in
// ops/creation.cpp).

// All-integer arange: start + i * step taken mod 2^64, which is the CPU's exact 128-bit value
// truncated to int64 (every element lies in [start, end)).
struct ArangeIntegralOp {
  uint64_t start, step;
  STRATA_HOST_DEVICE int64_t operator()(int64_t index) const {
    return static_cast<int64_t>(start + static_cast<uint64_t>(index) * step);
  }
};

// Otherwise in double, rounded as the CPU rounds (Note [Fused multiply-add] in unary_ops.h).
struct ArangeFloatingOp {
  double start, step;
  STRATA_HOST_DEVICE double operator()(int64_t index) const {
    return std::fma(static_cast<double>(index), step, start);
  }
};

// The first half counts up from start, the second down from end, so both ends are exact
// (fused as on the CPU: Note [Fused multiply-add] in unary_ops.h).
struct LinspaceOp {
  double start, end, step;
  int64_t steps, half;
  STRATA_HOST_DEVICE double operator()(int64_t index) const {
    return index < half ? std::fma(step, static_cast<double>(index), start)
                        : std::fma(-step, static_cast<double>(steps - 1 - index), end);
  }
};

inline LinspaceOp linspace_op(double start, double end, int64_t steps) {
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  return {start, end, step, steps, steps == 1 ? 1 : steps / 2};
}

// eye(n, m): element (row, column) of the row-major [n, m] matrix is 1 on the diagonal.
struct EyeOp {
  int64_t columns;
  STRATA_HOST_DEVICE int64_t operator()(int64_t index) const {
    return index / columns == index % columns ? 1 : 0;
  }
};

// ---------------------------------------------------------------------------------------
// Random numbers. Note [CUDA random numbers]
// A kernel reserves k numbers per element of its generator's Philox stream (reserve_offset,
// Note [Philox offsets] in tensor/generator.h) and element e draws numbers e * k ... e * k +
// k - 1, so the values depend on the seed and the order of calls only, never on the launch
// shape. They are not the CPU generator's values.
//   rand:    uniform in [0, 1) from the top `digits` bits of one number, digits being the
//            dtype's mantissa width (24 float32, 11 float16, 8 bfloat16: every value is exact
//            in the dtype and rounding never reaches 1), or 53 bits of two numbers (float64).
//   randn:   Box-Muller on the pair of elements (2p, 2p + 1), whose 2k numbers give two
//            uniforms u1, u2: sqrt(-2 log(1 - u1)) (cos, sin)(2 pi u2); float64 computes in
//            double, the rest in float (tails reach about 5.8 sigma from 24 bits).
//   randint: low + (64-bit draw mod (high - low)) from two numbers, the CPU's method: the
//            modulo bias is at most (high - low) / 2^64.

// Numbers per element: two for float64 (53 bits) and randint (64 bits), one otherwise.
template <int digits>
inline constexpr uint64_t kNumbersPerElement = digits > 24 ? 2 : 1;

// Uniform in [0, 1) with `digits` random bits; float for digits <= 24, double for 53.
template <int digits>
STRATA_HOST_DEVICE inline auto uniform_at(uint64_t seed, uint64_t offset, uint64_t position) {
  if constexpr (digits > 24) {
    static_assert(digits == 53, "double takes 53 bits");
    return uniform_double(philox_number(seed, offset, 2 * position), philox_number(seed, offset, 2 * position + 1));
  } else {
    const uint32_t bits = philox_number(seed, offset, position) >> (32 - digits);
    return static_cast<float>(bits) * (1.0f / static_cast<float>(1u << digits));
  }
}

template <int digits>
struct RandOp {
  uint64_t seed, offset;
  STRATA_HOST_DEVICE auto operator()(int64_t index) const {
    return uniform_at<digits>(seed, offset, static_cast<uint64_t>(index));
  }
};

// The two normal values of pair `pair`, in float (digits <= 24) or double (53).
template <int digits>
struct RandnPairOp {
  uint64_t seed, offset;
  template <class C>
  STRATA_HOST_DEVICE void operator()(int64_t pair, C& first, C& second) const {
    const C u1 = uniform_at<digits>(seed, offset, 2 * static_cast<uint64_t>(pair));
    const C u2 = uniform_at<digits>(seed, offset, 2 * static_cast<uint64_t>(pair) + 1);
    const C radius = std::sqrt(C(-2) * std::log(C(1) - u1));
    const C angle = C(2 * std::numbers::pi) * u2;
    first = radius * std::cos(angle);
    second = radius * std::sin(angle);
  }
};

struct RandintOp {
  uint64_t seed, offset;
  int64_t low;
  uint64_t range;  // high - low, at least 1
  STRATA_HOST_DEVICE int64_t operator()(int64_t index) const {
    const uint64_t position = 2 * static_cast<uint64_t>(index);
    const uint64_t draw = static_cast<uint64_t>(philox_number(seed, offset, position)) << 32 |
                          philox_number(seed, offset, position + 1);
    return static_cast<int64_t>(static_cast<uint64_t>(low) + draw % range);
  }
};

}  // namespace strata::cuda::detail
