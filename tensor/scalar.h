#pragma once
// A number of any dtype, carried without a tensor: double, int64, uint64 (above int64's range
// only) or bool. See Note [Unsigned 64-bit Scalars].
#include <concepts>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string_view>
#include <type_traits>

#include <strata/tensor/half.h>
#include <strata/tensor/scalar_type.h>

namespace strata {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Integral, Floating };

  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool value) : kind_(Kind::Bool) { value_.i = value; }  // NOLINT: implicit by design
  template <std::integral T>
    requires(!std::is_same_v<T, bool>)
  Scalar(T value) : kind_(Kind::Integral) {  // NOLINT
    if constexpr (std::is_unsigned_v<T> && sizeof(T) == sizeof(uint64_t)) {
      if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        is_uint64_ = true;
        value_.u = value;
        return;
      }
    }
    value_.i = static_cast<int64_t>(value);
  }
  template <std::floating_point T>
  Scalar(T value) : kind_(Kind::Floating) {  // NOLINT
    value_.d = static_cast<double>(value);
  }
  Scalar(Half value) : Scalar(static_cast<float>(value)) {}      // NOLINT
  Scalar(BFloat16 value) : Scalar(static_cast<float>(value)) {}  // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating_point() const { return kind_ == Kind::Floating; }
  bool is_integral(bool include_bool = false) const {
    return kind_ == Kind::Integral || (include_bool && kind_ == Kind::Bool);
  }
  bool is_bool() const { return kind_ == Kind::Bool; }
  // An Integral value above int64's range, held as uint64 (LibTorch's HAS_u).
  bool is_uint64() const { return is_uint64_; }

  double to_double() const {
    return kind_ == Kind::Floating ? value_.d : is_uint64_ ? static_cast<double>(value_.u) : static_cast<double>(value_.i);
  }
  // Truncates a double toward zero; throws ValueError for a uint64 value int64 cannot hold.
  int64_t to_long() const {
    if (is_uint64_) [[unlikely]] throw_does_not_fit("Scalar.to_long", "Int64");
    return kind_ == Kind::Floating ? static_cast<int64_t>(value_.d) : value_.i;
  }
  bool to_bool() const { return kind_ == Kind::Floating ? value_.d != 0.0 : value_.i != 0; }

  // Whether to<T>() keeps this value: always for bool and floating T; for an integral T, when the
  // value (truncated toward zero) is in T's range. NaN and infinities fit no integral type.
  // Negative integers fit unsigned types by wrapping, as in two's complement (as PyTorch allows).
  template <class T>
  bool fits() const {
    if constexpr (std::is_same_v<T, bool> || !std::is_integral_v<T>) {
      return true;
    } else {
      constexpr double limit = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;  // 2^digits, exact
      if (kind_ == Kind::Floating) {
        const double d = value_.d;  // NaN fails both comparisons
        return std::is_signed_v<T> ? d >= -limit && d < limit : d > -1.0 && d < limit;
      }
      if (is_uint64_) return std::is_unsigned_v<T> && sizeof(T) == sizeof(uint64_t);
      if constexpr (std::is_signed_v<T>) {
        return value_.i >= std::numeric_limits<T>::min() && value_.i <= std::numeric_limits<T>::max();
      } else if constexpr (sizeof(T) == sizeof(int64_t)) {
        return true;
      } else {
        constexpr auto max = static_cast<int64_t>(std::numeric_limits<T>::max());
        return value_.i >= -max && value_.i <= max;
      }
    }
  }

  // This value as T. Throws ValueError naming `op` when an integral T cannot hold it (see fits()).
  template <class T>
  T to(const char* op = "Scalar.to") const {
    if constexpr (std::is_same_v<T, bool>) {
      return to_bool();
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      return T(static_cast<float>(to_double()));
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(to_double());
    } else {
      if (!fits<T>()) [[unlikely]] throw_does_not_fit(op, integral_name<T>());
      if (is_uint64_) return static_cast<T>(value_.u);
      return kind_ == Kind::Floating ? static_cast<T>(value_.d) : static_cast<T>(value_.i);
    }
  }

  // Throws ValueError: "[op] value V cannot be converted to type TYPE without overflow".
  [[noreturn]] void throw_does_not_fit(const char* op, std::string_view type) const;
  // "Int64", "UInt8", ...: an integral type's name in messages (scalar_type_name's for dtypes).
  template <class T>
  static constexpr const char* integral_name() {
    constexpr int bytes = sizeof(T);
    if constexpr (std::is_signed_v<T>) return bytes == 1 ? "Int8" : bytes == 2 ? "Int16" : bytes == 4 ? "Int32" : "Int64";
    else return bytes == 1 ? "UInt8" : bytes == 2 ? "UInt16" : bytes == 4 ? "UInt32" : "UInt64";
  }

  // The dtype a tensor made from this value gets by default: kBool, kInt64 or get_default_dtype().
  ScalarType default_dtype() const {
    return kind_ == Kind::Bool ? kBool : kind_ == Kind::Integral ? kInt64 : get_default_dtype();
  }

  Scalar operator-() const;
  bool operator==(const Scalar& other) const;

 private:
  Kind kind_;
  bool is_uint64_ = false;  // Integral only: value_.u holds a value above INT64_MAX
  union {
    double d;
    int64_t i;
    uint64_t u;
  } value_;
};

std::ostream& operator<<(std::ostream& out, const Scalar& scalar);

}  // namespace strata
