#include <strata/tensor/tensor_meta.h>

namespace strata::detail {

Tensor empty_from_meta(const TensorMeta& meta) {
  if (meta.strides.empty()) return make_empty(meta.sizes, meta.dtype, meta.device);
  STRATA_INTERNAL_ASSERT(meta.strides.size() == meta.sizes.size(), "TensorMeta strides of the wrong rank");
  // The storage spans the furthest element; strides of a shape function are never negative.
  int64_t span = 1;
  for (size_t d = 0; d < meta.sizes.size(); ++d) {
    if (meta.sizes[d] == 0) {
      span = 0;
      break;
    }
    span += (meta.sizes[d] - 1) * meta.strides[d];
  }
  Tensor storage = make_empty({span}, meta.dtype, meta.device);
  return make_alias(storage, meta.sizes, meta.strides, 0);
}

}  // namespace strata::detail
