#pragma once
// Internal (not public API): memory for the framework's small per-op objects from the CPU
// allocator's per-thread size classes. See Note [Pooled small objects] in storage.cpp.
#include <cstddef>

namespace strata::detail {

// At most 1 KiB, 64-byte aligned; throws std::bad_alloc when the system has no memory.
void* allocate_small_block(size_t nbytes);
// `nbytes` is the size the block was allocated with.
void free_small_block(void* block, size_t nbytes) noexcept;

}  // namespace strata::detail
