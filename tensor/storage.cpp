// The CPU allocator (size-class cache), storages and device allocator lookup.
#include <strata/tensor/storage.h>

#include <array>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <new>

#include <strata/tensor/device_hooks.h>
#include <strata/tensor/errors.h>

namespace strata {

// Note [CPU size-class cache]
// Most tensors in a training step are freed and reallocated with the same sizes every
// iteration, and malloc/free of a few KiB costs more than a small op itself. Blocks up to
// kLargestClass are rounded up to a power of two (from 64 B) and, when freed, kept in a
// thread-local free list for their class instead of going back to the system. A block freed on
// another thread than the one that allocated it simply joins the freeing thread's list: blocks
// are plain 64-byte aligned memory and belong to no thread. Each list is bounded (at most
// kCacheBytesPerClass, kMaxBlocksPerClass blocks and at least kMinBlocksPerClass), so a thread
// caches a few tens of MiB at most; larger blocks always go straight to aligned_alloc/free.
// The lists are freed when their thread exits (the main thread's at exit, before static
// destructors); blocks freed after that go straight to free. cpu_live_bytes() counts the
// rounded size of blocks handed out, never cached ones.
namespace {

constexpr size_t kAlignment = 64;
constexpr int kNumClasses = 17;  // 64 B << 16 = 4 MiB
constexpr size_t kSmallestClass = 64;
constexpr size_t kLargestClass = kSmallestClass << (kNumClasses - 1);
constexpr size_t kCacheBytesPerClass = size_t{4} << 20;
constexpr size_t kMaxBlocksPerClass = 32;
constexpr size_t kMinBlocksPerClass = 2;

std::atomic<int64_t> live_bytes{0};

int size_class(size_t nbytes) {
  size_t rounded = std::bit_ceil(nbytes < kSmallestClass ? kSmallestClass : nbytes);
  return std::countr_zero(rounded) - std::countr_zero(kSmallestClass);
}
size_t class_bytes(int size_class_index) { return kSmallestClass << size_class_index; }
constexpr size_t class_capacity(int size_class_index) {
  size_t by_bytes = kCacheBytesPerClass / (kSmallestClass << size_class_index);
  return by_bytes < kMinBlocksPerClass ? kMinBlocksPerClass
         : by_bytes > kMaxBlocksPerClass ? kMaxBlocksPerClass
                                         : by_bytes;
}
static_assert(class_capacity(0) == kMaxBlocksPerClass && class_capacity(kNumClasses - 1) == kMinBlocksPerClass);

void* system_allocate(size_t rounded_bytes) {
  void* block = std::aligned_alloc(kAlignment, rounded_bytes);
  if (!block) throw std::bad_alloc();
  return block;
}

// A free list threaded through the cached blocks themselves (the first word is the link).
struct FreeList {
  void* head = nullptr;
  size_t count = 0;
};

// Trivially destructible, so it can be read after the cache below is gone.
thread_local bool cache_destroyed = false;

struct ThreadCache {
  std::array<FreeList, kNumClasses> lists;

  void* pop(int size_class_index) {
    FreeList& list = lists[size_class_index];
    if (!list.head) return nullptr;
    void* block = list.head;
    list.head = *static_cast<void**>(block);
    --list.count;
    return block;
  }
  bool push(int size_class_index, void* block) {
    FreeList& list = lists[size_class_index];
    if (list.count >= class_capacity(size_class_index)) return false;
    *static_cast<void**>(block) = list.head;
    list.head = block;
    ++list.count;
    return true;
  }
  void release_all() {
    for (int index = 0; index < kNumClasses; ++index)
      while (void* block = pop(index)) std::free(block);
  }
  ~ThreadCache() {
    release_all();
    cache_destroyed = true;
  }
};

// Null once the calling thread's cache has been destroyed (thread exit).
ThreadCache* thread_cache() {
  if (cache_destroyed) return nullptr;
  thread_local ThreadCache cache;
  return &cache;
}

// The context of a CPU DataPtr carries the block's rounded size, so freeing never depends on
// the nbytes a storage reports.
void cpu_free(void* data, void* context, size_t /*nbytes*/) {
  size_t rounded = reinterpret_cast<size_t>(context);
  live_bytes.fetch_sub(static_cast<int64_t>(rounded), std::memory_order_relaxed);
  if (rounded <= kLargestClass) {
    ThreadCache* cache = thread_cache();
    if (cache && cache->push(size_class(rounded), data)) return;
  }
  std::free(data);
}

class CpuAllocator final : public Allocator {
 public:
  // Zero bytes still get a unique 64-byte block, so kernels never see a null CPU pointer.
  DataPtr allocate(size_t nbytes) override {
    if (nbytes > (size_t{1} << 62)) throw std::bad_alloc();
    size_t rounded = nbytes <= kLargestClass ? class_bytes(size_class(nbytes))
                                             : (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    void* block = nullptr;
    if (rounded <= kLargestClass) {
      ThreadCache* cache = thread_cache();
      if (cache) block = cache->pop(size_class(rounded));
    }
    if (!block) block = system_allocate(rounded);
    live_bytes.fetch_add(static_cast<int64_t>(rounded), std::memory_order_relaxed);
    return DataPtr{block, &cpu_free, reinterpret_cast<void*>(rounded), Device(kCPU)};
  }
};

}  // namespace

Allocator* cpu_allocator() {
  // Never destroyed, so tensors that outlive static destruction can still be allocated and freed.
  static auto* allocator = new CpuAllocator();
  return allocator;
}

int64_t cpu_live_bytes() { return live_bytes.load(std::memory_order_relaxed); }

void cpu_allocator_empty_cache() {
  if (ThreadCache* cache = thread_cache()) cache->release_all();
}

namespace {
std::atomic<detail::StorageReleaseHook> storage_release_hook{nullptr};
}  // namespace

StorageImpl::StorageImpl(void* external, size_t nbytes, Device device, std::function<void(void*)> on_release)
    : data_(DataPtr{external, nullptr, nullptr, device}), nbytes_(nbytes), on_release_(std::move(on_release)) {
  if (!on_release_) return;
  if (auto hook = storage_release_hook.load(std::memory_order_acquire)) hook(on_release_);
}

StorageImpl::~StorageImpl() {
  if (data_.deleter) data_.deleter(data_.data, data_.context, nbytes_);
  else if (on_release_) on_release_(data_.data);
}

namespace detail {
void set_storage_release_hook(StorageReleaseHook hook) { storage_release_hook.store(hook, std::memory_order_release); }
}  // namespace detail

namespace {
// Frees `data` if the StorageImpl itself cannot be allocated.
intrusive_ptr<StorageImpl> adopt_data(DataPtr data, size_t nbytes) {
  try {
    return make_intrusive<StorageImpl>(data, nbytes);
  } catch (...) {
    if (data.deleter) data.deleter(data.data, data.context, nbytes);
    throw;
  }
}

Allocator* backend_allocator(Device device, const char* op) {
  const DeviceHooks& hooks = detail::require_device_hooks(device.type(), op);
  detail::check_device_in_range(hooks, device, op);
  Allocator* allocator = hooks.allocator(device.index());
  STRATA_INTERNAL_ASSERT(allocator != nullptr, "the ", device.type(), " backend gave no allocator for ", device);
  return allocator;
}
}  // namespace

Allocator* get_allocator(Device device) {
  switch (device.type()) {
    case kCPU: return cpu_allocator();
    case kMeta: detail::throw_error<ValueError>("[get_allocator] meta tensors have no memory, hence no allocator");
    case kCUDA: break;
  }
  return backend_allocator(device, "get_allocator");
}

// The CPU case stays a direct call: it runs for every op's output. See Note [CPU size-class cache].
intrusive_ptr<StorageImpl> make_storage(size_t nbytes, Device device) {
  switch (device.type()) {
    case kCPU: return adopt_data(cpu_allocator()->allocate(nbytes), nbytes);
    case kMeta: return make_intrusive<StorageImpl>(DataPtr{nullptr, nullptr, nullptr, device}, nbytes);
    case kCUDA: break;
  }
  DataPtr data = backend_allocator(device, "empty")->allocate(nbytes);
  if (data.device != device) {
    if (data.deleter) data.deleter(data.data, data.context, nbytes);
    STRATA_INTERNAL_ASSERT(false, "the allocator of ", device, " returned memory on ", data.device);
  }
  return adopt_data(data, nbytes);
}

}  // namespace strata
