#pragma once
// Internal to cuda/: the pinned host allocator. See Note [Pinned host memory] in host_allocator.cpp.
#include <cuda_runtime_api.h>

#include <strata/tensor/storage.h>

namespace strata::cuda::detail {

Allocator* host_allocator();
// True when `data` lies in a block from host_allocator().
bool is_pinned(const void* data);
// When `data` lies in a pinned block, that block is not reused before the work queued on
// `stream` (of `device`) so far has finished.
void record_host_use(const void* data, int device, cudaStream_t stream);
// Frees the cached pinned blocks no copy still uses.
void empty_host_cache();

}  // namespace strata::cuda::detail
