#include <strata/autograd/engine.h>

#include <cmath>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include <strata/autograd/grad_mode.h>
#include <strata/autograd/variable.h>
#include <strata/ops/ops.h>

namespace strata::autograd {

// Note [The engine]
// backward runs on the calling thread, with no recursion:
//   1. walk the graph from the root edges (an explicit stack) and count, for every Node, the
//      edges that reach it from Nodes that will run;
//   2. seed the roots' input buffers with the root gradients;
//   3. repeatedly take the ready Node (all its gradients in) with the highest sequence number,
//      i.e. the one recorded last, run its hooks and apply(), and add each result into the
//      buffer of the Node its edge points to, which becomes ready when its count reaches zero.
// For grad(), only Nodes from which an input can be reached run, gradients arriving at the
// inputs' edges are captured, and no leaf accumulates.

namespace {

std::atomic<int> anomaly_guards{0};

struct EdgeKey {
  Node* node;
  uint32_t input_nr;
  bool operator==(const EdgeKey&) const = default;
};
struct EdgeKeyHash {
  size_t operator()(const EdgeKey& key) const { return std::hash<Node*>()(key.node) ^ (key.input_nr * 0x9e3779b9u); }
};

struct GraphTask {
  bool keep_graph = false;
  bool create_graph = false;
  bool capture_mode = false;  // grad(): capture, do not accumulate
  std::unordered_map<Node*, int> dependencies;
  std::unordered_map<Node*, tensor_list> buffers;
  std::unordered_set<Node*> needed;
  std::unordered_map<EdgeKey, size_t, EdgeKeyHash> captures;  // edge -> index in captured
  tensor_list captured;
};

bool has_nan(const Tensor& t) {
  if (!t.defined() || !t.is_floating_point() || t.is_meta()) return false;
  Tensor values = t.to(kFloat64).contiguous().cpu();
  const double* data = values.data_ptr<double>();
  for (int64_t i = 0; i < values.numel(); ++i)
    if (std::isnan(data[i])) return true;
  return false;
}

void accumulate_into(tensor_list& buffer, size_t slot, Tensor grad) {
  if (buffer.size() <= slot) buffer.resize(slot + 1);
  Tensor& existing = buffer[slot];
  existing = existing.defined() ? existing + grad : std::move(grad);
}

// Step 1: every Node reachable from the roots, with the edges between them.
std::vector<Node*> discover(const edge_list& roots, std::unordered_map<Node*, std::vector<Node*>>& parents) {
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (const Edge& root : roots)
    if (root.function && seen.insert(root.function.get()).second) stack.push_back(root.function.get());
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    order.push_back(node);
    for (const Edge& edge : node->next_edges()) {
      if (!edge.function) continue;
      parents[edge.function.get()].push_back(node);
      if (seen.insert(edge.function.get()).second) stack.push_back(edge.function.get());
    }
  }
  return order;
}

void plan(GraphTask& task, const edge_list& roots) {
  std::unordered_map<Node*, std::vector<Node*>> parents;
  std::vector<Node*> nodes = discover(roots, parents);
  if (!task.capture_mode) {
    task.needed.insert(nodes.begin(), nodes.end());
  } else {  // only Nodes from which a captured edge can be reached
    std::vector<Node*> stack;
    for (const auto& [key, index] : task.captures)
      if (task.needed.insert(key.node).second) stack.push_back(key.node);
    while (!stack.empty()) {
      Node* node = stack.back();
      stack.pop_back();
      for (Node* parent : parents[node])
        if (task.needed.insert(parent).second) stack.push_back(parent);
    }
  }
  for (Node* node : nodes) {
    if (!task.needed.count(node)) continue;
    for (const Edge& edge : node->next_edges())
      if (edge.function && task.needed.count(edge.function.get())) ++task.dependencies[edge.function.get()];
  }
}

// "MulBackward" was recorded by the forward op "mul"; a user Function "Swish" by "Swish".
std::string forward_op_name(const std::string& node_name) {
  constexpr std::string_view suffix = "Backward";
  if (node_name.size() > suffix.size() && node_name.ends_with(suffix)) {
    std::string op = node_name.substr(0, node_name.size() - suffix.size());
    for (char& c : op) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return op;
  }
  return node_name;
}

void check_anomaly(const Node& node, const tensor_list& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i)
    STRATA_CHECK(!has_nan(outputs[i]), "[", node.name(), "] anomaly: the backward of forward op '",
                 forward_op_name(node.name()), "' returned nan values in its gradient for forward input ", i,
                 " (shape ", outputs[i].sizes(), ")");
}

void run_node(GraphTask& task, Node* node, tensor_list grads,
              std::priority_queue<std::pair<uint64_t, Node*>>& ready) {
  node->run_gradient_hooks(grads);
  for (uint32_t i = 0; i < grads.size(); ++i) {
    auto capture = task.captures.find({node, i});
    if (capture != task.captures.end()) task.captured[capture->second] = grads[i];
  }
  if (task.capture_mode && node->is_accumulator()) return;
  tensor_list outputs;
  {
    GradModeGuard mode(task.create_graph);
    outputs = node->apply(std::move(grads));
  }
  if (DetectAnomalyGuard::is_enabled()) check_anomaly(*node, outputs);
  if (!task.keep_graph && !node->is_accumulator()) {
    node->release_variables();
    node->mark_released();
  }
  const edge_list& edges = node->next_edges();
  for (size_t i = 0; i < edges.size(); ++i) {
    Node* next = edges[i].function.get();
    if (!next || !task.needed.count(next)) continue;
    if (i < outputs.size() && outputs[i].defined()) accumulate_into(task.buffers[next], edges[i].input_nr, std::move(outputs[i]));
    if (--task.dependencies[next] == 0) ready.emplace(next->sequence_nr(), next);
  }
}

void execute(GraphTask& task, const edge_list& roots, const tensor_list& root_grads) {
  plan(task, roots);
  std::priority_queue<std::pair<uint64_t, Node*>> ready;
  for (size_t i = 0; i < roots.size(); ++i) {
    Node* node = roots[i].function.get();
    if (!task.needed.count(node)) continue;
    tensor_list& buffer = task.buffers[node];
    if (buffer.size() < node->num_outputs()) buffer.resize(node->num_outputs());
    accumulate_into(buffer, roots[i].input_nr, root_grads[i]);
  }
  std::unordered_set<Node*> queued;
  for (const Edge& root : roots) {
    Node* node = root.function.get();
    if (task.needed.count(node) && task.dependencies[node] == 0 && queued.insert(node).second)
      ready.emplace(node->sequence_nr(), node);
  }
  while (!ready.empty()) {
    Node* node = ready.top().second;
    ready.pop();
    tensor_list grads = std::move(task.buffers[node]);
    task.buffers.erase(node);
    if (grads.size() < node->num_outputs()) grads.resize(node->num_outputs());
    run_node(task, node, std::move(grads), ready);
  }
}

tensor_list root_gradients(const tensor_list& outputs, const tensor_list& grad_outputs, const char* op) {
  STRATA_CHECK_VALUE(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "[", op, "] got ",
                     grad_outputs.size(), " gradients for ", outputs.size(), " outputs");
  tensor_list grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& output = outputs[i];
    STRATA_CHECK(output.defined(), "[", op, "] output ", i, " is an undefined tensor");
    if (!grad_outputs.empty() && grad_outputs[i].defined()) {
      const Tensor& g = grad_outputs[i];
      STRATA_CHECK_VALUE(g.sizes() == output.sizes(), "[", op, "] gradient ", i, " has shape ", g.sizes(),
                         " but the output has shape ", output.sizes());
      grads.push_back(g);
      continue;
    }
    STRATA_CHECK(output.numel() == 1, "[", op, "] grad can be implicitly created only for one-element outputs; output ",
                 i, " has shape ", output.sizes(), ": pass a gradient");
    grads.push_back(ones_like(output));
  }
  return grads;
}

edge_list root_edges(const tensor_list& outputs, const char* op) {
  edge_list roots;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Edge edge = detail::gradient_edge(outputs[i]);
    STRATA_CHECK(edge.valid(), "[", op, "] element ", i, " of tensors does not require grad and does not have a grad_fn");
    roots.push_back(std::move(edge));
  }
  return roots;
}

}  // namespace

void backward(const tensor_list& tensors, const tensor_list& grad_tensors, bool retain_graph, bool create_graph) {
  edge_list roots = root_edges(tensors, "backward");
  tensor_list grads = root_gradients(tensors, grad_tensors, "backward");
  GraphTask task;
  task.keep_graph = retain_graph || create_graph;
  task.create_graph = create_graph;
  execute(task, roots, grads);
}

tensor_list grad(const tensor_list& outputs, const tensor_list& inputs, const tensor_list& grad_outputs,
                 bool retain_graph, bool create_graph, bool allow_unused) {
  STRATA_CHECK_VALUE(!inputs.empty(), "[grad] needs at least one input");
  edge_list roots = root_edges(outputs, "grad");
  tensor_list grads = root_gradients(outputs, grad_outputs, "grad");
  GraphTask task;
  task.keep_graph = retain_graph || create_graph;
  task.create_graph = create_graph;
  task.capture_mode = true;
  task.captured.resize(inputs.size());
  std::vector<EdgeKey> keys;
  for (size_t i = 0; i < inputs.size(); ++i) {
    STRATA_CHECK(inputs[i].defined() && inputs[i].requires_grad(), "[grad] input ", i,
                 " does not require grad (only tensors that require grad can be differentiated against)");
    Edge edge = detail::gradient_edge(inputs[i]);
    keys.push_back({edge.function.get(), edge.input_nr});
    task.captures.emplace(keys.back(), i);
  }
  execute(task, roots, grads);
  tensor_list results(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    results[i] = task.captured[task.captures.at(keys[i])];
    STRATA_CHECK(results[i].defined() || allow_unused, "[grad] input ", i, " (shape ", inputs[i].sizes(),
                 ") was not used in the graph of the outputs; pass allow_unused=true if that is intended");
    if (results[i].defined() && !create_graph) results[i] = results[i].detach();
  }
  return results;
}

DetectAnomalyGuard::DetectAnomalyGuard() { anomaly_guards.fetch_add(1); }
DetectAnomalyGuard::~DetectAnomalyGuard() { anomaly_guards.fetch_sub(1); }
bool DetectAnomalyGuard::is_enabled() { return anomaly_guards.load(std::memory_order_relaxed) > 0; }

}  // namespace strata::autograd
