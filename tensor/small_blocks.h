#pragma once
// Internal (not public API): memory for the framework's small per-op objects from the CPU
// allocator's per-thread size classes. See Note [Pooled small objects] in storage.cpp.
#include <cstddef>
#include <new>

#include <strata/tensor/tensor_impl.h>

namespace strata::detail {

inline constexpr size_t kLargestSmallBlock = 2048;

// At most kLargestSmallBlock bytes, 64-byte aligned; throws std::bad_alloc when the system has
// no memory.
void* allocate_small_block(size_t nbytes);
// `nbytes` is the size the block was allocated with.
void free_small_block(void* block, size_t nbytes) noexcept;

// A TensorImpl over an existing storage (a view, an alias, a saved output unpacked) in a pooled
// block; the same as make_intrusive<TensorImpl>(...) otherwise.
intrusive_ptr<TensorImpl> make_pooled_tensor_impl(intrusive_ptr<StorageImpl> storage, ScalarType dtype,
                                                  IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);

// An allocator for std::allocate_shared: pooled blocks for objects that fit one, operator new
// for larger ones.
template <class T>
struct SmallBlockAllocator {
  using value_type = T;
  SmallBlockAllocator() = default;
  template <class U>
  SmallBlockAllocator(const SmallBlockAllocator<U>&) noexcept {}  // NOLINT: rebinding is implicit
  T* allocate(size_t n) {
    static_assert(alignof(T) <= 64, "pooled blocks are 64-byte aligned");
    if (n * sizeof(T) <= kLargestSmallBlock) return static_cast<T*>(allocate_small_block(n * sizeof(T)));
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) <= kLargestSmallBlock) free_small_block(p, n * sizeof(T));
    else ::operator delete(p);
  }
  template <class U>
  bool operator==(const SmallBlockAllocator<U>&) const noexcept { return true; }
};

}  // namespace strata::detail
