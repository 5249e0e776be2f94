#pragma once
// Argument checks on Scalars that shape functions of several families share. Depends on tensor/
// only; compiles under nvcc.
#include <cmath>
#include <limits>
#include <type_traits>

#include <strata/tensor/scalar.h>
#include <strata/tensor/scalar_type.h>

namespace strata::shapes {

// Throws ValueError "[op] value V cannot be converted to type T without overflow" when the
// value does not fit dtype (Note [Checked scalar conversion] in ops/elementwise.h: negative
// integers may wrap into unsigned types; floats must be within the type's finite range).
inline void check_scalar_fits(const char* op, const Scalar& value, ScalarType dtype) {
  visit_dtype(dtype, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      return;
    } else if constexpr (std::is_integral_v<T>) {
      (void)value.to<T>(op);
    } else {
      double max_value = 0;
      if constexpr (std::is_same_v<T, Half>) max_value = 65504.0;
      else if constexpr (std::is_same_v<T, BFloat16>) max_value = 3.3895313892515355e38;
      else max_value = static_cast<double>(std::numeric_limits<T>::max());
      const double d = value.to_double();
      if (std::isfinite(d) && std::abs(d) > max_value) value.throw_does_not_fit(op, scalar_type_name(dtype));
    }
  });
}

}  // namespace strata::shapes
