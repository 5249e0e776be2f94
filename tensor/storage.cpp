// The CPU allocator (size-class cache, large-block cache), storages and device allocator lookup.
#include <strata/tensor/storage.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include <strata/tensor/device_hooks.h>
#include <strata/tensor/errors.h>
#include <strata/tensor/small_blocks.h>

namespace strata {

// Note [CPU size-class cache]
// Most tensors in a training step are freed and reallocated with the same sizes every
// iteration, and malloc/free of a few KiB costs more than a small op itself. Blocks up to
// kLargestClass are rounded up to a power of two (from 64 B) and, when freed, kept in a
// thread-local free list for their class instead of going back to the system. A block freed on
// another thread than the one that allocated it simply joins the freeing thread's list: blocks
// are plain 64-byte aligned memory and belong to no thread. Each list is bounded (at most
// kCacheBytesPerClass, kMaxBlocksPerClass blocks and at least kMinBlocksPerClass; up to
// kMaxSmallBlocksPerClass blocks of 2 KiB or less, about 4 MiB for those classes together), so
// a thread caches a few tens of MiB at most; larger blocks go to the large-block cache below.
// The small classes also serve the framework's own per-op objects (Note [Pooled small objects]).
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
constexpr size_t kMaxSmallBlocksPerClass = 1024;
using detail::kLargestSmallBlock;
constexpr size_t kMinBlocksPerClass = 2;

// Note [Counting live bytes]
// cpu_live_bytes() is exact, but every CPU allocation and free changing one shared atomic was a
// locked read-modify-write on the path of every op's output (several nanoseconds each). Each
// thread counts its own allocations minus its own frees in its cache (below), with a plain load
// and store of its own atomic; the registry of those counters sums them on demand, and a
// thread's count moves into `exited` when the thread's cache goes. A block freed on another
// thread than it was allocated on leaves one count up and the other down: only the sum means
// anything. Changes after a thread's cache is gone (thread exit, static destruction) go to
// `unowned` with a plain atomic add.
struct LiveCounter {
  std::atomic<int64_t> bytes{0};
};
struct LiveRegistry {
  std::mutex mutex;
  std::vector<const LiveCounter*> counters;
  int64_t exited = 0;
  std::atomic<int64_t> unowned{0};
};
LiveRegistry& live_registry() {
  static auto* registry = new LiveRegistry();  // never destroyed: threads exit after statics
  return *registry;
}

int size_class(size_t nbytes) {
  size_t rounded = std::bit_ceil(nbytes < kSmallestClass ? kSmallestClass : nbytes);
  return std::countr_zero(rounded) - std::countr_zero(kSmallestClass);
}
size_t class_bytes(int size_class_index) { return kSmallestClass << size_class_index; }
constexpr size_t class_capacity(int size_class_index) {
  const size_t bytes = kSmallestClass << size_class_index;
  const size_t by_bytes = kCacheBytesPerClass / bytes;
  const size_t most = bytes <= kLargestSmallBlock ? kMaxSmallBlocksPerClass : kMaxBlocksPerClass;
  return by_bytes < kMinBlocksPerClass ? kMinBlocksPerClass : by_bytes > most ? most : by_bytes;
}
static_assert(class_capacity(0) == kMaxSmallBlocksPerClass && class_capacity(5) == kMaxSmallBlocksPerClass &&
              class_capacity(6) == kMaxBlocksPerClass && class_capacity(kNumClasses - 1) == kMinBlocksPerClass);

// Note [CPU large-block cache]
// Blocks over kLargestClass used to go straight back to the system, so every out-of-place op
// on a large tensor paid for faulting fresh pages in: an add of 16M floats into a new tensor
// spent most of its time there, against the same add in place. Freed large blocks are now kept
// in one process-wide cache (behind a mutex: a large block costs far more than the lock) and
// handed out again for any request they fit with at most 1/8 to spare (best fit), so a loop
// that makes large temporaries reuses memory whose pages are already in. The cache holds at
// most a byte limit (default 1/8 of physical memory, at most 1 GiB;
// set_cpu_allocator_cache_limit), dropping the blocks cached longest ago first; when the
// system refuses an allocation, both caches are emptied and the allocation retried once, and
// cpu_allocator_empty_cache() empties it. A block's DataPtr context holds its true size, so a
// reused block that is a little larger is accounted and cached at that size.
// Note [Spilled class blocks]
// The lists of the largest classes hold only a few blocks (two of 4 MiB), and a loop whose
// step makes more temporaries of one such size than that freed the rest and faulted their
// pages in again every iteration: a * b + c * d - e on 1M floats (four 4 MiB blocks live) took
// 13-17 ms a call instead of 1.5, 1024 page faults each time on a VM where a fault costs over
// 10 us. A class block of at least kSpillBytes that its full list cannot take goes to the
// large-block cache instead, and a request of such a class that its list cannot serve looks
// there, under the same byte limit. Below kSpillBytes the lists are long enough, and a block
// costs less to fault in than the cache's lock.
constexpr size_t kSpillBytes = size_t{256} << 10;
static_assert(kSpillBytes < kLargestClass, "every large block is at least kSpillBytes");

class LargeBlockCache {
 public:
  // A cached block of at least `nbytes` and at most nbytes + nbytes / 8, or null.
  void* take(size_t nbytes, size_t& block_bytes) {
    std::lock_guard lock(mutex_);
    size_t best = blocks_.size();
    for (size_t i = 0; i < blocks_.size(); ++i) {
      const size_t bytes = blocks_[i].bytes;
      if (bytes >= nbytes && bytes - nbytes <= nbytes / 8 && (best == blocks_.size() || bytes < blocks_[best].bytes))
        best = i;
    }
    if (best == blocks_.size()) return nullptr;
    void* block = blocks_[best].data;
    block_bytes = blocks_[best].bytes;
    cached_bytes_ -= block_bytes;
    blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(best));
    return block;
  }
  // Keeps the block (freeing the oldest ones past the limit); false when it alone exceeds it.
  bool give(void* block, size_t bytes) {
    std::vector<void*> evicted;
    {
      std::lock_guard lock(mutex_);
      if (bytes > limit_) return false;
      blocks_.push_back(Block{block, bytes});
      cached_bytes_ += bytes;
      evicted = evict_oldest_locked(limit_);
    }
    free_all(evicted);
    return true;
  }
  void release_all() {
    std::unique_lock lock(mutex_);
    const std::vector<void*> evicted = evict_oldest_locked(0);
    lock.unlock();
    free_all(evicted);
  }
  void set_limit(size_t bytes) {
    std::unique_lock lock(mutex_);
    limit_ = bytes;
    const std::vector<void*> evicted = evict_oldest_locked(limit_);
    lock.unlock();
    free_all(evicted);
  }
  size_t cached_bytes() {
    std::lock_guard lock(mutex_);
    return cached_bytes_;
  }
  size_t limit() {
    std::lock_guard lock(mutex_);
    return limit_;
  }

 private:
  struct Block {
    void* data;
    size_t bytes;
  };
  // Drops the blocks cached longest ago until at most `keep_under` bytes stay cached; returns
  // their memory for the caller to free once the lock is released.
  std::vector<void*> evict_oldest_locked(size_t keep_under) {
    std::vector<void*> evicted;
    size_t oldest = 0;
    for (; cached_bytes_ > keep_under; ++oldest) {
      cached_bytes_ -= blocks_[oldest].bytes;
      evicted.push_back(blocks_[oldest].data);
    }
    blocks_.erase(blocks_.begin(), blocks_.begin() + static_cast<std::ptrdiff_t>(oldest));
    return evicted;
  }
  static void free_all(const std::vector<void*>& blocks) {
    for (void* data : blocks) std::free(data);
  }
  static size_t default_limit() {
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
    const size_t physical = pages > 0 && page_size > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page_size) : 0;
    return std::min(physical / 8, size_t{1} << 30);
  }

  std::mutex mutex_;
  std::vector<Block> blocks_;  // oldest first
  size_t cached_bytes_ = 0;
  size_t limit_ = default_limit();
};

// Never destroyed: tensors freed during static destruction still return their blocks here.
LargeBlockCache& large_cache() {
  static auto* cache = new LargeBlockCache();
  return *cache;
}

void release_cached_blocks();

void* system_allocate(size_t rounded_bytes) {
  void* block = std::aligned_alloc(kAlignment, rounded_bytes);
  if (!block) {  // the system is short of memory: give back what is cached and try once more
    release_cached_blocks();
    block = std::aligned_alloc(kAlignment, rounded_bytes);
  }
  if (!block) throw std::bad_alloc();
  return block;
}

// A free list threaded through the cached blocks themselves (the first word is the link).
struct FreeList {
  void* head = nullptr;
  size_t count = 0;
};

// Trivially destructible, so it can be read after the cache below is gone.
[[gnu::tls_model("initial-exec")]] thread_local bool cache_destroyed = false;

struct ThreadCache {
  std::array<FreeList, kNumClasses> lists;
  LiveCounter live;  // Note [Counting live bytes]

  ThreadCache() {
    LiveRegistry& registry = live_registry();
    std::lock_guard lock(registry.mutex);
    registry.counters.push_back(&live);
  }
  // Only this thread writes `live`; readers load it.
  void count(int64_t bytes) {
    live.bytes.store(live.bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
  }

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
    LiveRegistry& registry = live_registry();
    {
      std::lock_guard lock(registry.mutex);
      registry.exited += live.bytes.load(std::memory_order_relaxed);
      std::erase(registry.counters, &live);
    }
    cache_destroyed = true;
  }
};

// Null once the calling thread's cache has been destroyed (thread exit).
ThreadCache* thread_cache() {
  if (cache_destroyed) return nullptr;
  [[gnu::tls_model("initial-exec")]] thread_local ThreadCache cache;
  return &cache;
}

// Adds `bytes` to the live count (Note [Counting live bytes]).
void count_live(ThreadCache* cache, int64_t bytes) {
  if (cache)
    cache->count(bytes);
  else
    live_registry().unowned.fetch_add(bytes, std::memory_order_relaxed);
}

// The context of a CPU DataPtr carries the block's rounded size, so freeing never depends on
// the nbytes a storage reports.
void cpu_free(void* data, void* context, size_t /*nbytes*/) {
  size_t rounded = reinterpret_cast<size_t>(context);
  ThreadCache* cache = thread_cache();
  count_live(cache, -static_cast<int64_t>(rounded));
  if (rounded <= kLargestClass && cache && cache->push(size_class(rounded), data)) return;
  // Every block over kLargestClass, and a class block its full list could not take (Note
  // [Spilled class blocks]); kSpillBytes < kLargestClass.
  if (rounded >= kSpillBytes && large_cache().give(data, rounded)) return;
  std::free(data);
}

void release_cached_blocks() {
  if (ThreadCache* cache = thread_cache()) cache->release_all();
  large_cache().release_all();
}

}  // namespace

// Note [Pooled small objects]
// Every recorded op makes a few objects of its own besides its output's data (the output's
// TensorImpl and Storage block, Note [One allocation per tensor]), and a graph of a few hundred
// small ops makes and frees hundreds of them at once: more than malloc's per-thread cache
// holds, so most went through its slow paths. They come from the size-class free lists above
// instead (rounded up to a power of two; never counted in cpu_live_bytes). Such a block may be
// freed on any thread, as tensor data may.
// Under AddressSanitizer every block comes from and goes back to the system, so that a use of a
// freed node or tensor is reported instead of reading a recycled block.
namespace {
ThreadCache* small_block_cache() {
#if defined(__SANITIZE_ADDRESS__)
  return nullptr;
#else
  return thread_cache();
#endif
}
}  // namespace

void* detail::allocate_small_block(size_t nbytes) {
  STRATA_INTERNAL_ASSERT(nbytes <= kLargestSmallBlock, "allocate_small_block(", nbytes, ") is over ",
                         kLargestSmallBlock, " bytes");
  const int index = size_class(nbytes);
  if (ThreadCache* cache = small_block_cache())
    if (void* block = cache->pop(index)) return block;
  return system_allocate(class_bytes(index));
}

void detail::free_small_block(void* block, size_t nbytes) noexcept {
  if (ThreadCache* cache = small_block_cache(); cache && cache->push(size_class(nbytes), block)) return;
  std::free(block);
}

namespace {

class CpuAllocator final : public Allocator {
 public:
  // Zero bytes still get a unique 64-byte block, so kernels never see a null CPU pointer.
  DataPtr allocate(size_t nbytes) override {
    if (nbytes > (size_t{1} << 62)) throw std::bad_alloc();
    size_t rounded = nbytes <= kLargestClass ? class_bytes(size_class(nbytes))
                                             : (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    void* block = nullptr;
    ThreadCache* cache = thread_cache();
    if (rounded <= kLargestClass && cache) block = cache->pop(size_class(rounded));
    if (!block && rounded >= kSpillBytes) {  // a large block, or a spilled class block
      size_t block_bytes = 0;
      block = large_cache().take(rounded, block_bytes);
      if (block) rounded = block_bytes;  // a reused block may be up to 1/8 larger
    }
    if (!block) block = system_allocate(rounded);
    count_live(cache, static_cast<int64_t>(rounded));
    return DataPtr{block, &cpu_free, reinterpret_cast<void*>(rounded), Device(kCPU)};
  }
};

}  // namespace

Allocator* cpu_allocator() {
  // Never destroyed, so tensors that outlive static destruction can still be allocated and freed.
  static auto* allocator = new CpuAllocator();
  return allocator;
}

int64_t cpu_live_bytes() {
  LiveRegistry& registry = live_registry();
  std::lock_guard lock(registry.mutex);
  int64_t total = registry.exited + registry.unowned.load(std::memory_order_relaxed);
  for (const LiveCounter* counter : registry.counters) total += counter->bytes.load(std::memory_order_relaxed);
  return total;
}

void cpu_allocator_empty_cache() { release_cached_blocks(); }

int64_t cpu_cached_bytes() { return static_cast<int64_t>(large_cache().cached_bytes()); }

void set_cpu_allocator_cache_limit(size_t bytes) { large_cache().set_limit(bytes); }

size_t cpu_allocator_cache_limit() { return large_cache().limit(); }

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
DataPtr detail::allocate_storage_data(size_t nbytes, Device device) {
  switch (device.type()) {
    case kCPU: return cpu_allocator()->allocate(nbytes);
    case kMeta: return DataPtr{nullptr, nullptr, nullptr, device};
    case kCUDA: break;
  }
  DataPtr data = backend_allocator(device, "empty")->allocate(nbytes);
  if (data.device != device) {
    if (data.deleter) data.deleter(data.data, data.context, nbytes);
    STRATA_INTERNAL_ASSERT(false, "the allocator of ", device, " returned memory on ", data.device);
  }
  return data;
}

intrusive_ptr<StorageImpl> make_storage(size_t nbytes, Device device) {
  return adopt_data(detail::allocate_storage_data(nbytes, device), nbytes);
}

}  // namespace strata
