// Graph: replay and the text form. See Note [Graph IR].
#include <strata/jit/graph.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>
#include <variant>

#include <strata/jit/ir_text.h>

namespace strata::jit {

// Note [Graph IR]
// A Graph is what jit::trace saw, as a straight-line program in SSA form:
// - values are numbered %0, %1, ...; each carries the dtype, sizes and device the trace saw;
//   the graph's inputs come first;
// - a node calls one operator by its schema name ("strata::add.Tensor", "myops::swish") with one
//   Operand per schema argument (values, lists of values, or constants: numbers, lists, dtypes,
//   devices, None) and one per schema return; a tensor the traced function used without
//   receiving it (a parameter, a captured tensor) enters through a `prim::Constant` node that
//   holds it, so every tensor operand is a value;
// - an in-place op (`Tensor(a!)` in its schema) is a node like any other whose result is a new
//   value naming the mutated tensor: later uses of that tensor refer to the new value;
// - a bare Function::apply is a `prim::Function` node holding a closure that applies it again:
//   it replays in this process but cannot be saved (see Note [Tracing bare Functions]).
// Replay walks the nodes in order, calling each operator through the dispatcher, so autograd
// records the calls as in eager mode and results are the eager results bit for bit.

int Graph::add_value(ValueInfo info) {
  ++version_;
  values_.push_back(std::move(info));
  return static_cast<int>(values_.size()) - 1;
}

namespace {

// Note [Replay on another device]
// A graph traced on one device may run on another (a CPU trace replayed on Meta infers every
// shape of a model without data): all inputs must then share that device, captured constant
// tensors are copied to it for the run, and Device constants naming the traced device (or no
// device: the default) name the new one. Parameters copied this way are not the module's
// parameters: to train on a device, trace there.
struct Replay {
  const Graph& graph;
  Device traced;
  Device target;
  std::vector<Tensor> env;
  std::map<const TensorImpl*, Tensor> moved;  // captured constants on the target device

  bool moving() const { return traced != target; }

  IValue constant(const IValue& value) {
    if (!moving()) return value;
    if (value.is_device() && value.to_device() == traced) return IValue(target);
    if (value.is_tensor() && value.to_tensor().defined() && value.to_tensor().device() == traced) {
      const Tensor& tensor = value.to_tensor();
      auto [it, fresh] = moved.try_emplace(tensor.impl());
      if (fresh) it->second = tensor.detach().to(target);
      return IValue(it->second);
    }
    return value;
  }

  IValue operand(const Operand& op) {
    switch (op.kind) {
      case Operand::Kind::Value: return IValue(env[op.value]);
      case Operand::Kind::ValueList: {
        tensor_list list;
        list.reserve(op.values.size());
        for (int id : op.values) list.push_back(env[id]);
        return IValue(std::move(list));
      }
      case Operand::Kind::OptionalValueList: {
        optional_tensor_list list;
        for (int id : op.values) list.push_back(id < 0 ? std::nullopt : std::optional<Tensor>(env[id]));
        return IValue(std::move(list));
      }
      case Operand::Kind::Constant: return constant(op.constant);
    }
    return {};
  }

  void bind(const Operand& output, const IValue& result, const Node& node) {
    if (output.kind == Operand::Kind::Value) {
      STRATA_CHECK(result.is_tensor(), "[jit::Graph::run] ", node.op, " returned ", result.kind_name(),
                   " where the trace saw a tensor");
      env[output.value] = result.to_tensor();
    } else if (output.kind == Operand::Kind::ValueList) {
      STRATA_CHECK(result.is_tensor_list() && result.to_tensor_list().size() == output.values.size(), "[jit::Graph::run] ",
                   node.op, " returned a different number of tensors than the trace saw (", output.values.size(), ")");
      for (size_t i = 0; i < output.values.size(); ++i) env[output.values[i]] = result.to_tensor_list()[i];
    }
  }

  // A creation op traced with no device (`zeros({3})`: the default, the CPU) makes its tensor
  // on the device the graph now runs on.
  void default_device_to_target(const Node& node, Stack& stack) const {
    const FunctionSchema& schema = node.handle.schema();
    for (size_t i = 0; i < stack.size() && i < schema.arguments.size(); ++i)
      if (schema.arguments[i].type.base == BaseType::Device && !schema.arguments[i].type.is_list && stack[i].is_none())
        stack[i] = IValue(target);
  }

  void run_node(const Node& node, Stack& stack) {
    if (node.op == "prim::Constant") {
      env[node.outputs[0].value] = constant(node.inputs[0].constant).to_tensor();
      return;
    }
    if (node.is_function()) {
      tensor_list inputs;
      for (const Operand& input : node.inputs) inputs.push_back(env[input.value]);
      tensor_list outputs = node.function->apply(inputs);
      STRATA_CHECK(outputs.size() == node.outputs.size(), "[jit::Graph::run] Function ", node.function->name,
                   " returned ", outputs.size(), " tensors where the trace saw ", node.outputs.size());
      for (size_t i = 0; i < outputs.size(); ++i) env[node.outputs[i].value] = std::move(outputs[i]);
      return;
    }
    stack.clear();
    for (const Operand& input : node.inputs) stack.push_back(operand(input));
    if (moving()) default_device_to_target(node, stack);
    node.handle.call_boxed(stack);
    STRATA_CHECK(stack.size() == node.outputs.size(), "[jit::Graph::run] ", node.op, " returned ", stack.size(),
                 " values where the trace saw ", node.outputs.size());
    for (size_t i = 0; i < node.outputs.size(); ++i) bind(node.outputs[i], stack[i], node);
  }
};

// The index of the last node that reads each value (the node count for the graph's outputs,
// -1 for values nobody reads).
std::vector<int> last_uses(const Graph& graph) {
  std::vector<int> last_use(graph.values().size(), -1);
  const std::vector<Node>& nodes = graph.nodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const Operand& input : nodes[i].inputs)
      input.for_each_value([&](int id) { last_use[id] = static_cast<int>(i); });
  for (int id : graph.outputs()) last_use[id] = static_cast<int>(nodes.size());
  return last_use;
}

// Calls fn(id) for each value no node after node i reads: the inputs it read last, and the
// results nobody reads. A value node i reads twice comes twice.
template <class Fn>
void for_each_dead_after(const Graph& graph, size_t i, const std::vector<int>& last_use, Fn&& fn) {
  const Node& node = graph.nodes()[i];
  for (const Operand& input : node.inputs)
    input.for_each_value([&](int id) { if (last_use[id] == static_cast<int>(i)) fn(id); });
  for (const Operand& output : node.outputs)
    output.for_each_value([&](int id) { if (last_use[id] < 0) fn(id); });
}

Device traced_device(const Graph& graph) {
  for (int id : graph.inputs()) return graph.values()[id].device;
  return Device(kCPU);
}

void check_inputs(const Graph& graph, const tensor_list& inputs) {
  STRATA_CHECK_VALUE(inputs.size() == graph.inputs().size(), "[jit::Graph::run] expected ", graph.inputs().size(),
                     " inputs as traced, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& seen = graph.values()[graph.inputs()[i]];
    const Tensor& input = inputs[i];
    STRATA_CHECK_VALUE(input.defined(), "[jit::Graph::run] input ", i, " is an undefined tensor");
    STRATA_CHECK_TYPE(input.dtype() == seen.dtype, "[jit::Graph::run] input ", i, " has dtype ", input.dtype(),
                      " but the graph was traced with ", seen.dtype);
    STRATA_CHECK_VALUE(input.dim() == static_cast<int64_t>(seen.sizes.size()), "[jit::Graph::run] input ", i,
                       " has ", input.dim(), " dimensions (shape ", input.sizes(), ") but the graph was traced with ",
                       seen.sizes.size(), " (shape ", IntArrayRef(seen.sizes), ")");
    STRATA_CHECK_VALUE(input.device() == inputs[0].device(), "[jit::Graph::run] input ", i, " is on ",
                       input.device(), " but input 0 is on ", inputs[0].device(),
                       ": a graph runs on one device (see Note [Replay on another device])");
    const ValueInfo& first = graph.values()[graph.inputs()[0]];
    STRATA_CHECK_VALUE(seen.device == first.device || input.device() == seen.device, "[jit::Graph::run] input ", i,
                       " is on ", input.device(), " but was traced on ", seen.device);
  }
}

}  // namespace

tensor_list detail::run_graph(const Graph& graph, const tensor_list& inputs, tensor_list* kept) {
  const std::vector<Node>& nodes = graph.nodes();
  const std::vector<int>& graph_outputs = graph.outputs();
  const std::vector<ValueInfo>& values = graph.values();
  check_inputs(graph, inputs);
  const Device traced = traced_device(graph);
  Replay replay{graph, traced, inputs.empty() ? traced : inputs[0].device(), {}, {}};
  replay.env.resize(values.size());
  for (size_t i = 0; i < inputs.size(); ++i) replay.env[graph.inputs()[i]] = inputs[i];
  // Each value is released after its last use, as eager code drops its temporaries, so the
  // allocator reuses their blocks at once.
  std::vector<int> last_use = last_uses(graph);
  if (kept != nullptr) std::fill(last_use.begin(), last_use.end(), static_cast<int>(nodes.size()));
  Stack stack;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    replay.run_node(node, stack);
    stack.clear();
    for_each_dead_after(graph, i, last_use, [&](int id) { replay.env[id] = Tensor(); });
  }
  tensor_list outputs;
  outputs.reserve(graph_outputs.size());
  for (int id : graph_outputs) outputs.push_back(replay.env[id]);
  if (kept != nullptr)
    for (Tensor& value : replay.env)
      if (value.defined()) kept->push_back(std::move(value));
  return outputs;
}

// Note [Prepared graphs]
// Boxed replay (run_graph) pays per node for things that are the same every run: each operand
// becomes an IValue on a stack, the boxed call unpacks it again, and the values' last uses are
// worked out anew. That made a replayed 300-op tanh chain take 1.5x eager's time, and a
// compiled function under grad, like Graph::run (Note [Prepared replay]), replays its graph on
// every call. A PreparedGraph works these out once. A node
// whose schema is one of a few common call shapes (a tensor; two tensors; a tensor and a
// Scalar; either with a Scalar alpha; linear's two tensors and an optional one; clone's tensor
// and optional memory format), with value
// operands and number constants, keeps a typed handle and its constants as Scalars. It is
// called as eager code calls it, through the same dispatcher entry, so autograd, tracing and
// replaced kernels see the same call and the results are eager's bit for bit. Every other node
// (in-place ops, lists, ints, dtypes, Functions, captured constants) runs as Graph::run runs
// it. The values each node leaves dead are listed once. A node whose operator was defined
// again since (a new schema generation) goes back to the boxed call. The typed path is the
// traced device's: inputs on another device run as Graph::run does.
namespace detail {
namespace {

using Tensor1Op = TypedOperatorHandle<Tensor(const Tensor&)>;
using Tensor2Op = TypedOperatorHandle<Tensor(const Tensor&, const Tensor&)>;
using TensorScalarOp = TypedOperatorHandle<Tensor(const Tensor&, const Scalar&)>;
using Tensor2ScalarOp = TypedOperatorHandle<Tensor(const Tensor&, const Tensor&, const Scalar&)>;
using TensorScalar2Op = TypedOperatorHandle<Tensor(const Tensor&, const Scalar&, const Scalar&)>;
using Tensor2OptionalOp = TypedOperatorHandle<Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&)>;
using TensorFormatOp = TypedOperatorHandle<Tensor(const Tensor&, std::optional<MemoryFormat>)>;
// The alternatives' order is the call shape's code: "T", "TT", "TS", "TTS", "TSS", "TTO", "TM".
using TypedCall = std::variant<std::monostate, Tensor1Op, Tensor2Op, TensorScalarOp, Tensor2ScalarOp, TensorScalar2Op,
                               Tensor2OptionalOp, TensorFormatOp>;

struct Step {
  size_t node = 0;
  TypedCall call;  // monostate: run as Graph::run does
  std::array<int, 3> tensors{-1, -1, -1};  // value ids in argument order; -1: a None Tensor?
  std::array<Scalar, 2> scalars;
  std::optional<MemoryFormat> format;  // "TM": a constant memory format, or None
  int out = -1;
  std::vector<int> release;  // values no later node reads
};

// The typed call for `node` with its operands in `step`, or monostate.
TypedCall typed_call(const Node& node, Step& step) {
  if (node.is_function() || !node.handle.has_schema()) return {};
  const FunctionSchema& schema = node.handle.schema();
  if (schema.is_mutable() || schema.returns.size() != 1 || node.outputs.size() != 1 || !node.outputs[0].is_value() ||
      schema.arguments.size() != node.inputs.size())
    return {};
  const SchemaType& result = schema.returns[0].type;
  if (result.base != BaseType::Tensor || result.is_list || result.optional) return {};
  std::string shape;
  size_t tensors = 0, scalars = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const SchemaType& type = schema.arguments[i].type;
    const Operand& operand = node.inputs[i];
    if (type.is_list || shape.size() == 3) return {};
    if (type.base == BaseType::Tensor && !type.optional && operand.is_value()) {
      shape += 'T';
      step.tensors[tensors++] = operand.value;
    } else if (type.base == BaseType::Tensor && type.optional &&
               (operand.is_value() || (operand.is_constant() && operand.constant.is_none()))) {
      shape += 'O';
      step.tensors[tensors++] = operand.is_value() ? operand.value : -1;
    } else if (type.base == BaseType::Scalar && !type.optional && operand.is_constant() &&
               operand.constant.is_number() && scalars < step.scalars.size()) {
      shape += 'S';
      step.scalars[scalars++] = operand.constant.to_scalar();
    } else if (type.base == BaseType::MemoryFormat && type.optional && shape == "T" && operand.is_constant() &&
               (operand.constant.is_none() || operand.constant.is_int())) {
      shape += 'M';
      if (!operand.constant.is_none()) step.format = operand.constant.to_memory_format();
    } else {
      return {};
    }
  }
  step.out = node.outputs[0].value;
  const OperatorHandle& op = node.handle;
  try {  // the checks above match the schema, so typed<>() agrees; a mismatch stays boxed
    if (shape == "T") return op.typed<Tensor(const Tensor&)>();
    if (shape == "TT") return op.typed<Tensor(const Tensor&, const Tensor&)>();
    if (shape == "TS") return op.typed<Tensor(const Tensor&, const Scalar&)>();
    if (shape == "TTS") return op.typed<Tensor(const Tensor&, const Tensor&, const Scalar&)>();
    if (shape == "TSS") return op.typed<Tensor(const Tensor&, const Scalar&, const Scalar&)>();
    if (shape == "TTO") return op.typed<Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&)>();
    if (shape == "TM") return op.typed<Tensor(const Tensor&, std::optional<MemoryFormat>)>();
  } catch (const TypeError&) {
  }
  return {};
}

// False for monostate and for a handle whose operator was defined again.
bool is_current(const TypedCall& call) {
  return std::visit([](const auto& op) {
    if constexpr (std::is_same_v<std::decay_t<decltype(op)>, std::monostate>) return false;
    else return op.is_current();
  }, call);
}

Tensor call_typed(const Step& step, const std::vector<Tensor>& env) {
  const auto& t = step.tensors;
  const auto& s = step.scalars;
  switch (step.call.index()) {
    case 1: return std::get<Tensor1Op>(step.call).call(env[t[0]]);
    case 2: return std::get<Tensor2Op>(step.call).call(env[t[0]], env[t[1]]);
    case 3: return std::get<TensorScalarOp>(step.call).call(env[t[0]], s[0]);
    case 4: return std::get<Tensor2ScalarOp>(step.call).call(env[t[0]], env[t[1]], s[0]);
    case 5: return std::get<TensorScalar2Op>(step.call).call(env[t[0]], s[0], s[1]);
    case 6: {
      const std::optional<Tensor> third = t[2] < 0 ? std::nullopt : std::optional<Tensor>(env[t[2]]);
      return std::get<Tensor2OptionalOp>(step.call).call(env[t[0]], env[t[1]], third);
    }
    default: return std::get<TensorFormatOp>(step.call).call(env[t[0]], step.format);
  }
}

}  // namespace

struct PreparedGraph::State {
  const Graph* graph = nullptr;
  Device traced = Device(kCPU);
  std::vector<Step> steps;
  size_t typed = 0;
};

PreparedGraph::PreparedGraph(const Graph& graph) {
  auto state = std::make_shared<State>();
  state->graph = &graph;
  state->traced = traced_device(graph);
  const std::vector<Node>& nodes = graph.nodes();
  const std::vector<int> last_use = last_uses(graph);
  state->steps.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    Step& step = state->steps[i];
    step.node = i;
    step.call = typed_call(nodes[i], step);
    if (step.call.index() != 0) ++state->typed;
    for_each_dead_after(graph, i, last_use, [&](int id) { step.release.push_back(id); });  // twice is harmless
  }
  state_ = std::move(state);
}

tensor_list PreparedGraph::run(const tensor_list& inputs) const {
  const State& state = *state_;
  const Graph& graph = *state.graph;
  check_inputs(graph, inputs);
  if (!inputs.empty() && inputs[0].device() != state.traced) return run_graph(graph, inputs, nullptr);
  Replay replay{graph, state.traced, state.traced, {}, {}};
  std::vector<Tensor>& env = replay.env;
  env.resize(graph.values().size());
  for (size_t i = 0; i < inputs.size(); ++i) env[graph.inputs()[i]] = inputs[i];
  Stack stack;
  for (const Step& step : state.steps) {
    const Node& node = graph.nodes()[step.node];
    if (is_current(step.call)) {
      env[step.out] = call_typed(step, env);
    } else {
      replay.run_node(node, stack);
      stack.clear();
    }
    for (int id : step.release) env[id] = Tensor();
  }
  tensor_list outputs;
  outputs.reserve(graph.outputs().size());
  for (int id : graph.outputs()) outputs.push_back(env[id]);
  return outputs;
}

size_t PreparedGraph::typed_nodes() const { return state_->typed; }

}  // namespace detail

// Note [Prepared replay]
// Graph::run replays through a PreparedGraph (Note [Prepared graphs]) made at the first run
// and kept while the graph stays as it was: measured on the 300-op tanh chain, replay took
// 1.4-1.7x eager's time with each node called boxed. The prepared form records the graph's
// version, which every call that may change the IR (mutable_nodes, add_node...) counts up; a
// run that finds another version prepares again. Each graph keeps its own prepared form
// (copies and moves do not take it), so it always refers to the graph holding it. Passes edit
// through the reference mutable_nodes() returns before the next run, as iterators are used
// before a container next changes; a reference kept past a run and used to edit later still
// cannot make a run read out of bounds (the node and value counts are compared too), but the
// run may not see the edit. Copies and moves take the IR only. The prepared form is kept
// behind a mutex, so threads may run one const graph together.
struct Graph::Prepared {
  uint64_t version;
  size_t nodes;
  size_t values;
  detail::PreparedGraph replay;

  explicit Prepared(const Graph& g)
      : version(g.version_), nodes(g.nodes_.size()), values(g.values_.size()), replay(g) {}
  bool matches(const Graph& g) const {
    return version == g.version_ && nodes == g.nodes_.size() && values == g.values_.size();
  }
};

Graph::Graph(const Graph& other)
    : values_(other.values_),
      inputs_(other.inputs_),
      outputs_(other.outputs_),
      nodes_(other.nodes_),
      host_reads_(other.host_reads_) {}

Graph::Graph(Graph&& other) noexcept
    : values_(std::move(other.values_)),
      inputs_(std::move(other.inputs_)),
      outputs_(std::move(other.outputs_)),
      nodes_(std::move(other.nodes_)),
      host_reads_(other.host_reads_) {
  ++other.version_;  // emptied
}

Graph& Graph::operator=(const Graph& other) {
  if (this != &other) *this = Graph(other);
  return *this;
}

Graph& Graph::operator=(Graph&& other) noexcept {
  if (this == &other) return *this;
  values_ = std::move(other.values_);
  inputs_ = std::move(other.inputs_);
  outputs_ = std::move(other.outputs_);
  nodes_ = std::move(other.nodes_);
  host_reads_ = other.host_reads_;
  ++version_;
  ++other.version_;
  std::lock_guard<std::mutex> lock(prepared_mutex_);
  prepared_.reset();
  return *this;
}

Graph::~Graph() = default;

std::shared_ptr<const Graph::Prepared> Graph::prepared_for_run() const {
  {
    std::lock_guard<std::mutex> lock(prepared_mutex_);
    if (prepared_ && prepared_->matches(*this)) return prepared_;
  }
  auto prepared = std::make_shared<const Prepared>(*this);  // outside the lock: threads may both prepare
  std::lock_guard<std::mutex> lock(prepared_mutex_);
  prepared_ = prepared;
  return prepared;
}

tensor_list Graph::run(const tensor_list& inputs) const { return prepared_for_run()->replay.run(inputs); }

std::string Graph::str() const { return detail::print_graph(*this); }

}  // namespace strata::jit
