#pragma once
// 16-bit floating types stored as bits; arithmetic goes through float.
#include <bit>
#include <cstdint>
#include <cstring>

namespace strata {

namespace detail {
inline uint32_t float_bits(float value) { return std::bit_cast<uint32_t>(value); }
inline float bits_float(uint32_t bits) { return std::bit_cast<float>(bits); }

// IEEE binary16 <-> binary32 with round-to-nearest-even; handles subnormals, inf, NaN.
inline uint16_t float_to_half_bits(float value) {
  uint32_t bits = float_bits(value);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to infinity
  if (abs < 0x38800000u) {                                                  // subnormal or zero
    float magic = bits_float(abs) + 0.5f;                                   // 0.5 = 2^-1: aligns mantissa
    return static_cast<uint16_t>(sign | (float_bits(magic) - 0x3f000000u));
  }
  uint32_t mantissa_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mantissa_odd;                                        // rebias exponent and round
  return static_cast<uint16_t>(sign | (abs >> 13));
}

inline float half_bits_to_float(uint16_t half) {
  uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0) {
    float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);  // 2^-24
    return bits_float(sign | float_bits(magnitude));
  }
  if (exponent == 31) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline uint16_t float_to_bfloat16_bits(float value) {
  uint32_t bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}
inline float bfloat16_bits_to_float(uint16_t bits) { return bits_float(static_cast<uint32_t>(bits) << 16); }
}  // namespace detail

struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float value) : bits(detail::float_to_half_bits(value)) {}  // NOLINT: implicit like c10::Half
  operator float() const { return detail::half_bits_to_float(bits); }
  static Half from_bits(uint16_t raw) {
    Half h;
    h.bits = raw;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float value) : bits(detail::float_to_bfloat16_bits(value)) {}  // NOLINT
  operator float() const { return detail::bfloat16_bits_to_float(bits); }
  static BFloat16 from_bits(uint16_t raw) {
    BFloat16 b;
    b.bits = raw;
    return b;
  }
};

}  // namespace strata
