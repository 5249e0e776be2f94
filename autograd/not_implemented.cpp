// The Autograd fallback: an op with kernels but no derivative, called on tensors that require
// grad, still runs, and its outputs carry a Node that throws if backward ever reaches it.
// See Note [Missing derivatives].
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
    strata::detail::throw_error<NotImplementedError>(
        "[", op_, "] the derivative of ", op_, " is not implemented: register an Autograd kernel for it, e.g. "
        "Library(\"ns\", Library::IMPL, DispatchKey::Autograd).impl(\"op\", autograd::kernel<MyFunction>())");
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

void autograd_not_implemented_fallback(const OperatorHandle& op, Stack& stack) {
  const size_t arguments = op.schema().arguments.size();
  const size_t first = stack.size() - arguments;
  auto node = std::make_shared<NotImplementedNode>(op.name());
  bool any_requires_grad = false;
  if (is_grad_enabled()) attach_inputs(*node, stack, first, arguments, any_requires_grad);
  {
    ExcludeDispatchKeyGuard below_autograd(DispatchKey::Autograd);
    op.call_boxed(stack);
  }
  if (!any_requires_grad) return;
  const size_t results = op.schema().returns.size();
  auto record = [&](const Tensor& out) {
    if (out.defined() && out.is_floating_point()) detail::set_history(out, node, node->add_output_metadata(out));
  };
  for (size_t i = stack.size() - results; i < stack.size(); ++i) {
    if (stack[i].is_tensor()) record(stack[i].to_tensor());
    else if (stack[i].is_tensor_list())  // every tensor of a Tensor[] return
      for (const Tensor& out : stack[i].to_tensor_list()) record(out);
  }
}

}  // namespace
}  // namespace strata::autograd

STRATA_LIBRARY_IMPL(_, Autograd, m) { m.fallback(&strata::autograd::autograd_not_implemented_fallback); }

// The dispatcher runs autograd's in-place check before a mutable op's autograd kernel.
// See Note [Mutation from the schema] in dispatch/dispatch_checks.cpp.
namespace {
const bool inplace_check_installed =
    (strata::detail::set_inplace_check(&strata::autograd::detail::check_inplace), true);
}
