#pragma once
// The CUDA caching allocator's bookkeeping: pools of device memory reused across allocations,
// written against a raw-memory interface so its logic runs and is tested on hosts without a
// GPU. Pure C++ (no CUDA header): the CUDA backend wraps it. See Note [CUDA caching allocator].
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace strata::cuda::detail {

using StreamId = int64_t;  // 0 = the device's default stream
using PoolId = uint64_t;    // a private pool of one CUDA graph capture (Note [Capture pools]); never 0

inline constexpr size_t kMinBlockSize = 512;            // every size is rounded up to a multiple
inline constexpr size_t kSmallSize = size_t{1} << 20;    // largest request served by the small pool
inline constexpr size_t kSmallBuffer = size_t{2} << 20;  // segment size of the small pool
inline constexpr size_t kMinLargeAlloc = size_t{10} << 20;  // large requests below share a segment
inline constexpr size_t kLargeBuffer = size_t{20} << 20;    // ... of this size
inline constexpr size_t kRoundLarge = size_t{2} << 20;      // larger ones get their own, rounded to this

// `nbytes` rounded up to a multiple of kMinBlockSize (at least kMinBlockSize).
size_t round_size(size_t nbytes);
// The segment asked of the device for a block of `rounded_bytes` that no cached block serves.
size_t segment_size(size_t rounded_bytes);
// "512 bytes", "1.50 KiB", "256.00 MiB", "2.00 GiB".
std::string format_bytes(size_t nbytes);

// What the allocator needs from the device runtime. Called with the allocator's mutex held, so
// an implementation must not call back into the allocator.
class RawMemory {
 public:
  virtual ~RawMemory() = default;
  virtual void* malloc(int device, size_t nbytes) = 0;  // nullptr when the device is out of memory
  virtual void free(int device, void* ptr) = 0;
  // Stream ordering for record_stream: a marker after the work queued so far on `stream`.
  virtual void* record_event(int device, StreamId stream) = 0;
  virtual bool query_event(void* event) = 0;  // true once that work finished
  virtual void synchronize_event(void* event) = 0;
  virtual void destroy_event(void* event) = 0;
};

// Per device. Byte counts are of rounded block sizes.
struct AllocatorStats {
  int64_t allocated_bytes = 0;       // live blocks
  int64_t reserved_bytes = 0;        // segments held from the device (live, cached or pending)
  int64_t peak_allocated_bytes = 0;  // since construction or the last reset_peak
  int64_t peak_reserved_bytes = 0;
  int64_t num_allocs = 0;            // allocate calls that returned memory
  int64_t num_frees = 0;
  int64_t cache_hits = 0;            // allocations served by a cached block, without a device malloc
  int64_t device_mallocs = 0;        // successful RawMemory::malloc calls
  int64_t device_frees = 0;
  int64_t num_alloc_retries = 0;     // times the cache was emptied because the device was full
  int64_t num_ooms = 0;              // out-of-memory errors thrown
};

struct Block;
struct BlockPools;
struct DeviceState;

// See Note [CUDA caching allocator]. Thread safe: every call takes one mutex.
class CachingAllocator {
 public:
  CachingAllocator(RawMemory& raw, int device_count);
  // Returns every cached segment to `raw`. Blocks still live are the caller's bug: their
  // segments are left to the device rather than freed under a user.
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Memory for `nbytes` on `device`, ordered on `stream`; nullptr for nbytes == 0. Throws
  // strata::Error "[cuda] CUDA out of memory: ..." when emptying the cache and retrying fails.
  void* allocate(int device, size_t nbytes, StreamId stream);
  // Back to the cache of its stream, or pending until the streams of record_stream are done.
  // nullptr is a no-op; a pointer this allocator did not hand out throws strata::Error.
  void free(void* ptr);
  // The live block at `ptr` is also used on `stream`: freeing it waits for that stream's work.
  void record_stream(void* ptr, StreamId stream);
  // Returns every cached unsplit segment to the device, after waiting for pending frees.
  void empty_cache();

  // CUDA graph capture (Note [Capture pools]). From begin_capture to end_capture, allocations on
  // `stream` of `device` come from a new private pool, whose blocks are reused only inside that
  // capture and stay reserved for the graph until release_pool; meanwhile no call may wait for
  // the device or free device memory. A stream captures one graph at a time.
  PoolId begin_capture(int device, StreamId stream);
  void end_capture(int device, StreamId stream);
  // The graph is gone: the pool's cached blocks join the device's shared cache, and its blocks
  // still live join it when freed.
  void release_pool(int device, PoolId pool);

  AllocatorStats stats(int device) const;
  void reset_peak(int device);  // peaks restart from the current values
  size_t allocation_size(void* ptr) const;  // the rounded size of the live block at `ptr`
  int device_count() const { return static_cast<int>(devices_.size()); }

 private:
  struct PendingEvent {
    void* event;
    Block* block;
  };

  void check_device(int device, const char* what) const;
  Block* find_live_block(void* ptr, const char* what) const;
  BlockPools& pools_of(Block* block);
  Block* take_free_block(DeviceState& state, BlockPools& pools, bool small, StreamId stream, size_t size);
  Block* new_segment(int device, BlockPools& pools, PoolId pool, bool small, StreamId stream, size_t size,
                     size_t nbytes);
  void* malloc_or_empty_cache(int device, size_t bytes);
  void split_block(Block* block, size_t size);
  void return_to_pool(Block* block);
  void release_freed_block(Block* block, std::vector<void*> events);
  void process_completed_events();
  void synchronize_and_process_events();
  void release_cached_segments(int device);
  [[noreturn]] void throw_out_of_memory(int device, size_t nbytes);

  RawMemory& raw_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<DeviceState>> devices_;
  std::unordered_map<void*, Block*> live_blocks_;
  std::vector<PendingEvent> pending_events_;  // one per (freed block, stream of record_stream)
  int captures_underway_ = 0;                 // on any device
  PoolId next_pool_ = 1;
  std::vector<Block*> deferred_frees_;        // freed during a capture with record_stream uses
};

}  // namespace strata::cuda::detail
