#pragma once
// Storage: a block of memory on one device, shared by a tensor and its views.
// The version counter lives here too, so views and detached tensors share it.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include <strata/tensor/device.h>
#include <strata/tensor/intrusive_ptr.h>

namespace strata {

// Allocation results carry their own way back, and the device their memory lives on.
struct DataPtr {
  void* data = nullptr;
  void (*deleter)(void* data, void* context, size_t nbytes) = nullptr;
  void* context = nullptr;
  Device device{kCPU};
};

// One allocator serves one device (type and index); the result's DataPtr names that device.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes) = 0;
};

// The allocator of `device`: the CPU allocator, or the one the device's backend registered
// (see DeviceHooks). Throws Error when no backend is loaded for the device or the index is
// out of range; Meta has none (ValueError).
Allocator* get_allocator(Device device);

// The CPU allocator: 64-byte aligned blocks, small ones recycled by size class per thread,
// large ones (over 4 MiB) through one bounded cache (Note [CPU large-block cache]).
Allocator* cpu_allocator();
// Bytes currently allocated by the CPU allocator for tensors (live, not cached).
int64_t cpu_live_bytes();
// Frees the small blocks the CPU allocator keeps for reuse on the calling thread, and every
// cached large block.
void cpu_allocator_empty_cache();
// Bytes of large blocks cached for reuse (not live).
int64_t cpu_cached_bytes();
// Bounds the large-block cache (default: 1/8 of physical memory, at most 1 GiB), freeing the
// blocks cached longest ago until it fits; 0 turns large-block caching off.
void set_cpu_allocator_cache_limit(size_t bytes);
size_t cpu_allocator_cache_limit();

class StorageImpl : public RefCounted {
 public:
  // The storage lives on data.device.
  StorageImpl(DataPtr data, size_t nbytes) : data_(data), nbytes_(nbytes) {}
  // Wraps memory the caller owns; `on_release` (may be empty) runs when the storage dies.
  StorageImpl(void* external, size_t nbytes, Device device, std::function<void(void*)> on_release);
  ~StorageImpl() override;

  void* data() const { return data_.data; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return data_.device; }

  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  DataPtr data_;
  size_t nbytes_;
  std::atomic<uint32_t> version_{0};
  std::function<void(void*)> on_release_;
};

// A storage of nbytes from the allocator of `device`; Meta storages allocate nothing.
intrusive_ptr<StorageImpl> make_storage(size_t nbytes, Device device);

namespace detail {
// The memory make_storage would wrap: nbytes from the allocator of `device` (a null DataPtr on
// `device` for Meta). The caller owns it until a StorageImpl adopts it.
DataPtr allocate_storage_data(size_t nbytes, Device device);
// dispatch/ sets this: it wraps a storage's on_release so that the library whose code it runs
// stays loaded while the storage lives (see Note [Code of unloaded libraries] in
// dispatch/load_library.cpp). tensor/ does not depend on dispatch/, hence the pointer.
using StorageReleaseHook = void (*)(std::function<void(void*)>& on_release);
void set_storage_release_hook(StorageReleaseHook hook);
}

}  // namespace strata
