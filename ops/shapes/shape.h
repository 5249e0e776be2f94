#pragma once
// Shape functions of the shape family (ops/shape.cpp) that allocate or write: cat (and
// cat.out), clone, copy_ and _to_copy. The view ops there compute their geometry in one CompositeExplicitAutograd kernel
// that serves every backend, so they need none. See Note [Structured ops] in
// ops/structured.h. Depends on tensor/ only; compiles under nvcc.
#include <strata/ops/shapes/creation.h>  // pin_if_asked
#include <strata/tensor/device_hooks.h>
#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::shapes {

// Note [Legacy empty tensors in cat]
// Like PyTorch, cat skips 1-d tensors of shape [0] whatever the other shapes are (they still
// take part in type promotion), so `cat({empty({0}), x})` works for any x. Every other input
// must have the first kept input's number of dims and match its sizes outside `dim`. When
// every input is skipped the result has shape [0].
inline bool skipped_in_cat(const Tensor& t) { return t.dim() == 1 && t.sizes()[0] == 0; }

// dim wrapped against the first kept input (0 when every input is skipped).
inline int64_t cat_dim(const tensor_list& tensors, int64_t dim) {
  for (const Tensor& t : tensors)
    if (!skipped_in_cat(t)) return wrap_dim(dim, t.dim(), "cat");
  return 0;
}

inline void check_cat_input(const Tensor& reference, const Tensor& t, size_t index, int64_t dim) {
  STRATA_CHECK_VALUE(t.dim() == reference.dim(), "[cat] tensors must have the same number of dimensions: got ",
                     reference.sizes(), " and ", t.sizes(), " (tensor ", index, ")");
  for (int64_t k = 0; k < t.dim(); ++k)
    STRATA_CHECK_VALUE(k == dim || t.sizes()[k] == reference.sizes()[k],
                       "[cat] sizes of tensors must match except in dimension ", dim, ": expected size ",
                       reference.sizes()[k], " but got size ", t.sizes()[k], " in dimension ", k, " for tensor ",
                       index, " of shape ", t.sizes(), " (first kept tensor has shape ", reference.sizes(), ")");
}

// As in LibTorch, cat's result takes the memory format every input suggests (channels-last
// inputs give a channels-last result); inputs that disagree, a skipped empty one included,
// give a contiguous result. Empty strides: contiguous.
inline DimVector cat_strides(const tensor_list& tensors, IntArrayRef sizes) {
  const MemoryFormat format = detail::suggest_memory_format(tensors[0].sizes(), tensors[0].strides());
  if (format == MemoryFormat::Contiguous) return {};
  for (const Tensor& t : tensors)
    if (detail::suggest_memory_format(t.sizes(), t.strides()) != format) return {};
  return detail::strides_for(sizes, format);
}

// Type promotion across every input; sizes of the first kept input with dim summed; strides
// from cat_strides.
inline TensorMeta cat(const tensor_list& tensors, int64_t dim) {
  STRATA_CHECK_VALUE(!tensors.empty(), "[cat] expected a non-empty list of tensors");
  const Tensor* reference = nullptr;
  ScalarType dtype = tensors[0].dtype();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    STRATA_CHECK_VALUE(t.dim() > 0, "[cat] zero-dimensional tensor (at position ", i, ") cannot be concatenated");
    detail::check_same_device("cat", tensors[0], t);
    dtype = promote_types(dtype, t.dtype());
    if (!reference && !skipped_in_cat(t)) reference = &t;
  }
  const Device device = tensors[0].device();
  if (!reference) return {DimVector{0}, dtype, device};  // See Note [Legacy empty tensors in cat]
  const int64_t d = wrap_dim(dim, reference->dim(), "cat");
  DimVector sizes(reference->sizes());
  sizes[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (skipped_in_cat(tensors[i])) continue;
    check_cat_input(*reference, tensors[i], i, d);
    sizes[d] += tensors[i].sizes()[d];
  }
  return {sizes, dtype, device, cat_strides(tensors, sizes)};
}

// The strides of a copy of self in `format`: self's own when Preserve keeps them, else the
// format's (Note [Strides of copies]); empty (contiguous) when they are contiguous anyway.
inline DimVector copy_strides(const Tensor& self, MemoryFormat format, const char* op) {
  if (format != MemoryFormat::Preserve) detail::check_memory_format(format, self.dim(), op);
  if (format == MemoryFormat::Contiguous) return {};
  DimVector strides = detail::strides_for_copy(self.sizes(), self.strides(), format);
  if (detail::is_contiguous_as(self.sizes(), strides, MemoryFormat::Contiguous)) return {};
  return strides;
}

// Note [Strides of copies]
// clone and _to_copy take ATen's `MemoryFormat? memory_format=None`. Unset means Preserve, as
// in PyTorch: a copy of a tensor whose elements fill their memory densely in some order of
// dims (a transpose, a permute, channels last) keeps its strides; any other tensor (a slice,
// an expand) is copied in the format its strides suggest, which is Contiguous unless they
// are channels last. A named format lays the copy out in it.
inline TensorMeta clone(const Tensor& self, std::optional<MemoryFormat> memory_format) {
  return {self.sizes(), self.dtype(), self.device(),
          copy_strides(self, memory_format.value_or(MemoryFormat::Preserve), "clone")};
}

// copy_ writes src (broadcast, converted) into self, which keeps its geometry; src may live on
// another device (Note [Copies between devices] in ops/shape.cpp).
inline TensorMeta copy_(const Tensor& self, const Tensor& src, bool /*non_blocking*/) {
  const DimVector broadcast = broadcast_shapes(self.sizes(), src.sizes(), "copy_");
  STRATA_CHECK_VALUE(broadcast.ref() == self.sizes(), "[copy_] src of shape ", src.sizes(),
                     " cannot be broadcast to self of shape ", self.sizes());
  STRATA_CHECK(self.is_meta() || !src.is_meta(), "[copy_] cannot copy from a meta tensor to ", self.device(),
               ": meta tensors have no data");
  return {self.sizes(), self.dtype(), self.device(), self.strides()};
}

// A copy with another dtype and/or on another device, strided as Note [Strides of copies]
// says, in page-locked memory when pin_memory is set (CPU targets only). A target device
// whose backend is not loaded is named before anything is allocated.
inline TensorMeta to_copy(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                          std::optional<Device> device, std::optional<bool> pin_memory, bool /*non_blocking*/,
                          std::optional<MemoryFormat> memory_format) {
  detail::check_strided(layout.value_or(kStrided), "_to_copy");
  const Device target = device.value_or(self.device());
  if (!target.is_cpu() && !target.is_meta()) detail::require_device_hooks(target.type(), "_to_copy");
  STRATA_CHECK(target.is_meta() || !self.is_meta(), "[_to_copy] cannot copy from a meta tensor to ", target,
               ": meta tensors have no data");
  TensorMeta meta(self.sizes(), dtype.value_or(self.dtype()), target,
                  copy_strides(self, memory_format.value_or(MemoryFormat::Preserve), "_to_copy"));
  pin_if_asked(meta, pin_memory, "_to_copy");
  return meta;
}

}  // namespace strata::shapes
