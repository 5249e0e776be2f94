#pragma once
// Internal to cuda/: the device allocators handed out through the hooks, on one caching
// allocator (Note [CUDA caching allocator] in caching_allocator.h).
#include <cstddef>
#include <cstdint>

#include <strata/tensor/device_hooks.h>
#include <strata/tensor/storage.h>

namespace strata::cuda::detail {

// The strata::Allocator of `device`: memory ordered on the calling thread's current stream.
Allocator* device_allocator(int device);
MemoryStats device_memory_stats(int device);
// Returns every cached, unused block of every device to the driver.
void empty_device_cache();
// Marks the block behind `data` (from device_allocator) as used on `stream_id` too, so it is
// not handed out again before the work queued there so far has finished.
void record_stream(void* data, int device, int64_t stream_id);
// A CUDA graph capture on `stream_id` of `device` allocates from a private pool from
// begin_capture_pool to end_capture_pool, kept for the graph until release_capture_pool (Note
// [Capture pools] in caching_allocator.cpp).
uint64_t begin_capture_pool(int device, int64_t stream_id);
void end_capture_pool(int device, int64_t stream_id);
void release_capture_pool(int device, uint64_t pool);

}  // namespace strata::cuda::detail
