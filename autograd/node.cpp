#include <strata/autograd/node.h>
#include <strata/dispatch/keepalive.h>

#include <algorithm>

#include <strata/ops/ops.h>

namespace strata::autograd {

uint64_t next_sequence_nr() {
  [[gnu::tls_model("initial-exec")]] thread_local uint64_t counter = 0;
  return counter++;
}

unsigned next_hook_handle() {
  static std::atomic<unsigned> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

TensorMetadata TensorMetadata::of(const Tensor& t) {
  TensorMetadata metadata;
  if (!t.defined()) return metadata;
  metadata.shape = DimVector(t.sizes());
  metadata.dtype = t.dtype();
  metadata.device = t.device();
  metadata.defined = true;
  return metadata;
}

Tensor TensorMetadata::zeros() const {
  return strata::zeros(shape.ref(), TensorOptions().dtype(dtype).device(device));
}

Node::Node() : sequence_nr_(next_sequence_nr()) {}

// Note [Iterative graph destruction]
// Destroying the last reference to a long chain of Nodes would recurse once per Node and
// overflow the stack at around 100,000 Nodes. Instead, a Node's destructor hands its edges to a
// thread-local list; only the outermost destructor drains it, so each Node dies at depth one.
Node::~Node() {
  [[gnu::tls_model("initial-exec")]] thread_local std::vector<std::shared_ptr<Node>> pending;
  [[gnu::tls_model("initial-exec")]] thread_local bool draining = false;
  for (Edge& edge : next_edges_)
    if (edge.function) pending.push_back(std::move(edge.function));
  if (draining) return;
  draining = true;
  while (!pending.empty()) {
    std::shared_ptr<Node> next = std::move(pending.back());
    pending.pop_back();
    next.reset();  // its destructor appends its own edges
  }
  draining = false;
}

uint32_t Node::add_output_metadata(const Tensor& output) {
  output_metadata_.push_back(TensorMetadata::of(output));
  return static_cast<uint32_t>(output_metadata_.size() - 1);
}

unsigned Node::add_gradient_hook(uint32_t output_nr, GradientHook hook) {
  unsigned handle = next_hook_handle();
  hooks_.push_back({handle, output_nr, strata::detail::keep_code_alive(std::move(hook))});  // See Note [Code of unloaded libraries]
  return handle;
}

bool Node::remove_gradient_hook(unsigned handle) {
  auto it = std::find_if(hooks_.begin(), hooks_.end(), [&](const Hook& h) { return h.handle == handle; });
  if (it == hooks_.end()) return false;
  hooks_.erase(it);
  return true;
}

// Note [Hooks changing hooks]
// A hook may register another hook or remove itself (or others) while hooks run. The hooks run
// from a snapshot taken before the first one, so the list can change under them: a hook added
// now runs from the next backward on, and a removed one still finishes this run (as PyTorch).
void Node::run_gradient_hooks(tensor_list& grads) const {
  const std::vector<Hook> snapshot = hooks_;
  for (const Hook& hook : snapshot) {
    if (hook.output_nr >= grads.size() || !grads[hook.output_nr].defined()) continue;
    Tensor replaced = hook.fn(grads[hook.output_nr]);
    if (!replaced.defined()) continue;
    const Tensor& grad = grads[hook.output_nr];
    STRATA_CHECK_VALUE(replaced.sizes() == grad.sizes() && replaced.dtype() == grad.dtype(), "[", name(),
                       "] a hook on output ", hook.output_nr, " changed its gradient from ", grad.dtype(), " ",
                       grad.sizes(), " to ", replaced.dtype(), " ", replaced.sizes(), "; a hook must keep both");
    grads[hook.output_nr] = std::move(replaced);
  }
}

void Node::check_not_released() const {
  STRATA_CHECK(!released_, "[", name(),
               "] Trying to backward through the graph a second time (or to use saved tensors after they were "
               "freed). Saved tensors and the graph are freed after backward; pass retain_graph=true to backward "
               "or autograd::grad the first time if you need to go through it again.");
}

}  // namespace strata::autograd
