#pragma once
// Per-tensor autograd state and the helpers Autograd kernels use to wire outputs into the tape.
#include <memory>
#include <vector>

#include <strata/autograd/node.h>

namespace strata::autograd {

class AutogradMeta final : public AutogradMetaInterface {
 public:
  bool requires_grad() const override { return requires_grad_ || grad_fn_ != nullptr; }

  bool requires_grad_ = false;
  Tensor grad_;
  std::shared_ptr<Node> grad_fn_;
  std::weak_ptr<Node> grad_accumulator_;
  uint32_t output_nr_ = 0;
  unsigned retain_grad_hook_ = 0;  // non-zero while retain_grad() is on
  std::shared_ptr<Tensor> retained_grad_;  // a non-leaf's .grad, shared with its retain hook
  struct LeafHook {
    unsigned handle;
    GradientHook fn;
  };
  std::vector<LeafHook> leaf_hooks_;  // a leaf's hooks, run by its AccumulateGrad
  // Shares storage with an input of the node that made it (see Note [In-place on views]).
  bool is_view_ = false;
};

namespace detail {

// Null when the tensor never took part in autograd.
inline AutogradMeta* meta_of(const Tensor& t) {
  return t.defined() ? static_cast<AutogradMeta*>(t.impl()->autograd_meta()) : nullptr;
}
AutogradMeta& materialize_meta(const Tensor& t);
// Makes `output` the output_nr-th output of `fn`: sets grad_fn and the Autograd key.
void set_history(const Tensor& output, const std::shared_ptr<Node>& fn, uint32_t output_nr);
// The edge a gradient of `t` flows along: its grad_fn, or its leaf accumulator (made on demand).
// Invalid for tensors that do not require grad.
Edge gradient_edge(const Tensor& t);
inline bool requires_grad(const Tensor& t) {
  const AutogradMeta* meta = meta_of(t);
  return meta && meta->requires_grad();
}
// In-place ops under autograd: throws when `self` is a leaf that requires grad, or a view of a
// tensor that requires grad (Note [In-place on views]).
void check_inplace(const Tensor& self, const char* op);

}  // namespace detail

// The node at the end of every leaf's edges: accumulates into .grad.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor variable);
  std::string name() const override { return "AccumulateGrad"; }
  tensor_list apply(tensor_list&& grads) override;
  bool is_accumulator() const override { return true; }
  const Tensor& variable() const { return variable_; }

 private:
  Tensor variable_;
};

}  // namespace strata::autograd
