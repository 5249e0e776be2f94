#pragma once
// Fused optimizer updates (ops/optim.cpp): one pass over each parameter's elements applies a
// whole torch.optim step. They are ordinary dispatcher ops, so a CUDA kernel or a user's
// replacement registers under "strata::_fused_sgd_" / "strata::_fused_adam_" (and their
// ".list" overloads).
#include <optional>

#include <strata/tensor/tensor.h>

namespace strata {

// One SGD step, as torch.optim.SGD (single-tensor path):
//   d = grad (+ weight_decay * param); negated first when maximize
//   momentum != 0: buf = is_first_step ? d : momentum * buf + (1 - dampening) * d
//                  d = nesterov ? d + momentum * buf : buf
//   param -= lr * d
// momentum_buffer is needed (and updated) only when momentum != 0.
void _fused_sgd_(const Tensor& param, const Tensor& grad, const std::optional<Tensor>& momentum_buffer, double lr,
                 double momentum, double dampening, double weight_decay, bool nesterov, bool maximize,
                 bool is_first_step);

// One Adam/AdamW step number `step` (1 for the first), as torch.optim.Adam / AdamW:
//   decoupled_weight_decay (AdamW): param *= 1 - lr * weight_decay;  else grad += weight_decay * param
//   exp_avg = lerp(exp_avg, grad, 1 - beta1);  exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad^2
//   amsgrad: max_exp_avg_sq = max(max_exp_avg_sq, exp_avg_sq), used in place of exp_avg_sq below
//   param -= lr / (1 - beta1^step) * exp_avg / (sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps)
void _fused_adam_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                  const std::optional<Tensor>& max_exp_avg_sq, int64_t step, double lr, double beta1, double beta2,
                  double weight_decay, double eps, bool amsgrad, bool maximize, bool decoupled_weight_decay);

// The same steps over lists of parameters in one call ("strata::_fused_sgd_.list",
// "strata::_fused_adam_.list"; see Note [Multi-tensor optimizer steps] in ops/optim.cpp): entry
// i gets exactly the per-tensor step above. momentum_buffers (with momentum != 0) and
// max_exp_avg_sqs (with amsgrad) hold one tensor per param, and are ignored (may be empty)
// otherwise; steps[i] is params[i]'s step number. All params sit on one device; dtypes may differ.
void _fused_sgd_(const tensor_list& params, const tensor_list& grads, const tensor_list& momentum_buffers, double lr,
                 double momentum, double dampening, double weight_decay, bool nesterov, bool maximize,
                 bool is_first_step);
void _fused_adam_(const tensor_list& params, const tensor_list& grads, const tensor_list& exp_avgs,
                  const tensor_list& exp_avg_sqs, const tensor_list& max_exp_avg_sqs, IntArrayRef steps, double lr,
                  double beta1, double beta2, double weight_decay, double eps, bool amsgrad, bool maximize,
                  bool decoupled_weight_decay);

}  // namespace strata
