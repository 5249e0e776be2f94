// Tests for tensor/scalar_type.cpp and tensor/half.h: names, promotion, visit_dtype and the
// 16-bit float conversions (round trips, rounding, subnormals, inf and NaN).
#include <doctest/doctest.h>

#include <strata/tensor/half.h>
#include <strata/tensor/scalar_type.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

using namespace strata;

namespace {

constexpr ScalarType kAllTypes[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};

uint32_t bits_of(float value) { return std::bit_cast<uint32_t>(value); }
float float_of(uint32_t bits) { return std::bit_cast<float>(bits); }

// Round to nearest even bfloat16 worked out in double, independently of half.h's bit trick.
// Works on magnitudes: truncating the low 16 bits rounds toward zero, adding 0x10000 steps away.
uint16_t reference_bfloat16(float value) {
  uint32_t truncated = bits_of(value) & 0xffff0000u;
  uint32_t next = truncated + 0x10000u;
  double magnitude = std::fabs(double(value));
  double below = std::fabs(double(float_of(truncated)));
  // Past the largest finite bfloat16 the next value is inf, which rounding treats as 2^128.
  double above = (next & 0x7fffffffu) == 0x7f800000u ? std::ldexp(1.0, 128) : std::fabs(double(float_of(next)));
  double distance_below = magnitude - below, distance_above = above - magnitude;
  uint16_t low = static_cast<uint16_t>(truncated >> 16), high = static_cast<uint16_t>(next >> 16);
  if (distance_below != distance_above) return distance_below < distance_above ? low : high;
  return (low & 1u) ? high : low;  // a tie goes to the even one
}

}  // namespace

TEST_CASE("scalar_type: names and printing") {
  CHECK(scalar_type_name(kBool) == "Bool");
  CHECK(scalar_type_name(kUInt8) == "UInt8");
  CHECK(scalar_type_name(kInt8) == "Int8");
  CHECK(scalar_type_name(kInt16) == "Int16");
  CHECK(scalar_type_name(kInt32) == "Int32");
  CHECK(scalar_type_name(kInt64) == "Int64");
  CHECK(scalar_type_name(kFloat16) == "Float16");
  CHECK(scalar_type_name(kBFloat16) == "BFloat16");
  CHECK(scalar_type_name(kFloat32) == "Float32");
  CHECK(scalar_type_name(kFloat64) == "Float64");
  std::ostringstream out;
  out << kFloat64 << ' ' << kUInt8;
  CHECK(out.str() == "Float64 UInt8");
}

TEST_CASE("scalar_type: sizes, categories and aliases") {
  CHECK(element_size(kBool) == 1);
  CHECK(element_size(kUInt8) == 1);
  CHECK(element_size(kInt8) == 1);
  CHECK(element_size(kInt16) == 2);
  CHECK(is_integral(kInt8));
  CHECK(is_integral(kInt16));
  CHECK(kChar == kInt8);
  CHECK(kShort == kInt16);
  CHECK(scalar_type_of<int8_t> == kInt8);
  CHECK(scalar_type_of<int16_t> == kInt16);
  CHECK(element_size(kInt32) == 4);
  CHECK(element_size(kInt64) == 8);
  CHECK(element_size(kFloat16) == 2);
  CHECK(element_size(kBFloat16) == 2);
  CHECK(element_size(kFloat32) == 4);
  CHECK(element_size(kFloat64) == 8);
  CHECK(is_floating_point(kFloat16));
  CHECK(is_floating_point(kBFloat16));
  CHECK_FALSE(is_floating_point(kInt64));
  CHECK(is_integral(kUInt8));
  CHECK_FALSE(is_integral(kBool));
  CHECK(is_integral(kBool, /*include_bool=*/true));
  CHECK_FALSE(is_integral(kFloat32, true));
  CHECK(kLong == kInt64);
  CHECK(kDouble == kFloat64);
  CHECK(kHalf == kFloat16);
  CHECK(scalar_type_of<const double> == kFloat64);
  CHECK(scalar_type_of<Half> == kFloat16);
}

TEST_CASE("scalar_type: promote_types matches torch.promote_types") {
  // Rows and columns in kAllTypes order; values from torch.promote_types.
  const ScalarType b = kBool, u8 = kUInt8, i8 = kInt8, i16 = kInt16, i32 = kInt32, i64 = kInt64, f16 = kFloat16,
                   bf = kBFloat16, f32 = kFloat32, f64 = kFloat64;
  const ScalarType expected[10][10] = {
      {b, u8, i8, i16, i32, i64, f16, bf, f32, f64},              // bool
      {u8, u8, i16, i16, i32, i64, f16, bf, f32, f64},            // uint8
      {i8, i16, i8, i16, i32, i64, f16, bf, f32, f64},            // int8
      {i16, i16, i16, i16, i32, i64, f16, bf, f32, f64},          // int16
      {i32, i32, i32, i32, i32, i64, f16, bf, f32, f64},          // int32
      {i64, i64, i64, i64, i64, i64, f16, bf, f32, f64},          // int64
      {f16, f16, f16, f16, f16, f16, f16, f32, f32, f64},         // float16
      {bf, bf, bf, bf, bf, bf, f32, bf, f32, f64},                // bfloat16
      {f32, f32, f32, f32, f32, f32, f32, f32, f32, f64},         // float32
      {f64, f64, f64, f64, f64, f64, f64, f64, f64, f64},         // float64
  };
  for (int row = 0; row < 10; ++row)
    for (int column = 0; column < 10; ++column) {
      INFO(kAllTypes[row], " with ", kAllTypes[column]);
      CHECK(promote_types(kAllTypes[row], kAllTypes[column]) == expected[row][column]);
    }
}

TEST_CASE("scalar_type: the default dtype is process-wide and floating only") {
  CHECK(get_default_dtype() == kFloat32);
  set_default_dtype(kFloat64);
  CHECK(get_default_dtype() == kFloat64);
  set_default_dtype(kFloat32);
  CHECK_THROWS_WITH_AS(set_default_dtype(kInt64),
                       "[set_default_dtype] only floating point dtypes can be the default, got Int64", TypeError);
  CHECK(get_default_dtype() == kFloat32);
}

TEST_CASE("scalar_type: visit_dtype passes the C++ type") {
  for (ScalarType type : kAllTypes) {
    int64_t size = visit_dtype(type, [&]<class T>() { return static_cast<int64_t>(sizeof(T)); });
    CHECK(size == element_size(type));
    ScalarType round_trip = visit_dtype(type, [&]<class T>() { return scalar_type_of<T>; });
    CHECK(round_trip == type);
  }
  CHECK_THROWS_AS(visit_dtype(static_cast<ScalarType>(42), []<class T>() { return 0; }), TypeError);
}

TEST_CASE("half: every float16 value survives float and back") {
  for (uint32_t bits = 0; bits <= 0xffffu; ++bits) {
    Half half = Half::from_bits(static_cast<uint16_t>(bits));
    float value = half;
    Half back(value);
    bool is_nan = (bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu) != 0;
    if (is_nan) {
      CHECK(std::isnan(value));
      CHECK((back.bits & 0x7fffu) > 0x7c00u);  // still a NaN
      CHECK((back.bits & 0x8000u) == (bits & 0x8000u));
    } else if (back.bits != bits) {
      FAIL_CHECK("float16 bits " << bits << " came back as " << back.bits);
    }
  }
}

TEST_CASE("half: known values, rounding, subnormals, inf and nan") {
  CHECK(Half(1.0f).bits == 0x3c00u);
  CHECK(Half(-2.0f).bits == 0xc000u);
  CHECK(Half(0.5f).bits == 0x3800u);
  CHECK(Half(65504.0f).bits == 0x7bffu);                 // largest finite
  CHECK(Half(65519.99f).bits == 0x7bffu);                // below the halfway point
  CHECK(Half(65520.0f).bits == 0x7c00u);                 // halfway to 65536: ties to even (inf)
  CHECK(Half(1e10f).bits == 0x7c00u);
  CHECK(Half(-1e10f).bits == 0xfc00u);
  CHECK(Half(std::ldexp(1.0f, -14)).bits == 0x0400u);    // smallest normal
  CHECK(Half(std::ldexp(1.0f, -24)).bits == 0x0001u);    // smallest subnormal
  CHECK(Half(std::ldexp(1.0f, -25)).bits == 0x0000u);    // half of it: ties to even (zero)
  CHECK(Half(std::ldexp(3.0f, -26)).bits == 0x0001u);    // 0.75 ulp rounds up
  CHECK(Half(std::ldexp(3.0f, -25)).bits == 0x0002u);    // 1.5 ulp: tie to even (2)
  CHECK(Half(std::ldexp(5.0f, -25)).bits == 0x0002u);    // 2.5 ulp: tie to even (2)
  CHECK(Half(-0.0f).bits == 0x8000u);
  CHECK(Half(1.0f + std::ldexp(1.0f, -11)).bits == 0x3c00u);          // tie: stays even
  CHECK(Half(1.0f + 3 * std::ldexp(1.0f, -11)).bits == 0x3c02u);      // tie: rounds up to even
  CHECK(Half(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)).bits == 0x3c01u);
  CHECK(Half(std::numeric_limits<float>::infinity()).bits == 0x7c00u);
  CHECK(Half(-std::numeric_limits<float>::infinity()).bits == 0xfc00u);
  CHECK(std::isnan(float(Half(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(float(Half::from_bits(0x0001u)) == std::ldexp(1.0f, -24));
  CHECK(float(Half::from_bits(0x03ffu)) == std::ldexp(1023.0f, -24));
  CHECK(std::isinf(float(Half::from_bits(0x7c00u))));
  CHECK(std::signbit(float(Half::from_bits(0x8000u))));
}

#if defined(__FLT16_MAX__)
TEST_CASE("half: float to float16 rounding agrees with the compiler's _Float16") {
  // A stride coprime to 2^32 visits floats of every exponent, sign and mantissa pattern.
  int mismatches = 0;
  for (uint64_t i = 0; i < (1u << 20); ++i) {
    uint32_t bits = static_cast<uint32_t>(i * 4099u + (i >> 7) * 2654435761u);
    float value = float_of(bits);
    if (std::isnan(value)) continue;
    uint16_t expected = std::bit_cast<uint16_t>(static_cast<_Float16>(value));
    if (Half(value).bits != expected && ++mismatches < 5)
      FAIL_CHECK("float bits " << bits << ": got " << Half(value).bits << ", expected " << expected);
  }
  CHECK(mismatches == 0);
}
#endif

TEST_CASE("bfloat16: conversions round to nearest even") {
  CHECK(BFloat16(1.0f).bits == 0x3f80u);
  CHECK(BFloat16(-2.0f).bits == 0xc000u);
  CHECK(float(BFloat16(3.140625f)) == 3.140625f);  // exactly representable
  CHECK(BFloat16(float_of(0x3f808000u)).bits == 0x3f80u);  // tie: stays even
  CHECK(BFloat16(float_of(0x3f818000u)).bits == 0x3f82u);  // tie: rounds up to even
  CHECK(BFloat16(float_of(0x3f808001u)).bits == 0x3f81u);  // above the tie
  CHECK(BFloat16(float_of(0x7f7fffffu)).bits == 0x7f80u);  // float max rounds to inf
  CHECK(BFloat16(float_of(0x00000001u)).bits == 0x0000u);  // tiny subnormal rounds to zero
  CHECK(BFloat16(float_of(0x00010000u)).bits == 0x0001u);  // subnormals are kept
  CHECK(BFloat16(-0.0f).bits == 0x8000u);
  CHECK(BFloat16(std::numeric_limits<float>::infinity()).bits == 0x7f80u);
  uint16_t nan = BFloat16(float_of(0x7f800001u)).bits;  // signalling NaN whose payload is below bit 16
  CHECK((nan & 0x7f80u) == 0x7f80u);
  CHECK((nan & 0x7fu) != 0);  // still a NaN, not inf
  CHECK(std::isnan(float(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("bfloat16: every value survives float and back, and rounding matches a reference") {
  for (uint32_t bits = 0; bits <= 0xffffu; ++bits) {
    BFloat16 value = BFloat16::from_bits(static_cast<uint16_t>(bits));
    if (std::isnan(float(value))) continue;
    if (BFloat16(float(value)).bits != bits) FAIL_CHECK("bfloat16 bits " << bits << " changed");
  }
  int mismatches = 0;
  for (uint64_t i = 0; i < (1u << 18); ++i) {
    uint32_t bits = static_cast<uint32_t>(i * 16411u + (i >> 5) * 2654435761u);
    float value = float_of(bits);
    if (std::isnan(value) || std::isinf(value)) continue;
    if (BFloat16(value).bits != reference_bfloat16(value) && ++mismatches < 5)
      FAIL_CHECK("float bits " << bits << ": got " << BFloat16(value).bits << ", expected "
                               << reference_bfloat16(value));
  }
  CHECK(mismatches == 0);
}
