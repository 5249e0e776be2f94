#pragma once
// Shape functions of the fused optimizer steps (ops/optim.cpp): _fused_sgd_ and _fused_adam_.
// They update several tensors in place and return nothing, so their shape functions only check
// (return void); see Note [Checked updates] in ops/optim.cpp for how the Meta kernel derives
// from them. Depends on tensor/ only; compiles under nvcc.
#include <optional>

#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::shapes {

// Every tensor an update reads or writes matches param's shape, dtype and device, and does not
// partially overlap param.
inline void check_same_as_param(const char* op, const Tensor& param, const Tensor& other, const char* name) {
  STRATA_CHECK_VALUE(other.defined(), "[", op, "] ", name, " is undefined");
  detail::check_no_partial_overlap(op, param, other);
  detail::check_same_device(op, param, other);
  STRATA_CHECK_VALUE(other.sizes() == param.sizes(), "[", op, "] ", name, " of shape ", other.sizes(),
                     " does not match param of shape ", param.sizes());
  STRATA_CHECK_TYPE(other.dtype() == param.dtype(), "[", op, "] ", name, " has dtype ", other.dtype(),
                    " but param has dtype ", param.dtype());
}

inline void check_param(const char* op, const Tensor& param, const Tensor& grad) {
  STRATA_CHECK_VALUE(param.defined(), "[", op, "] param is undefined");
  STRATA_CHECK_TYPE(param.is_floating_point(), "[", op, "] expected a floating-point param, got ", param.dtype());
  check_same_as_param(op, param, grad, "grad");
}

inline void _fused_sgd_in_place(const Tensor& param, const Tensor& grad, const std::optional<Tensor>& momentum_buffer,
                                double lr, double momentum, double dampening, double weight_decay, bool nesterov,
                                bool maximize, bool is_first_step) {
  (void)dampening, (void)weight_decay, (void)nesterov, (void)maximize, (void)is_first_step;
  const char* op = "_fused_sgd_";
  check_param(op, param, grad);
  STRATA_CHECK_VALUE(lr >= 0, "[", op, "] invalid learning rate ", lr, " (must be >= 0)");
  if (momentum != 0) {
    STRATA_CHECK_VALUE(momentum_buffer.has_value(), "[", op, "] momentum ", momentum, " needs a momentum_buffer");
    check_same_as_param(op, param, *momentum_buffer, "momentum_buffer");
  }
}

inline void _fused_adam_in_place(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                                 const Tensor& exp_avg_sq, const std::optional<Tensor>& max_exp_avg_sq, int64_t step,
                                 double lr, double beta1, double beta2, double weight_decay, double eps, bool amsgrad,
                                 bool maximize, bool decoupled_weight_decay) {
  (void)beta1, (void)beta2, (void)weight_decay, (void)eps, (void)maximize, (void)decoupled_weight_decay;
  const char* op = "_fused_adam_";
  check_param(op, param, grad);
  check_same_as_param(op, param, exp_avg, "exp_avg");
  check_same_as_param(op, param, exp_avg_sq, "exp_avg_sq");
  if (amsgrad) {
    STRATA_CHECK_VALUE(max_exp_avg_sq.has_value(), "[", op, "] amsgrad needs a max_exp_avg_sq");
    check_same_as_param(op, param, *max_exp_avg_sq, "max_exp_avg_sq");
  }
  STRATA_CHECK_VALUE(step >= 1, "[", op, "] step must be >= 1, got ", step);
  STRATA_CHECK_VALUE(lr >= 0, "[", op, "] invalid learning rate ", lr, " (must be >= 0)");
}

}  // namespace strata::shapes
