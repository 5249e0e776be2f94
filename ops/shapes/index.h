#pragma once
// Shape functions of the indexing family (ops/index.cpp): index_select (and .out), index_add,
// gather, scatter_add, masked_fill. See Note [Structured ops] in ops/structured.h. The index
// VALUES are checked by each backend's compute, never here. Depends on tensor/ only; compiles
// under nvcc.
#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::shapes {

inline void check_index_vector(const char* op, const Tensor& self, const Tensor& index) {
  detail::check_same_device(op, self, index);
  STRATA_CHECK_TYPE(index.dtype() == kInt64 || index.dtype() == kInt32, "[", op,
                    "] index must be an int64 or int32 tensor, got ", index.dtype());
  STRATA_CHECK_VALUE(index.dim() <= 1, "[", op, "] index must be 0-d or 1-d, got index of shape ", index.sizes());
}

// self's sizes with dim replaced by the number of indices; a 0-d self takes one index.
inline TensorMeta index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  check_index_vector("index_select", self, index);
  const int64_t d = wrap_dim(dim, self.dim(), "index_select");
  DimVector sizes(self.sizes());
  if (self.dim() > 0) sizes[d] = index.numel();
  else STRATA_CHECK_INDEX(index.numel() == 1, "[index_select] a 0-d input takes one index, got index of shape ",
                          index.sizes());
  return {sizes, self.dtype(), self.device()};
}

// Returns the wrapped dim; source must be self with dim replaced by the number of indices.
inline int64_t index_add_dim(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  check_index_vector("index_add", self, index);
  detail::check_same_device("index_add", self, source);
  STRATA_CHECK_TYPE(self.dtype() == source.dtype(), "[index_add] self (", self.dtype(), ") and source (",
                    source.dtype(), ") must have the same dtype");
  const int64_t d = wrap_dim(dim, self.dim(), "index_add");
  DimVector expected(self.sizes());
  if (self.dim() > 0) expected[d] = index.numel();
  const bool matches = source.sizes() == expected.ref() || (source.numel() == 1 && expected.ref().size() <= 1 &&
                                                            index.numel() == 1);
  STRATA_CHECK_VALUE(matches, "[index_add] source of shape ", source.sizes(), " does not match self of shape ",
                     self.sizes(), " with dimension ", d, " replaced by the ", index.numel(), " indices (expected ",
                     expected.ref(), ")");
  return d;
}

inline TensorMeta index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                            const Scalar& alpha) {
  (void)alpha;  // converted (with its overflow check) by the compute, like add's alpha
  index_add_dim(self, dim, index, source);
  return {self.sizes(), self.dtype(), self.device()};
}

// Note [Gather geometry] (ops/index.cpp): index has self's number of dims (0-d counts as 1-d)
// and is no larger than self outside dim, and no larger than src anywhere.
inline void check_gather_shapes(const char* op, const Tensor& self, int64_t d, const Tensor& index, const Tensor* src) {
  detail::check_same_device(op, self, index);
  STRATA_CHECK_TYPE(index.dtype() == kInt64, "[", op, "] expected an int64 index, got ", index.dtype());
  const auto size_at = [](const Tensor& t, size_t k) { return t.dim() == 0 ? int64_t{1} : t.sizes()[k]; };
  const int64_t ndim = std::max<int64_t>(self.dim(), 1), index_ndim = std::max<int64_t>(index.dim(), 1);
  STRATA_CHECK_VALUE(index_ndim == ndim, "[", op, "] index of shape ", index.sizes(),
                     " must have the same number of dimensions as self of shape ", self.sizes());
  for (int64_t k = 0; k < ndim; ++k)
    STRATA_CHECK_VALUE(k == d || size_at(index, k) <= size_at(self, k), "[", op, "] index of shape ", index.sizes(),
                       " is larger than self of shape ", self.sizes(), " in dimension ", k);
  if (!src) return;
  detail::check_same_device(op, self, *src);
  STRATA_CHECK_VALUE(std::max<int64_t>(src->dim(), 1) == index_ndim, "[", op, "] index of shape ", index.sizes(),
                     " must have the same number of dimensions as src of shape ", src->sizes());
  for (int64_t k = 0; k < ndim; ++k)
    STRATA_CHECK_VALUE(size_at(index, k) <= size_at(*src, k), "[", op, "] index of shape ", index.sizes(),
                       " is larger than src of shape ", src->sizes(), " in dimension ", k);
}

inline TensorMeta gather(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad) {
  (void)sparse_grad;  // gradients are always dense here
  check_gather_shapes("gather", self, wrap_dim(dim, self.dim(), "gather"), index, nullptr);
  return {index.sizes(), self.dtype(), self.device()};
}

inline TensorMeta scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  check_gather_shapes("scatter_add", self, wrap_dim(dim, self.dim(), "scatter_add"), index, &src);
  STRATA_CHECK_TYPE(self.dtype() == src.dtype(), "[scatter_add] self (", self.dtype(), ") and src (", src.dtype(),
                    ") must have the same dtype");
  return {self.sizes(), self.dtype(), self.device()};
}

// masked_fill: self and mask broadcast together; a Scalar value must fit self's dtype.
inline TensorMeta masked_fill_geometry(const Tensor& self, const Tensor& mask) {
  detail::check_same_device("masked_fill", self, mask);
  STRATA_CHECK_TYPE(mask.dtype() == kBool, "[masked_fill] expected a bool mask, got a ", mask.dtype(),
                    " mask of shape ", mask.sizes());
  return {broadcast_shapes(self.sizes(), mask.sizes(), "masked_fill"), self.dtype(), self.device()};
}

inline TensorMeta masked_fill_scalar(const Tensor& self, const Tensor& mask, const Scalar& value) {
  const TensorMeta meta = masked_fill_geometry(self, mask);
  detail::check_scalar_converts("masked_fill", value, self.dtype());
  return meta;
}

inline TensorMeta masked_fill_tensor(const Tensor& self, const Tensor& mask, const Tensor& value) {
  detail::check_same_device("masked_fill", self, value);
  STRATA_CHECK_VALUE(value.dim() == 0, "[masked_fill] only supports a 0-dimensional value tensor, got value of shape ",
                     value.sizes());
  return masked_fill_geometry(self, mask);
}

}  // namespace strata::shapes
