// Autograd for views: regenerating a view's history from its base, and rewriting a base's
// history when one of its views changes in place (CopySlices). See Note [In-place on views].
#include <strata/autograd/view.h>

#include <algorithm>

#include <strata/autograd/engine.h>
#include <strata/autograd/grad_mode.h>
#include <strata/autograd/variable.h>
#include <strata/ops/ops.h>

namespace strata::autograd::detail {

ViewGeometry ViewGeometry::of(const Tensor& t) {
  return {DimVector(t.sizes()), DimVector(t.strides()), t.storage_offset()};
}

int64_t ViewGeometry::lowest() const {
  int64_t result = offset;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 0 && strides[d] < 0) result += (sizes[d] - 1) * strides[d];
  return result;
}

int64_t ViewGeometry::highest() const {
  int64_t result = offset;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 0 && strides[d] > 0) result += (sizes[d] - 1) * strides[d];
  return result;
}

bool ViewGeometry::overlaps_itself() const {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (|stride|, size) of the dims that step
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return false;
    if (sizes[d] > 1) dims.emplace_back(std::abs(strides[d]), sizes[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;  // farthest element reached by the smaller-stride dims
  for (const auto& [stride, size] : dims) {
    if (stride <= reach) return true;
    reach += (size - 1) * stride;
  }
  return false;
}

namespace {

// A zero buffer covering both geometries' storage elements; `first` is the storage index of
// its element 0.
struct Scratch {
  Tensor flat;
  int64_t first;
};

Scratch make_scratch(const ViewGeometry& a, const ViewGeometry& b, TensorOptions options) {
  const int64_t first = std::min(a.lowest(), b.lowest());
  const int64_t last = std::max(a.highest(), b.highest());
  return {zeros({last - first + 1}, options), first};
}

Tensor region(const Scratch& scratch, const ViewGeometry& g) {
  return as_strided(scratch.flat, g.sizes.ref(), g.strides.ref(), g.offset - scratch.first);
}

// Adds `values` (of g's sizes) into the scratch locations g reaches; where several elements of
// g are one location, it gets the sum of theirs.
void add_overlapping(Scratch& scratch, const ViewGeometry& g, const Tensor& values) {
  const Tensor positions = arange(scratch.flat.numel(), TensorOptions().dtype(kInt64).device(values.device()));
  const Tensor index = region(Scratch{positions, scratch.first}, g).reshape({-1});
  scratch.flat = index_add(scratch.flat, 0, index, values.reshape({-1}));
}

}  // namespace

Tensor as_strided_backward(const Tensor& grad, const ViewGeometry& in, const ViewGeometry& out) {
  Scratch scratch = make_scratch(in, out, grad.options());
  if (!out.overlaps_itself()) region(scratch, out).copy_(grad);
  else add_overlapping(scratch, out, grad);
  return region(scratch, in);
}

CopySlices::CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn, uint32_t output_nr,
                       size_t self_edge)
    : base_(ViewGeometry::of(base)),
      view_(ViewGeometry::of(view)),
      fn_(std::move(fn)),
      output_nr_(output_nr),
      self_edge_(self_edge) {
  add_output_metadata(base);
  next_edges_.push_back(gradient_edge(base));
  const edge_list& edges = fn_->next_edges();
  for (size_t i = 0; i < edges.size(); ++i)
    if (i != self_edge_) next_edges_.push_back(edges[i]);
}

tensor_list CopySlices::apply(tensor_list&& grads) {
  check_not_released();
  Tensor grad = grads.at(0).defined() ? std::move(grads[0]) : output_metadata(0).zeros();
  Scratch scratch = make_scratch(base_, view_, grad.options());
  Tensor result = region(scratch, base_);
  result.copy_(grad);
  Tensor slice = region(scratch, view_);
  tensor_list fn_grads(fn_->num_outputs());
  fn_grads.at(output_nr_) = slice.clone();
  tensor_list fn_results;
  {
    AllEdgesNeededGuard all_needed;
    fn_results = fn_->apply(std::move(fn_grads));
  }
  const bool has_self_grad = self_edge_ < fn_results.size() && fn_results[self_edge_].defined();
  if (!view_.overlaps_itself()) {
    if (has_self_grad) slice.copy_(fn_results[self_edge_]);
    else slice.zero_();
  } else {
    // Several elements of the view are one location of the base (fill_ on an expanded view,
    // Note [Idempotent in-place ops]): the location's old value fed each of them, so its
    // gradient is the sum of theirs, as in as_strided_backward.
    slice.zero_();
    if (has_self_grad) add_overlapping(scratch, view_, fn_results[self_edge_]);
  }
  tensor_list outputs;
  outputs.reserve(next_edges_.size());
  // The base's region changed after `result` was taken: a fresh view carries the new history.
  outputs.push_back(region(scratch, base_));
  for (size_t i = 0; i < fn_results.size(); ++i)
    if (i != self_edge_) outputs.push_back(std::move(fn_results[i]));
  return outputs;
}

void CopySlices::release_variables() {
  fn_->release_variables();
  fn_->mark_released();
}

namespace {

// The root base of a view that takes part in autograd, or null.
AutogradMeta* base_meta(const Tensor& view) {
  TensorImpl* base = view.impl()->view_base();
  return base ? static_cast<AutogradMeta*>(base->autograd_meta()) : nullptr;
}

// The view's grad_fn becomes as_strided of its base's current history.
void regenerate(const Tensor& view) {
  Tensor base(view.impl()->view_base_ptr());
  Tensor fresh;
  {
    GradModeGuard grad_mode(true);
    fresh = as_strided(base, view.sizes(), view.strides(), view.storage_offset());
  }
  std::shared_ptr<Node> fn = fresh.grad_fn();
  STRATA_INTERNAL_ASSERT(fn, "[autograd] as_strided of a base that requires grad recorded no node");
  set_history(view, fn, 0);
}

}  // namespace

bool view_requires_grad(const Tensor& t) {
  const AutogradMeta* meta = base_meta(t);
  return meta && meta->requires_grad();
}

// Note [Stale views]
// A view's grad_fn was made from its base's history at one version of the shared storage.
// When the storage changed in place since (through the base or another view), the base's
// history now ends in CopySlices (or another in-place node), and the view's old grad_fn would
// skip it; so the view's history is regenerated on use, as PyTorch does. A view that has no
// history yet while its base requires grad (made before the base got one) is treated alike.
// A view made without grad is not regenerated: it stays a leaf of its own, and once the
// storage changed it cannot be used where history is needed (Note [Views made without grad]
// in autograd/variable.cpp).
void refresh_view_history(const Tensor& t) {
  TensorImpl* impl = t.impl();
  if (!impl || !impl->view_base()) return;
  const AutogradMeta* base = base_meta(t);
  if (!base || !base->requires_grad()) return;
  const AutogradMeta* meta = meta_of(t);
  if (meta && meta->requires_grad_) return;  // a view made a leaf by the user
  const bool current = impl->view_version() == impl->version();
  const ViewCreation creation = meta ? meta->view_creation_ : ViewCreation::kDefault;
  if (creation == ViewCreation::kWithoutGrad) {
    STRATA_CHECK(current, "[autograd] a view (shape ", t.sizes(), ") was taken under NoGradGuard of a tensor that "
                 "requires grad, and its storage has since been changed in place (through the view, its base or "
                 "another view of it); using it with grad mode on is ambiguous, so it is refused: take the view "
                 "again after the change, or make both the view and its use under NoGradGuard");
    return;
  }
  STRATA_CHECK(current || creation != ViewCreation::kInCustomFunction, "[autograd] a view (shape ", t.sizes(), ") returned by "
               "a custom Function, or a view of one, has had its storage changed in place since (through its base or "
               "another view); regenerating its history would skip the Function's backward, so using it with grad "
               "mode on is refused (Note [Views returned by custom Functions]): clone the Function's output first");
  if (meta && meta->grad_fn_ && current) return;
  regenerate(t);
}

void rebase_history(const Tensor& self, const std::shared_ptr<Node>& fn, uint32_t output_nr, size_t self_edge) {
  TensorImpl* base_impl = self.impl()->view_base();
  if (!base_impl) {
    set_history(self, fn, output_nr);
    return;
  }
  Tensor base(self.impl()->view_base_ptr());
  auto copy_slices = std::make_shared<CopySlices>(base, self, fn, output_nr, self_edge);
  set_history(base, copy_slices, 0);
  regenerate(self);
}

}  // namespace strata::autograd::detail
