#pragma once
// Shape functions of the binary math family (ops/binary.cpp): pow with tensor and scalar
// exponents, maximum and minimum, and their out= variants. See Note [Structured ops] in
// ops/structured.h. Depends on tensor/ only; compiles under nvcc.
#include <strata/tensor/dim_order.h>
#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::shapes {

// Two tensor operands: the broadcast shape and torch.result_type, on self's device.
inline TensorMeta broadcast_binary(const char* op, const Tensor& self, const Tensor& other) {
  detail::check_same_device(op, self, other);
  const ScalarType dtype = result_type(self, other);
  if (self.sizes() == other.sizes())
    return {self.sizes(), dtype, self.device(), detail::elementwise_strides(self.sizes(), {self, other})};
  const DimVector sizes = broadcast_shapes(self.sizes(), other.sizes(), op);
  return {sizes, dtype, self.device(), detail::elementwise_strides(sizes, {self, other})};
}

// Note [pow dtypes]
// The dtype is result_type(self, exponent); bool results are refused. Floating results use
// vector math (x^2, x^3, x^0.5, x^-0.5 and x^-1 have exact shortcuts). Integral results raise
// by repeated squaring and wrap on overflow; a negative Scalar exponent is refused, while a
// negative element of an exponent tensor gives PyTorch's values: 1 for base 1, +-1 for base
// -1 and 0 otherwise.
inline void check_pow_dtype(ScalarType dtype) {
  STRATA_CHECK_TYPE(dtype != kBool, "[pow] Bool results are not supported (compute in an integer dtype instead)");
}

inline TensorMeta pow_tensor_tensor(const Tensor& self, const Tensor& exponent) {
  TensorMeta meta = broadcast_binary("pow", self, exponent);
  check_pow_dtype(meta.dtype);
  return meta;
}

inline TensorMeta pow_tensor_scalar(const Tensor& self, const Scalar& exponent) {
  const ScalarType dtype = result_type(self, exponent);
  check_pow_dtype(dtype);
  STRATA_CHECK_VALUE(is_floating_point(dtype) || exponent.to_long() >= 0,
                     "[pow] integers to negative integer powers are not allowed (exponent ", exponent, ")");
  detail::check_scalar_converts("pow", exponent, dtype);
  return {self.sizes(), dtype, self.device(), detail::elementwise_strides(self.sizes(), {self})};
}

// maximum and minimum: every dtype (bool: or / and).
inline TensorMeta maximum(const Tensor& self, const Tensor& other) { return broadcast_binary("maximum", self, other); }
inline TensorMeta minimum(const Tensor& self, const Tensor& other) { return broadcast_binary("minimum", self, other); }

}  // namespace strata::shapes
