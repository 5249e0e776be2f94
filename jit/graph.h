#pragma once
// Graph mode's IR: a straight-line program of operator calls over SSA values, as captured by
// jit::trace. See Note [Graph IR] in graph.cpp.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <strata/dispatch/dispatcher.h>
#include <strata/tensor/tensor.h>

namespace strata::jit {

// What the trace saw of a value: its dtype, sizes and device.
struct ValueInfo {
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> sizes;
  Device device = Device(kCPU);
};

// One argument or result of a node: a value of the graph, a list of values (-1 stands for a
// None entry of a `Tensor?[]`), or a constant (numbers, lists, dtypes, devices, None, and
// tensors the traced function captured rather than received, such as parameters).
struct Operand {
  enum class Kind : uint8_t { Value, ValueList, OptionalValueList, Constant };
  Kind kind = Kind::Constant;
  int value = -1;
  std::vector<int> values;
  IValue constant;

  static Operand of_value(int id) { return {Kind::Value, id, {}, {}}; }
  static Operand of_constant(IValue c) { return {Kind::Constant, -1, {}, std::move(c)}; }
  bool is_value() const { return kind == Kind::Value; }
  bool is_constant() const { return kind == Kind::Constant; }
  // Calls fn(id) for each value the operand names (None entries of a list skipped).
  template <class Fn>
  void for_each_value(Fn&& fn) const {
    if (is_value()) fn(value);
    for (int id : values)
      if (id >= 0) fn(id);
  }
  // Renames the values the operand names through `rename(int&)`.
  template <class Fn>
  void rename_values(Fn&& rename) {
    if (is_value()) rename(value);
    for (int& id : values)
      if (id >= 0) rename(id);
  }
};

// A Function<T>::apply traced outside any op: replayable in this process only.
struct TracedFunction {
  std::string name;  // the Function's name, for printing and errors
  std::function<tensor_list(const tensor_list&)> apply;
};

struct Node {
  std::string op;              // "strata::add.Tensor", "myops::swish", or "prim::Function"
  OperatorHandle handle;       // empty for prim::Function
  std::vector<Operand> inputs; // one per schema argument (prim::Function: its tensors)
  std::vector<Operand> outputs;// one per schema return; non-tensor returns are Constants
  std::shared_ptr<const TracedFunction> function;  // prim::Function only

  bool is_function() const { return function != nullptr; }
};

class Graph {
 public:
  Graph() = default;
  // Copies and moves take the IR; each graph prepares its own runs (Note [Prepared replay]).
  Graph(const Graph& other);
  Graph(Graph&& other) noexcept;
  Graph& operator=(const Graph& other);
  Graph& operator=(Graph&& other) noexcept;
  ~Graph();

  // Runs the graph on `inputs`: same count, dtypes and ranks as traced, all on one device
  // (the traced one, or another: see Note [Replay on another device] in graph.cpp). Under grad
  // mode, autograd records the calls as in eager mode.
  tensor_list run(const tensor_list& inputs) const;
  // One node a line, TorchScript-style; jit::load reads it back.
  std::string str() const;
  // Writes str() and the constant tensors' data to one file; jit::load(path) reads it.
  void save(const std::string& path) const;

  // The IR, for passes and inspection.
  const std::vector<ValueInfo>& values() const { return values_; }
  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<int>& outputs() const { return outputs_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  // For edits (passes): make them before the graph next runs, and ask again for later ones,
  // as run() prepares the graph it sees then (Note [Prepared replay]).
  std::vector<Node>& mutable_nodes() {
    ++version_;
    return nodes_;
  }
  std::vector<int>& mutable_outputs() {
    ++version_;
    return outputs_;
  }
  // A new value with the given metadata; returns its id.
  int add_value(ValueInfo info);
  void add_input(int value) {
    ++version_;
    inputs_.push_back(value);
  }
  void add_output(int value) {
    ++version_;
    outputs_.push_back(value);
  }
  void add_node(Node node) {
    ++version_;
    nodes_.push_back(std::move(node));
  }
  // The number of host reads (item()...) seen while tracing: the graph is specialised to them.
  int host_reads() const { return host_reads_; }
  void set_host_reads(int count) { host_reads_ = count; }

 private:
  struct Prepared;  // run()'s prepared form of this graph (graph.cpp)
  std::shared_ptr<const Prepared> prepared_for_run() const;

  std::vector<ValueInfo> values_;
  std::vector<int> inputs_;
  std::vector<int> outputs_;
  std::vector<Node> nodes_;
  int host_reads_ = 0;
  uint64_t version_ = 0;  // counts the calls that may change the IR
  mutable std::mutex prepared_mutex_;  // guards prepared_ (a const graph may run on several threads)
  mutable std::shared_ptr<const Prepared> prepared_;
};

namespace detail {
// Graph::run; with `kept`, every value the run makes stays alive in it (a CUDA graph capture
// needs its buffers to outlive the capture).
tensor_list run_graph(const Graph& graph, const tensor_list& inputs, tensor_list* kept);

// A graph made ready for many runs, as jit::compile runs it: the same results as Graph::run,
// with common call shapes made once instead of per call. See Note [Prepared graphs] in graph.cpp.
class PreparedGraph {
 public:
  explicit PreparedGraph(const Graph& graph);  // `graph` must outlive it, unchanged
  tensor_list run(const tensor_list& inputs) const;
  // How many nodes run through typed handles (the rest are boxed calls or Functions).
  size_t typed_nodes() const;

 private:
  struct State;
  std::shared_ptr<const State> state_;
};
}  // namespace detail

// Traces `fn` on `example_inputs`: every dispatcher call it makes (built-in or custom ops, and
// bare Function::apply calls) becomes a node. See Note [Tracing] in tracer.cpp.
Graph trace(const std::function<tensor_list(const tensor_list&)>& fn, const tensor_list& example_inputs);
// Reads a graph written by Graph::save; operators are found by name (load their libraries first).
Graph load(const std::string& path);
// Parses Graph::str()'s text; tensor constants come from `constants` ($0, $1, ...).
Graph parse(const std::string& text, const tensor_list& constants = {});

// Passes; each returns the number of nodes it removed or rewrote.
// Removes nodes whose results are never used (pure nodes only: no mutation, no randomness).
int eliminate_dead_code(Graph& graph);
// Makes pure nodes with the same op and operands share the first one's results.
int eliminate_common_subexpressions(Graph& graph);
// Evaluates pure nodes whose operands are all constants (no captured tensor that requires grad
// or may change) and replaces their results with constant tensors.
int fold_constants(Graph& graph);

}  // namespace strata::jit
