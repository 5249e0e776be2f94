// jit::compile: a trace per input signature, optimised, with elementwise chains fused.
#include <strata/jit/compile.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include <strata/autograd/grad_mode.h>
#include <strata/jit/fusion.h>

namespace strata::jit {

// Note [Compiled functions]
// compile(fn) keeps one plan per input signature: each input's dtype, sizes, device and
// requires_grad, and whether grad mode is on. A new signature is traced (so other dtypes, ranks
// or devices mean a new trace, not an error) and optimised: dead code, common subexpressions
// and constants. Then:
// - under grad, when anything the graph reads requires grad, the plan is that graph, replayed
//   through the dispatcher: autograd records every op as in eager mode, so gradients equal
//   eager's and backward costs what eager's does; the common call shapes are made once
//   (Note [Prepared graphs]), so replay costs about what eager's forward does;
// - otherwise consecutive elementwise nodes of one dtype (float32 or float64) and shape on the
//   CPU become one prim::FusedChain node, run by detail::run_fused over cache-sized tiles with
//   no dispatch per op and no full-size temporaries (Note [Fused elementwise tiles]); what
//   the chain computes and nobody outside it reads is never materialised. Constant nodes move
//   to the front first, so a captured tensor does not split a chain.

namespace {

using Signature = std::vector<int64_t>;

Signature signature_of(const tensor_list& inputs) {
  Signature key;
  key.push_back(is_grad_enabled());
  for (const Tensor& input : inputs) {
    STRATA_CHECK_VALUE(input.defined(), "[jit::compile] an input is an undefined tensor");
    key.push_back(static_cast<int64_t>(input.dtype()));
    key.push_back(static_cast<int64_t>(input.device().type()) * 1024 + input.device().index());
    key.push_back(input.requires_grad());
    key.push_back(input.dim());
    for (int64_t size : input.sizes()) key.push_back(size);
  }
  return key;
}

bool needs_autograd(const Graph& graph, const tensor_list& inputs) {
  if (!is_grad_enabled()) return false;
  for (const Tensor& input : inputs)
    if (input.requires_grad()) return true;
  for (const Node& node : graph.nodes())
    if (node.op == "prim::Constant" && node.inputs[0].constant.to_tensor().requires_grad()) return true;
  return false;
}

void constants_first(Graph& graph) {
  std::stable_partition(graph.mutable_nodes().begin(), graph.mutable_nodes().end(),
                        [](const Node& node) { return node.op == "prim::Constant"; });
}

// What a fused chain needs to know of one node, or nullopt when the node cannot join.
std::optional<detail::FusedStep> fusible(const Graph& graph, const Node& node) {
  if (node.is_function() || node.outputs.size() != 1 || !node.outputs[0].is_value()) return std::nullopt;
  std::optional<detail::FusedOp> op = detail::fused_op_for(node.op);
  if (!op) return std::nullopt;
  const ValueInfo& out = graph.values()[node.outputs[0].value];
  if ((out.dtype != kFloat32 && out.dtype != kFloat64) || !out.device.is_cpu()) return std::nullopt;
  detail::FusedStep step{*op, -1, -1, 0, 1, -1};
  std::vector<int> reads;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Operand& input = node.inputs[i];
    if (input.is_value()) {
      const ValueInfo& info = graph.values()[input.value];
      if (info.dtype != out.dtype || info.sizes != out.sizes || !info.device.is_cpu()) return std::nullopt;
      reads.push_back(input.value);
    } else if (input.is_constant() && input.constant.is_number()) {
      const double number = input.constant.to_scalar().to_double();
      const bool is_alpha = i == 2;  // add/sub's alpha; other ops' second argument is `other`
      (is_alpha ? step.alpha : step.scalar) = number;
    } else {
      return std::nullopt;
    }
  }
  step.lhs = reads.empty() ? -1 : reads[0];  // value ids for now; registers later
  step.rhs = reads.size() > 1 ? reads[1] : -1;
  step.out = node.outputs[0].value;
  return step;
}

struct Chain {
  size_t first = 0;  // node indices [first, last)
  size_t last = 0;
  std::vector<detail::FusedStep> steps;  // in value ids
};

// Replaces the chain's nodes by one prim::FusedChain node.
Node fused_node(const Graph& graph, const Chain& chain, const std::set<int>& read_later) {
  std::map<int, int> register_of;
  std::vector<int> input_values, output_values;
  detail::FusedProgram program;
  program.dtype = graph.values()[chain.steps[0].out].dtype;
  auto input_register = [&](int value) {
    auto [it, fresh] = register_of.try_emplace(value, static_cast<int>(input_values.size()));
    if (fresh) input_values.push_back(value);
  };
  std::set<int> produced;
  for (const auto& step : chain.steps) produced.insert(step.out);
  for (const auto& step : chain.steps) {  // inputs take registers 0 .. k-1
    if (!produced.count(step.lhs)) input_register(step.lhs);
    if (step.rhs >= 0 && !produced.count(step.rhs)) input_register(step.rhs);
  }
  program.input_count = static_cast<int>(input_values.size());
  int next = program.input_count;
  for (auto step : chain.steps) {
    step.lhs = register_of.at(step.lhs);
    if (step.rhs >= 0) step.rhs = register_of.at(step.rhs);
    register_of[step.out] = next;
    if (read_later.count(step.out)) {
      program.outputs.push_back(next);
      output_values.push_back(step.out);
    }
    step.out = next++;
    program.steps.push_back(step);
  }
  program.register_count = next;
  Node node;
  node.op = "prim::FusedChain";
  for (int value : input_values) node.inputs.push_back(Operand::of_value(value));
  for (int value : output_values) node.outputs.push_back(Operand::of_value(value));
  std::string names;
  for (size_t i = chain.first; i < chain.last; ++i) {
    const std::string& op = graph.nodes()[i].op;
    names += (names.empty() ? "" : ",") + op.substr(op.find("::") + 2);
  }
  auto run = [prepared = std::make_shared<const detail::PreparedFusedProgram>(std::move(program))](
                 const tensor_list& inputs) {
    tensor_list dense;
    dense.reserve(inputs.size());
    for (const Tensor& input : inputs) dense.push_back(input.is_contiguous() ? input : input.contiguous());
    return prepared->run(dense);
  };
  node.function = std::make_shared<TracedFunction>(TracedFunction{std::move(names), std::move(run)});
  return node;
}

// Values read by nodes outside [first, last) or returned by the graph.
std::set<int> read_outside(const Graph& graph, size_t first, size_t last) {
  std::set<int> read(graph.outputs().begin(), graph.outputs().end());
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    if (i >= first && i < last) continue;
    for (const Operand& input : graph.nodes()[i].inputs) input.for_each_value([&](int id) { read.insert(id); });
  }
  return read;
}

size_t fuse_chains(Graph& graph) {
  constants_first(graph);
  std::vector<Chain> chains;
  Chain current;
  auto close = [&](size_t end) {
    if (current.steps.size() >= 2) {
      current.last = end;
      chains.push_back(current);
    }
    current = Chain{};
  };
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    std::optional<detail::FusedStep> step = fusible(graph, graph.nodes()[i]);
    const bool joins = step && (current.steps.empty() || (graph.values()[step->out].sizes ==
                                                              graph.values()[current.steps[0].out].sizes &&
                                                          graph.values()[step->out].dtype ==
                                                              graph.values()[current.steps[0].out].dtype));
    if (!joins) close(i);
    if (!step) continue;
    if (current.steps.empty()) current.first = i;
    current.steps.push_back(*step);
  }
  close(graph.nodes().size());
  std::vector<Node> rewritten;
  size_t next = 0;
  for (const Chain& chain : chains) {
    for (; next < chain.first; ++next) rewritten.push_back(graph.nodes()[next]);
    rewritten.push_back(fused_node(graph, chain, read_outside(graph, chain.first, chain.last)));
    next = chain.last;
  }
  for (; next < graph.nodes().size(); ++next) rewritten.push_back(graph.nodes()[next]);
  graph.mutable_nodes() = std::move(rewritten);
  return chains.size();
}

struct Plan {
  Graph graph;
  size_t fused_chains = 0;
  std::optional<detail::PreparedGraph> prepared;  // made once graph is final; refers to it
};

}  // namespace

struct CompiledFunction::State {
  Fn fn;
  std::mutex mutex;
  std::map<Signature, std::shared_ptr<const Plan>> plans;

  std::shared_ptr<const Plan> plan_for(const tensor_list& inputs) {
    Signature key = signature_of(inputs);
    std::lock_guard lock(mutex);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    auto plan = std::make_shared<Plan>();
    plan->graph = trace(fn, inputs);
    fold_constants(plan->graph);
    eliminate_common_subexpressions(plan->graph);  // ends with dead-code elimination
    if (!needs_autograd(plan->graph, inputs)) plan->fused_chains = fuse_chains(plan->graph);
    plan->prepared.emplace(plan->graph);
    return plans.emplace(std::move(key), std::move(plan)).first->second;
  }
};

CompiledFunction::CompiledFunction(Fn fn) : state_(std::make_shared<State>()) {
  STRATA_CHECK_VALUE(fn != nullptr, "[jit::compile] fn is empty");
  state_->fn = std::move(fn);
}

tensor_list CompiledFunction::operator()(const tensor_list& inputs) const {
  std::shared_ptr<const Plan> plan = state_->plan_for(inputs);
  return plan->prepared->run(inputs);
}

const Graph& CompiledFunction::graph_for(const tensor_list& inputs) const { return state_->plan_for(inputs)->graph; }

size_t CompiledFunction::cache_size() const {
  std::lock_guard lock(state_->mutex);
  return state_->plans.size();
}

size_t CompiledFunction::fused_chains(const tensor_list& inputs) const { return state_->plan_for(inputs)->fused_chains; }

CompiledFunction compile(CompiledFunction::Fn fn) { return CompiledFunction(std::move(fn)); }

}  // namespace strata::jit
