// The Autograd fallback: an op with kernels but no derivative, called on tensors that require
// grad, still runs, and its outputs carry a Node that throws if backward ever reaches it.
// See Note [Missing derivatives].
#include <algorithm>

#include <strata/autograd/grad_mode.h>
#include <strata/autograd/variable.h>
#include <strata/dispatch/library.h>

namespace strata::autograd {
namespace {

// Note [Missing derivatives]
// Falling through the Autograd key silently would give outputs without a grad_fn, and a
// backward would quietly skip every tensor before them: wrong gradients with no error. So
// the outputs of such a call get a NotImplementedNode with edges to the inputs that require
// grad; forward works, and a backward that needs the missing derivative says which op lacks
// one and how to give it.
class NotImplementedNode final : public Node {
 public:
  explicit NotImplementedNode(std::string op) : op_(std::move(op)) {}
  std::string name() const override { return "NotImplemented[" + op_ + "]"; }
  tensor_list apply(tensor_list&&) override {
    // The registration to write, in the op's own namespace: "myops::swish" gives
    // STRATA_LIBRARY_IMPL(myops, Autograd, m) { m.impl("swish", ...); }.
    const size_t colons = op_.find("::");
    const std::string ns = colons == std::string::npos ? "ns" : op_.substr(0, colons);
    const std::string name = colons == std::string::npos ? op_ : op_.substr(colons + 2);
    strata::detail::throw_error<NotImplementedError>(
        "[", op_, "] the derivative of ", op_, " is not implemented: register an Autograd kernel for it, e.g. "
        "STRATA_LIBRARY_IMPL(", ns, ", Autograd, m) { m.impl(\"", name, "\", autograd::kernel<MyFunction>()); }");
  }

 private:
  std::string op_;
};

void attach_inputs(Node& node, const Stack& stack, size_t first, size_t count, bool& any) {
  for (size_t i = first; i < first + count; ++i) {
    const IValue& value = stack[i];
    auto add = [&](const Tensor& t) {
      if (detail::requires_grad(t)) {
        node.mutable_next_edges().push_back(detail::gradient_edge(t));
        any = true;
      }
    };
    if (value.is_tensor()) add(value.to_tensor());
    else if (value.is_tensor_list())
      for (const Tensor& t : value.to_tensor_list()) add(t);
  }
}

// An op without a derivative may return at most one view (Tensor(a)), and only its first
// output as a view of its first argument: autograd can track nothing else (PyTorch's rule).
void check_view_returns(const OperatorHandle& op) {
  const FunctionSchema& schema = op.schema();
  int views = 0;
  for (size_t r = 0; r < schema.returns.size(); ++r) {
    const std::optional<AliasInfo>& alias = schema.returns[r].alias;
    if (!alias || alias->is_write) continue;
    STRATA_CHECK(++views == 1, "[", op.name(), "] expected only a single output in the operator schema to have a "
                 "non-write alias annotation (Tensor(a)): ops without a derivative whose several outputs are views "
                 "are not supported; give the op an Autograd kernel");
    const std::optional<AliasInfo>& first = schema.arguments.empty() ? std::nullopt : schema.arguments[0].alias;
    STRATA_CHECK(r == 0 && first && first->set == alias->set, "[", op.name(), "] ops without a derivative can only "
                 "create view relationships between the first argument and the first output; give the op an "
                 "Autograd kernel");
  }
}

void autograd_not_implemented_fallback(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  check_view_returns(op);
  const size_t arguments = op.schema().arguments.size();
  const size_t first = stack.size() - arguments;
  auto node = std::make_shared<NotImplementedNode>(op.name());
  bool any_requires_grad = false;
  // What a view result inherits (Note [Views made without grad] in variable.cpp).
  ViewCreation inherited = ViewCreation::kDefault;
  SmallVector<const TensorImpl*, 4> input_impls;
  if (is_grad_enabled()) {
    attach_inputs(*node, stack, first, arguments, any_requires_grad);
    for (size_t i = first; i < stack.size(); ++i) {
      if (!stack[i].is_tensor()) continue;
      const TensorImpl* impl = stack[i].to_tensor().impl();
      input_impls.push_back(impl);
      inherited = detail::inherit_view_creation(inherited, impl);
    }
  }
  {
    ExcludeDispatchKeyGuard below_autograd(DispatchKey::Autograd);
    // On to the keys below autograd that this call dispatched with (not keys gathered again
    // from the arguments: a caller may have redispatched with keys of its own).
    op.redispatch_boxed(keys & DispatchKeySet(DispatchKeySet::FULL_AFTER, DispatchKey::Autograd), stack);
  }
  if (!any_requires_grad) return;
  const size_t results = op.schema().returns.size();
  auto record = [&](const Tensor& out) {
    if (!out.defined() || !out.is_floating_point()) return;
    detail::set_history(out, node, node->add_output_metadata(out));
    detail::set_view_creation(out, inherited);
  };
  for (size_t i = stack.size() - results; i < stack.size(); ++i) {
    // An input returned as it is that is a leaf requiring grad gets its own identity to record
    // on, as in Function::apply (recording on the leaf itself would make it the input of its
    // own grad_fn, a cycle, and no longer a leaf). A new view the kernel made is recorded on.
    if (stack[i].is_tensor() && stack[i].to_tensor().defined() && !op.schema().is_mutable()) {
      const Tensor& out = stack[i].to_tensor();
      const bool is_input = std::find(input_impls.begin(), input_impls.end(), out.impl()) != input_impls.end();
      if (is_input && detail::requires_grad(out) && out.is_leaf())
        stack[i] = IValue(strata::detail::make_alias(out, out.sizes(), out.strides(), out.storage_offset()));
    }
    if (stack[i].is_tensor()) record(stack[i].to_tensor());
    else if (stack[i].is_tensor_list())  // every tensor of a Tensor[] return
      for (const Tensor& out : stack[i].to_tensor_list()) record(out);
  }
}

}  // namespace
}  // namespace strata::autograd

STRATA_LIBRARY_IMPL(_, Autograd, m) { m.fallback(strata::BoxedKernelWithKeys(&strata::autograd::autograd_not_implemented_fallback)); }

// The dispatcher runs autograd's in-place check before a mutable op's autograd kernel.
// See Note [Mutation from the schema] in dispatch/dispatch_checks.cpp.
namespace {
const bool inplace_check_installed =
    (strata::detail::set_inplace_check(&strata::autograd::detail::check_inplace), true);
}
