// Tensor's autograd methods, per-tensor autograd state, and leaf gradient accumulation.
#include <strata/autograd/variable.h>
#include <strata/dispatch/keepalive.h>

#include <algorithm>

#include <strata/autograd/engine.h>
#include <strata/autograd/grad_mode.h>
#include <strata/ops/ops.h>

namespace strata {
namespace autograd {
namespace detail {

AutogradMeta& materialize_meta(const Tensor& t) {
  STRATA_CHECK(t.defined(), "[autograd] called on an undefined tensor");
  auto* meta = static_cast<AutogradMeta*>(t.impl()->autograd_meta());
  if (meta) return *meta;
  auto fresh = std::make_unique<AutogradMeta>();
  meta = fresh.get();
  t.impl()->set_autograd_meta(std::move(fresh));
  return *meta;
}

void set_history(const Tensor& output, const std::shared_ptr<Node>& fn, uint32_t output_nr) {
  AutogradMeta& meta = materialize_meta(output);
  meta.grad_fn_ = fn;
  meta.output_nr_ = output_nr;
  output.impl()->set_autograd_key(true);
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* meta = meta_of(t);
  if (!meta) return {};
  if (meta->grad_fn_) return {meta->grad_fn_, meta->output_nr_};
  if (!meta->requires_grad_) return {};
  std::shared_ptr<Node> accumulator = meta->grad_accumulator_.lock();
  if (!accumulator) {
    // The accumulator holds the leaf; the leaf holds it weakly (no cycle).
    accumulator = std::make_shared<AccumulateGrad>(Tensor(intrusive_ptr<TensorImpl>::reclaim_copy(t.impl())));
    meta->grad_accumulator_ = accumulator;
  }
  return {accumulator, 0};
}

// Note [In-place on views]
// A view shares storage with its base, but the tape does not yet know a view's base: an in-place
// op on a view would record the change on the view's history only, and the base (a leaf's
// data, or an intermediate that later ops read) would change with no record of it, so its
// gradient would be silently wrong. PyTorch rebases the base's history (CopySlices); until
// strata does, such an op is refused. Views are marked when a Function's output shares storage
// with one of its inputs (wire_outputs); views made while no input required grad are not
// marked, and in-place ops on them are recorded normally.
void check_inplace(const Tensor& self, const char* op) {
  const AutogradMeta* meta = meta_of(self);
  STRATA_CHECK(!(meta && meta->requires_grad_ && !meta->grad_fn_), "[", op,
               "] a leaf tensor that requires grad is being used in an in-place operation (shape ", self.sizes(),
               "); do it under NoGradGuard or on a clone");
  STRATA_CHECK_NOT_IMPLEMENTED(!(meta && meta->is_view_ && meta->requires_grad()), "[", op,
                               "] in-place operation on a view (made by ",
                               meta && meta->grad_fn_ ? meta->grad_fn_->name() : std::string("a view op"),
                               ") of a tensor that requires grad is not supported: the base's gradient would "
                               "miss the change; apply it to the view's clone(), or to the base");
}

}  // namespace detail

AccumulateGrad::AccumulateGrad(Tensor variable) : variable_(std::move(variable)) {
  sequence_nr_ = UINT64_MAX;  // leaves run as soon as their gradient is complete
  output_metadata_.push_back(TensorMetadata::of(variable_));
}

tensor_list AccumulateGrad::apply(tensor_list&& grads) {
  Tensor grad = std::move(grads.at(0));
  if (!grad.defined()) return {};
  AutogradMeta& meta = detail::materialize_meta(variable_);
  for (const auto& hook : meta.leaf_hooks_) {
    Tensor replaced = hook.fn(grad);
    if (replaced.defined()) grad = std::move(replaced);
  }
  if (!meta.grad_.defined()) {
    // Keep the incoming buffer when nobody else can see it; otherwise copy, so a later
    // in-place accumulation never writes into a tensor the user holds.
    bool exclusive = grad.use_count() == 1 && grad.impl()->storage().use_count() == 1;
    meta.grad_ = is_grad_enabled() ? grad : (exclusive ? grad.detach() : grad.detach().clone());
  } else if (is_grad_enabled()) {
    meta.grad_ = meta.grad_ + grad;  // create_graph: keep the sum differentiable
  } else {
    meta.grad_.add_(grad);
  }
  return {};
}

}  // namespace autograd

using autograd::AutogradMeta;
using autograd::detail::meta_of;

bool Tensor::requires_grad() const { return autograd::detail::requires_grad(*this); }

const Tensor& Tensor::requires_grad_(bool requires_grad) const {
  STRATA_CHECK_TYPE(!requires_grad || is_floating_point(), "[requires_grad_] only floating-point tensors can require "
                    "gradients; this tensor is ", dtype());
  AutogradMeta* meta = meta_of(*this);
  if (meta && meta->grad_fn_) {
    STRATA_CHECK(requires_grad, "[requires_grad_] cannot turn off requires_grad of a non-leaf tensor (its grad_fn is ",
                 meta->grad_fn_->name(), "); use detach()");
    return *this;
  }
  if (!meta && !requires_grad) return *this;
  autograd::detail::materialize_meta(*this).requires_grad_ = requires_grad;
  impl()->set_autograd_key(requires_grad);
  return *this;
}

Tensor Tensor::grad() const {
  const AutogradMeta* meta = meta_of(*this);
  if (!meta) return Tensor();
  return meta->retained_grad_ ? *meta->retained_grad_ : meta->grad_;
}

void Tensor::set_grad(const Tensor& grad) const {
  if (grad.defined())
    STRATA_CHECK_VALUE(grad.sizes() == sizes() && grad.dtype() == dtype() && grad.device() == device(),
                       "[set_grad] gradient of shape ", grad.sizes(), " (", grad.dtype(), ", ", grad.device(),
                       ") does not match the tensor's shape ", sizes(), " (", dtype(), ", ", device(), ")");
  AutogradMeta& meta = autograd::detail::materialize_meta(*this);
  (meta.retained_grad_ ? *meta.retained_grad_ : meta.grad_) = grad;
}

bool Tensor::is_leaf() const {
  const AutogradMeta* meta = meta_of(*this);
  return !meta || !meta->grad_fn_;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  const AutogradMeta* meta = meta_of(*this);
  return meta ? meta->grad_fn_ : nullptr;
}

uint32_t Tensor::output_nr() const {
  const AutogradMeta* meta = meta_of(*this);
  return meta ? meta->output_nr_ : 0;
}

void Tensor::retain_grad() const {
  STRATA_CHECK(requires_grad(), "[retain_grad] can't retain_grad on a tensor that does not require grad");
  AutogradMeta& meta = autograd::detail::materialize_meta(*this);
  if (!meta.grad_fn_ || meta.retain_grad_hook_ != 0) return;  // leaves keep .grad anyway
  // The hook shares a slot with the tensor's meta, so it stays valid whichever dies first.
  auto slot = std::make_shared<Tensor>();
  meta.retained_grad_ = slot;
  meta.retain_grad_hook_ = meta.grad_fn_->add_gradient_hook(meta.output_nr_, [slot](const Tensor& grad) {
    *slot = slot->defined() ? *slot + grad.detach() : grad.detach().clone();
    return Tensor();
  });
}

bool Tensor::retains_grad() const {
  const AutogradMeta* meta = meta_of(*this);
  return meta && meta->retain_grad_hook_ != 0;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  tensor_list grads;
  if (gradient.defined()) grads.push_back(gradient);
  autograd::backward({*this}, grads, retain_graph, create_graph);
}

unsigned Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  STRATA_CHECK(requires_grad(), "[register_hook] cannot register a hook on a tensor that does not require grad");
  AutogradMeta& meta = autograd::detail::materialize_meta(*this);
  if (meta.grad_fn_) return meta.grad_fn_->add_gradient_hook(meta.output_nr_, std::move(hook));
  unsigned handle = autograd::next_hook_handle();
  meta.leaf_hooks_.push_back({handle, strata::detail::keep_code_alive(std::move(hook))});  // See Note [Code of unloaded libraries]
  return handle;
}

void Tensor::remove_hook(unsigned handle) const {
  AutogradMeta* meta = meta_of(*this);
  bool removed = false;
  if (meta && meta->grad_fn_) removed = meta->grad_fn_->remove_gradient_hook(handle);
  if (meta && !removed) {
    auto& hooks = meta->leaf_hooks_;
    auto it = std::find_if(hooks.begin(), hooks.end(), [&](const auto& h) { return h.handle == handle; });
    if (it != hooks.end()) {
      hooks.erase(it);
      removed = true;
    }
  }
  STRATA_CHECK_VALUE(removed, "[remove_hook] no hook with handle ", handle, " on this tensor");
}

const Tensor& Tensor::detach_() const {
  AutogradMeta* meta = meta_of(*this);
  if (meta) {
    meta->grad_fn_.reset();
    meta->requires_grad_ = false;
    meta->output_nr_ = 0;
  }
  impl()->set_autograd_key(false);
  return *this;
}

}  // namespace strata
