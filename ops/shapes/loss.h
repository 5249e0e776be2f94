#pragma once
// Shape functions of the loss family (ops/loss.cpp): nll_loss_forward, nll_loss_backward and
// binary_cross_entropy_with_logits (nll_loss, cross_entropy_loss and mse_loss are
// compositions). See Note [Structured ops] in ops/structured.h. Depends on tensor/ only;
// compiles under nvcc.
#include <algorithm>
#include <array>
#include <optional>

#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::shapes {

inline const char* reduction_name(int64_t reduction) {
  return reduction == 0 ? "None" : reduction == 1 ? "Mean" : "Sum";
}

inline void check_reduction(const char* op, int64_t reduction) {
  STRATA_CHECK_VALUE(reduction >= 0 && reduction <= 2, "[", op,
                     "] reduction must be 0 (None), 1 (Mean) or 2 (Sum), got ", reduction);
}

// ---------------------------------------------------------------------------------------
// nll_loss.

// Note [nll_loss shapes]
// self is [C] with a 0-d target, [N, C] with target [N], or [N, C, d1, ..., dk] with target
// [N, d1, ..., dk]; all three are seen as self [N, C, inner] and target [N, inner].
// reduction None returns the per-element losses in target's shape; Sum adds them; Mean
// divides the sum by the total weight of the targets that are not ignore_index (so a batch
// whose targets are all ignored gives 0 / 0 = nan, as in PyTorch). The target values (class
// indices) are checked by each backend's compute.
struct NllGeometry {
  int64_t batch = 1, classes = 1, inner = 1;
};

inline NllGeometry nll_loss_geometry(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                     int64_t reduction) {
  check_reduction("nll_loss", reduction);
  detail::check_same_device("nll_loss", self, target);
  STRATA_CHECK_TYPE(is_floating_point(self.dtype()), "[nll_loss] expected a floating-point input, got ", self.dtype());
  STRATA_CHECK_TYPE(target.dtype() == kInt64, "[nll_loss] expected an int64 target of class indices, got ",
                    target.dtype());
  STRATA_CHECK_VALUE(self.dim() >= 1, "[nll_loss] expected an input with at least 1 dimension, got a 0-d tensor");
  NllGeometry shape;
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  shape.classes = self.sizes()[class_dim];
  DimVector expected;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (d != class_dim) expected.push_back(self.sizes()[d]);
  STRATA_CHECK_VALUE(target.sizes() == expected.ref(), "[nll_loss] expected target of shape ", expected.ref(),
                     " for input of shape ", self.sizes(), ", got target of shape ", target.sizes());
  if (self.dim() >= 2) shape.batch = self.sizes()[0];
  shape.inner = self.dim() >= 2 ? self.numel() / std::max<int64_t>(shape.batch * shape.classes, 1) : 1;
  if (weight && weight->defined()) {
    detail::check_same_device("nll_loss", self, *weight);
    STRATA_CHECK_VALUE(weight->dim() == 1 && weight->numel() == shape.classes, "[nll_loss] expected a weight of shape [",
                       shape.classes, "] (one per class), got weight of shape ", weight->sizes());
    STRATA_CHECK_TYPE(weight->dtype() == self.dtype(), "[nll_loss] expected weight of the input's dtype ",
                      self.dtype(), ", got ", weight->dtype());
  }
  return shape;
}

inline DimVector nll_output_sizes(const Tensor& target, int64_t reduction) {
  return reduction == 0 ? DimVector(target.sizes()) : DimVector();
}

// (output, total_weight): output in target's shape for None, 0-d otherwise; total_weight 0-d.
inline std::array<TensorMeta, 2> nll_loss_forward(const Tensor& self, const Tensor& target,
                                                  const std::optional<Tensor>& weight, int64_t reduction,
                                                  int64_t ignore_index) {
  (void)ignore_index;
  nll_loss_geometry(self, target, weight, reduction);
  return {TensorMeta(nll_output_sizes(target, reduction), self.dtype(), self.device()),
          TensorMeta({}, self.dtype(), self.device())};
}

inline TensorMeta nll_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                    const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index,
                                    const Tensor& total_weight) {
  (void)ignore_index;
  (void)total_weight;
  nll_loss_geometry(self, target, weight, reduction);
  const DimVector expected = nll_output_sizes(target, reduction);
  STRATA_CHECK_VALUE(grad_output.sizes() == expected.ref(), "[nll_loss_backward] expected grad_output of shape ",
                     expected.ref(), " for reduction ", reduction_name(reduction), ", got ", grad_output.sizes());
  detail::check_same_device("nll_loss_backward", self, grad_output);
  return {self.sizes(), self.dtype(), self.device()};
}

// ---------------------------------------------------------------------------------------
// binary_cross_entropy_with_logits: target has the input's shape; weight and pos_weight
// broadcast to it; the dtype promotes all of them. See Note [Stable binary cross entropy with
// logits] in ops/loss.cpp.

inline bool broadcasts_to(IntArrayRef from, IntArrayRef to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    const int64_t size = from[from.size() - 1 - i];
    if (size != 1 && size != to[to.size() - 1 - i]) return false;
  }
  return true;
}

inline TensorMeta binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target,
                                                   const std::optional<Tensor>& weight,
                                                   const std::optional<Tensor>& pos_weight, int64_t reduction) {
  constexpr const char* op = "binary_cross_entropy_with_logits";
  check_reduction(op, reduction);
  detail::check_same_device(op, self, target);
  STRATA_CHECK_VALUE(target.sizes() == self.sizes(), "[", op, "] target of shape ", target.sizes(),
                     " must have the input's shape ", self.sizes());
  ScalarType dtype = promote_types(self.dtype(), target.dtype());
  for (const std::optional<Tensor>* extra : {&weight, &pos_weight}) {
    if (!*extra || !(*extra)->defined()) continue;
    const Tensor& t = **extra;
    detail::check_same_device(op, self, t);
    const char* name = extra == &weight ? "weight" : "pos_weight";
    STRATA_CHECK_VALUE(broadcasts_to(t.sizes(), self.sizes()), "[", op, "] ", name, " of shape ", t.sizes(),
                       " cannot be broadcast to the input's shape ", self.sizes());
    dtype = promote_types(dtype, t.dtype());
  }
  STRATA_CHECK_TYPE(is_floating_point(dtype), "[", op, "] expected floating-point input and target, got ",
                    self.dtype(), " and ", target.dtype());
  return {reduction == 0 ? DimVector(self.sizes()) : DimVector(), dtype, self.device()};
}

}  // namespace strata::shapes
