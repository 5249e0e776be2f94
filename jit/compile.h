#pragma once
// jit::compile: trace once per input signature, optimise, and run the graph with chains of
// elementwise ops fused into tiled passes. See Note [Compiled functions] in compile.cpp.
#include <functional>
#include <memory>

#include <strata/jit/graph.h>

namespace strata::jit {

class CompiledFunction {
 public:
  using Fn = std::function<tensor_list(const tensor_list&)>;
  explicit CompiledFunction(Fn fn);

  // Traces on the first call with each input signature (dtypes, sizes, devices, which inputs
  // require grad, grad mode), then runs that signature's optimised graph.
  tensor_list operator()(const tensor_list& inputs) const;

  // The optimised graph for these inputs' signature (tracing it if new), for inspection.
  const Graph& graph_for(const tensor_list& inputs) const;
  // Signatures traced so far.
  size_t cache_size() const;
  // Elementwise chains of that signature's graph run as fused passes (0 under grad).
  size_t fused_chains(const tensor_list& inputs) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// `auto fast = jit::compile(fn); tensor_list y = fast(inputs);`
CompiledFunction compile(CompiledFunction::Fn fn);

}  // namespace strata::jit
