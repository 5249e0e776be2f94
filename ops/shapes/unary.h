#pragma once
// Shape functions of the unary family (ops/unary.cpp): the unary math ops and activations,
// gelu and gelu_backward, clamp, the in-place relu_ clamp_ zero_ fill_, and the out= variants.
// See Note [Structured ops] in ops/structured.h. Depends on tensor/ only; compiles under nvcc.
#include <optional>
#include <string_view>

#include <strata/tensor/dim_order.h>
#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::shapes {

// Note [Unary dtype rules]
// As in PyTorch: exp, log, sqrt, rsqrt, sin, cos, tanh and sigmoid compute integral and bool
// inputs in the default float dtype (float32); gelu and silu accept floating inputs only;
// neg and relu keep the dtype but refuse bool; abs and sign keep every dtype (identity on
// bool). float16 and bfloat16 keep their dtype and compute in float.
enum class DtypeRule { keep, keep_no_bool, promote_to_float, floating_only };

inline ScalarType unary_dtype(const char* op, ScalarType input, DtypeRule rule) {
  switch (rule) {
    case DtypeRule::keep: return input;
    case DtypeRule::keep_no_bool:
      STRATA_CHECK_TYPE(input != kBool, "[", op, "] Boolean inputs are not supported",
                        std::string_view(op).starts_with("neg") ? "; to invert a mask use logical_not()" : "");
      return input;
    case DtypeRule::promote_to_float: return is_floating_point(input) ? input : kFloat32;
    case DtypeRule::floating_only:
      STRATA_CHECK_TYPE(is_floating_point(input), "[", op, "] expected a floating point input, got ", input);
      return input;
  }
  return input;
}

inline TensorMeta unary(const char* op, const Tensor& self, DtypeRule rule) {
  return {self.sizes(), unary_dtype(op, self.dtype(), rule), self.device(),
          detail::elementwise_strides(self.sizes(), {self})};
}

// One function per schema, named after it.
inline TensorMeta neg(const Tensor& self) { return unary("neg", self, DtypeRule::keep_no_bool); }
inline TensorMeta abs(const Tensor& self) { return unary("abs", self, DtypeRule::keep); }
inline TensorMeta sign(const Tensor& self) { return unary("sign", self, DtypeRule::keep); }
inline TensorMeta exp(const Tensor& self) { return unary("exp", self, DtypeRule::promote_to_float); }
inline TensorMeta log(const Tensor& self) { return unary("log", self, DtypeRule::promote_to_float); }
inline TensorMeta sqrt(const Tensor& self) { return unary("sqrt", self, DtypeRule::promote_to_float); }
inline TensorMeta rsqrt(const Tensor& self) { return unary("rsqrt", self, DtypeRule::promote_to_float); }
inline TensorMeta sin(const Tensor& self) { return unary("sin", self, DtypeRule::promote_to_float); }
inline TensorMeta cos(const Tensor& self) { return unary("cos", self, DtypeRule::promote_to_float); }
inline TensorMeta tanh(const Tensor& self) { return unary("tanh", self, DtypeRule::promote_to_float); }
inline TensorMeta sigmoid(const Tensor& self) { return unary("sigmoid", self, DtypeRule::promote_to_float); }
inline TensorMeta relu(const Tensor& self) { return unary("relu", self, DtypeRule::keep_no_bool); }
inline TensorMeta silu(const Tensor& self) { return unary("silu", self, DtypeRule::floating_only); }
inline TensorMeta relu_in_place(const Tensor& self) { return unary("relu_", self, DtypeRule::keep_no_bool); }

// Note [gelu forms] in ops/unary.cpp.
enum class GeluForm { none, tanh };

inline GeluForm gelu_form(const char* op, std::string_view approximate) {
  if (approximate == "none") return GeluForm::none;
  STRATA_CHECK_VALUE(approximate == "tanh", "[", op, "] approximate must be 'none' or 'tanh', got '", approximate, "'");
  return GeluForm::tanh;
}

inline TensorMeta gelu(const Tensor& self, std::string_view approximate) {
  (void)gelu_form("gelu", approximate);
  return unary("gelu", self, DtypeRule::floating_only);
}

inline TensorMeta gelu_backward(const Tensor& grad_output, const Tensor& self, std::string_view approximate) {
  (void)gelu_form("gelu_backward", approximate);
  detail::check_same_device("gelu_backward", grad_output, self);
  const ScalarType dtype = result_type(grad_output, self);
  STRATA_CHECK_TYPE(is_floating_point(dtype), "[gelu_backward] expected floating point inputs, got ",
                    grad_output.dtype(), " and ", self.dtype());
  const DimVector sizes = broadcast_shapes(grad_output.sizes(), self.sizes(), "gelu_backward");
  return {sizes, dtype, self.device(), detail::elementwise_strides(sizes, {grad_output, self})};
}

// tanh_backward(grad_output, output) and sigmoid_backward: the derivatives of tanh and sigmoid
// from their outputs, as ops of their own (one kernel instead of three, and a derivative of their
// own for double backward). Floating, one device, broadcast like a binary op.
inline TensorMeta activation_backward(const char* op, const Tensor& grad_output, const Tensor& output) {
  detail::check_same_device(op, grad_output, output);
  const ScalarType dtype = result_type(grad_output, output);
  STRATA_CHECK_TYPE(is_floating_point(dtype), "[", op, "] expected floating point inputs, got ", grad_output.dtype(),
                    " and ", output.dtype());
  const DimVector sizes = broadcast_shapes(grad_output.sizes(), output.sizes(), op);
  return {sizes, dtype, output.device(), detail::elementwise_strides(sizes, {grad_output, output})};
}
inline TensorMeta tanh_backward(const Tensor& grad_output, const Tensor& output) {
  return activation_backward("tanh_backward", grad_output, output);
}
inline TensorMeta sigmoid_backward(const Tensor& grad_output, const Tensor& output) {
  return activation_backward("sigmoid_backward", grad_output, output);
}

// Note [clamp dtype]
// Like PyTorch, a floating self keeps its dtype; otherwise the bounds take part in type
// promotion as Scalars (int32 clamped to 0.5 gives float32). Bool results are refused.
// clamp_ requires the promoted dtype to be self's (the in-place cast check). A missing bound
// is the dtype's extreme, NaN inputs stay NaN, and min > max gives max everywhere. The bounds
// convert to the result dtype with overflow checks.
inline TensorMeta clamp_checked(const char* op, const Tensor& self, const std::optional<Scalar>& min,
                                const std::optional<Scalar>& max) {
  STRATA_CHECK_VALUE(min || max, "[", op, "] at least one of 'min' or 'max' must not be None");
  ScalarType dtype = self.dtype();
  if (!is_floating_point(dtype)) {
    const bool floating = (min && min->is_floating_point()) || (max && max->is_floating_point());
    const bool integral = (min && min->is_integral()) || (max && max->is_integral());
    dtype = result_type(self, floating ? Scalar(0.0) : integral ? Scalar(int64_t{0}) : Scalar(false));
  }
  STRATA_CHECK_TYPE(dtype != kBool, "[", op, "] Boolean inputs are not supported");
  if (min) detail::check_scalar_converts(op, *min, dtype);
  if (max) detail::check_scalar_converts(op, *max, dtype);
  return {self.sizes(), dtype, self.device(), detail::elementwise_strides(self.sizes(), {self})};
}

inline TensorMeta clamp(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return clamp_checked("clamp", self, min, max);
}
inline TensorMeta clamp_in_place(const Tensor& self, const std::optional<Scalar>& min,
                                 const std::optional<Scalar>& max) {
  return clamp_checked("clamp_", self, min, max);
}

// fill_ and zero_ write self as it is; the value converts with overflow checks.
inline TensorMeta fill_scalar_in_place(const Tensor& self, const Scalar& value) {
  detail::check_scalar_converts("fill_", value, self.dtype());
  return {self.sizes(), self.dtype(), self.device()};
}
inline TensorMeta zero_in_place(const Tensor& self) { return {self.sizes(), self.dtype(), self.device()}; }

}  // namespace strata::shapes
