#pragma once
// Shape functions of the arithmetic family (ops/pointwise.cpp): add, sub, mul, div with tensor
// and scalar operands, their in-place and out= variants. See Note [Structured ops] in
// ops/structured.h. Depends on tensor/ only; compiles under nvcc.
#include <strata/tensor/dim_order.h>
#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::shapes {

enum class Arith { add, sub, mul, div };

// The op's name, for errors.
constexpr const char* arith_name(Arith kind) {
  switch (kind) {
    case Arith::add: return "add";
    case Arith::sub: return "sub";
    case Arith::mul: return "mul";
    case Arith::div: return "div";
  }
  return "?";
}

// Note [Arithmetic dtype rules]
// The dtype is torch.result_type of the operands (Note [Result type]). div is always true
// division, so integral and bool results become float32. sub refuses bool operands like
// PyTorch (use logical_not / logical_xor). alpha must be integral when the result is
// integral, and may be bool only when the result is bool.
inline ScalarType arith_dtype(Arith kind, const char* op, bool self_bool, bool other_bool, ScalarType promoted,
                              const Scalar& alpha) {
  STRATA_CHECK_TYPE(kind != Arith::sub || (!self_bool && !other_bool), "[", op,
                    "] subtraction with a bool tensor is not supported; use logical_not() or logical_xor() instead");
  STRATA_CHECK_TYPE(is_floating_point(promoted) || !alpha.is_floating_point(), "[", op,
                    "] for integral input tensors, alpha must not be a floating point number (got ", alpha, ")");
  STRATA_CHECK_TYPE(!alpha.is_bool() || promoted == kBool, "[", op, "] a bool alpha is only supported for bool results");
  return kind == Arith::div && !is_floating_point(promoted) ? kFloat32 : promoted;
}

inline TensorMeta arith(Arith kind, const char* op, const Tensor& self, const Tensor& other, const Scalar& alpha) {
  detail::check_same_device(op, self, other);
  const ScalarType dtype =
      arith_dtype(kind, op, self.dtype() == kBool, other.dtype() == kBool, result_type(self, other), alpha);
  if (self.sizes() == other.sizes())
    return {self.sizes(), dtype, self.device(), detail::elementwise_strides(self.sizes(), {self, other})};
  const DimVector sizes = broadcast_shapes(self.sizes(), other.sizes(), op);
  return {sizes, dtype, self.device(), detail::elementwise_strides(sizes, {self, other})};
}

inline TensorMeta arith(Arith kind, const char* op, const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return {self.sizes(), arith_dtype(kind, op, self.dtype() == kBool, other.is_bool(), result_type(self, other), alpha),
          self.device(), detail::elementwise_strides(self.sizes(), {self})};
}

// One function per schema, named after it (add.Tensor -> add_tensor); the in-place ones name
// their op in errors.
inline TensorMeta add_tensor(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return arith(Arith::add, "add", self, other, alpha);
}
inline TensorMeta add_scalar(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return arith(Arith::add, "add", self, other, alpha);
}
inline TensorMeta sub_tensor(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return arith(Arith::sub, "sub", self, other, alpha);
}
inline TensorMeta sub_scalar(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return arith(Arith::sub, "sub", self, other, alpha);
}
inline TensorMeta mul_tensor(const Tensor& self, const Tensor& other) { return arith(Arith::mul, "mul", self, other, 1); }
inline TensorMeta mul_scalar(const Tensor& self, const Scalar& other) { return arith(Arith::mul, "mul", self, other, 1); }
inline TensorMeta div_tensor(const Tensor& self, const Tensor& other) { return arith(Arith::div, "div", self, other, 1); }
inline TensorMeta div_scalar(const Tensor& self, const Scalar& other) { return arith(Arith::div, "div", self, other, 1); }

inline TensorMeta add_tensor_in_place(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return arith(Arith::add, "add_", self, other, alpha);
}
inline TensorMeta add_scalar_in_place(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return arith(Arith::add, "add_", self, other, alpha);
}
inline TensorMeta sub_tensor_in_place(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return arith(Arith::sub, "sub_", self, other, alpha);
}
inline TensorMeta sub_scalar_in_place(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return arith(Arith::sub, "sub_", self, other, alpha);
}
inline TensorMeta mul_tensor_in_place(const Tensor& self, const Tensor& other) { return arith(Arith::mul, "mul_", self, other, 1); }
inline TensorMeta mul_scalar_in_place(const Tensor& self, const Scalar& other) { return arith(Arith::mul, "mul_", self, other, 1); }
inline TensorMeta div_tensor_in_place(const Tensor& self, const Tensor& other) { return arith(Arith::div, "div_", self, other, 1); }
inline TensorMeta div_scalar_in_place(const Tensor& self, const Scalar& other) { return arith(Arith::div, "div_", self, other, 1); }

}  // namespace strata::shapes
