#include <strata/autograd/engine.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <queue>
#include <span>
#include <thread>

#include <strata/autograd/grad_mode.h>
#include <strata/autograd/variable.h>
#include <strata/ops/ops.h>
#include <strata/tensor/small_vector.h>

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

// What one backward pass knows about one Node.
struct NodeTask {
  Node* node = nullptr;
  tensor_list buffer;            // gradients received so far, one per forward output
  int dependencies = 0;          // edges from needed Nodes still to deliver a gradient
  uint32_t first_edge : 31 = 0;  // where this Node's edge targets start in GraphTask::targets
  bool needed : 1 = false;       // will run (backward: every reachable Node)
};

// The task index an edge leads to, or kNoTask for an edge without a Node.
constexpr uint32_t kNoTask = UINT32_MAX;

// Note [Engine bookkeeping]
// A backward pass touches every reachable Node a few times. The Nodes' tasks sit in one dense
// array in discovery order, found through an open-addressing table of {Node*, index} pairs
// (16 bytes a slot, grown by doubling while the graph is discovered), so the passes over all
// tasks walk packed memory and a lookup touches one small slot. Tasks move only while
// discovering, never while Nodes run. The first tasks, slots and edge targets, the discovery
// stack and the ready queue (which holds task indices) live inline (SmallVector), so a small
// graph's backward allocates nothing for its bookkeeping: only gradient lists and tensors.
// grad()'s parent lists are kept beside the tasks, and only in that mode.
using ReadyQueue = std::priority_queue<std::pair<uint64_t, uint32_t>, SmallVector<std::pair<uint64_t, uint32_t>, 16>>;

class NodeTasks {
 public:
  NodeTasks() { slots_.resize(8); }  // grows by doubling; a small graph zeroes little
  // Room for `count` tasks without growing (See Note [Sized from the last pass]).
  void reserve(size_t count) {
    if (count * 2 <= slots_.size()) return;
    tasks_.reserve(count);
    size_t slots = slots_.size();
    while (slots < count * 2) slots *= 2;
    rehash(slots);
  }
  // The task of `node`, made (in discovery order) if it has none; `fresh` says which.
  NodeTask& insert(Node* node, bool* fresh = nullptr) {
    if ((tasks_.size() + 1) * 2 > slots_.size()) grow();
    Slot& slot = probe(node);
    if (fresh) *fresh = slot.node == nullptr;
    if (!slot.node) {
      slot.node = node;
      slot.index = static_cast<uint32_t>(tasks_.size());
      tasks_.emplace_back().node = node;
    }
    return tasks_[slot.index];
  }
  NodeTask* find(Node* node) {
    const Slot& slot = probe(node);
    return slot.node ? &tasks_[slot.index] : nullptr;
  }
  uint32_t index_of(const NodeTask& task) const { return static_cast<uint32_t>(&task - tasks_.data()); }
  NodeTask& at(uint32_t index) { return tasks_[index]; }
  SmallVector<NodeTask, 8>& all() { return tasks_; }

 private:
  struct Slot {
    Node* node = nullptr;
    uint32_t index = 0;
  };
  Slot& probe(Node* node) {
    size_t mask = slots_.size() - 1;
    size_t i = (reinterpret_cast<uintptr_t>(node) >> 4) * 0x9e3779b97f4a7c15ull >> 7 & mask;
    while (slots_[i].node && slots_[i].node != node) i = (i + 1) & mask;
    return slots_[i];
  }
  void grow() { rehash(slots_.size() * 2); }
  void rehash(size_t slots) {
    SmallVector<Slot, 32> old = std::move(slots_);
    slots_ = SmallVector<Slot, 32>();
    slots_.resize(slots);
    for (const Slot& slot : old)
      if (slot.node) probe(slot.node) = slot;
  }
  SmallVector<NodeTask, 8> tasks_;
  SmallVector<Slot, 32> slots_;
};

struct GraphTask {
  bool keep_graph = false;
  bool create_graph = false;
  bool capture_mode = false;  // grad(): capture, do not accumulate
  bool accumulate_captured_leaves = false;  // backward(inputs): the captured leaves accumulate
  NodeTasks tasks;
  std::vector<std::vector<uint32_t>> parents;  // grad() only: by task index, the tasks with an edge to it
  std::vector<std::pair<EdgeKey, size_t>> captures;  // edge -> index in captured
  tensor_list captured;
  SmallVector<uint32_t, 16> targets;  // by Node, then by edge: a task index (Note [Edge targets])
};

bool has_nan(const Tensor& t) {
  if (!t.defined() || !t.is_floating_point() || t.is_meta()) return false;
  Tensor values = t.to(kFloat64).contiguous().cpu();
  const double* data = values.data_ptr<double>();
  for (int64_t i = 0; i < values.numel(); ++i)
    if (std::isnan(data[i])) return true;
  return false;
}

// Note [Recycled gradient lists]
// Every Node that runs receives its gradients in a tensor_list and returns its results in
// another, and each was a heap allocation and a free: four of them for a tiny add's backward,
// a sizeable part of its time. The engine keeps the lists it is done with (emptied, small
// capacities only) on a short per-thread stack and fills a Node's input buffer from it. A list
// a Node consumes (a Function's backward takes its gradients by value) is not returned to the
// stack by the engine; the built-in backwards write their results into the list they received
// (detail::gradients_in), which then comes back as their result, so in a steady loop no list is
// allocated at all.
constexpr size_t kSpareLists = 16;
constexpr size_t kLargestSpareList = 8;
// A new list gets room for this many gradients whatever it is made for, so that it can be
// reused for most Nodes (a list of capacity 1 would not fit AddBackward's two results).
constexpr size_t kSmallestSpareList = 4;
SmallVector<tensor_list, kSpareLists>& spare_lists() {
  [[gnu::tls_model("initial-exec")]] thread_local SmallVector<tensor_list, kSpareLists> spares;
  return spares;
}
void recycle(tensor_list& list) {
  if (list.capacity() == 0 || list.capacity() > kLargestSpareList) return;
  auto& spares = spare_lists();
  if (spares.size() == kSpareLists) return;
  list.clear();
  spares.push_back(std::move(list));
}

// A list for at least `capacity` gradients, from the stack when one there is large enough.
tensor_list spare_list(size_t capacity) {
  auto& spares = spare_lists();
  for (size_t i = spares.size(); i-- > 0;) {
    if (spares[i].capacity() < capacity) continue;
    tensor_list list = std::move(spares[i]);
    if (i + 1 != spares.size()) spares[i] = std::move(spares.back());
    spares.pop_back();
    return list;
  }
  tensor_list list;
  list.reserve(std::max(capacity, kSmallestSpareList));
  return list;
}

void accumulate_into(tensor_list& buffer, size_t slot, Tensor grad) {
  if (buffer.capacity() == 0) buffer = spare_list(slot + 1);
  if (buffer.size() <= slot) buffer.resize(slot + 1);
  Tensor& existing = buffer[slot];
  existing = existing.defined() ? existing + grad : std::move(grad);
}

// Note [Edge targets]
// Each edge is looked up in the task table once, while discovering: the task index it leads to
// goes into GraphTask::targets, where a Node's entries start at its task's first_edge, in the
// order of its next_edges(). Counting dependencies and delivering gradients read that packed
// array instead of probing the table again (two more probes per edge, most of them cache
// misses on a long graph). The indices belong to the pass, not to the Nodes: one Node (a
// leaf's AccumulateGrad, a graph kept with retain_graph) may be in several passes on several
// threads at once. In backward every discovered Node runs, so dependencies are counted here.

// Note [Sized from the last pass]
// A training loop runs backward through graphs of the same size step after step. Discovering
// a graph of 600 Nodes (100 x tanh(y * 0.5 + 0.1)) from the inline capacities grew the task
// array 7 times, the table 8 times (each a rehash) and the edge targets 6 times. Each pass now
// starts with room for as many tasks and edges as the last pass on this thread had, so a
// steady loop allocates its bookkeeping once per pass and never moves it: that chain's
// forward + backward took 5-8% less time. A small graph after a large one pays one allocation
// it did not need; a graph within the inline capacities pays none. A pass of more than
// kLargestReservedPass tasks leaves no size behind, so a small pass after a huge one does not
// allocate and zero a huge table; a graph that large grows as before, a small part of its pass.
constexpr uint32_t kLargestReservedPass = 1 << 16;
struct PassSize {
  uint32_t tasks = 0;
  uint32_t targets = 0;
};
[[gnu::tls_model("initial-exec")]] thread_local PassSize last_pass;

// Step 1: every Node reachable from the roots gets a task; grad() also records parents.
void discover(GraphTask& task, const edge_list& roots) {
  task.tasks.reserve(last_pass.tasks);
  task.targets.reserve(last_pass.targets);
  SmallVector<uint32_t, 32> stack;  // task indices
  for (const Edge& root : roots) {
    bool fresh = false;
    NodeTask& entry = task.tasks.insert(root.function.get(), &fresh);
    if (fresh) {
      entry.needed = !task.capture_mode;
      stack.push_back(task.tasks.index_of(entry));
    }
  }
  while (!stack.empty()) {
    const uint32_t current = stack.back();
    stack.pop_back();
    NodeTask& entry = task.tasks.at(current);  // used before insert() may move the tasks
    entry.first_edge = static_cast<uint32_t>(task.targets.size());
    for (const Edge& edge : entry.node->next_edges()) {
      if (!edge.function) {
        task.targets.push_back(kNoTask);
        continue;
      }
      bool fresh = false;
      NodeTask& child = task.tasks.insert(edge.function.get(), &fresh);  // may move the tasks
      const uint32_t index = task.tasks.index_of(child);
      task.targets.push_back(index);
      if (task.capture_mode) {
        if (task.parents.size() <= index) task.parents.resize(index + 1);
        task.parents[index].push_back(current);
      } else {
        ++child.dependencies;
      }
      if (!fresh) continue;
      child.needed = !task.capture_mode;
      stack.push_back(index);
    }
  }
  const size_t tasks = task.tasks.all().size(), targets = task.targets.size();
  last_pass = tasks > kLargestReservedPass ? PassSize{}
                                           : PassSize{static_cast<uint32_t>(tasks), static_cast<uint32_t>(targets)};
}

void plan(GraphTask& task, const edge_list& roots) {
  discover(task, roots);
  if (task.capture_mode) {  // only Nodes from which a captured edge can be reached
    SmallVector<uint32_t, 32> stack;
    for (const auto& [key, index] : task.captures) {
      NodeTask* target = task.tasks.find(key.node);
      if (target && !target->needed) {
        target->needed = true;
        stack.push_back(task.tasks.index_of(*target));
      }
    }
    while (!stack.empty()) {
      const uint32_t current = stack.back();
      stack.pop_back();
      if (current >= task.parents.size()) continue;
      for (uint32_t parent : task.parents[current]) {
        NodeTask& entry = task.tasks.at(parent);
        if (!entry.needed) {
          entry.needed = true;
          stack.push_back(parent);
        }
      }
    }
    for (NodeTask& entry : task.tasks.all()) {
      if (!entry.needed) continue;
      const size_t edges = entry.node->next_edges().size();
      for (size_t i = 0; i < edges; ++i) {
        const uint32_t child = task.targets[entry.first_edge + i];
        if (child != kNoTask && task.tasks.at(child).needed) ++task.tasks.at(child).dependencies;
      }
    }
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

[[gnu::tls_model("initial-exec")]] thread_local GraphTask* current_task = nullptr;

bool any_defined(const tensor_list& grads) {
  return std::any_of(grads.begin(), grads.end(), [](const Tensor& g) { return g.defined(); });
}

// Note [Undefined gradients]
// A backward may return an undefined gradient ("none"). A Node that receives nothing but
// undefined gradients is not run: its inputs receive undefined gradients in turn (instead of
// zeros a materializing Function would make), so a leaf reached only that way keeps an
// undefined .grad, as in PyTorch.
void run_node(GraphTask& task, Node* node, uint32_t first_edge, tensor_list grads, ReadyQueue& ready) {
  tensor_list outputs;
  if (any_defined(grads)) {
    node->run_gradient_hooks(grads);
    for (const auto& [key, index] : task.captures)
      if (key.node == node && key.input_nr < grads.size()) task.captured[index] = grads[key.input_nr];
    if (task.capture_mode && node->is_accumulator() && !task.accumulate_captured_leaves) return;
    GradModeGuard mode(task.create_graph);
    GraphTask* outer = std::exchange(current_task, &task);
    try {
      outputs = node->apply(std::move(grads));
    } catch (...) {
      current_task = outer;
      throw;
    }
    current_task = outer;
  }
  if (DetectAnomalyGuard::is_enabled()) check_anomaly(*node, outputs);
  if (!task.keep_graph && !node->is_accumulator()) {
    node->release_variables();
    node->mark_released();
  }
  const edge_list& edges = node->next_edges();
  for (size_t i = 0; i < edges.size(); ++i) {
    const uint32_t target = task.targets[first_edge + i];
    if (target == kNoTask) continue;
    NodeTask* next = &task.tasks.at(target);
    if (!next->needed) continue;
    if (i < outputs.size() && outputs[i].defined()) accumulate_into(next->buffer, edges[i].input_nr, std::move(outputs[i]));
    if (--next->dependencies == 0) ready.emplace(next->node->sequence_nr(), target);
  }
  recycle(grads);  // See Note [Recycled gradient lists]
  recycle(outputs);
}

void execute_here(GraphTask& task, const edge_list& roots, std::span<Tensor> root_grads) {
  plan(task, roots);
  ReadyQueue ready;
  for (size_t i = 0; i < roots.size(); ++i) {
    NodeTask* entry = task.tasks.find(roots[i].function.get());
    if (!entry->needed) continue;
    accumulate_into(entry->buffer, roots[i].input_nr, std::move(root_grads[i]));  // the pass's own list
  }
  for (const Edge& root : roots) {
    NodeTask* entry = task.tasks.find(root.function.get());
    if (entry->needed && entry->dependencies == 0) {
      entry->dependencies = -1;  // queued once even when several roots share it
      ready.emplace(entry->node->sequence_nr(), task.tasks.index_of(*entry));
    }
  }
  while (!ready.empty()) {
    NodeTask& entry = task.tasks.at(ready.top().second);
    ready.pop();
    Node* node = entry.node;
    tensor_list grads = std::move(entry.buffer);
    if (grads.size() < node->num_outputs()) grads.resize(node->num_outputs());
    run_node(task, node, entry.first_edge, std::move(grads), ready);
  }
}

// Note [Reentrant backward]
// A Function's backward may itself call backward() or grad() on another graph; each nested
// pass runs on the calling thread and so deepens its stack. Past kMaxReentrantDepth nested
// passes the next one runs on a fresh thread (with a fresh stack and depth) while this one
// waits, so even 10,000 nested levels never overflow a stack.
constexpr int kMaxReentrantDepth = 64;
[[gnu::tls_model("initial-exec")]] thread_local int reentrant_depth = 0;

void execute(GraphTask& task, const edge_list& roots, std::span<Tensor> root_grads) {
  if (reentrant_depth < kMaxReentrantDepth) {
    ++reentrant_depth;
    try {
      execute_here(task, roots, root_grads);
    } catch (...) {
      --reentrant_depth;
      throw;
    }
    --reentrant_depth;
    return;
  }
  std::exception_ptr error;
  const bool grad_mode = is_grad_enabled();
  std::thread worker([&] {
    try {
      GradModeGuard mode(grad_mode);
      execute(task, roots, root_grads);
    } catch (...) {
      error = std::current_exception();
    }
  });
  worker.join();
  if (error) std::rethrow_exception(error);
}

// The implicit gradient of a one-element output, as ones_like makes it. On the CPU the element
// is written directly: the dispatched ones_like was a tenth of a tiny add's forward + backward.
Tensor implicit_gradient(const Tensor& output) {
  if (output.device().type() != kCPU) return ones_like(output);
  Tensor one = strata::detail::make_empty(output.sizes(), output.dtype(), output.device());
  visit_dtype(one.dtype(), [&]<class T>() { *static_cast<T*>(one.data_ptr()) = static_cast<T>(1.0f); });
  return one;
}

// Note [Backward from one output]
// loss.backward() is the most common call into the engine, and for a small graph the lists of
// outputs and root gradients were two of its six heap allocations. The roots and their
// gradients are spans and small inline vectors here, and Tensor::backward passes its tensor
// without making a list. The root gradients belong to the pass (copies of the ones passed in),
// so they are moved into the roots' buffers, not copied again.
using RootGradients = SmallVector<Tensor, 1>;

RootGradients root_gradients(std::span<const Tensor> outputs, std::span<const Tensor> grad_outputs, const char* op) {
  STRATA_CHECK_VALUE(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "[", op, "] got ",
                     grad_outputs.size(), " gradients for ", outputs.size(), " outputs");
  RootGradients grads;
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
    grads.push_back(implicit_gradient(output));
  }
  return grads;
}

edge_list root_edges(std::span<const Tensor> outputs, const char* op) {
  edge_list roots;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Edge edge = detail::gradient_edge(outputs[i]);
    STRATA_CHECK(edge.valid(), "[", op, "] element ", i, " of tensors does not require grad and does not have a grad_fn");
    roots.push_back(std::move(edge));
  }
  return roots;
}

}  // namespace

// backward(inputs): plans like grad(), lets the listed leaves accumulate, and adds the
// gradients of listed non-leaves to their .grad as retain_grad() would.
void backward_into(const tensor_list& inputs, GraphTask& task, const edge_list& roots, std::span<Tensor> grads) {
  task.capture_mode = true;
  task.accumulate_captured_leaves = true;
  task.captured.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    STRATA_CHECK(inputs[i].defined() && inputs[i].requires_grad(), "[backward] input ", i,
                 " does not require grad (only tensors that require grad can be differentiated against)");
    Edge edge = detail::gradient_edge(inputs[i]);
    task.captures.push_back({{edge.function.get(), edge.input_nr}, i});
  }
  execute(task, roots, grads);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& captured = task.captured[i];
    if (inputs[i].is_leaf() || !captured.defined()) continue;
    AutogradMeta& meta = detail::materialize_meta(inputs[i]);
    Tensor& slot = meta.retained_grad_ ? *meta.retained_grad_ : meta.grad_;
    Tensor value = task.create_graph ? captured : captured.detach();
    slot = slot.defined() ? slot + value : value.clone();
  }
}

namespace {
void run_backward(std::span<const Tensor> tensors, std::span<const Tensor> grad_tensors, bool retain_graph,
                  bool create_graph, const tensor_list* inputs) {
  edge_list roots = root_edges(tensors, "backward");
  RootGradients grads = root_gradients(tensors, grad_tensors, "backward");
  GraphTask task;
  task.keep_graph = retain_graph || create_graph;
  task.create_graph = create_graph;
  if (inputs) return backward_into(*inputs, task, roots, grads);
  execute(task, roots, grads);
}
}  // namespace

void backward(const tensor_list& tensors, const tensor_list& grad_tensors, bool retain_graph, bool create_graph) {
  run_backward(tensors, grad_tensors, retain_graph, create_graph, nullptr);
}

void backward(const tensor_list& tensors, const tensor_list& grad_tensors, bool retain_graph, bool create_graph,
              const tensor_list& inputs) {
  STRATA_CHECK_VALUE(!inputs.empty(), "[backward] the 'inputs' argument cannot be empty; leave it out to accumulate "
                     "into every leaf");
  run_backward(tensors, grad_tensors, retain_graph, create_graph, &inputs);
}

tensor_list grad(const tensor_list& outputs, const tensor_list& inputs, const tensor_list& grad_outputs,
                 bool retain_graph, bool create_graph, bool allow_unused) {
  STRATA_CHECK_VALUE(!inputs.empty(), "[grad] needs at least one input");
  edge_list roots = root_edges(outputs, "grad");
  RootGradients grads = root_gradients(outputs, grad_outputs, "grad");
  GraphTask task;
  task.keep_graph = retain_graph || create_graph;
  task.create_graph = create_graph;
  task.capture_mode = true;
  task.captured.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    STRATA_CHECK(inputs[i].defined() && inputs[i].requires_grad(), "[grad] input ", i,
                 " does not require grad (only tensors that require grad can be differentiated against)");
    Edge edge = detail::gradient_edge(inputs[i]);
    task.captures.push_back({{edge.function.get(), edge.input_nr}, i});
  }
  execute(task, roots, grads);
  tensor_list results(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    results[i] = task.captured[i];
    STRATA_CHECK(results[i].defined() || allow_unused, "[grad] input ", i, " (shape ", inputs[i].sizes(),
                 ") was not used in the graph of the outputs; pass allow_unused=true if that is intended");
    if (results[i].defined() && !create_graph) results[i] = results[i].detach();
  }
  return results;
}

namespace detail {
void backward_one(const Tensor& output, const Tensor& gradient, bool retain_graph, bool create_graph) {
  run_backward(std::span<const Tensor>(&output, 1), gradient.defined() ? std::span<const Tensor>(&gradient, 1)
                                                                       : std::span<const Tensor>(),
               retain_graph, create_graph, nullptr);
}

bool edge_needed(const Edge& edge) {
  if (!edge.function) return false;
  if (!current_task) return true;
  const NodeTask* entry = current_task->tasks.find(edge.function.get());
  return entry && entry->needed;
}
AllEdgesNeededGuard::AllEdgesNeededGuard() : saved_(std::exchange(current_task, nullptr)) {}
AllEdgesNeededGuard::~AllEdgesNeededGuard() { current_task = static_cast<GraphTask*>(saved_); }
}  // namespace detail

DetectAnomalyGuard::DetectAnomalyGuard() { anomaly_guards.fetch_add(1); }
DetectAnomalyGuard::~DetectAnomalyGuard() { anomaly_guards.fetch_sub(1); }
bool DetectAnomalyGuard::is_enabled() { return anomaly_guards.load(std::memory_order_relaxed) > 0; }

}  // namespace strata::autograd
