#pragma once
// The tape: Nodes made by Autograd kernels, each with a sequence number, the metadata of the
// forward outputs whose gradients it receives, and edges to the Nodes of the forward inputs.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <strata/tensor/small_vector.h>
#include <strata/tensor/tensor.h>

namespace strata::autograd {

class Node;

// Where a gradient goes: input `input_nr` of `function` (for a Node, the gradient of its
// forward output `input_nr`). An edge without a function carries nothing.
struct Edge {
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
  bool valid() const { return function != nullptr; }
};
// Inline room for four edges: one Node allocation records a typical op (Note [Recording
// allocations] in autograd/function.h).
using edge_list = SmallVector<Edge, 4>;

// What a gradient must look like: the forward tensor's shape, dtype and device.
struct TensorMetadata {
  DimVector shape;
  ScalarType dtype = kFloat32;
  Device device = kCPU;
  bool defined = false;
  static TensorMetadata of(const Tensor& t);
  Tensor zeros() const;  // a zero gradient of this shape
};

using GradientHook = std::function<Tensor(const Tensor&)>;

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // "MulBackward", "AccumulateGrad", a user Function's name.
  virtual std::string name() const = 0;
  // grads[i] is the gradient of forward output i (undefined means zero); returns one
  // gradient per next edge.
  virtual tensor_list apply(tensor_list&& grads) = 0;
  // Frees saved tensors once the graph is not retained.
  virtual void release_variables() {}
  virtual bool is_accumulator() const { return false; }

  uint64_t sequence_nr() const { return sequence_nr_; }
  const edge_list& next_edges() const { return next_edges_; }
  edge_list& mutable_next_edges() { return next_edges_; }
  size_t num_outputs() const { return output_metadata_.size(); }
  const TensorMetadata& output_metadata(size_t i) const { return output_metadata_[i]; }
  uint32_t add_output_metadata(const Tensor& output);

  // Hooks on the gradient of forward output `output_nr`, run before apply().
  unsigned add_gradient_hook(uint32_t output_nr, GradientHook hook);
  bool remove_gradient_hook(unsigned handle);
  // Runs the hooks registered for each gradient (replacing it when a hook returns a tensor).
  void run_gradient_hooks(tensor_list& grads) const;
  bool has_gradient_hooks() const { return !hooks_.empty(); }

  // Set by the engine after a backward that did not retain the graph.
  void mark_released() { released_ = true; }
  bool released() const { return released_; }
  // Throws the classic error when the graph was freed by an earlier backward.
  void check_not_released() const;

 protected:
  uint64_t sequence_nr_;
  edge_list next_edges_;
  SmallVector<TensorMetadata, 1> output_metadata_;

 private:
  struct Hook {
    unsigned handle;
    uint32_t output_nr;
    GradientHook fn;
  };
  std::vector<Hook> hooks_;
  bool released_ = false;
};

// The position of the next node on this thread's tape.
uint64_t next_sequence_nr();
unsigned next_hook_handle();

}  // namespace strata::autograd
