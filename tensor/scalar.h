#pragma once
// A number of any dtype, carried without a tensor: double, int64 or bool.
#include <concepts>
#include <cstdint>
#include <ostream>
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

  double to_double() const { return kind_ == Kind::Floating ? value_.d : static_cast<double>(value_.i); }
  int64_t to_long() const { return kind_ == Kind::Floating ? static_cast<int64_t>(value_.d) : value_.i; }
  bool to_bool() const { return kind_ == Kind::Floating ? value_.d != 0.0 : value_.i != 0; }

  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(static_cast<float>(to_double()));
    else if constexpr (std::is_floating_point_v<T>) return static_cast<T>(to_double());
    else if (kind_ == Kind::Floating) return static_cast<T>(value_.d);
    else return static_cast<T>(value_.i);
  }

  // The dtype a tensor made from this value gets by default: kBool, kInt64 or kFloat32.
  ScalarType default_dtype() const {
    return kind_ == Kind::Bool ? kBool : kind_ == Kind::Integral ? kInt64 : kFloat32;
  }

  Scalar operator-() const;
  bool operator==(const Scalar& other) const;

 private:
  Kind kind_;
  union {
    double d;
    int64_t i;
  } value_;
};

std::ostream& operator<<(std::ostream& out, const Scalar& scalar);

}  // namespace strata
