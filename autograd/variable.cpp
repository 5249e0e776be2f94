// Tensor's autograd methods, per-tensor autograd state, and leaf gradient accumulation.
#include <strata/autograd/variable.h>
#include <strata/dispatch/keepalive.h>
#include <strata/tensor/view_hooks.h>

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

namespace {

// The retain_grad() hook on meta's current grad_fn, writing into meta's shared slot.
void install_retain_hook(AutogradMeta& meta) {
  std::shared_ptr<Tensor> slot = meta.retained_grad_;
  meta.retain_grad_hook_ = meta.grad_fn_->add_gradient_hook(meta.output_nr_, [slot](const Tensor& grad) {
    *slot = slot->defined() ? *slot + grad.detach() : grad.detach().clone();
    return Tensor();
  });
}

}  // namespace

void set_history(const Tensor& output, const std::shared_ptr<Node>& fn, uint32_t output_nr) {
  AutogradMeta& meta = materialize_meta(output);
  const bool move_retain_hook = meta.retain_grad_hook_ != 0 && meta.grad_fn_ &&
                                (meta.grad_fn_ != fn || meta.output_nr_ != output_nr);
  if (move_retain_hook) meta.grad_fn_->remove_gradient_hook(meta.retain_grad_hook_);
  meta.grad_fn_ = fn;
  meta.output_nr_ = output_nr;
  if (move_retain_hook) install_retain_hook(meta);  // the new value's gradient is retained
  TensorImpl* impl = output.impl();
  impl->set_autograd_key(true);
  if (impl->view_base()) impl->set_view_version(impl->version());  // See Note [Stale views]
}

// Note [Threads sharing a leaf]
// Threads running forward on shared parameters all ask for the same leaf's accumulator, and
// threads running backward accumulate into the same .grad; both happen under the leaf's
// AutogradMeta mutex (uncontended in one thread: one atomic pair per leaf per pass).
//
// Note [Kept accumulators]
// As in LibTorch, a graph keeps the leaves it accumulates into alive (a leaf's .grad fills even
// after the caller dropped its handle, and its hooks run), and the leaf does not keep its
// graphs alive. LibTorch gets there with an AccumulateGrad that holds the leaf, held weakly by
// the leaf, so a new one is built whenever the leaf enters a graph after the last one died: in
// a training loop, once per parameter per step, which was about a tenth of a tiny add's forward
// and backward. strata keeps one AccumulateGrad per leaf, owned by the leaf's AutogradMeta and
// holding only a raw pointer back, and hands graphs an aliasing shared_ptr to it whose owner is
// a small block holding the leaf and the accumulator (LeafEdge): one pooled allocation and two
// count changes instead of a Node built and torn down. The leaf keeps that handle weakly, so
// every graph alive at once shares one block. No cycle: leaf -> meta -> accumulator, and
// graph -> block -> leaf. set_data to another dtype, shape or device starts a new accumulator
// for later graphs (as LibTorch resets its grad_accumulator_ then); graphs made before keep
// theirs.
namespace {
struct LeafEdge {
  Tensor leaf;
  std::shared_ptr<AccumulateGrad> accumulator;
};
}  // namespace

Edge gradient_edge(const Tensor& t) {
  refresh_view_history(t);
  AutogradMeta* meta = meta_of(t);
  if (!meta) return {};
  if (meta->grad_fn_) return {meta->grad_fn_, meta->output_nr_};
  // A leaf that requires grad. A view made without grad of a base that does has no edge: the
  // gradient reaching it is dropped (Note [Views made without grad]).
  if (!meta->requires_grad_) return {};
  std::lock_guard<std::mutex> lock(meta->mutex_);
  std::shared_ptr<Node> accumulator = meta->grad_accumulator_.lock();
  if (!accumulator) {
    if (!meta->accumulator_)
      meta->accumulator_ =
          std::allocate_shared<AccumulateGrad>(strata::detail::SmallBlockAllocator<AccumulateGrad>(), t);
    Node* node = meta->accumulator_.get();
    auto owner = std::allocate_shared<LeafEdge>(strata::detail::SmallBlockAllocator<LeafEdge>(),
                                                LeafEdge{t, meta->accumulator_});
    accumulator = std::shared_ptr<Node>(std::move(owner), node);
    meta->grad_accumulator_ = accumulator;
  }
  return {std::move(accumulator), 0};  // a moved shared_ptr costs no count change
}

void set_view_creation(const Tensor& output, ViewCreation creation) {
  if (!output.impl()->view_base()) return;
  AutogradMeta* meta = meta_of(output);
  if (meta || creation != ViewCreation::kDefault) (meta ? *meta : materialize_meta(output)).view_creation_ = creation;
}

void forget_accumulator(const Tensor& t) {
  AutogradMeta* meta = meta_of(t);
  if (!meta) return;
  std::lock_guard<std::mutex> lock(meta->mutex_);
  meta->accumulator_.reset();
  meta->grad_accumulator_.reset();
}

// The rules for in-place ops under autograd, as PyTorch's: a leaf that requires grad, or a
// view of one, cannot change (the change would not be on any tape). Other views are fine:
// See Note [In-place on views] in autograd/view.h.
void check_inplace(const Tensor& self, const char* op) {
  const AutogradMeta* meta = meta_of(self);
  const ViewCreation creation = meta ? meta->view_creation_ : ViewCreation::kDefault;
  STRATA_CHECK(!(creation == ViewCreation::kWithoutGrad && view_requires_grad(self)), "[", op, "] a view (shape ",
               self.sizes(), ") taken under NoGradGuard of a tensor that requires grad is being changed in place "
               "with grad mode on; whether that change belongs on the tape is ambiguous, so it is refused: make the "
               "view and change it both under NoGradGuard (not recorded) or both outside it (recorded)");
  STRATA_CHECK(creation != ViewCreation::kInCustomFunction, "[", op, "] a view (shape ", self.sizes(), ", grad_fn ",
               meta && meta->grad_fn_ ? meta->grad_fn_->name() : std::string("none"), ") returned by a custom "
               "Function (made in its forward, or an input it returned as it is), or a view of one, is being changed "
               "in place with grad mode on; autograd would record the change around the Function's backward, so it is "
               "refused (see Note [Views returned by custom Functions]): clone the Function's output first");
  STRATA_CHECK(!(meta && meta->requires_grad_ && !meta->grad_fn_), "[", op,
               "] a leaf tensor that requires grad is being used in an in-place operation (shape ", self.sizes(),
               "); do it under NoGradGuard or on a clone");
  TensorImpl* base = self.defined() ? self.impl()->view_base() : nullptr;
  const auto* base_meta = base ? static_cast<const AutogradMeta*>(base->autograd_meta()) : nullptr;
  STRATA_CHECK(!(base_meta && base_meta->requires_grad_ && !base_meta->grad_fn_), "[", op,
               "] a view (shape ", self.sizes(), ") of a leaf tensor that requires grad (shape ", base->sizes(),
               ") is being used in an in-place operation; do it under NoGradGuard or on a clone");
}

}  // namespace detail

AccumulateGrad::AccumulateGrad(const Tensor& variable) : leaf_(variable.impl()) {
  sequence_nr_ = UINT64_MAX;  // leaves run as soon as their gradient is complete
  output_metadata_.push_back(TensorMetadata::of(variable));
}

Tensor AccumulateGrad::variable() const { return Tensor(intrusive_ptr<TensorImpl>::reclaim_copy(leaf_)); }

// A leaf hook must keep the gradient's shape and dtype, as a non-leaf hook must.
Tensor run_leaf_hooks(const Tensor& variable, std::vector<AutogradMeta::LeafHook> hooks, Tensor grad) {
  for (const auto& hook : hooks) {  // a snapshot: hooks may add or remove hooks (Note [Hooks changing hooks])
    Tensor replaced = hook.fn(grad);
    if (!replaced.defined()) continue;
    STRATA_CHECK_VALUE(replaced.sizes() == grad.sizes() && replaced.dtype() == grad.dtype(),
                       "[AccumulateGrad] a hook on a leaf of shape ", variable.sizes(), " changed its gradient from ",
                       grad.dtype(), " ", grad.sizes(), " to ", replaced.dtype(), " ", replaced.sizes(),
                       "; a hook must keep both");
    grad = std::move(replaced);
  }
  return grad;
}

namespace {
// Note [Accumulating small gradients]
// Adding a gradient into .grad is one dispatched add_ per leaf per backward pass; for the small
// float32 parameters of a per-op-bound loop the dispatch costs ten times the addition. When
// both are contiguous float32 CPU tensors of the same shape in different storages, at most
// kSmallGradient elements, the loop runs here and bumps .grad's version as add_ would. The sum
// is the same float addition add_ performs (alpha 1), so .grad is bit for bit what it was.
constexpr int64_t kSmallGradient = 4096;
bool accumulate_small_float(const Tensor& into, const Tensor& grad) {
  if (into.dtype() != kFloat32 || grad.dtype() != kFloat32 || into.device().type() != kCPU ||
      grad.device().type() != kCPU || into.numel() > kSmallGradient || !into.is_contiguous() ||
      !grad.is_contiguous() || into.sizes() != grad.sizes() || into.impl()->storage() == grad.impl()->storage())
    return false;
  float* out = static_cast<float*>(into.impl()->data());  // checked above: float32 CPU tensors
  const float* in = static_cast<const float*>(grad.impl()->data());
  for (int64_t i = 0, n = into.numel(); i < n; ++i) out[i] += in[i];
  into.impl()->bump_version();
  return true;
}
}  // namespace

// Note [Dense leaf gradients]
// .grad is always a dense tensor of its own, laid out like its leaf as LibTorch's gradient
// layout contract says: with the leaf's strides when the leaf is dense in some order of dims
// (channels last, transposed), else contiguous. A gradient that arrives expanded (sum's
// backward gives stride 0), in another layout, or shared with someone else (another leaf's
// .grad, the caller's gradient) is copied into that layout; one that already has it and is
// nobody else's is kept. Under create_graph the copy is a differentiable clone().

namespace {
// Whether the contract lays out `.grad` of a leaf with these sizes and strides like the leaf
// (else contiguous).
bool keeps_leaf_layout(const TensorImpl& leaf) {
  return !leaf.is_contiguous() && strata::detail::is_non_overlapping_and_dense(leaf.sizes(), leaf.strides());
}

// Whether `grad` is laid out as the contract wants `.grad` of `leaf` (strides of size-1 dims
// do not count).
bool obeys_layout_contract(const Tensor& grad, const TensorImpl& leaf) {
  if (!keeps_leaf_layout(leaf)) return grad.is_contiguous();
  if (grad.sizes() != leaf.sizes()) return false;
  for (size_t d = 0; d < leaf.sizes().size(); ++d)
    if (leaf.sizes()[d] != 1 && grad.strides()[d] != leaf.strides()[d]) return false;
  return true;
}

// A copy of `grad` laid out as the contract wants: differentiable (clone, copy_) when `grad`
// carries history under create_graph.
Tensor copy_obeying_contract(const Tensor& grad, const TensorImpl& leaf) {
  if (!keeps_leaf_layout(leaf)) return grad.clone(MemoryFormat::Contiguous);
  Tensor copy = empty_strided(leaf.sizes(), leaf.strides(), grad.options().requires_grad(false));
  copy.copy_(grad);
  return copy;
}
}  // namespace

tensor_list AccumulateGrad::apply(tensor_list&& grads) {
  Tensor grad = std::move(grads.at(0));
  if (!grad.defined()) return {};
  // The leaf is alive: the graph running this node holds it (Note [Kept accumulators]), and its
  // meta, which owns this node, is the one it had when this node was made.
  AutogradMeta& meta = *static_cast<AutogradMeta*>(leaf_->autograd_meta());
  std::unique_lock<std::mutex> lock(meta.mutex_);
  if (!meta.leaf_hooks_.empty()) {
    std::vector<AutogradMeta::LeafHook> hooks = meta.leaf_hooks_;
    lock.unlock();
    grad = run_leaf_hooks(variable(), std::move(hooks), std::move(grad));
    lock.lock();
  }
  if (!meta.grad_.defined()) {
    const bool exclusive = grad.use_count() == 1 && grad.impl()->storage().use_count() == 1;
    const bool obeys = obeys_layout_contract(grad, *leaf_);
    if (is_grad_enabled()) meta.grad_ = obeys ? grad.clone() : copy_obeying_contract(grad, *leaf_);
    else meta.grad_ = exclusive && obeys ? grad.detach() : copy_obeying_contract(grad.detach(), *leaf_);
  } else if (is_grad_enabled()) {
    meta.grad_ = meta.grad_ + grad;  // create_graph: keep the sum differentiable
  } else if (!accumulate_small_float(meta.grad_, grad)) {
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
  // A leaf that requires grad is the root of its own views (check_inplace finds it as their base).
  if (requires_grad) impl()->set_view_base({});
  impl()->set_autograd_key(requires_grad);
  return *this;
}

namespace {
// Note [Views made without grad]
// A view of a tensor that requires grad normally gets its history from the view op's Function
// (ViewBackward...). A view made under NoGradGuard gets none, and is then, as in LibTorch (its
// CreationMeta::NO_GRAD_MODE), a leaf of its own: requires_grad() is true (its base requires
// grad), is_leaf() is true, grad_fn() is null, and a graph using it with grad mode on has no
// edge to it: the gradient that reaches it goes nowhere, neither to the base (what no_grad made
// is not recorded, so no gradient crosses it) nor to the view's own grad(), which stays
// undefined (LibTorch's grad accumulator exists only for tensors whose own requires_grad flag is
// set; requires_grad_(true) on the view gives it one, as there). Two uses are ambiguous and refused, as LibTorch refuses them:
// changing such a view in place with grad mode on (record the change on the base's tape, or
// not? check_inplace), and using it where its history is needed (an op with grad mode on,
// grad_fn(), a hook) after the storage changed in place, through the view, its base or another
// view (refresh_view_history): the view then no longer matches what its base's tape says.
// The mark is ViewCreation::kWithoutGrad (autograd/variable.h). make_view marks every view of a base that requires grad as made without grad (through this
// hook: tensor/ does not link to autograd/); wire_outputs clears the mark on a view output its
// Function records, unless an input of that Function carries the mark (a view of such a view
// inherits it, as in LibTorch).
const bool view_made_hook_installed = (strata::detail::set_view_made_hook([](const Tensor& view) {
  autograd::detail::materialize_meta(view).view_creation_ = autograd::ViewCreation::kWithoutGrad;
}), true);

// from_blob's TensorOptions::requires_grad reaches requires_grad_ through this hook (tensor/
// does not link to autograd/; see Note [Layers] in cmake/StrataLayers.cmake).
const bool requires_grad_hook_installed = (strata::detail::set_requires_grad_hook([](const Tensor& tensor, bool on) {
  tensor.requires_grad_(on);
}), true);
}  // namespace

// Note [data and set_data]
// data() is detach() under LibTorch's other name: a new handle on the same storage and geometry
// with no autograd state. One difference from LibTorch: strata keeps the version counter in the
// storage, so in-place changes through data() are seen by saved-tensor checks (LibTorch's data()
// gets a fresh counter). set_data swaps the TensorImpl's storage, dtype and geometry in place,
// so every handle to this tensor (and its autograd meta, grad, hooks) sees the new data, as
// LibTorch's does: `param.set_data(param.data().to(kFloat64))`. data() is in tensor/tensor.cpp;
// set_data is here because it asks whether the tensor requires grad.
void Tensor::set_data(const Tensor& new_data) const {
  const Device own_device = device();  // throws for an undefined tensor
  STRATA_CHECK_VALUE(new_data.defined(), "[set_data] new_data is undefined");
  STRATA_CHECK_TYPE(own_device.is_meta() == new_data.is_meta(), "[set_data] the tensor (", own_device,
                    ") and new_data (", new_data.device(), ") have incompatible tensor types: Meta mixes with no device");
  STRATA_CHECK_TYPE(!requires_grad() || strata::is_floating_point(new_data.dtype()),
                    "[set_data] data set to a tensor that requires gradients must be floating point, got ",
                    new_data.dtype());
  const bool same_geometry =
      new_data.dtype() == dtype() && new_data.sizes() == sizes() && new_data.device() == own_device;
  impl()->set_data_from(*new_data.impl());
  if (!same_geometry) autograd::detail::forget_accumulator(*this);  // See Note [Kept accumulators]
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
  // A view made without grad keeps its (lack of) history: asking does not throw even when its
  // storage changed since (Note [Views made without grad]).
  if (autograd::detail::view_creation(impl()) == autograd::ViewCreation::kDefault)
    autograd::detail::refresh_view_history(*this);
  const AutogradMeta* meta = meta_of(*this);
  return !meta || !meta->grad_fn_;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  autograd::detail::refresh_view_history(*this);
  const AutogradMeta* meta = meta_of(*this);
  return meta ? meta->grad_fn_ : nullptr;
}

uint32_t Tensor::output_nr() const {
  const AutogradMeta* meta = meta_of(*this);
  return meta ? meta->output_nr_ : 0;
}

void Tensor::retain_grad() const {
  STRATA_CHECK(requires_grad(), "[retain_grad] can't retain_grad on a tensor that does not require grad");
  autograd::detail::refresh_view_history(*this);
  AutogradMeta& meta = autograd::detail::materialize_meta(*this);
  if (!meta.grad_fn_ || meta.retain_grad_hook_ != 0) return;  // leaves keep .grad anyway
  // The hook shares a slot with the tensor's meta, so it stays valid whichever dies first.
  meta.retained_grad_ = std::make_shared<Tensor>();
  autograd::detail::install_retain_hook(meta);
}

bool Tensor::retains_grad() const {
  const AutogradMeta* meta = meta_of(*this);
  return meta && meta->retain_grad_hook_ != 0;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  autograd::detail::backward_one(*this, gradient, retain_graph, create_graph);
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph, const tensor_list& inputs) const {
  tensor_list grads;
  if (gradient.defined()) grads.push_back(gradient);
  autograd::backward({*this}, grads, retain_graph, create_graph, inputs);
}

unsigned Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  STRATA_CHECK(requires_grad(), "[register_hook] cannot register a hook on a tensor that does not require grad");
  autograd::detail::refresh_view_history(*this);
  AutogradMeta& meta = autograd::detail::materialize_meta(*this);
  if (meta.grad_fn_) return meta.grad_fn_->add_gradient_hook(meta.output_nr_, std::move(hook));
  unsigned handle = autograd::next_hook_handle();
  std::lock_guard<std::mutex> lock(meta.mutex_);
  meta.leaf_hooks_.push_back({handle, strata::detail::keep_code_alive(std::move(hook))});  // See Note [Code of unloaded libraries]
  return handle;
}

void Tensor::remove_hook(unsigned handle) const {
  AutogradMeta* meta = meta_of(*this);
  bool removed = false;
  if (meta && meta->grad_fn_) removed = meta->grad_fn_->remove_gradient_hook(handle);
  if (meta && !removed) {
    std::lock_guard<std::mutex> lock(meta->mutex_);
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
  impl()->set_view_base({});  // no longer a view of anything that autograd follows
  impl()->set_autograd_key(false);
  return *this;
}

}  // namespace strata
