#pragma once
// jit::CudaGraph: a traced graph captured once into a CUDA graph and replayed with one launch.
// See Note [CUDA graphs] in cuda_graph.cpp.
#include <memory>

#include <strata/jit/graph.h>

namespace strata::jit {

class CudaGraph {
 public:
  // Runs `graph` once on copies of `example_inputs` (CUDA tensors on one device) to warm the
  // allocator, then records a second run's kernel launches into a CUDA graph. Runs without
  // grad. Throws Error when the inputs are not CUDA tensors, when strata has no CUDA backend,
  // or when an op cannot be captured (one that waits for the device, like item()).
  CudaGraph(Graph graph, const tensor_list& example_inputs);
  ~CudaGraph();
  CudaGraph(CudaGraph&&) noexcept;
  CudaGraph& operator=(CudaGraph&&) noexcept;

  // Copies `inputs` (the example inputs' dtypes and sizes) into the captured input buffers,
  // replays the recorded launches and returns new tensors holding the outputs. The work is
  // ordered after, and before, the caller's current stream.
  tensor_list run(const tensor_list& inputs) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace strata::jit
