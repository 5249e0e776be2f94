#pragma once
// Shape functions of the linear-algebra family (ops/linalg.cpp): matmul, mm, bmm, linear and
// the out= variants of the first three. See Note [Structured ops] in ops/structured.h.
// Depends on tensor/ only; compiles under nvcc.
#include <optional>

#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::shapes {

// A product seen as batch x ([rows, depth] @ [depth, cols]).
struct MatmulShape {
  DimVector out_sizes;
  DimVector batch;  // broadcast batch dims
  int64_t rows = 1, depth = 1, cols = 1;
};

// No dtype promotion, as in PyTorch. `op` names the op in errors.
inline void check_operands(const char* op, const Tensor& self, const Tensor& other) {
  detail::check_same_device(op, self, other);
  STRATA_CHECK_TYPE(self.dtype() == other.dtype(), "[", op, "] expected both inputs to have the same dtype, got ",
                    self.dtype(), " and ", other.dtype());
  STRATA_CHECK_TYPE(self.dtype() != kBool, "[", op, "] Bool inputs are not supported");
}

// torch.matmul: 1-d operands act as a row (left) or column (right) vector whose dim is dropped
// from the result; leading dims of N-d operands broadcast. mm, bmm and linear check their
// stricter rules first, then use this with their own name.
inline MatmulShape matmul_shape(const Tensor& self, const Tensor& other, const char* op = "matmul") {
  check_operands(op, self, other);
  STRATA_CHECK_VALUE(self.dim() >= 1 && other.dim() >= 1, "[", op, "] both arguments need at least 1 dimension, got ",
                     self.dim(), "-d and ", other.dim(), "-d tensors");
  MatmulShape shape;
  const IntArrayRef a = self.sizes(), b = other.sizes();
  shape.rows = a.size() >= 2 ? a[a.size() - 2] : 1;
  shape.depth = a.back();
  const int64_t depth_b = b.size() >= 2 ? b[b.size() - 2] : b[0];
  shape.cols = b.size() >= 2 ? b.back() : 1;
  STRATA_CHECK_VALUE(shape.depth == depth_b, "[", op, "] shapes ", a, " and ", b, " cannot be multiplied (",
                     shape.depth, " != ", depth_b, ")");
  const IntArrayRef batch_a = a.size() > 2 ? a.slice(0, a.size() - 2) : IntArrayRef();
  const IntArrayRef batch_b = b.size() > 2 ? b.slice(0, b.size() - 2) : IntArrayRef();
  shape.batch = broadcast_shapes(batch_a, batch_b, op);
  shape.out_sizes = shape.batch;
  if (a.size() >= 2) shape.out_sizes.push_back(shape.rows);
  if (b.size() >= 2) shape.out_sizes.push_back(shape.cols);
  return shape;
}

// mm: exactly two matrices. bmm: two batches of matrices of the same batch size (no
// broadcasting). Both then multiply like matmul.
inline MatmulShape mm_shape(const Tensor& self, const Tensor& mat2) {
  STRATA_CHECK_VALUE(self.dim() == 2 && mat2.dim() == 2, "[mm] expected two matrices (2-d tensors), got shapes ",
                     self.sizes(), " and ", mat2.sizes());
  return matmul_shape(self, mat2, "mm");
}

inline MatmulShape bmm_shape(const Tensor& self, const Tensor& mat2) {
  STRATA_CHECK_VALUE(self.dim() == 3 && mat2.dim() == 3, "[bmm] expected two batches of matrices (3-d tensors), got ",
                     "shapes ", self.sizes(), " and ", mat2.sizes());
  STRATA_CHECK_VALUE(self.size(0) == mat2.size(0), "[bmm] batch sizes differ: shapes ", self.sizes(), " and ",
                     mat2.sizes());
  return matmul_shape(self, mat2, "bmm");
}

// linear: input [*, in] as a [rows, in] matrix times weight^T [in, out], plus a bias of
// [out] (or one element).
struct LinearShape {
  MatmulShape product;  // [rows, in] @ [in, out]
  DimVector out_sizes;  // input's leading dims + [out]
};

inline LinearShape linear_shape(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  check_operands("linear", input, weight);
  STRATA_CHECK_VALUE(weight.dim() == 2, "[linear] weight must be 2-d [out_features, in_features], got shape ",
                     weight.sizes());
  STRATA_CHECK_VALUE(input.dim() >= 1 && input.size(-1) == weight.size(1), "[linear] input shape ", input.sizes(),
                     " and weight shape ", weight.sizes(), " cannot be multiplied (in_features ", weight.size(1),
                     ")");
  if (bias && bias->defined()) {
    check_operands("linear", input, *bias);
    STRATA_CHECK_VALUE(bias->dim() <= 1 && (bias->numel() == weight.size(0) || bias->numel() == 1),
                       "[linear] bias must have shape [out_features] = [", weight.size(0), "], got ", bias->sizes());
  }
  LinearShape shape;
  shape.product.depth = weight.size(1);
  shape.product.cols = weight.size(0);
  for (int64_t d = 0; d + 1 < input.dim(); ++d) {
    shape.product.rows *= input.size(d);
    shape.out_sizes.push_back(input.size(d));
  }
  shape.out_sizes.push_back(weight.size(0));
  shape.product.out_sizes = {shape.product.rows, shape.product.cols};
  return shape;
}

// One function per schema, named after it.
inline TensorMeta matmul(const Tensor& self, const Tensor& other) {
  return {matmul_shape(self, other).out_sizes, self.dtype(), self.device()};
}
inline TensorMeta mm(const Tensor& self, const Tensor& mat2) {
  return {mm_shape(self, mat2).out_sizes, self.dtype(), self.device()};
}
inline TensorMeta bmm(const Tensor& self, const Tensor& mat2) {
  return {bmm_shape(self, mat2).out_sizes, self.dtype(), self.device()};
}
inline TensorMeta linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  return {linear_shape(input, weight, bias).out_sizes, input.dtype(), input.device()};
}

}  // namespace strata::shapes
