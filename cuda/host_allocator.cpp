// Pinned (page-locked) host memory for asynchronous copies. See Note [Pinned host memory].
#include <strata/cuda/host_allocator.h>

#include <bit>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <strata/cuda/runtime.h>
#include <strata/tensor/errors.h>

namespace strata::cuda::detail {
namespace {

// Note [Pinned host memory]
// cudaHostAlloc is slow (it pins pages in the kernel), so pinned blocks are cached like device
// blocks, in power-of-two sizes. A pinned block may still be read or written by an
// asynchronous copy when its tensor dies: copy_bytes records an event on the copy's stream for
// every pinned block it touches, and a freed block is reused only once all its events have
// completed. The cache is returned to the system by cuda::empty_cache().
struct Block {
  size_t size = 0;
  bool in_use = false;
  std::vector<cudaEvent_t> events;  // copies that may still use the block
};

class PinnedHostAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    const size_t size = nbytes <= 512 ? 512 : std::bit_ceil(nbytes);
    std::lock_guard lock(mutex_);
    reclaim_completed_locked();
    void* data = take_cached_locked(size);
    if (!data) data = host_alloc_locked(size, nbytes);
    blocks_[data].in_use = true;
    return DataPtr{data, &release, this, Device(kCPU)};
  }

  bool owns(const void* data) const {
    std::lock_guard lock(mutex_);
    return find_locked(data) != nullptr;
  }

  void record_event(const void* data, int device, cudaStream_t stream) {
    std::lock_guard lock(mutex_);
    Block* block = find_locked(data);
    if (!block) return;
    DeviceScope scope(device);
    cudaEvent_t event = nullptr;
    check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "copy_");
    check_cuda(cudaEventRecord(event, stream), "copy_");
    // A block kept alive and copied every step (a pinned staging buffer) would otherwise
    // gather one event per copy until it is freed.
    drop_completed(block->events);
    block->events.push_back(event);
  }

  void empty_cache() {
    std::lock_guard lock(mutex_);
    for (auto& [size, list] : free_) {
      for (void* data : list) {
        for (cudaEvent_t event : blocks_[data].events) {
          (void)cudaEventSynchronize(event);
          (void)cudaEventDestroy(event);
        }
        blocks_.erase(data);
        (void)cudaFreeHost(data);
      }
    }
    free_.clear();
  }

 private:
  static void release(void* data, void* context, size_t /*nbytes*/) {
    auto* self = static_cast<PinnedHostAllocator*>(context);
    std::lock_guard lock(self->mutex_);
    Block& block = self->blocks_.at(data);
    block.in_use = false;
    self->free_[block.size].push_back(data);
  }

  static void drop_completed(std::vector<cudaEvent_t>& events) {
    std::erase_if(events, [](cudaEvent_t event) {
      if (cudaEventQuery(event) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
      }
      (void)cudaEventDestroy(event);
      return true;
    });
  }

  // Events of free blocks that have completed are dropped; a free block with none left is reusable.
  void reclaim_completed_locked() {
    for (auto& [data, block] : blocks_)
      if (!block.in_use && !block.events.empty()) drop_completed(block.events);
  }

  void* take_cached_locked(size_t size) {
    auto found = free_.find(size);
    if (found == free_.end()) return nullptr;
    std::vector<void*>& list = found->second;
    for (auto it = list.begin(); it != list.end(); ++it) {
      if (!blocks_[*it].events.empty()) continue;
      void* data = *it;
      list.erase(it);
      return data;
    }
    return nullptr;
  }

  void* host_alloc_locked(size_t size, size_t requested) {
    void* data = nullptr;
    cudaError_t status = cudaHostAlloc(&data, size, cudaHostAllocDefault);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      throw_error_locked(status, requested);
    }
    blocks_[data] = Block{size, false, {}};
    return data;
  }

  [[noreturn]] static void throw_error_locked(cudaError_t status, size_t requested) {
    strata::detail::throw_error<Error>("[pin_memory] could not allocate ", requested, " bytes of pinned host memory: ",
                                       cudaGetErrorString(status));
  }

  const Block* find_locked(const void* data) const {
    auto* pointer = static_cast<const char*>(data);
    auto it = blocks_.upper_bound(const_cast<void*>(data));
    if (it == blocks_.begin()) return nullptr;
    --it;
    auto* start = static_cast<const char*>(it->first);
    return pointer < start + it->second.size ? &it->second : nullptr;
  }
  Block* find_locked(const void* data) { return const_cast<Block*>(std::as_const(*this).find_locked(data)); }

  mutable std::mutex mutex_;
  std::map<void*, Block> blocks_;                        // every pinned block, by address
  std::unordered_map<size_t, std::vector<void*>> free_;  // free blocks by size
};

// Never destroyed: pinned tensors may die during static destruction.
PinnedHostAllocator& pinned_allocator() {
  static PinnedHostAllocator* const allocator = new PinnedHostAllocator;
  return *allocator;
}
}  // namespace

Allocator* host_allocator() { return &pinned_allocator(); }
bool is_pinned(const void* data) { return pinned_allocator().owns(data); }
void record_host_use(const void* data, int device, cudaStream_t stream) {
  pinned_allocator().record_event(data, device, stream);
}
void empty_host_cache() { pinned_allocator().empty_cache(); }

}  // namespace strata::cuda::detail
