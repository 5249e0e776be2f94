#pragma once
// Shape functions of the neural-network family (ops/nn.cpp): softmax, log_softmax and their
// _backward_data ops, native_dropout, native_layer_norm, embedding. See Note [Structured ops]
// in ops/structured.h. Depends on tensor/ only; compiles under nvcc.
#include <array>
#include <optional>

#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::shapes {

// ---------------------------------------------------------------------------------------
// softmax and log_softmax: the input's sizes, in `dtype` (default the input's), which must be
// floating.

inline TensorMeta softmax_like(const char* op, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  const ScalarType result = dtype.value_or(self.dtype());
  STRATA_CHECK_TYPE(is_floating_point(result), "[", op, "] expected a floating-point input or dtype, got ", result,
                    " for the input of shape ", self.sizes());
  (void)wrap_dim(dim, self.dim(), op);
  return {self.sizes(), result, self.device()};
}

inline TensorMeta softmax_int(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_like("softmax", self, dim, dtype);
}
inline TensorMeta log_softmax_int(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_like("log_softmax", self, dim, dtype);
}

// grad_input has the output's sizes, in input_dtype.
inline TensorMeta softmax_backward_like(const char* op, const Tensor& grad, const Tensor& output, int64_t dim,
                                        ScalarType input_dtype) {
  detail::check_same_device(op, grad, output);
  STRATA_CHECK_VALUE(grad.sizes() == output.sizes(), "[", op, "] grad_output of shape ", grad.sizes(),
                     " does not match output of shape ", output.sizes());
  STRATA_CHECK_TYPE(is_floating_point(output.dtype()) && is_floating_point(input_dtype), "[", op,
                    "] expected floating-point tensors, got ", output.dtype(), " and input_dtype ", input_dtype);
  (void)wrap_dim(dim, output.dim(), op);
  return {output.sizes(), input_dtype, output.device()};
}

inline TensorMeta _softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                                         ScalarType input_dtype) {
  return softmax_backward_like("_softmax_backward_data", grad_output, output, dim, input_dtype);
}
inline TensorMeta _log_softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                                             ScalarType input_dtype) {
  return softmax_backward_like("_log_softmax_backward_data", grad_output, output, dim, input_dtype);
}

// ---------------------------------------------------------------------------------------
// native_dropout: (output like the input, keep mask of kBool).

inline void check_dropout_probability(double p) {
  STRATA_CHECK_VALUE(p >= 0.0 && p <= 1.0, "[dropout] dropout probability has to be between 0 and 1, but got ", p);
}

inline std::array<TensorMeta, 2> native_dropout(const Tensor& input, double p, std::optional<bool> train) {
  (void)train;
  check_dropout_probability(p);
  STRATA_CHECK_TYPE(is_floating_point(input.dtype()), "[dropout] expected a floating-point input, got ", input.dtype());
  return {TensorMeta(input.sizes(), input.dtype(), input.device()), TensorMeta(input.sizes(), kBool, input.device())};
}

// ---------------------------------------------------------------------------------------
// native_layer_norm: (output, mean, rstd); mean and rstd keep the input's leading dims and
// have a 1 per normalized dim.

// The input seen as [rows, row_size]: the trailing dims given by normalized_shape are one row.
struct LayerNormGeometry {
  int64_t rows = 1, row_size = 1;
  DimVector stat_sizes;  // the input's leading dims, then a 1 per normalized dim
};

inline LayerNormGeometry layer_norm_geometry(const Tensor& input, IntArrayRef normalized_shape,
                                             const std::optional<Tensor>& weight, const std::optional<Tensor>& bias) {
  STRATA_CHECK_VALUE(!normalized_shape.empty(), "[layer_norm] normalized_shape must have at least one dimension");
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  const bool matches = axis >= 0 && input.sizes().slice(static_cast<size_t>(axis)) == normalized_shape;
  STRATA_CHECK_VALUE(matches, "[layer_norm] input of shape ", input.sizes(), " does not end with normalized_shape ",
                     normalized_shape);
  STRATA_CHECK_TYPE(is_floating_point(input.dtype()), "[layer_norm] expected a floating-point input, got ",
                    input.dtype());
  for (const std::optional<Tensor>* parameter : {&weight, &bias}) {
    if (!*parameter || !(*parameter)->defined()) continue;
    const char* name = parameter == &weight ? "weight" : "bias";
    detail::check_same_device("layer_norm", input, **parameter);
    STRATA_CHECK_VALUE((*parameter)->sizes() == normalized_shape, "[layer_norm] expected ", name, " of shape ",
                       normalized_shape, " (normalized_shape), got ", (*parameter)->sizes());
  }
  LayerNormGeometry geometry;
  for (int64_t d = 0; d < input.dim(); ++d) {
    (d < axis ? geometry.rows : geometry.row_size) *= input.sizes()[d];
    geometry.stat_sizes.push_back(d < axis ? input.sizes()[d] : 1);
  }
  return geometry;
}

inline std::array<TensorMeta, 3> native_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                                                   const std::optional<Tensor>& weight,
                                                   const std::optional<Tensor>& bias, double eps) {
  (void)eps;
  const LayerNormGeometry geometry = layer_norm_geometry(input, normalized_shape, weight, bias);
  return {TensorMeta(input.sizes(), input.dtype(), input.device()),
          TensorMeta(geometry.stat_sizes, input.dtype(), input.device()),
          TensorMeta(geometry.stat_sizes, input.dtype(), input.device())};
}

// ---------------------------------------------------------------------------------------
// embedding: indices' sizes then embedding_dim, in the weight's dtype. The index values are
// checked by each backend's compute (Note [Structured ops], value checks).

inline TensorMeta embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx, bool scale_grad_by_freq,
                            bool sparse) {
  (void)padding_idx;  // only the gradient skips the padding row
  (void)scale_grad_by_freq;
  STRATA_CHECK_VALUE(weight.dim() == 2, "[embedding] expected a 2-d weight [num_embeddings, embedding_dim], got "
                     "weight of shape ", weight.sizes());
  STRATA_CHECK_TYPE(indices.dtype() == kInt64 || indices.dtype() == kInt32, "[embedding] expected int64 or int32 "
                    "indices, got ", indices.dtype(), " indices of shape ", indices.sizes());
  STRATA_CHECK_NOT_IMPLEMENTED(!sparse, "[embedding] sparse gradients are not supported");
  detail::check_same_device("embedding", weight, indices);
  DimVector sizes(indices.sizes());
  sizes.push_back(weight.sizes()[1]);
  return {sizes, weight.dtype(), weight.device()};
}

}  // namespace strata::shapes
