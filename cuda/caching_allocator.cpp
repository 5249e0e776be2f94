// The CUDA caching allocator's bookkeeping. See Note [CUDA caching allocator].
#include <strata/cuda/caching_allocator.h>

#include <strata/tensor/errors.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <set>
#include <unordered_set>

namespace strata::cuda::detail {

// Note [CUDA caching allocator]
// cudaMalloc and cudaFree are slow and synchronize the device, so memory freed by a tensor is
// kept and handed to the next request it fits (the design of PyTorch's CUDACachingAllocator).
//
// Segments and blocks. Memory comes from the device in segments; a segment is a chain of
// blocks linked by address (prev/next), each live or free. Sizes are rounded up to 512 bytes.
// Each device has two pools: requests up to 1 MiB come from the small pool, whose segments are
// 2 MiB; larger ones from the large pool, whose segments are 20 MiB for requests under 10 MiB
// and otherwise the request rounded up to 2 MiB. Keeping them apart stops small tensors from
// pinning fragments of the large segments that big activations need.
//
// Allocation is best fit: each pool keeps its free blocks in a set ordered by (stream, size,
// address), so the smallest free block of the request's stream that fits is a lower_bound. A
// block larger than needed is split when the remainder is usable (at least 512 bytes in the
// small pool, over 1 MiB in the large pool: a smaller remainder stays in the block, which is
// then accounted at its whole size). A freed block merges with free neighbours in its segment,
// so freeing everything in a segment restores one block the size of the segment.
//
// Streams. A block is ordered on the stream it was allocated on: work queued there may still
// read it after free() returns, and later work on the same stream runs after it, so a freed
// block is reused only for requests on that stream (and every block of a segment shares it).
// record_stream(ptr, T) says the block is also used on T; on free an event is recorded on
// each such T and the block stays out of the pools (pending) until all its events completed.
// Events are polled at the start of every allocate and waited for by empty_cache and when the
// device runs out of memory.
//
// Out of memory. When the device refuses a segment, the allocator waits for the pending
// events, tries the cache again, then returns every cached unsplit segment of the device
// (split ones still hold live blocks) and retries once before throwing.
//
// Threads. One mutex guards everything, RawMemory calls included: they are rare next to cache
// hits, and a device malloc under the lock keeps two threads from both growing the cache.

// Note [Capture pools]
// A CUDA graph replays the launches of one captured run with the addresses they had then,
// including those of scratch memory an op allocated and freed inside the run (a conv's columns,
// a split reduction's partials). Had those blocks gone back to the shared cache, a tensor made
// after the capture could be given one, and every replay would overwrite it. So, as PyTorch's
// graph pools do, a capture on stream S allocates from a private pool of its own: from
// begin_capture to end_capture every request on S of that device is served from the pool
// (split and merged as usual, a block freed inside the capture reused inside it: the replay
// repeats that order), new segments join the pool, and after end_capture nothing but the pool's
// own blocks coming back touches it. The pool lives until the graph is destroyed (release_pool):
// its cached blocks then join the device's shared cache, and blocks still live (the graph's
// buffers the caller keeps) join it when freed. empty_cache leaves a live pool's segments alone.
// While any capture is underway the allocator makes no call the capture forbids: it polls no
// events, waits for none and frees no segment (an allocation the device refuses throws at once),
// and a block freed with record_stream uses is held until the last capture ends, when its
// events are recorded. A segment allocated during a capture is not stream work, so the backend
// allows it (cudaMalloc under the relaxed capture mode, cuda/allocator.cpp).

namespace {

struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const;
};

using BlockSet = std::set<Block*, BlockOrder>;

// Requests beyond this cannot be rounded without overflow; no device has that much memory.
constexpr size_t kMaxRequest = std::numeric_limits<size_t>::max() / 2;

}  // namespace

struct Block {
  int device;
  PoolId pool = 0;  // 0: the shared cache; else the capture pool its segment belongs to
  StreamId stream;
  size_t size;
  char* ptr;
  bool small;                // which pool of the device
  Block* prev = nullptr;     // neighbours in the same segment, by address
  Block* next = nullptr;
  bool allocated = false;
  int pending_events = 0;    // events still to complete before the block may be reused
  std::vector<StreamId> stream_uses;  // streams other than `stream`, from record_stream

  bool is_free() const { return !allocated && pending_events == 0; }
  bool is_whole_segment() const { return prev == nullptr && next == nullptr; }
};

bool BlockOrder::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  if (a->size != b->size) return a->size < b->size;
  return std::less<char*>()(a->ptr, b->ptr);
}

// The cached blocks of one pool: a device's shared cache, or one capture's (Note [Capture pools]).
struct BlockPools {
  BlockSet small_pool;
  BlockSet large_pool;

  BlockSet& pool(bool small) { return small ? small_pool : large_pool; }
};

struct DeviceState {
  BlockPools shared;
  std::unordered_map<PoolId, std::unique_ptr<BlockPools>> capture_pools;
  std::unordered_map<StreamId, PoolId> capturing;  // streams with a capture underway, and their pool
  AllocatorStats stats;

  void add_allocated(int64_t bytes) {
    stats.allocated_bytes += bytes;
    stats.peak_allocated_bytes = std::max(stats.peak_allocated_bytes, stats.allocated_bytes);
  }
  void add_reserved(int64_t bytes) {
    stats.reserved_bytes += bytes;
    stats.peak_reserved_bytes = std::max(stats.peak_reserved_bytes, stats.reserved_bytes);
  }
};

size_t round_size(size_t nbytes) {
  if (nbytes < kMinBlockSize) return kMinBlockSize;
  return (nbytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

size_t segment_size(size_t rounded_bytes) {
  if (rounded_bytes <= kSmallSize) return kSmallBuffer;
  if (rounded_bytes < kMinLargeAlloc) return kLargeBuffer;
  return (rounded_bytes + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

std::string format_bytes(size_t nbytes) {
  if (nbytes < 1024) return std::to_string(nbytes) + " bytes";
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(nbytes) / 1024.0;
  size_t unit = 0;
  for (; value >= 1024.0 && unit + 1 < std::size(units); ++unit) value /= 1024.0;
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f %s", value, units[unit]);
  return text;
}

CachingAllocator::CachingAllocator(RawMemory& raw, int device_count) : raw_(raw) {
  STRATA_CHECK(device_count >= 0, "[cuda] caching allocator needs a device count >= 0, got ", device_count);
  for (int device = 0; device < device_count; ++device) devices_.push_back(std::make_unique<DeviceState>());
}

CachingAllocator::~CachingAllocator() {
  // A destructor must not throw; a device error here leaves the memory to process exit.
  try {
    synchronize_and_process_events();
    for (int device = 0; device < device_count(); ++device) release_cached_segments(device);
  } catch (...) {
  }
  // What is left are the blocks of segments that still hold live blocks (or events that
  // failed): forget them without freeing their memory.
  std::unordered_set<Block*> blocks;
  auto add = [&blocks](const BlockPools& pools) {
    blocks.insert(pools.small_pool.begin(), pools.small_pool.end());
    blocks.insert(pools.large_pool.begin(), pools.large_pool.end());
  };
  for (auto& state : devices_) {
    add(state->shared);
    for (auto& [id, pools] : state->capture_pools) add(*pools);
  }
  for (auto& [ptr, block] : live_blocks_) blocks.insert(block);
  for (const PendingEvent& pending : pending_events_) blocks.insert(pending.block);
  blocks.insert(deferred_frees_.begin(), deferred_frees_.end());
  for (Block* block : blocks) delete block;
}

void CachingAllocator::check_device(int device, const char* what) const {
  STRATA_CHECK(device >= 0 && device < device_count(), "[cuda] ", what, ": device ", device,
               " is out of range for a caching allocator of ", device_count(), " device(s)");
}

Block* CachingAllocator::find_live_block(void* ptr, const char* what) const {
  auto found = live_blocks_.find(ptr);
  STRATA_CHECK(found != live_blocks_.end(), "[cuda] ", what, " of pointer ", ptr,
               ", which the CUDA caching allocator did not allocate or was already freed");
  return found->second;
}

void* CachingAllocator::allocate(int device, size_t nbytes, StreamId stream) {
  check_device(device, "allocate");
  if (nbytes == 0) return nullptr;
  std::lock_guard lock(mutex_);
  DeviceState& state = *devices_[device];
  if (captures_underway_ == 0) process_completed_events();
  if (nbytes > kMaxRequest) throw_out_of_memory(device, nbytes);
  const size_t size = round_size(nbytes);
  const bool small = size <= kSmallSize;
  PoolId pool = 0;
  BlockPools* pools = &state.shared;
  if (!state.capturing.empty()) {
    if (auto capture = state.capturing.find(stream); capture != state.capturing.end()) {
      pool = capture->second;
      pools = state.capture_pools.at(pool).get();
    }
  }
  Block* block = take_free_block(state, *pools, small, stream, size);
  if (block == nullptr) block = new_segment(device, *pools, pool, small, stream, size, nbytes);
  const size_t remaining = block->size - size;
  if (small ? remaining >= kMinBlockSize : remaining > kSmallSize) split_block(block, size);
  block->allocated = true;
  live_blocks_.emplace(block->ptr, block);
  state.add_allocated(static_cast<int64_t>(block->size));
  ++state.stats.num_allocs;
  return block->ptr;
}

// The pools `block` is cached in: its capture's while that lives, else the shared cache (a block
// of a released capture pool joins it here, Note [Capture pools]).
BlockPools& CachingAllocator::pools_of(Block* block) {
  DeviceState& state = *devices_[block->device];
  if (block->pool != 0) {
    if (auto found = state.capture_pools.find(block->pool); found != state.capture_pools.end()) return *found->second;
    block->pool = 0;
  }
  return state.shared;
}

// The best-fitting free block of `stream` in the pool, taken out of it; nullptr if none fits.
Block* CachingAllocator::take_free_block(DeviceState& state, BlockPools& pools, bool small, StreamId stream,
                                         size_t size) {
  BlockSet& pool = pools.pool(small);
  Block key{};
  key.stream = stream;
  key.size = size;
  key.ptr = nullptr;
  auto found = pool.lower_bound(&key);
  if (found == pool.end() || (*found)->stream != stream) return nullptr;
  Block* block = *found;
  pool.erase(found);
  ++state.stats.cache_hits;
  return block;
}

// A block for a request no cached block serves: a new segment, or after out-of-memory
// handling a block that pending events freed. See Note [CUDA caching allocator].
// During a capture nothing is waited for or freed: the request fails at once.
Block* CachingAllocator::new_segment(int device, BlockPools& pools, PoolId pool, bool small, StreamId stream,
                                     size_t size, size_t nbytes) {
  DeviceState& state = *devices_[device];
  const size_t bytes = segment_size(size);
  auto block = std::make_unique<Block>();
  void* memory = raw_.malloc(device, bytes);
  if (memory == nullptr && captures_underway_ == 0) {
    synchronize_and_process_events();
    if (Block* freed = take_free_block(state, pools, small, stream, size)) return freed;
    memory = malloc_or_empty_cache(device, bytes);
  }
  if (memory == nullptr) throw_out_of_memory(device, nbytes);
  block->device = device;
  block->pool = pool;
  block->stream = stream;
  block->size = bytes;
  block->ptr = static_cast<char*>(memory);
  block->small = small;
  ++state.stats.device_mallocs;
  state.add_reserved(static_cast<int64_t>(bytes));
  return block.release();
}

// After a refused device malloc: returns the device's cached segments and retries once.
void* CachingAllocator::malloc_or_empty_cache(int device, size_t bytes) {
  ++devices_[device]->stats.num_alloc_retries;
  release_cached_segments(device);
  return raw_.malloc(device, bytes);
}

// Keeps the first `size` bytes in `block`; the rest becomes a free block in the same pool.
void CachingAllocator::split_block(Block* block, size_t size) {
  auto rest = std::make_unique<Block>();
  rest->device = block->device;
  rest->pool = block->pool;
  rest->stream = block->stream;
  rest->size = block->size - size;
  rest->ptr = block->ptr + size;
  rest->small = block->small;
  rest->prev = block;
  rest->next = block->next;
  if (rest->next != nullptr) rest->next->prev = rest.get();
  block->next = rest.get();
  block->size = size;
  pools_of(block).pool(block->small).insert(rest.release());
}

// `block` is free and out of every pool: merges it with free neighbours and caches it.
void CachingAllocator::return_to_pool(Block* block) {
  BlockSet& pool = pools_of(block).pool(block->small);
  if (Block* prev = block->prev; prev != nullptr && prev->is_free()) {
    pool.erase(prev);
    block->ptr = prev->ptr;
    block->size += prev->size;
    block->prev = prev->prev;
    if (block->prev != nullptr) block->prev->next = block;
    delete prev;
  }
  if (Block* next = block->next; next != nullptr && next->is_free()) {
    pool.erase(next);
    block->size += next->size;
    block->next = next->next;
    if (block->next != nullptr) block->next->prev = block;
    delete next;
  }
  pool.insert(block);
}

namespace {
// One event on each stream of record_stream, after the work queued there so far; none recorded
// if any fails.
std::vector<void*> record_use_events(RawMemory& raw, const Block& block) {
  std::vector<void*> events;
  try {
    for (StreamId stream : block.stream_uses) events.push_back(raw.record_event(block.device, stream));
  } catch (...) {
    for (void* event : events) raw.destroy_event(event);
    throw;
  }
  return events;
}
}  // namespace

void CachingAllocator::free(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  Block* block = find_live_block(ptr, "free");
  // During a capture, events are recorded when it ends (Note [Capture pools]). Otherwise every
  // event is recorded before anything changes, so a failing runtime leaves the block live.
  const bool defer = captures_underway_ > 0 && !block->stream_uses.empty();
  std::vector<void*> events;
  if (!defer) events = record_use_events(raw_, *block);
  live_blocks_.erase(ptr);
  block->allocated = false;
  DeviceState& state = *devices_[block->device];
  state.stats.allocated_bytes -= static_cast<int64_t>(block->size);
  ++state.stats.num_frees;
  if (defer) {
    block->pending_events = 1;  // held: neither reused nor merged
    deferred_frees_.push_back(block);
    return;
  }
  release_freed_block(block, std::move(events));
}

// A freed block waits for its events, or is cached at once when there are none.
void CachingAllocator::release_freed_block(Block* block, std::vector<void*> events) {
  block->stream_uses.clear();
  for (void* event : events) pending_events_.push_back(PendingEvent{event, block});
  block->pending_events = static_cast<int>(events.size());
  if (events.empty()) return_to_pool(block);
}

void CachingAllocator::record_stream(void* ptr, StreamId stream) {
  std::lock_guard lock(mutex_);
  Block* block = find_live_block(ptr, "record_stream");
  if (stream == block->stream) return;  // already ordered on its own stream
  auto& uses = block->stream_uses;
  if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
}

// Caches the blocks whose last event completed; leaves the other events pending.
void CachingAllocator::process_completed_events() {
  size_t kept = 0;
  size_t index = 0;
  try {
    for (; index < pending_events_.size(); ++index) {
      const PendingEvent pending = pending_events_[index];
      if (!raw_.query_event(pending.event)) {
        pending_events_[kept++] = pending;
        continue;
      }
      raw_.destroy_event(pending.event);
      if (--pending.block->pending_events == 0) return_to_pool(pending.block);
    }
  } catch (...) {
    // Entries [kept, index) were moved down or handled; the rest are still pending.
    pending_events_.erase(pending_events_.begin() + static_cast<std::ptrdiff_t>(kept),
                          pending_events_.begin() + static_cast<std::ptrdiff_t>(index));
    throw;
  }
  pending_events_.resize(kept);
}

// Waits for every pending event and caches the blocks they held back.
void CachingAllocator::synchronize_and_process_events() {
  while (!pending_events_.empty()) {
    const PendingEvent pending = pending_events_.back();
    raw_.synchronize_event(pending.event);
    pending_events_.pop_back();
    raw_.destroy_event(pending.event);
    if (--pending.block->pending_events == 0) return_to_pool(pending.block);
  }
}

// Returns every cached segment of `device` that is one free block to the device.
void CachingAllocator::release_cached_segments(int device) {
  DeviceState& state = *devices_[device];
  for (BlockSet* pool : {&state.shared.small_pool, &state.shared.large_pool}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* block = *it;
      if (!block->is_whole_segment()) {
        ++it;
        continue;
      }
      raw_.free(device, block->ptr);
      it = pool->erase(it);
      state.stats.reserved_bytes -= static_cast<int64_t>(block->size);
      ++state.stats.device_frees;
      delete block;
    }
  }
}

PoolId CachingAllocator::begin_capture(int device, StreamId stream) {
  check_device(device, "begin_capture");
  std::lock_guard lock(mutex_);
  DeviceState& state = *devices_[device];
  STRATA_CHECK(state.capturing.count(stream) == 0, "[cuda] begin_capture: stream ", stream, " of device ", device,
               " is already capturing a CUDA graph");
  const PoolId pool = next_pool_++;
  state.capture_pools.emplace(pool, std::make_unique<BlockPools>());
  state.capturing.emplace(stream, pool);
  ++captures_underway_;
  return pool;
}

void CachingAllocator::end_capture(int device, StreamId stream) {
  check_device(device, "end_capture");
  std::lock_guard lock(mutex_);
  DeviceState& state = *devices_[device];
  auto found = state.capturing.find(stream);
  STRATA_CHECK(found != state.capturing.end(), "[cuda] end_capture: no CUDA graph capture is underway on stream ",
               stream, " of device ", device);
  state.capturing.erase(found);
  if (--captures_underway_ > 0) return;
  // The blocks freed with record_stream uses during captures record their events now.
  std::vector<Block*> deferred;
  deferred.swap(deferred_frees_);
  for (size_t i = 0; i < deferred.size(); ++i) {
    std::vector<void*> events;
    try {
      events = record_use_events(raw_, *deferred[i]);
    } catch (...) {
      deferred_frees_.assign(deferred.begin() + static_cast<std::ptrdiff_t>(i), deferred.end());
      throw;
    }
    release_freed_block(deferred[i], std::move(events));
  }
}

void CachingAllocator::release_pool(int device, PoolId pool) {
  check_device(device, "release_pool");
  std::lock_guard lock(mutex_);
  DeviceState& state = *devices_[device];
  auto found = state.capture_pools.find(pool);
  STRATA_CHECK(found != state.capture_pools.end(), "[cuda] release_pool: device ", device, " has no capture pool ",
               pool);
  for (const auto& [stream, capturing] : state.capturing)
    STRATA_CHECK(capturing != pool, "[cuda] release_pool: pool ", pool, " is still capturing on stream ", stream);
  const std::unique_ptr<BlockPools> pools = std::move(found->second);
  state.capture_pools.erase(found);
  for (BlockSet* cached : {&pools->small_pool, &pools->large_pool}) {
    for (Block* block : *cached) {
      block->pool = 0;
      state.shared.pool(block->small).insert(block);
    }
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  STRATA_CHECK(captures_underway_ == 0, "[cuda] empty_cache: a CUDA graph capture is underway; returning memory to "
               "the device would wait for it, which the capture forbids: call empty_cache after the capture");
  synchronize_and_process_events();
  for (int device = 0; device < device_count(); ++device) release_cached_segments(device);
}

void CachingAllocator::throw_out_of_memory(int device, size_t nbytes) {
  AllocatorStats& stats = devices_[device]->stats;
  ++stats.num_ooms;
  const auto in_use = static_cast<size_t>(stats.allocated_bytes);
  const auto cached = static_cast<size_t>(stats.reserved_bytes - stats.allocated_bytes);
  strata::detail::throw_error<strata::Error>(
      "[cuda] CUDA out of memory: tried to allocate ", format_bytes(nbytes), " (device ", device, "); ",
      format_bytes(in_use), " in use, ", format_bytes(cached), " cached",
      captures_underway_ > 0 ? " (a CUDA graph capture is underway, so no cached memory was returned to the device)"
                             : "");
}

AllocatorStats CachingAllocator::stats(int device) const {
  check_device(device, "stats");
  std::lock_guard lock(mutex_);
  return devices_[device]->stats;
}

void CachingAllocator::reset_peak(int device) {
  check_device(device, "reset_peak");
  std::lock_guard lock(mutex_);
  AllocatorStats& stats = devices_[device]->stats;
  stats.peak_allocated_bytes = stats.allocated_bytes;
  stats.peak_reserved_bytes = stats.reserved_bytes;
}

size_t CachingAllocator::allocation_size(void* ptr) const {
  std::lock_guard lock(mutex_);
  return find_live_block(ptr, "allocation_size")->size;
}

}  // namespace strata::cuda::detail
