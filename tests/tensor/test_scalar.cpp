// Tests for tensor/scalar.cpp and scalar.h: kinds, conversions, negation, equality, printing.
#include <doctest/doctest.h>

#include <strata/tensor/errors.h>
#include <strata/tensor/scalar.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

using namespace strata;

namespace {
std::string printed(const Scalar& scalar) {
  std::ostringstream out;
  out << scalar;
  return out.str();
}
}  // namespace

TEST_CASE("scalar: kinds and default dtypes") {
  CHECK(Scalar(true).is_bool());
  CHECK(Scalar(3).is_integral());
  CHECK(Scalar(uint8_t{3}).is_integral());
  CHECK(Scalar(2.5f).is_floating_point());
  CHECK(Scalar(Half(1.5f)).is_floating_point());
  CHECK(Scalar().is_integral());
  CHECK(Scalar(true).is_integral(/*include_bool=*/true));
  CHECK(Scalar(true).default_dtype() == kBool);
  CHECK(Scalar(int64_t{7}).default_dtype() == kInt64);
  CHECK(Scalar(7.0).default_dtype() == kFloat32);
}

TEST_CASE("scalar: conversions") {
  CHECK(Scalar(2.75).to<int64_t>() == 2);
  CHECK(Scalar(3).to<double>() == 3.0);
  CHECK(Scalar(0.0).to<bool>() == false);
  CHECK(Scalar(2).to<bool>() == true);
  CHECK(float(Scalar(1.5).to<Half>()) == 1.5f);
  CHECK(float(Scalar(-2).to<BFloat16>()) == -2.0f);
  CHECK(Scalar(int64_t{1} << 60).to_long() == int64_t{1} << 60);
}

TEST_CASE("scalar: negation") {
  CHECK((-Scalar(3)).to_long() == -3);
  CHECK((-Scalar(3)).is_integral());
  CHECK((-Scalar(2.5)).to_double() == -2.5);
  CHECK(std::signbit((-Scalar(0.0)).to_double()));
  CHECK((-Scalar(std::numeric_limits<int64_t>::min())).to_long() == std::numeric_limits<int64_t>::min());  // wraps
  CHECK_THROWS_WITH_AS(-Scalar(true), "[neg] negating a bool Scalar is not supported; use logical_not", TypeError);
}

TEST_CASE("scalar: equality compares values like Python numbers") {
  CHECK(Scalar(1) == Scalar(1));
  CHECK(Scalar(1) == Scalar(1.0));
  CHECK(Scalar(1.0) == Scalar(1));
  CHECK(Scalar(true) == Scalar(1));
  CHECK(Scalar(false) == Scalar(0.0));
  CHECK_FALSE(Scalar(1) == Scalar(1.5));
  CHECK_FALSE(Scalar(2) == Scalar(3));
  CHECK_FALSE(Scalar(std::nan("")) == Scalar(std::nan("")));
  int64_t big = (int64_t{1} << 53) + 1;  // not representable in double
  CHECK_FALSE(Scalar(big) == Scalar(static_cast<double>(big)));
  CHECK_FALSE(Scalar(std::numeric_limits<int64_t>::max()) == Scalar(9223372036854775808.0));
  CHECK_FALSE(Scalar(1) == Scalar(std::numeric_limits<double>::infinity()));
}

TEST_CASE("scalar: prints like Python") {
  CHECK(printed(Scalar(1)) == "1");
  CHECK(printed(Scalar(-42)) == "-42");
  CHECK(printed(Scalar(2.5)) == "2.5");
  CHECK(printed(Scalar(1.0)) == "1.0");
  CHECK(printed(Scalar(0.1)) == "0.1");
  CHECK(printed(Scalar(-0.0)) == "-0.0");
  CHECK(printed(Scalar(1e-7)) == "1e-07");
  CHECK(printed(Scalar(true)) == "True");
  CHECK(printed(Scalar(false)) == "False");
  CHECK(printed(Scalar(std::numeric_limits<double>::infinity())) == "inf");
  CHECK(printed(Scalar(-std::numeric_limits<double>::infinity())) == "-inf");
  CHECK(printed(Scalar(std::nan(""))) == "nan");
}

TEST_CASE("scalar: conversions to integral types refuse what the type cannot hold") {
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(Scalar(2.9).to<int64_t>() == 2);
  CHECK(Scalar(-2.9).to<int32_t>() == -2);
  CHECK(Scalar(-9223372036854775808.0).fits<int64_t>());  // -2^63 is int64's minimum
  CHECK_FALSE(Scalar(9223372036854775808.0).fits<int64_t>());  // 2^63 is one past its maximum
  CHECK_FALSE(Scalar(std::nan("")).fits<int64_t>());
  CHECK_FALSE(Scalar(inf).fits<int32_t>());
  CHECK_FALSE(Scalar(-inf).fits<uint8_t>());
  CHECK(Scalar(255.5).fits<uint8_t>());
  CHECK_FALSE(Scalar(256.0).fits<uint8_t>());
  CHECK(Scalar(-0.5).fits<uint8_t>());  // truncates to 0
  CHECK_FALSE(Scalar(int64_t{1} << 40).fits<int32_t>());
  CHECK(Scalar(-1).fits<uint8_t>());  // negative integers wrap into unsigned types
  CHECK(Scalar(-1).to<uint8_t>() == 255);
  CHECK_FALSE(Scalar(-256).fits<uint8_t>());
  CHECK(Scalar(true).to<int64_t>() == 1);
  CHECK(Scalar(std::nan("")).fits<double>());
  CHECK_THROWS_WITH_AS(Scalar(std::nan("")).to<int64_t>(), "[Scalar.to] value nan cannot be converted to type Int64 without overflow",
                       ValueError);
  CHECK_THROWS_WITH_AS(Scalar(300).to<uint8_t>(), "[Scalar.to] value 300 cannot be converted to type UInt8 without overflow",
                       ValueError);
}

TEST_CASE("Scalar: a uint64_t above the int64 range keeps its value") {
  constexpr uint64_t largest = std::numeric_limits<uint64_t>::max();
  const Scalar big(largest);
  CHECK(big.is_integral());
  CHECK(big.is_uint64());
  CHECK_FALSE(Scalar(uint64_t{5}).is_uint64());
  CHECK(big.to_double() == 18446744073709551615.0);
  CHECK(big.to<uint64_t>() == largest);
  CHECK(big.fits<uint64_t>());
  CHECK_FALSE(big.fits<int64_t>());
  CHECK_FALSE(big.fits<uint8_t>());
  CHECK_FALSE(big.fits<int32_t>());
  CHECK(big.fits<double>());
  CHECK_THROWS_WITH_AS(big.to<int64_t>(), "[Scalar.to] value 18446744073709551615 cannot be converted to type Int64 without overflow",
                       ValueError);
  CHECK_THROWS_AS((void)big.to_long(), ValueError);
  CHECK(printed(big) == "18446744073709551615");
  CHECK_FALSE(big == Scalar(18446744073709551616.0));  // UINT64_MAX rounds to 2^64, out of range
  CHECK(Scalar(uint64_t{1} << 63) == Scalar(9223372036854775808.0));
  CHECK_FALSE(big == Scalar(int64_t{-1}));
  CHECK(big == Scalar(largest));
  CHECK((-Scalar(uint64_t{1} << 63)).to_double() == -9223372036854775808.0);
  CHECK(big.to_bool());
  CHECK(big.default_dtype() == kInt64);
}
