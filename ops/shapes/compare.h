#pragma once
// Shape functions of the comparison family (ops/compare.cpp): eq ne lt le gt ge with tensor and
// scalar operands, logical_not and where. See Note [Structured ops] in ops/structured.h.
// Depends on tensor/ only; compiles under nvcc.
#include <strata/tensor/dim_order.h>
#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::shapes {

// The six comparisons, and their names for errors (shared by every backend's kernels).
enum class Comparison : int8_t { eq, ne, lt, le, gt, ge };
constexpr const char* comparison_name(Comparison kind) {
  switch (kind) {
    case Comparison::eq: return "eq";
    case Comparison::ne: return "ne";
    case Comparison::lt: return "lt";
    case Comparison::le: return "le";
    case Comparison::gt: return "gt";
    case Comparison::ge: return "ge";
  }
  return "?";
}

// Note [Comparison dtypes]
// Both operands are converted to torch.result_type of the pair (int32 < 2.5 compares in
// float32) and the result is kBool; a Scalar operand converts with overflow checks like
// every Scalar argument (Note [Checked scalar conversion]). float16/bfloat16 compare in float.
inline TensorMeta compare(const char* op, const Tensor& self, const Tensor& other) {
  detail::check_same_device(op, self, other);
  if (self.sizes() == other.sizes())
    return {self.sizes(), kBool, self.device(), detail::elementwise_strides(self.sizes(), {self, other})};
  const DimVector sizes = broadcast_shapes(self.sizes(), other.sizes(), op);
  return {sizes, kBool, self.device(), detail::elementwise_strides(sizes, {self, other})};
}
inline TensorMeta compare(const char* op, const Tensor& self, const Scalar& other) {
  detail::check_scalar_converts(op, other, result_type(self, other));
  return {self.sizes(), kBool, self.device(), detail::elementwise_strides(self.sizes(), {self})};
}

inline TensorMeta eq_tensor(const Tensor& self, const Tensor& other) { return compare("eq", self, other); }
inline TensorMeta ne_tensor(const Tensor& self, const Tensor& other) { return compare("ne", self, other); }
inline TensorMeta lt_tensor(const Tensor& self, const Tensor& other) { return compare("lt", self, other); }
inline TensorMeta le_tensor(const Tensor& self, const Tensor& other) { return compare("le", self, other); }
inline TensorMeta gt_tensor(const Tensor& self, const Tensor& other) { return compare("gt", self, other); }
inline TensorMeta ge_tensor(const Tensor& self, const Tensor& other) { return compare("ge", self, other); }
inline TensorMeta eq_scalar(const Tensor& self, const Scalar& other) { return compare("eq", self, other); }
inline TensorMeta ne_scalar(const Tensor& self, const Scalar& other) { return compare("ne", self, other); }
inline TensorMeta lt_scalar(const Tensor& self, const Scalar& other) { return compare("lt", self, other); }
inline TensorMeta le_scalar(const Tensor& self, const Scalar& other) { return compare("le", self, other); }
inline TensorMeta gt_scalar(const Tensor& self, const Scalar& other) { return compare("gt", self, other); }
inline TensorMeta ge_scalar(const Tensor& self, const Scalar& other) { return compare("ge", self, other); }

inline TensorMeta logical_not(const Tensor& self) {
  return {self.sizes(), kBool, self.device(), detail::elementwise_strides(self.sizes(), {self})};
}

// where(condition, self, other): condition is kBool; the result has result_type(self, other)
// and the broadcast shape of all three.
inline TensorMeta where_self(const Tensor& condition, const Tensor& self, const Tensor& other) {
  detail::check_same_device("where", condition, self);
  detail::check_same_device("where", self, other);
  STRATA_CHECK_TYPE(condition.dtype() == kBool, "[where] expected condition to be a Bool tensor, got ",
                    condition.dtype());
  const DimVector values = broadcast_shapes(self.sizes(), other.sizes(), "where");
  const DimVector sizes = broadcast_shapes(condition.sizes(), values, "where");
  return {sizes, result_type(self, other), self.device(), detail::elementwise_strides(sizes, {condition, self, other})};
}

}  // namespace strata::shapes
