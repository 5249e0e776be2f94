#include <strata/autograd/function.h>

#include <algorithm>

#include <strata/autograd/engine.h>
#include <strata/dispatch/dispatcher.h>
#include <strata/ops/ops.h>

namespace strata::autograd {

SavedVariable::SavedVariable(const Tensor& tensor, bool is_output, const std::shared_ptr<Node>& node)
    : is_output_(is_output), was_defined_(tensor.defined()) {
  if (!tensor.defined()) return;
  saved_version_ = tensor.version();
  output_nr_ = tensor.output_nr();
  if (is_output) {
    // Shares storage and version counter, but not the grad_fn (that would be a cycle). Its
    // producer is `node`, the owner, which error messages name through grad_fn_ and the owner.
    const TensorImpl& impl = *tensor.impl();
    storage_ = impl.storage();
    sizes_ = DimVector(impl.sizes());
    strides_ = DimVector(impl.strides());
    storage_offset_ = impl.storage_offset();
    dtype_ = impl.dtype();
    grad_fn_ = node;
  } else {
    data_ = tensor;
    if (auto fn = tensor.grad_fn()) {
      producer_ = fn;  // weak; taken now: a later in-place change gives the tensor another grad_fn
      had_producer_ = true;
    }
  }
}

namespace {
// The name of a Function's node in error messages ("Function" once the node is gone); computed
// only when a message is built, never on the backward path.
std::string name_of(const std::shared_ptr<Node>& node) { return node ? node->name() : std::string("Function"); }
}  // namespace

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& owner) const {
  STRATA_CHECK(!released_, "[", name_of(owner),
               "] Trying to backward through the graph a second time (or to use saved tensors after they were "
               "freed); pass retain_graph=true the first time if you need to go through it again.");
  if (!was_defined_) return Tensor();
  const uint32_t current = is_output_ ? storage_->version() : data_.version();
  STRATA_CHECK(current == saved_version_, "[", name_of(owner),
               "] one of the variables needed for gradient computation has been modified by an inplace operation: [",
               is_output_ ? dtype_ : data_.dtype(), " ", is_output_ ? sizes_.ref() : data_.sizes(), "], which is output ",
               output_nr_, " of ", producer_name(owner), ", is at version ", current, "; expected version ",
               saved_version_, " instead.");
  if (!is_output_) return data_;
  // A saved output comes back attached to its Node, so double backward can go through it.
  Tensor result(strata::detail::make_pooled_tensor_impl(storage_, dtype_, sizes_.ref(), strides_.ref(), storage_offset_));
  if (std::shared_ptr<Node> node = grad_fn_.lock(); node && node == owner) detail::set_history(result, node, output_nr_);
  return result;
}

std::string SavedVariable::producer_name(const std::shared_ptr<Node>& owner) const {
  if (std::shared_ptr<Node> producer = producer_.lock()) return producer->name();
  if (is_output_) return name_of(owner);
  return had_producer_ ? "an op whose node was freed" : "a leaf";
}

void SavedVariable::reset() {
  data_ = Tensor();
  storage_ = nullptr;
  released_ = true;
}

IValue& SavedData::operator[](std::string_view key) {
  for (auto& [name, value] : entries_)
    if (name == key) return value;
  entries_.emplace_back(std::string(key), IValue());
  return entries_.back().second;
}

const IValue& SavedData::at(std::string_view key) const {
  for (const auto& [name, value] : entries_)
    if (name == key) return value;
  strata::detail::throw_error<ValueError>("[saved_data] no value saved under '", key, "'");
}

bool SavedData::contains(std::string_view key) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const auto& entry) { return entry.first == key; });
}

void AutogradContext::save_for_backward(const tensor_list& tensors) {
  to_save_ = SmallVector<Tensor, 2>(tensors.begin(), tensors.end());
}
void AutogradContext::save_for_backward(std::initializer_list<Tensor> tensors) {
  to_save_ = SmallVector<Tensor, 2>(tensors);
}

tensor_list AutogradContext::get_saved_variables() const {
  const SmallVector<Tensor, 2> saved = detail::saved_tensors(*this);
  return tensor_list(saved.begin(), saved.end());
}

namespace detail {
SmallVector<Tensor, 2> saved_tensors(const AutogradContext& ctx) {
  std::shared_ptr<Node> node = ctx.node_ ? ctx.node_->shared_from_this() : nullptr;
  STRATA_CHECK(!ctx.released_, "[", name_of(node),
               "] Trying to backward through the graph a second time (or to use saved tensors after they were "
               "freed); pass retain_graph=true the first time if you need to go through it again.");
  // Before wiring (inside forward) the tensors come back as given.
  if (ctx.saved_.empty() && !ctx.to_save_.empty()) return ctx.to_save_;
  SmallVector<Tensor, 2> result;
  for (const SavedVariable& saved : ctx.saved_) result.push_back(saved.unpack(node));
  return result;
}
}  // namespace detail

void AutogradContext::mark_dirty(const tensor_list& tensors) {
  for (const Tensor& t : tensors) dirty_.insert(t.impl());
}
void AutogradContext::mark_non_differentiable(const tensor_list& tensors) {
  for (const Tensor& t : tensors) non_differentiable_.insert(t.impl());
}
IntArrayRef AutogradContext::input_sizes(size_t index) const {
  STRATA_CHECK_VALUE(inputs_ && index < inputs_->size(), "[input_sizes] the function has ",
                     inputs_ ? inputs_->size() : 0, " gradient slots; asked for slot ", index);
  return (*inputs_)[index].metadata.shape.ref();
}

bool AutogradContext::needs_input_grad(size_t index) const {
  if (!inputs_ || index >= inputs_->size() || !(*inputs_)[index].needs_grad) return false;
  // In backward: only the edges this pass delivers along (See Note [Function inputs]).
  return !edges_ || index >= edges_->size() || detail::edge_needed((*edges_)[index]);
}

void AutogradContext::save_variables(std::span<const Tensor> outputs, const std::shared_ptr<Node>& node) {
  saved_.reserve(to_save_.size());
  for (const Tensor& t : to_save_) {
    bool is_output = t.defined() && std::any_of(outputs.begin(), outputs.end(),
                                                [&](const Tensor& out) { return out.impl() == t.impl(); });
    saved_.emplace_back(t, is_output, node);
  }
  to_save_.clear();
}

void AutogradContext::release() {
  for (SavedVariable& saved : saved_) saved.reset();
  to_save_.clear();
  saved_data.clear();
  released_ = true;
}

namespace detail {

namespace {
// Note [Views returned by custom Functions]
// A user's Function may return a view of an input (GradReverse's forward returns
// x.view_as(x)), or an input as it is (wire_outputs makes that a view, to record on). Changing
// such an output in place would go through autograd's view rules (CopySlices, Note [In-place on
// views]), which send the gradient of the change to the base's history, around the Function:
// its backward (the gradient reversal) would be skipped for that output, silently. As LibTorch
// does (CreationMeta::IN_CUSTOM_FUNCTION), these outputs and views of them are marked:
// check_inplace refuses to change them in place with grad mode on, and refresh_view_history
// refuses to use one with grad mode on after its storage changed. Under NoGradGuard they change
// like any tensor. Functions run as an op's Autograd kernel (kernel<F>(), apply_op) are left
// out: their views are the op's own, as a schema's alias annotation (Tensor(a)) declares.
// Every view output a Function records takes its ViewCreation here: a custom Function's are
// marked, any other inherits its inputs' marks (a view of a view made without grad is one too:
// Note [Views made without grad] in autograd/variable.cpp).
void mark_view_outputs(const Tensor& output, const ForwardInputs& inputs, bool custom) {
  if (!output.impl()->view_base()) return;
  ViewCreation creation = ViewCreation::kDefault;
  if (custom) {
    creation = ViewCreation::kInCustomFunction;
  } else {
    for (const ForwardInput& input : inputs) creation = inherit_view_creation(creation, input.impl);
  }
  set_view_creation(output, creation);
}
}  // namespace

// Note [Mark dirty]
// A tensor marked dirty is an input the forward changed in place: its history is rebased onto
// this node (through CopySlices when it is a view), and its version is bumped unless forward
// already did (a Function writing through data_ptr is still seen as a mutation; a built-in
// in-place op bumped once already and is not bumped twice).
void wire_outputs(const std::shared_ptr<Node>& node, AutogradContext& ctx, std::span<Tensor> outputs,
                  const ForwardInputs& inputs, bool custom) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& output = outputs[i];
    node->add_output_metadata(output);
    if (!output.defined()) continue;
    size_t self_slot = inputs.size();  // the input this output is, if any
    for (size_t j = 0; j < inputs.size() && self_slot == inputs.size(); ++j)
      if (inputs[j].impl == output.impl()) self_slot = j;
    const bool is_input = self_slot < inputs.size();
    if (ctx.non_differentiable_.count(output.impl())) continue;
    const bool dirty = is_input && ctx.dirty_.count(output.impl());
    if (dirty) {
      check_inplace(output, node->name().c_str());
      if (output.version() == inputs[self_slot].version) output.impl()->bump_version();
    }
    // As in PyTorch, only floating outputs are differentiable: an integral or bool output
    // (indices, a count, a cast to int) gets no history, without a mark_non_differentiable.
    if (!output.is_floating_point()) continue;
    if (is_input && !dirty) {
      // An input returned as it is: give the output its own identity (a view) to record on.
      output = strata::detail::make_view(output, output.sizes(), output.strides(), output.storage_offset());
    }
    if (dirty) {
      rebase_history(output, node, static_cast<uint32_t>(i), self_slot);
    } else {
      set_history(output, node, static_cast<uint32_t>(i));
      mark_view_outputs(output, inputs, custom);
    }
  }
  ctx.save_variables(outputs, node);
}

// A gradient shaped like its input, or reducible to it by summing broadcast dims.
Tensor fit_gradient(const Node& node, size_t index, Tensor grad, const TensorMetadata& input) {
  if (grad.sizes() == input.shape.ref()) return grad;
  DimVector target = input.shape;
  bool reducible = grad.dim() >= static_cast<int64_t>(target.size());
  for (size_t i = 0; reducible && i < target.size(); ++i) {
    int64_t g = grad.size(grad.dim() - target.size() + i);
    reducible = target[i] == g || target[i] == 1;
  }
  STRATA_CHECK_VALUE(reducible, "[", node.name(), "] backward returned a gradient of shape ", grad.sizes(),
                     " for forward input ", index, " of shape ", input.shape.ref());
  return sum_to(grad, target.ref());
}

tensor_list validate_gradients(const Node& node, tensor_list&& grads, const ForwardInputs& inputs,
                               const edge_list& edges) {
  STRATA_CHECK_VALUE(grads.size() == inputs.size(), "[", node.name(), "] backward returned ", grads.size(),
                     " gradients but forward took ", inputs.size(), " arguments (return one per argument, and one "
                     "per tensor of a tensor_list argument; an undefined Tensor means no gradient)");
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) continue;
    const TensorMetadata& input = inputs[i].metadata;
    STRATA_CHECK_VALUE(input.defined, "[", node.name(), "] backward returned a gradient for argument ", i,
                       ", which is not a tensor");
    if (!edges[i].valid()) {
      grads[i] = Tensor();  // the input does not require grad
      continue;
    }
    grads[i] = fit_gradient(node, i, std::move(grads[i]), input);
    if (grads[i].dtype() != input.dtype || grads[i].device() != input.device)
      grads[i] = grads[i].to(TensorOptions().dtype(input.dtype).device(input.device));
  }
  return std::move(grads);
}

void materialize(tensor_list& grads, const Node& node) {
  for (size_t i = 0; i < grads.size() && i < node.num_outputs(); ++i)
    if (!grads[i].defined() && node.output_metadata(i).defined) grads[i] = node.output_metadata(i).zeros();
}

namespace {
[[gnu::tls_model("initial-exec")]] thread_local FunctionTracer* function_tracer = nullptr;
}

FunctionTracer* active_function_tracer() {
  if (function_tracer == nullptr) return nullptr;  // the common case: one thread-local read
  const auto& local = strata::detail::local_dispatch_keys();
  const bool tracing = local.included.has(DispatchKey::Tracer) && !local.excluded.has(DispatchKey::Tracer);
  return tracing ? function_tracer : nullptr;
}

FunctionTracer* set_function_tracer(FunctionTracer* tracer) { return std::exchange(function_tracer, tracer); }

std::string function_name(const char* mangled) {
  std::string name = strata::detail::demangle(mangled);
  size_t last = name.rfind("::");
  return last == std::string::npos ? name : name.substr(last + 2);
}

}  // namespace detail
}  // namespace strata::autograd
