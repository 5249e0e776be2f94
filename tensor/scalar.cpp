// Scalar negation, comparison and printing.
#include <strata/tensor/scalar.h>

#include <strata/tensor/errors.h>

#include <charconv>
#include <cmath>
#include <string_view>

namespace strata {

// Note [Unsigned 64-bit Scalars]
// As in recent LibTorch (its HAS_u tag), a uint64_t above INT64_MAX keeps its value instead of
// wrapping to a negative int64: full({1}, UINT64_MAX, kFloat64) holds 1.8446744073709552e19.
// Such a Scalar is Integral with is_uint64(); it fits only 64-bit unsigned types, so to<int64_t>()
// and to_long() throw the usual overflow error, and to_double() rounds to the nearest double.
// Every other integer, unsigned ones included, is held as int64.

Scalar Scalar::operator-() const {
  STRATA_CHECK_TYPE(kind_ != Kind::Bool, "[neg] negating a bool Scalar is not supported; use logical_not");
  if (kind_ == Kind::Floating) return Scalar(-value_.d);
  if (is_uint64_) return Scalar(-static_cast<double>(value_.u));  // below INT64_MIN: no int64 holds it
  // Two's complement wrap (like int64 tensors) instead of undefined behaviour at INT64_MIN.
  return Scalar(static_cast<int64_t>(0ull - static_cast<uint64_t>(value_.i)));
}

// Note [Scalar equality]
// Scalars compare by value, as Python numbers do: Scalar(1) == Scalar(1.0) == Scalar(true),
// and NaN equals nothing. An integer and a double are equal only when the double holds exactly
// that integer (no rounding of large int64 values through double).
bool Scalar::operator==(const Scalar& other) const {
  if (kind_ != Kind::Floating && other.kind_ != Kind::Floating)
    return is_uint64_ == other.is_uint64_ && value_.i == other.value_.i;  // same bits, same range
  if (is_uint64_ || other.is_uint64_) {
    const double floating = is_uint64_ ? other.value_.d : value_.d;
    const uint64_t integral = is_uint64_ ? value_.u : other.value_.u;
    if (!(floating >= 9223372036854775808.0 && floating < 18446744073709551616.0)) return false;
    return std::trunc(floating) == floating && static_cast<uint64_t>(floating) == integral;
  }
  if (kind_ == Kind::Floating && other.kind_ == Kind::Floating) return value_.d == other.value_.d;
  double floating = kind_ == Kind::Floating ? value_.d : other.value_.d;
  int64_t integral = kind_ == Kind::Floating ? other.value_.i : value_.i;
  // 2^63 itself is out of int64 range, so the bound is exclusive.
  if (!(floating >= -9223372036854775808.0 && floating < 9223372036854775808.0)) return false;
  return std::trunc(floating) == floating && static_cast<int64_t>(floating) == integral;
}

namespace {
// Python's repr of a float: shortest round-trip digits, ".0" for whole numbers, inf and nan.
void write_python_float(std::ostream& out, double value) {
  if (std::isnan(value)) {
    out << "nan";
    return;
  }
  if (std::isinf(value)) {
    out << (value < 0 ? "-inf" : "inf");
    return;
  }
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string_view text(buffer, static_cast<size_t>(result.ptr - buffer));
  out << text;
  if (text.find_first_of(".e") == std::string_view::npos) out << ".0";
}
}  // namespace

std::ostream& operator<<(std::ostream& out, const Scalar& scalar) {
  switch (scalar.kind()) {
    case Scalar::Kind::Bool: return out << (scalar.to_bool() ? "True" : "False");
    case Scalar::Kind::Integral:
      return scalar.is_uint64() ? out << scalar.to<uint64_t>() : out << scalar.to_long();
    case Scalar::Kind::Floating: write_python_float(out, scalar.to_double()); return out;
  }
  return out;
}

void Scalar::throw_does_not_fit(const char* op, std::string_view type) const {
  detail::throw_error<ValueError>("[", op, "] value ", *this, " cannot be converted to type ", type, " without overflow");
}

}  // namespace strata
