#pragma once
// Shape functions of the fused optimizer steps (ops/optim.cpp): _fused_sgd_ and _fused_adam_,
// and their list overloads (_fused_sgd_.list, _fused_adam_.list; see Note [Multi-tensor
// optimizer steps] in ops/optim.cpp). They update several tensors in place and return nothing,
// so their shape functions only check (return void); see Note [Checked updates] in
// ops/optim.cpp for how the Meta kernel derives from them. Depends on tensor/ only; compiles
// under nvcc.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>

#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::shapes {

// An argument's name in messages: "grad", or "grads[2]" for an element of a list argument.
struct ArgumentName {
  const char* name;
  int64_t index = -1;
  friend std::ostream& operator<<(std::ostream& out, const ArgumentName& argument) {
    out << argument.name;
    if (argument.index >= 0) out << '[' << argument.index << ']';
    return out;
  }
};

// Every tensor an update reads or writes matches its param's shape, dtype and device, and does
// not partially overlap it.
inline void check_matches_param(const char* op, const Tensor& param, ArgumentName param_name, const Tensor& other,
                                ArgumentName name) {
  STRATA_CHECK_VALUE(other.defined(), "[", op, "] ", name, " is undefined");
  detail::check_no_partial_overlap(op, param, other);
  STRATA_CHECK(other.device() == param.device(), "[", op, "] expected all tensors on the same device, got ", name,
               " on ", other.device(), " and ", param_name, " on ", param.device());
  STRATA_CHECK_VALUE(other.sizes() == param.sizes(), "[", op, "] ", name, " of shape ", other.sizes(),
                     " does not match ", param_name, " of shape ", param.sizes());
  STRATA_CHECK_TYPE(other.dtype() == param.dtype(), "[", op, "] ", name, " has dtype ", other.dtype(), " but ",
                    param_name, " has dtype ", param.dtype());
}

inline void check_same_as_param(const char* op, const Tensor& param, const Tensor& other, const char* name) {
  check_matches_param(op, param, {"param"}, other, {name});
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

// ---------------------------------------------------------------------------------------
// The list overloads: the per-tensor checks for each entry i (naming "params[i]", "grads[i]"...),
// list lengths that agree, and every param on the device of params[0] (one kernel runs them all).
// Dtypes may differ between entries.

inline void check_list_length(const char* op, const tensor_list& params, size_t length, const char* name) {
  STRATA_CHECK_VALUE(length == params.size(), "[", op, "] ", name, " has ", length, " entries but params has ",
                     params.size());
}

inline void check_list_param(const char* op, const tensor_list& params, size_t i, const Tensor& grad) {
  const ArgumentName param_name{"params", static_cast<int64_t>(i)};
  const Tensor& param = params[i];
  STRATA_CHECK_VALUE(param.defined(), "[", op, "] ", param_name, " is undefined");
  STRATA_CHECK_TYPE(param.is_floating_point(), "[", op, "] expected floating-point params, got ", param.dtype(),
                    " for ", param_name);
  STRATA_CHECK(param.device() == params[0].device(), "[", op, "] expected all params on one device, got ",
               param_name, " on ", param.device(), " and params[0] on ", params[0].device());
  check_matches_param(op, param, param_name, grad, {"grads", static_cast<int64_t>(i)});
}

// momentum_buffers: one per param when momentum != 0; ignored (may be empty) otherwise.
inline void _fused_sgd_list_in_place(const tensor_list& params, const tensor_list& grads,
                                     const tensor_list& momentum_buffers, double lr, double momentum,
                                     double dampening, double weight_decay, bool nesterov, bool maximize,
                                     bool is_first_step) {
  (void)dampening, (void)weight_decay, (void)nesterov, (void)maximize, (void)is_first_step;
  const char* op = "_fused_sgd_";
  check_list_length(op, params, grads.size(), "grads");
  if (momentum != 0) check_list_length(op, params, momentum_buffers.size(), "momentum_buffers");
  STRATA_CHECK_VALUE(lr >= 0, "[", op, "] invalid learning rate ", lr, " (must be >= 0)");
  for (size_t i = 0; i < params.size(); ++i) {
    check_list_param(op, params, i, grads[i]);
    if (momentum != 0)
      check_matches_param(op, params[i], {"params", static_cast<int64_t>(i)}, momentum_buffers[i],
                          {"momentum_buffers", static_cast<int64_t>(i)});
  }
}

// steps: each param's step number (1 for its first); max_exp_avg_sqs: one per param with
// amsgrad, ignored (may be empty) otherwise.
inline void _fused_adam_list_in_place(const tensor_list& params, const tensor_list& grads, const tensor_list& exp_avgs,
                                      const tensor_list& exp_avg_sqs, const tensor_list& max_exp_avg_sqs,
                                      IntArrayRef steps, double lr, double beta1, double beta2, double weight_decay,
                                      double eps, bool amsgrad, bool maximize, bool decoupled_weight_decay) {
  (void)beta1, (void)beta2, (void)weight_decay, (void)eps, (void)maximize, (void)decoupled_weight_decay;
  const char* op = "_fused_adam_";
  check_list_length(op, params, grads.size(), "grads");
  check_list_length(op, params, exp_avgs.size(), "exp_avgs");
  check_list_length(op, params, exp_avg_sqs.size(), "exp_avg_sqs");
  if (amsgrad) check_list_length(op, params, max_exp_avg_sqs.size(), "max_exp_avg_sqs");
  check_list_length(op, params, steps.size(), "steps");
  STRATA_CHECK_VALUE(lr >= 0, "[", op, "] invalid learning rate ", lr, " (must be >= 0)");
  for (size_t i = 0; i < params.size(); ++i) {
    const auto index = static_cast<int64_t>(i);
    check_list_param(op, params, i, grads[i]);
    check_matches_param(op, params[i], {"params", index}, exp_avgs[i], {"exp_avgs", index});
    check_matches_param(op, params[i], {"params", index}, exp_avg_sqs[i], {"exp_avg_sqs", index});
    if (amsgrad) check_matches_param(op, params[i], {"params", index}, max_exp_avg_sqs[i], {"max_exp_avg_sqs", index});
    STRATA_CHECK_VALUE(steps[i] >= 1, "[", op, "] steps[", i, "] must be >= 1, got ", steps[i]);
  }
}

}  // namespace strata::shapes
