#include <strata/tensor/device_hooks.h>
#include <strata/tensor/tensor_impl.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::detail {

Tensor empty_pinned(IntArrayRef sizes, ScalarType dtype, const char* op) {
  const DeviceHooks& hooks = require_device_hooks(kCUDA, op);
  check_device_in_range(hooks, Device(kCUDA), op);
  Allocator* host = hooks.host_allocator();
  STRATA_CHECK(host != nullptr, "[", op, "] the CUDA backend has no pinned host memory");
  const size_t nbytes = static_cast<size_t>(checked_numel(sizes, op) * element_size(dtype));
  auto storage = make_intrusive<StorageImpl>(host->allocate(nbytes), nbytes);
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), dtype, sizes));
}

Tensor empty_from_meta(const TensorMeta& meta) {
  STRATA_INTERNAL_ASSERT(!meta.pinned || meta.device.is_cpu(), "TensorMeta pinned off the CPU");
  if (meta.strides.empty()) {
    if (meta.pinned) return empty_pinned(meta.sizes, meta.dtype, "pin_memory");
    return make_empty(meta.sizes, meta.dtype, meta.device);
  }
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
  Tensor storage = meta.pinned ? empty_pinned({span}, meta.dtype, "pin_memory")
                               : make_empty({span}, meta.dtype, meta.device);
  return make_alias(storage, meta.sizes, meta.strides, 0);
}

}  // namespace strata::detail
