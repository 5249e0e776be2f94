#pragma once
// The engine: runs the tape backwards on the calling thread. See Note [The engine].
#include <strata/autograd/node.h>

namespace strata::autograd {

// Accumulates d(tensors)/d(leaves) into the leaves' .grad. grad_tensors may be empty for
// one-element outputs (a gradient of one is used). With `inputs`, only those tensors' .grad
// accumulate (a non-leaf input's as retain_grad() keeps it); an explicit empty list is an error.
void backward(const tensor_list& tensors, const tensor_list& grad_tensors = {}, bool retain_graph = false,
              bool create_graph = false);
void backward(const tensor_list& tensors, const tensor_list& grad_tensors, bool retain_graph, bool create_graph,
              const tensor_list& inputs);

// Returns d(outputs)/d(inputs) without touching .grad. An input the outputs do not depend on
// throws unless allow_unused (then its gradient is undefined).
tensor_list grad(const tensor_list& outputs, const tensor_list& inputs, const tensor_list& grad_outputs = {},
                 bool retain_graph = false, bool create_graph = false, bool allow_unused = false);

namespace detail {
// Tensor::backward without `inputs`: backward({output}, {gradient} or {}, ...) without building
// either list (Note [Backward from one output]).
void backward_one(const Tensor& output, const Tensor& gradient, bool retain_graph, bool create_graph);
// Whether the backward pass running on this thread delivers a gradient along `edge` (true
// outside backward for a valid edge). Function::needs_input_grad asks this.
bool edge_needed(const Edge& edge);
// While alive, edge_needed is true for every valid edge: CopySlices runs an in-place node whose
// edge for self is not on the running plan.
class AllEdgesNeededGuard {
 public:
  AllEdgesNeededGuard();
  ~AllEdgesNeededGuard();
  AllEdgesNeededGuard(const AllEdgesNeededGuard&) = delete;
  AllEdgesNeededGuard& operator=(const AllEdgesNeededGuard&) = delete;

 private:
  void* saved_;
};
}  // namespace detail

// While one is alive, backward checks every gradient a Node returns for NaN and throws,
// naming the Node and the forward op that recorded it.
class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard();
  ~DetectAnomalyGuard();
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;
  static bool is_enabled();
};

}  // namespace strata::autograd
