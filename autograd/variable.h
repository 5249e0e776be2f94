#pragma once
// Per-tensor autograd state and the helpers Autograd kernels use to wire outputs into the tape.
#include <memory>
#include <mutex>
#include <vector>

#include <strata/autograd/node.h>
#include <strata/tensor/small_blocks.h>

namespace strata::autograd {

class AccumulateGrad;

// How a view came to be, which decides the autograd rules it follows (LibTorch keeps the same
// as CreationMeta). Both marks forbid in-place changes with grad mode on and refuse a use that
// would need the view's history regenerated after its storage changed.
enum class ViewCreation : uint8_t {
  kDefault,  // not a view, or a view whose history follows its base's (Note [Views and their base])
  // Taken of a tensor that requires grad where no history was recorded for it: a leaf of its own
  // (Note [Views made without grad] in autograd/variable.cpp).
  kWithoutGrad,
  // Returned by a user's Function (made in its forward, or an input it returned as it is), or a
  // view of one (Note [Views returned by custom Functions] in autograd/function.cpp).
  kInCustomFunction,
};

class AutogradMeta final : public AutogradMetaInterface {
 public:
  // Every recorded output gets one: pooled (Note [Pooled small objects] in tensor/storage.cpp).
  static void* operator new(size_t bytes) { return strata::detail::allocate_small_block(bytes); }
  static void operator delete(void* block, size_t bytes) noexcept { strata::detail::free_small_block(block, bytes); }

  bool requires_grad() const override { return requires_grad_ || grad_fn_ != nullptr; }

  bool requires_grad_ = false;
  Tensor grad_;
  std::shared_ptr<Node> grad_fn_;
  // A leaf's accumulator and what graphs hold of it (Note [Kept accumulators] in variable.cpp).
  std::shared_ptr<AccumulateGrad> accumulator_;
  std::weak_ptr<Node> grad_accumulator_;
  uint32_t output_nr_ = 0;
  unsigned retain_grad_hook_ = 0;  // non-zero while retain_grad() is on
  std::shared_ptr<Tensor> retained_grad_;  // a non-leaf's .grad, shared with its retain hook
  struct LeafHook {
    unsigned handle;
    GradientHook fn;
  };
  std::vector<LeafHook> leaf_hooks_;  // a leaf's hooks, run by its AccumulateGrad
  ViewCreation view_creation_ = ViewCreation::kDefault;
  // Guards accumulator_, grad_accumulator_ and grad_ (Note [Threads sharing a leaf]).
  std::mutex mutex_;
};

namespace detail {

// Null when the tensor never took part in autograd.
inline AutogradMeta* meta_of(const Tensor& t) {
  return t.defined() ? static_cast<AutogradMeta*>(t.impl()->autograd_meta()) : nullptr;
}
AutogradMeta& materialize_meta(const Tensor& t);
// Makes `output` the output_nr-th output of `fn`: sets grad_fn and the Autograd key; a
// retain_grad() hook moves to the new grad_fn.
void set_history(const Tensor& output, const std::shared_ptr<Node>& fn, uint32_t output_nr);
// An in-place change recorded by `fn` on `self`: a view rewrites its base's history
// (CopySlices, autograd/view.cpp), anything else takes `fn` as its new grad_fn.
// self_edge is fn's edge for self (its old history, which CopySlices replaces by the base's).
void rebase_history(const Tensor& self, const std::shared_ptr<Node>& fn, uint32_t output_nr, size_t self_edge);
// Regenerates a view's grad_fn from its base when the base changed in place since the view's
// history was set (Note [Views and their base]). Cheap when nothing moved.
void refresh_view_history(const Tensor& t);
// The edge a gradient of `t` flows along: its grad_fn, or its leaf accumulator (made on demand).
// Invalid for tensors that do not require grad.
Edge gradient_edge(const Tensor& t);
// A leaf's later graphs get a new accumulator (its data changed dtype, shape or device).
void forget_accumulator(const Tensor& t);
bool view_requires_grad(const Tensor& t);  // a view whose base gained a history since
inline ViewCreation view_creation(const TensorImpl* impl) {
  const auto* meta = impl ? static_cast<const AutogradMeta*>(impl->autograd_meta()) : nullptr;
  return meta ? meta->view_creation_ : ViewCreation::kDefault;
}
// What a view recorded with grad mode on inherits from the inputs it was made of, folded over
// them: a view of a view made without grad is one too, else a view of a custom Function's view
// is one too, as LibTorch propagates CreationMeta from a view's base.
inline ViewCreation inherit_view_creation(ViewCreation so_far, const TensorImpl* input) {
  const ViewCreation creation = view_creation(input);
  if (so_far == ViewCreation::kWithoutGrad || creation == ViewCreation::kWithoutGrad) return ViewCreation::kWithoutGrad;
  return so_far == ViewCreation::kDefault ? creation : so_far;
}
// Sets a recorded output's creation; outputs that are not views keep the default.
void set_view_creation(const Tensor& output, ViewCreation creation);
inline bool requires_grad(const Tensor& t) {
  const AutogradMeta* meta = meta_of(t);
  if (meta && meta->requires_grad()) return true;
  return t.defined() && t.impl()->view_base() && view_requires_grad(t);
}
// In-place ops under autograd: throws when `self` is a leaf that requires grad, or a view of
// one (Note [In-place on views]).
void check_inplace(const Tensor& self, const char* op);

}  // namespace detail

// The node at the end of every leaf's edges: accumulates into .grad.
// Made once per leaf and kept by it; every graph the leaf takes part in holds it together
// with the leaf (Note [Kept accumulators] in variable.cpp).
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(const Tensor& variable);
  std::string name() const override { return "AccumulateGrad"; }
  tensor_list apply(tensor_list&& grads) override;
  bool is_accumulator() const override { return true; }
  // The leaf (alive while a graph holds this node, as an edge holds the leaf too).
  Tensor variable() const;

 private:
  TensorImpl* leaf_;  // not owned: the leaf owns this node
};

}  // namespace strata::autograd
