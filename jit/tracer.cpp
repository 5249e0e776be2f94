// jit::trace: capture through the Tracer dispatch key. See Note [Tracing].
#include <strata/jit/graph.h>

#include <iostream>
#include <unordered_map>

#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/tensor/host_read.h>

namespace strata::jit {

// Note [Tracing]
// trace() runs the function once with the Tracer key in the thread's include set and a boxed
// fallback registered for it. Every dispatcher call then reaches the fallback first (Tracer is
// the highest key), whichever op it is, built-in or from a user's library: the fallback turns
// the arguments into operands (tensors it has seen become their values, other tensors enter as
// prim::Constant nodes), calls the op below the Tracer key with Tracer excluded (so the ops an
// op's kernel calls are not recorded again: the graph holds `softmax`, not its parts, and an op
// whose Autograd kernel is a Function appears as that op), and gives each tensor result a new
// value. A map from TensorImpl to its latest value follows tensors through the trace; the
// trace keeps every tensor it saw alive, so no address is reused for another tensor meanwhile.
// Bare Function::apply calls arrive through the FunctionTracer hook (Note [Tracing bare
// Functions]), and item() through the host-read observer (Note [Host reads under tracing]).

namespace {

class TracingState final : public autograd::detail::FunctionTracer {
 public:
  Graph graph;
  std::unordered_map<const TensorImpl*, int> value_of;
  tensor_list seen;  // keeps every traced tensor's address unique for the trace
  int host_reads = 0;

  int define(const Tensor& tensor) {
    std::vector<int64_t> sizes(tensor.sizes().begin(), tensor.sizes().end());
    const int id = graph.add_value(ValueInfo{tensor.dtype(), std::move(sizes), tensor.device()});
    value_of[tensor.impl()] = id;
    seen.push_back(tensor);
    return id;
  }

  // The value of `tensor`: its latest one, or a new prim::Constant holding it.
  int value(const Tensor& tensor) {
    auto it = value_of.find(tensor.impl());
    if (it != value_of.end()) return it->second;
    Node node;
    node.op = "prim::Constant";
    node.inputs.push_back(Operand::of_constant(IValue(tensor)));
    const int id = define(tensor);
    node.outputs.push_back(Operand::of_value(id));
    graph.add_node(std::move(node));
    return id;
  }

  Operand operand(const IValue& argument) {
    if (argument.is_tensor()) {
      const Tensor& tensor = argument.to_tensor();
      return tensor.defined() ? Operand::of_value(value(tensor)) : Operand::of_constant(IValue());
    }
    if (argument.is_tensor_list()) {
      Operand out{Operand::Kind::ValueList, -1, {}, {}};
      for (const Tensor& tensor : argument.to_tensor_list()) out.values.push_back(value(tensor));
      return out;
    }
    if (argument.is_optional_tensor_list()) {
      Operand out{Operand::Kind::OptionalValueList, -1, {}, {}};
      for (const auto& tensor : argument.to_optional_tensor_list())
        out.values.push_back(tensor && tensor->defined() ? value(*tensor) : -1);
      return out;
    }
    return Operand::of_constant(argument);
  }

  Operand result(const IValue& value) {
    if (value.is_tensor() && value.to_tensor().defined()) return Operand::of_value(define(value.to_tensor()));
    if (value.is_tensor_list()) {
      Operand out{Operand::Kind::ValueList, -1, {}, {}};
      for (const Tensor& tensor : value.to_tensor_list()) out.values.push_back(define(tensor));
      return out;
    }
    return Operand::of_constant(value);
  }

  void record_call(const OperatorHandle& op, DispatchKeySet keys, Stack& stack);

  tensor_list record_function(std::string name, const tensor_list& inputs,
                              std::function<tensor_list(const tensor_list&)> replay) override {
    Node node;
    node.op = "prim::Function";
    for (const Tensor& input : inputs) node.inputs.push_back(Operand::of_value(value(input)));
    tensor_list outputs;
    {
      ExcludeDispatchKeyGuard inside(DispatchKey::Tracer);
      outputs = replay(inputs);
    }
    for (const Tensor& output : outputs) {
      STRATA_CHECK(output.defined(), "[jit::trace] Function ", name, " returned an undefined tensor");
      node.outputs.push_back(Operand::of_value(define(output)));
    }
    node.function = std::make_shared<TracedFunction>(TracedFunction{std::move(name), std::move(replay)});
    graph.add_node(std::move(node));
    return outputs;
  }
};

[[gnu::tls_model("initial-exec")]] thread_local TracingState* current = nullptr;

void warn_specialised(const std::string& what) {
  if (current == nullptr) return;
  if (current->host_reads++ == 0)
    std::cerr << "[jit::trace] warning: " << what
              << " read a tensor's value into C++ during tracing; the graph is specialised to this input and "
                 "will not follow other values (as torch.jit.trace)\n";
}

void TracingState::record_call(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  const FunctionSchema& schema = op.schema();
  const size_t first = stack.size() - schema.arguments.size();
  Node node;
  node.op = op.name();
  node.handle = op;
  for (size_t i = first; i < stack.size(); ++i) node.inputs.push_back(operand(stack[i]));
  {
    ExcludeDispatchKeyGuard inside(DispatchKey::Tracer);
    op.redispatch_boxed(keys.remove(DispatchKey::Tracer), stack);
  }
  const size_t results = schema.returns.size();
  STRATA_CHECK(stack.size() >= results, "[jit::trace] ", op.name(), " left ", stack.size(), " results, expected ",
               results);
  bool reads_host = false;
  for (size_t i = stack.size() - results; i < stack.size(); ++i) {
    node.outputs.push_back(result(stack[i]));
    reads_host = reads_host || (!stack[i].is_tensor() && !stack[i].is_tensor_list() && !stack[i].is_none());
  }
  // An op computing a number, bool or list from tensors (equal, _local_scalar_dense...).
  bool reads_tensors = false;
  for (const Operand& input : node.inputs) reads_tensors = reads_tensors || !input.is_constant();
  if (reads_host && reads_tensors) warn_specialised(op.name());
  graph.add_node(std::move(node));
}

void trace_fallback(const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  if (current == nullptr) {  // Tracer included by someone else on this thread: pass through
    ExcludeDispatchKeyGuard inside(DispatchKey::Tracer);
    op.redispatch_boxed(keys.remove(DispatchKey::Tracer), stack);
    return;
  }
  current->record_call(op, keys, stack);
}

// Installs the trace's state, hooks and Tracer key for one thread, and undoes them.
class TracingScope {
 public:
  explicit TracingScope(TracingState& state)
      : library_("_", Library::IMPL, DispatchKey::Tracer),
        previous_state_(std::exchange(current, &state)),
        previous_function_tracer_(autograd::detail::set_function_tracer(&state)),
        previous_observer_(strata::detail::set_host_read_observer([](const char* what) { warn_specialised(what); })),
        include_(DispatchKey::Tracer) {
    library_.fallback(BoxedKernelWithKeys(&trace_fallback));
  }
  ~TracingScope() {
    strata::detail::set_host_read_observer(previous_observer_);
    autograd::detail::set_function_tracer(previous_function_tracer_);
    current = previous_state_;
  }
  TracingScope(const TracingScope&) = delete;
  TracingScope& operator=(const TracingScope&) = delete;

 private:
  Library library_;
  TracingState* previous_state_;
  autograd::detail::FunctionTracer* previous_function_tracer_;
  strata::detail::HostReadObserver previous_observer_;
  IncludeDispatchKeyGuard include_;
};

}  // namespace

Graph trace(const std::function<tensor_list(const tensor_list&)>& fn, const tensor_list& example_inputs) {
  STRATA_CHECK_VALUE(fn != nullptr, "[jit::trace] fn is empty");
  TracingState state;
  for (size_t i = 0; i < example_inputs.size(); ++i) {
    const Tensor& input = example_inputs[i];
    STRATA_CHECK_VALUE(input.defined(), "[jit::trace] example input ", i, " is an undefined tensor");
    auto it = state.value_of.find(input.impl());
    STRATA_CHECK_VALUE(it == state.value_of.end(), "[jit::trace] example input ", i, " is the same tensor as input ",
                       it == state.value_of.end() ? 0 : it->second, "; pass distinct tensors");
    state.graph.add_input(state.define(input));
  }
  tensor_list outputs;
  {
    TracingScope scope(state);
    outputs = fn(example_inputs);
    for (size_t i = 0; i < outputs.size(); ++i) {
      STRATA_CHECK_VALUE(outputs[i].defined(), "[jit::trace] output ", i, " of the traced function is undefined");
      state.graph.add_output(state.value(outputs[i]));
    }
  }
  state.graph.set_host_reads(state.host_reads);
  return std::move(state.graph);
}

}  // namespace strata::jit
