#pragma once
// Internal to autograd/ and ops/ (not public API): view geometry in storage coordinates, the
// scatter that differentiates as_strided, and CopySlices. See Note [In-place on views].
#include <strata/autograd/node.h>

namespace strata::autograd::detail {

// Where a tensor's elements sit in its storage.
struct ViewGeometry {
  DimVector sizes;
  DimVector strides;
  int64_t offset = 0;
  static ViewGeometry of(const Tensor& t);
  int64_t lowest() const;   // smallest storage index reached (offset for an empty view)
  int64_t highest() const;  // largest storage index reached
  // True when two index tuples may reach one storage element (conservative: stride 0 counts).
  bool overlaps_itself() const;
};

// The gradient of `input` (geometry `in`) for as_strided(input, out): `grad` (shaped like out)
// scattered into zeros through out's geometry, summing where out overlaps itself, then read
// back through in's geometry. Built from differentiable ops, so create_graph works.
Tensor as_strided_backward(const Tensor& grad, const ViewGeometry& in, const ViewGeometry& out);

// Note [In-place on views]
// An in-place op on a view changes its base, so the base's history must record it. The base
// gets a CopySlices node whose edges are the base's old history and the in-place node's other
// inputs. Its backward clones the base's gradient, takes the view's region of it, runs the
// in-place node's backward on that region, writes the result for self back into the region
// (zero when the node gives none: copy_ overwrote it) and passes the rest to the other inputs.
// The view's grad_fn then becomes as_strided of the base's new history.
class CopySlices final : public Node {
 public:
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn, uint32_t output_nr, size_t self_edge);
  std::string name() const override { return "CopySlices"; }
  tensor_list apply(tensor_list&& grads) override;
  void release_variables() override;

 private:
  ViewGeometry base_;
  ViewGeometry view_;
  std::shared_ptr<Node> fn_;
  uint32_t output_nr_;
  size_t self_edge_;
};

}  // namespace strata::autograd::detail
