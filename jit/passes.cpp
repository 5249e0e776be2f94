// Graph passes: dead code, common subexpressions, constant folding. See Note [Pass safety].
#include <strata/jit/graph.h>

#include <map>
#include <numeric>
#include <set>

#include <strata/autograd/grad_mode.h>
#include <strata/jit/ir_text.h>

namespace strata::jit {

// Note [Pass safety]
// Values are SSA names, but tensors are mutable: an in-place op or an op writing into a view
// changes every value that shares the tensor's memory. So passes first group values into alias
// classes from the schemas (a result annotated Tensor(a) or Tensor(a!) joins the argument with
// the same annotation: views and in-place results), and call a class *mutated* when any member
// is a written (a!) argument. Then:
// - a node is *pure* when it is not prim::Function (opaque), writes nothing, is not random
//   (its name says rand, normal, uniform, bernoulli, dropout, multinomial, poisson or
//   exponential) and no value it reads or makes is in a mutated class;
// - dead-code elimination removes pure nodes none of whose results is used (transitively);
// - CSE makes a pure node with the same op and operands as an earlier pure node reuse its results;
// - constant folding runs pure nodes whose tensor operands all come from constants the pass
//   itself made (never captured tensors: parameters change between runs) and whose results
//   are not graph outputs, with grad off, and replaces them with prim::Constant nodes.

namespace {

bool is_random_op(const std::string& op) {
  for (const char* word : {"rand", "normal", "uniform", "bernoulli", "dropout", "multinomial", "poisson", "exponential"})
    if (op.find(word) != std::string::npos) return true;
  return false;
}

struct AliasClasses {
  std::vector<int> parent;
  std::vector<bool> mutated;

  int find(int v) {
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
  }
  void join(int a, int b) {
    a = find(a), b = find(b);
    if (a != b) parent[b] = a, mutated[a] = mutated[a] || mutated[b];
  }
  bool is_mutated(int v) { return mutated[find(v)]; }
};

AliasClasses alias_classes(const Graph& graph) {
  AliasClasses classes;
  classes.parent.resize(graph.values().size());
  std::iota(classes.parent.begin(), classes.parent.end(), 0);
  classes.mutated.assign(graph.values().size(), false);
  for (const Node& node : graph.nodes()) {
    if (!node.handle.has_schema()) continue;
    const FunctionSchema& schema = node.handle.schema();
    for (size_t r = 0; r < schema.returns.size() && r < node.outputs.size(); ++r) {
      if (!schema.returns[r].alias) continue;
      for (size_t a = 0; a < schema.arguments.size() && a < node.inputs.size(); ++a) {
        if (schema.arguments[a].alias && schema.arguments[a].alias->set == schema.returns[r].alias->set)
          node.inputs[a].for_each_value([&](int in) { node.outputs[r].for_each_value([&](int out) { classes.join(in, out); }); });
      }
    }
  }
  for (const Node& node : graph.nodes()) {
    if (!node.handle.has_schema()) continue;
    const FunctionSchema& schema = node.handle.schema();
    for (size_t a = 0; a < schema.arguments.size() && a < node.inputs.size(); ++a)
      if (schema.arguments[a].alias && schema.arguments[a].alias->is_write)
        node.inputs[a].for_each_value([&](int v) { classes.mutated[classes.find(v)] = true; });
  }
  return classes;
}

bool is_pure(const Node& node, AliasClasses& classes) {
  if (node.is_function() || node.op == "prim::Constant" || is_random_op(node.op)) return false;
  if (node.handle.schema().is_mutable()) return false;
  bool clean = true;
  for (const Operand& operand : node.inputs) operand.for_each_value([&](int v) { clean = clean && !classes.is_mutated(v); });
  for (const Operand& operand : node.outputs) operand.for_each_value([&](int v) { clean = clean && !classes.is_mutated(v); });
  return clean;
}

// Renames a value through `replacement` when it names one.
void replace(int& value, const std::map<int, int>& replacement) {
  auto it = replacement.find(value);
  if (it != replacement.end()) value = it->second;
}

// A key naming a node's op and operands, for CSE.
std::string node_key(const Node& node) {
  std::string key = node.op + "(";
  for (const Operand& operand : node.inputs) {
    if (operand.is_value()) key += "%" + std::to_string(operand.value);
    else if (operand.is_constant()) key += detail::print_constant(operand.constant) + ":" + std::string(operand.constant.kind_name());
    else for (int id : operand.values) key += "%" + std::to_string(id) + ";";
    key += ",";
  }
  return key;
}

}  // namespace

int eliminate_dead_code(Graph& graph) {
  AliasClasses classes = alias_classes(graph);
  std::vector<bool> used(graph.values().size(), false);
  for (int id : graph.outputs()) used[id] = true;
  std::vector<Node>& nodes = graph.mutable_nodes();
  std::vector<bool> keep(nodes.size(), false);
  for (size_t i = nodes.size(); i-- > 0;) {
    const Node& node = nodes[i];
    bool live = !is_pure(node, classes) && node.op != "prim::Constant";
    for (const Operand& output : node.outputs) output.for_each_value([&](int v) { live = live || used[v]; });
    if (!live) continue;
    keep[i] = true;
    for (const Operand& input : node.inputs) input.for_each_value([&](int v) { used[v] = true; });
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (keep[i]) kept.push_back(std::move(nodes[i]));
  const int removed = static_cast<int>(nodes.size() - kept.size());
  nodes = std::move(kept);
  return removed;
}

int eliminate_common_subexpressions(Graph& graph) {
  AliasClasses classes = alias_classes(graph);
  std::map<std::string, size_t> first_with_key;
  std::map<int, int> replacement;
  std::vector<Node>& nodes = graph.mutable_nodes();
  int merged = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node& node = nodes[i];
    for (Operand& operand : node.inputs)  // through the merges made so far
      operand.rename_values([&](int& v) { replace(v, replacement); });
    if (!is_pure(node, classes)) continue;
    auto [it, fresh] = first_with_key.try_emplace(node_key(node), i);
    if (fresh) continue;
    const Node& earlier = nodes[it->second];
    for (size_t r = 0; r < node.outputs.size(); ++r) {
      if (node.outputs[r].is_value()) replacement[node.outputs[r].value] = earlier.outputs[r].value;
      for (size_t k = 0; k < node.outputs[r].values.size(); ++k)
        replacement[node.outputs[r].values[k]] = earlier.outputs[r].values[k];
    }
    ++merged;
  }
  for (int& id : graph.mutable_outputs()) replace(id, replacement);
  eliminate_dead_code(graph);
  return merged;
}

int fold_constants(Graph& graph) {
  AliasClasses classes = alias_classes(graph);
  std::map<int, Tensor> folded_values;  // values now held by constants this pass made
  std::set<int> outputs(graph.outputs().begin(), graph.outputs().end());
  int folded = 0;
  NoGradGuard no_grad;
  for (Node& node : graph.mutable_nodes()) {
    if (!is_pure(node, classes)) continue;
    bool foldable = true;
    for (const Operand& input : node.inputs) input.for_each_value([&](int v) { foldable = foldable && folded_values.count(v); });
    for (const Operand& output : node.outputs)
      foldable = foldable && output.is_value() && !outputs.count(output.value);
    if (!foldable || node.outputs.size() != 1) continue;
    Stack stack;
    for (const Operand& input : node.inputs) {
      if (input.is_value()) {
        stack.push_back(IValue(folded_values.at(input.value)));
      } else if (input.kind == Operand::Kind::ValueList) {
        tensor_list list;
        for (int v : input.values) list.push_back(folded_values.at(v));
        stack.push_back(IValue(std::move(list)));
      } else if (input.kind == Operand::Kind::OptionalValueList) {
        optional_tensor_list list;
        for (int v : input.values) list.push_back(v < 0 ? std::nullopt : std::optional<Tensor>(folded_values.at(v)));
        stack.push_back(IValue(std::move(list)));
      } else {
        stack.push_back(input.constant);
      }
    }
    node.handle.call_boxed(stack);
    if (stack.size() != 1 || !stack[0].is_tensor() || !stack[0].to_tensor().defined()) continue;
    Node constant;
    constant.op = "prim::Constant";
    constant.inputs.push_back(Operand::of_constant(stack[0]));
    constant.outputs = node.outputs;
    folded_values[node.outputs[0].value] = stack[0].to_tensor();
    node = std::move(constant);
    ++folded;
  }
  return folded;
}

}  // namespace strata::jit
