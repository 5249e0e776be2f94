// Tests for cuda/caching_allocator.cpp on a host-backed fake device: pools, rounding, splitting
// and merging, streams and record_stream, out-of-memory handling, stats and threads.
#include <doctest/doctest.h>

#include <strata/cuda/caching_allocator.h>
#include <strata/tensor/errors.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace strata::cuda::detail;

namespace {

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;

struct FakeEvent {
  int device;
  StreamId stream;
  bool done = false;
};

// Device memory from the host heap, with an optional budget past which malloc returns null, and
// events that complete only when the test says so (or a synchronize waits for them).
class FakeRawMemory : public RawMemory {
 public:
  ~FakeRawMemory() override {
    CHECK_MESSAGE(misuses_ == 0, "the allocator freed an unknown segment or used an unknown event");
    for (auto& [ptr, bytes] : segments_) std::free(ptr);
    for (FakeEvent* event : events_) delete event;
  }

  void* malloc(int /*device*/, size_t nbytes) override {
    std::lock_guard lock(mutex_);
    ++malloc_calls;
    if (budget && bytes_in_use + nbytes > *budget) return nullptr;
    void* ptr = std::malloc(nbytes);
    if (ptr == nullptr) return nullptr;
    segments_[ptr] = nbytes;
    malloc_sizes.push_back(nbytes);
    bytes_in_use += nbytes;
    return ptr;
  }
  void free(int /*device*/, void* ptr) override {
    std::lock_guard lock(mutex_);
    auto found = segments_.find(ptr);
    if (found == segments_.end()) {  // only whole segments may go back
      ++misuses_;
      return;
    }
    bytes_in_use -= found->second;
    segments_.erase(found);
    ++free_calls;
    std::free(ptr);
  }
  void* record_event(int device, StreamId stream) override {
    std::lock_guard lock(mutex_);
    auto* event = new FakeEvent{device, stream};
    events_.insert(event);
    ++events_recorded;
    return event;
  }
  bool query_event(void* event) override {
    std::lock_guard lock(mutex_);
    ++query_calls;
    FakeEvent* fake = known(event);
    return fake != nullptr && fake->done;
  }
  void synchronize_event(void* event) override {
    std::lock_guard lock(mutex_);
    if (FakeEvent* fake = known(event)) fake->done = true;
    ++synchronize_calls;
  }
  void destroy_event(void* event) override {
    std::lock_guard lock(mutex_);
    if (FakeEvent* fake = known(event)) {
      events_.erase(fake);
      delete fake;
    }
  }

  // The work queued on `stream` so far has finished.
  void complete_events_on(StreamId stream) {
    std::lock_guard lock(mutex_);
    for (FakeEvent* event : events_)
      if (event->stream == stream) event->done = true;
  }
  size_t live_events() {
    std::lock_guard lock(mutex_);
    return events_.size();
  }

  std::optional<size_t> budget;
  size_t bytes_in_use = 0;
  int malloc_calls = 0;  // refused ones included
  int free_calls = 0;
  int events_recorded = 0;
  int synchronize_calls = 0;
  int query_calls = 0;
  std::vector<size_t> malloc_sizes;  // of the successful mallocs

 private:
  // Counts a misuse (checked when the fake goes away) rather than asserting, as it is called
  // from many threads and from inside the allocator.
  FakeEvent* known(void* event) {
    auto* fake = static_cast<FakeEvent*>(event);
    if (events_.count(fake) == 1) return fake;
    ++misuses_;
    return nullptr;
  }

  std::mutex mutex_;
  std::map<void*, size_t> segments_;
  std::set<FakeEvent*> events_;
  int misuses_ = 0;
};

bool inside(const void* ptr, const void* begin, size_t bytes) {
  auto address = reinterpret_cast<uintptr_t>(ptr);
  auto start = reinterpret_cast<uintptr_t>(begin);
  return address >= start && address < start + bytes;
}

char* as_bytes(void* ptr) { return static_cast<char*>(ptr); }

template <class Fn>
std::string error_message(Fn&& fn) {
  try {
    fn();
  } catch (const strata::Error& error) {
    return error.what();
  }
  FAIL("expected a strata::Error");
  return {};
}

}  // namespace

TEST_CASE("caching allocator: sizes round up to multiples of 512 bytes") {
  CHECK(round_size(1) == 512);
  CHECK(round_size(512) == 512);
  CHECK(round_size(513) == 1024);
  CHECK(round_size(kMiB + 1) == kMiB + 512);
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 1);
  CHECK(allocator.allocate(0, 0, 0) == nullptr);
  CHECK(raw.malloc_calls == 0);
  for (auto request : {std::pair{size_t{1}, size_t{512}}, std::pair{size_t{512}, size_t{512}},
                       std::pair{size_t{513}, size_t{1024}}, std::pair{size_t{1000}, size_t{1024}},
                       std::pair{kMiB + 1, kMiB + 512}}) {
    const size_t nbytes = request.first;
    const size_t rounded = request.second;
    INFO("nbytes = ", nbytes);
    void* ptr = allocator.allocate(0, nbytes, 0);
    CHECK(allocator.allocation_size(ptr) == rounded);
    CHECK(allocator.stats(0).allocated_bytes == static_cast<int64_t>(rounded));
    allocator.free(ptr);
  }
}

TEST_CASE("caching allocator: a steady alloc/free loop makes no device mallocs after warm-up") {
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 1);
  const std::vector<size_t> sizes = {100, 4000, 300 * kKiB, 3 * kMiB, 25 * kMiB};
  auto one_step = [&] {
    std::vector<void*> blocks;
    for (size_t nbytes : sizes) blocks.push_back(allocator.allocate(0, nbytes, 0));
    for (void* ptr : blocks) allocator.free(ptr);
  };
  one_step();
  const int warm_mallocs = raw.malloc_calls;
  CHECK(warm_mallocs == 3);  // one small segment, a 20 MiB and a 26 MiB large segment
  for (int step = 0; step < 100; ++step) one_step();
  CHECK(raw.malloc_calls == warm_mallocs);
  CHECK(allocator.stats(0).device_mallocs == warm_mallocs);
  CHECK(allocator.stats(0).cache_hits >= 100 * static_cast<int64_t>(sizes.size()));
}

TEST_CASE("caching allocator: small and large requests come from their own pools and segment sizes") {
  CHECK(segment_size(512) == kSmallBuffer);
  CHECK(segment_size(kMiB) == 2 * kMiB);
  CHECK(segment_size(kMiB + 512) == 20 * kMiB);
  CHECK(segment_size(10 * kMiB - 512) == 20 * kMiB);
  CHECK(segment_size(10 * kMiB) == 10 * kMiB);
  CHECK(segment_size(11 * kMiB + 512) == 12 * kMiB);
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 1);
  void* small = allocator.allocate(0, kMiB, 0);
  void* medium = allocator.allocate(0, kMiB + 1, 0);
  void* large = allocator.allocate(0, 21 * kMiB, 0);
  CHECK(raw.malloc_sizes == std::vector<size_t>{2 * kMiB, 20 * kMiB, 22 * kMiB});
  CHECK(allocator.stats(0).reserved_bytes == static_cast<int64_t>(44 * kMiB));
  allocator.free(small);
  allocator.free(medium);
  allocator.free(large);
  // A large request does not take the cached small segment, nor a small one a large segment.
  void* large_again = allocator.allocate(0, kMiB + 512 * kKiB, 0);
  CHECK(!inside(large_again, small, 2 * kMiB));
  void* small_again = allocator.allocate(0, 600 * kKiB, 0);
  CHECK(small_again == small);
  CHECK(raw.malloc_calls == 3);
  allocator.free(large_again);
  allocator.free(small_again);
}

TEST_CASE("caching allocator: two small allocations split one 2 MiB segment") {
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 1);
  void* first = allocator.allocate(0, 1000, 0);
  void* second = allocator.allocate(0, 1000, 0);
  CHECK(raw.malloc_calls == 1);
  CHECK(inside(first, first, 2 * kMiB));
  CHECK(inside(second, first, 2 * kMiB));
  CHECK(as_bytes(second) == as_bytes(first) + 1024);
  CHECK(allocator.stats(0).allocated_bytes == 2048);
  CHECK(allocator.stats(0).reserved_bytes == static_cast<int64_t>(2 * kMiB));
  allocator.free(first);
  allocator.free(second);
}

TEST_CASE("caching allocator: large blocks split only when the remainder is over 1 MiB") {
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 1);
  // 11.5 MiB from a 12 MiB segment leaves 0.5 MiB: too small to split off, it stays in the block.
  void* whole = allocator.allocate(0, 11 * kMiB + 512 * kKiB, 0);
  CHECK(raw.malloc_sizes.back() == 12 * kMiB);
  CHECK(allocator.allocation_size(whole) == 12 * kMiB);
  void* first = allocator.allocate(0, 2 * kMiB, 0);
  void* second = allocator.allocate(0, 2 * kMiB, 0);
  CHECK(raw.malloc_sizes == std::vector<size_t>{12 * kMiB, 20 * kMiB});  // both in one 20 MiB segment
  CHECK(as_bytes(second) == as_bytes(first) + 2 * kMiB);
  CHECK(allocator.stats(0).allocated_bytes == static_cast<int64_t>(16 * kMiB));
  for (void* ptr : {first, second, whole}) allocator.free(ptr);
}

TEST_CASE("caching allocator: freed neighbours merge and serve a larger request from the segment start") {
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 1);
  void* first = allocator.allocate(0, 256 * kKiB, 0);
  void* second = allocator.allocate(0, 256 * kKiB, 0);
  void* third = allocator.allocate(0, 256 * kKiB, 0);  // keeps the segment split
  CHECK(as_bytes(second) == as_bytes(first) + 256 * kKiB);
  allocator.free(first);
  allocator.free(second);
  void* merged = allocator.allocate(0, 512 * kKiB, 0);
  CHECK(merged == first);
  CHECK(raw.malloc_calls == 1);
  allocator.free(merged);
  allocator.free(third);
  // Everything free again: one block spans the segment, so empty_cache can return it.
  allocator.empty_cache();
  CHECK(raw.free_calls == 1);
  CHECK(raw.bytes_in_use == 0);
  CHECK(allocator.stats(0).reserved_bytes == 0);
}

TEST_CASE("caching allocator: a block freed on one stream is reused only on that stream") {
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 1);
  void* on_one = allocator.allocate(0, 4096, 1);
  allocator.free(on_one);
  void* on_two = allocator.allocate(0, 4096, 2);  // a stream after 1 in the pool's order
  CHECK(!inside(on_two, on_one, 2 * kMiB));
  allocator.free(on_two);
  void* on_zero = allocator.allocate(0, 4096, 0);  // and one before it
  CHECK(!inside(on_zero, on_one, 2 * kMiB));
  CHECK(!inside(on_zero, on_two, 2 * kMiB));
  CHECK(raw.malloc_calls == 3);
  void* on_one_again = allocator.allocate(0, 4096, 1);
  void* on_two_again = allocator.allocate(0, 4096, 2);
  CHECK(on_one_again == on_one);
  CHECK(on_two_again == on_two);
  CHECK(raw.malloc_calls == 3);
  for (void* ptr : {on_zero, on_one_again, on_two_again}) allocator.free(ptr);
}

TEST_CASE("caching allocator: record_stream holds a freed block back until its events complete") {
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 1);
  void* block = allocator.allocate(0, 4096, 0);
  allocator.record_stream(block, 0);  // its own stream: nothing to wait for
  allocator.record_stream(block, 1);
  allocator.record_stream(block, 1);  // recorded once
  allocator.record_stream(block, 2);
  allocator.free(block);
  CHECK(raw.events_recorded == 2);
  CHECK(allocator.stats(0).allocated_bytes == 0);
  void* while_pending = allocator.allocate(0, 4096, 0);
  CHECK(while_pending != block);
  allocator.free(while_pending);
  raw.complete_events_on(1);
  void* one_pending = allocator.allocate(0, 4096, 0);
  CHECK(one_pending != block);  // stream 2 still uses it
  allocator.free(one_pending);
  raw.complete_events_on(2);
  void* reused = allocator.allocate(0, 4096, 0);
  CHECK(reused == block);
  CHECK(raw.live_events() == 0);
  CHECK(raw.malloc_calls == 1);
  allocator.free(reused);
}

TEST_CASE("caching allocator: out of memory releases cached segments and retries") {
  FakeRawMemory raw;
  raw.budget = 21 * kMiB;
  CachingAllocator allocator(raw, 1);
  allocator.free(allocator.allocate(0, 1000, 0));  // a cached 2 MiB small segment
  CHECK(allocator.stats(0).reserved_bytes == static_cast<int64_t>(2 * kMiB));
  void* large = allocator.allocate(0, 2 * kMiB, 0);  // needs 20 MiB: 22 MiB would exceed the budget
  CHECK(large != nullptr);
  CHECK(raw.malloc_calls == 3);  // the small segment, the refused one, the retry
  CHECK(raw.free_calls == 1);
  const AllocatorStats stats = allocator.stats(0);
  CHECK(stats.device_frees == 1);
  CHECK(stats.num_alloc_retries == 1);
  CHECK(stats.num_ooms == 0);
  CHECK(stats.reserved_bytes == static_cast<int64_t>(20 * kMiB));
  allocator.free(large);
}

TEST_CASE("caching allocator: out of memory waits for pending events before giving up") {
  FakeRawMemory raw;
  raw.budget = 12 * kMiB;
  CachingAllocator allocator(raw, 1);
  void* block = allocator.allocate(0, 12 * kMiB, 0);  // one unsplit 12 MiB segment
  allocator.record_stream(block, 5);
  allocator.free(block);
  void* again = allocator.allocate(0, 12 * kMiB, 0);  // the device is full: wait for stream 5
  CHECK(again == block);
  CHECK(raw.synchronize_calls == 1);
  CHECK(raw.free_calls == 0);  // reused once its event completed, not returned and taken anew
  CHECK(raw.malloc_calls == 2);
  CHECK(allocator.stats(0).num_alloc_retries == 0);
  CHECK(raw.live_events() == 0);
  allocator.free(again);
}

TEST_CASE("caching allocator: out of memory throws a message with the request and the usage") {
  FakeRawMemory raw;
  raw.budget = 24 * kMiB;
  CachingAllocator allocator(raw, 1);
  void* live = allocator.allocate(0, 512 * kKiB, 0);  // splits a 2 MiB segment
  allocator.free(allocator.allocate(0, 2 * kMiB, 0));  // a cached, unsplit 20 MiB segment
  const std::string message = error_message([&] { allocator.allocate(0, 2 * kGiB, 0); });
  CHECK(message ==
        "[cuda] CUDA out of memory: tried to allocate 2.00 GiB (device 0); 512.00 KiB in use, 1.50 MiB cached");
  for (const char* fragment : {"CUDA out of memory", "tried to allocate", "in use", "cached"})
    CHECK(message.find(fragment) != std::string::npos);
  CHECK(raw.free_calls == 1);  // the unsplit segment went back before the retry
  AllocatorStats stats = allocator.stats(0);
  CHECK(stats.num_ooms == 1);
  CHECK(stats.allocated_bytes == static_cast<int64_t>(512 * kKiB));
  CHECK(stats.reserved_bytes == static_cast<int64_t>(2 * kMiB));
  // A request too large to round fails the same way, without asking the device.
  const int mallocs = raw.malloc_calls;
  CHECK(error_message([&] { allocator.allocate(0, SIZE_MAX, 0); }).find("CUDA out of memory") != std::string::npos);
  CHECK(raw.malloc_calls == mallocs);
  // The allocator still works after the errors.
  raw.budget.reset();
  void* after = allocator.allocate(0, 2 * kMiB, 0);
  CHECK(after != nullptr);
  allocator.free(after);
  allocator.free(live);
}

TEST_CASE("caching allocator: empty_cache returns reserved memory to zero when nothing is live") {
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 1);
  std::vector<void*> blocks;
  for (size_t nbytes : {size_t{100}, 700 * kKiB, 3 * kMiB, 30 * kMiB}) blocks.push_back(allocator.allocate(0, nbytes, 0));
  allocator.record_stream(blocks[2], 3);
  void* kept = allocator.allocate(0, 100, 0);  // shares the small segment with blocks[0]
  for (void* ptr : blocks) allocator.free(ptr);
  allocator.empty_cache();
  // The small segment still holds `kept`; everything else went back, the pending block included.
  CHECK(allocator.stats(0).reserved_bytes == static_cast<int64_t>(2 * kMiB));
  CHECK(raw.synchronize_calls == 1);
  CHECK(raw.live_events() == 0);
  allocator.free(kept);
  allocator.empty_cache();
  CHECK(allocator.stats(0).reserved_bytes == 0);
  CHECK(raw.bytes_in_use == 0);
  CHECK(allocator.stats(0).device_frees == allocator.stats(0).device_mallocs);
}

TEST_CASE("caching allocator: stats count live and reserved bytes and keep the peak until reset") {
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 1);
  void* first = allocator.allocate(0, 1000, 0);
  void* second = allocator.allocate(0, 3 * kMiB, 0);
  AllocatorStats stats = allocator.stats(0);
  CHECK(stats.allocated_bytes == static_cast<int64_t>(1024 + 3 * kMiB));
  CHECK(stats.reserved_bytes == static_cast<int64_t>(22 * kMiB));
  CHECK(stats.device_mallocs == 2);
  CHECK(stats.num_allocs == 2);
  allocator.free(second);
  stats = allocator.stats(0);
  CHECK(stats.allocated_bytes == 1024);
  CHECK(stats.peak_allocated_bytes == static_cast<int64_t>(1024 + 3 * kMiB));
  CHECK(stats.num_frees == 1);
  allocator.reset_peak(0);
  CHECK(allocator.stats(0).peak_allocated_bytes == 1024);
  CHECK(allocator.stats(0).peak_reserved_bytes == static_cast<int64_t>(22 * kMiB));
  void* third = allocator.allocate(0, 2000, 0);
  stats = allocator.stats(0);
  CHECK(stats.peak_allocated_bytes == 1024 + 2048);
  CHECK(stats.cache_hits == 1);
  allocator.free(first);
  allocator.free(third);
  allocator.empty_cache();
  allocator.reset_peak(0);
  CHECK(allocator.stats(0).peak_reserved_bytes == 0);
}

TEST_CASE("caching allocator: devices keep their own pools and stats") {
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 2);
  void* on_zero = allocator.allocate(0, 4096, 0);
  allocator.free(on_zero);
  void* on_one = allocator.allocate(1, 4096, 0);
  CHECK(!inside(on_one, on_zero, 2 * kMiB));
  CHECK(allocator.stats(0).allocated_bytes == 0);
  CHECK(allocator.stats(1).allocated_bytes == 4096);
  CHECK(allocator.stats(1).reserved_bytes == static_cast<int64_t>(2 * kMiB));
  allocator.free(on_one);
  const std::string message = error_message([&] { allocator.allocate(2, 16, 0); });
  CHECK(message.rfind("[cuda] allocate: device 2 is out of range", 0) == 0);
  CHECK(error_message([&] { allocator.stats(-1); }).rfind("[cuda]", 0) == 0);
}

// Note [Capture pools]: what a graph's replays write must never be handed to anyone else.
TEST_CASE("caching allocator: a capture allocates from its own pool, reserved for the graph after it") {
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 1);
  void* shared = allocator.allocate(0, 4096, 7);
  allocator.free(shared);  // cached in the shared pool of stream 7
  const PoolId pool = allocator.begin_capture(0, 7);
  void* scratch = allocator.allocate(0, 4096, 7);
  CHECK(scratch != shared);  // a new segment of the capture's pool, not the shared cache
  CHECK(raw.malloc_calls == 2);
  allocator.free(scratch);
  void* again = allocator.allocate(0, 4096, 7);  // reused inside the capture, as the replay will
  CHECK(again == scratch);
  void* other_stream = allocator.allocate(0, 4096, 8);  // other streams are not captured
  CHECK_FALSE(inside(other_stream, scratch, 2 * kMiB));
  allocator.free(other_stream);
  void* kept = allocator.allocate(0, 3 * kMiB, 7);  // a graph buffer the caller keeps
  allocator.free(again);
  allocator.end_capture(0, 7);
  // After the capture: the shared cache serves stream 7 again, never the pool's blocks.
  void* after = allocator.allocate(0, 4096, 7);
  CHECK(after == shared);
  void* more = allocator.allocate(0, 4096, 7);
  CHECK_FALSE(inside(more, scratch, 2 * kMiB));
  allocator.free(more);
  allocator.free(after);
  allocator.empty_cache();  // the pool's segments stay: the graph may still run
  CHECK(raw.bytes_in_use == 2 * kMiB + 20 * kMiB);
  // The graph is gone: the pool's cached blocks join the shared cache, its live one when freed.
  allocator.release_pool(0, pool);
  CHECK(allocator.allocate(0, 4096, 7) == scratch);
  allocator.free(scratch);
  allocator.free(kept);
  allocator.empty_cache();
  CHECK(raw.bytes_in_use == 0);
  CHECK(allocator.stats(0).reserved_bytes == 0);
}

TEST_CASE("caching allocator: during a capture nothing waits for the device or frees memory") {
  FakeRawMemory raw;
  raw.budget = 4 * kMiB;
  CachingAllocator allocator(raw, 1);
  void* before = allocator.allocate(0, 4096, 1);
  allocator.record_stream(before, 2);
  allocator.free(before);  // pending on stream 2's event
  raw.complete_events_on(2);
  const int queries = raw.query_calls;
  const PoolId pool = allocator.begin_capture(0, 1);
  void* block = allocator.allocate(0, 4096, 1);
  CHECK(raw.query_calls == queries);  // the completed event is not even polled
  allocator.record_stream(block, 5);
  const int recorded = raw.events_recorded;
  allocator.free(block);
  CHECK(raw.events_recorded == recorded);  // held until the capture ends
  void* second = allocator.allocate(0, 4096, 1);
  CHECK(second != block);
  const std::string message = error_message([&] { allocator.allocate(0, 3 * kMiB, 1); });
  CHECK(message.find("CUDA out of memory") != std::string::npos);
  CHECK(message.find("capture is underway") != std::string::npos);
  CHECK(raw.synchronize_calls == 0);
  CHECK(raw.free_calls == 0);
  CHECK(error_message([&] { allocator.empty_cache(); }).find("capture is underway") != std::string::npos);
  allocator.end_capture(0, 1);
  CHECK(raw.events_recorded == recorded + 1);  // the held block's event, recorded now
  raw.complete_events_on(5);
  allocator.release_pool(0, pool);
  allocator.empty_cache();
  CHECK(allocator.stats(0).allocated_bytes == static_cast<int64_t>(4096));  // the second block, still live
  CHECK(raw.bytes_in_use == 2 * kMiB);  // its segment; the shared one went back
  allocator.free(second);
}

TEST_CASE("caching allocator: capture calls out of order throw") {
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 1);
  CHECK(error_message([&] { allocator.end_capture(0, 3); }).rfind("[cuda] end_capture", 0) == 0);
  const PoolId pool = allocator.begin_capture(0, 3);
  CHECK(error_message([&] { allocator.begin_capture(0, 3); }).find("already capturing") != std::string::npos);
  CHECK(error_message([&] { allocator.release_pool(0, pool); }).find("still capturing") != std::string::npos);
  allocator.end_capture(0, 3);
  allocator.release_pool(0, pool);
  CHECK(error_message([&] { allocator.release_pool(0, pool); }).find("no capture pool") != std::string::npos);
  CHECK(error_message([&] { allocator.begin_capture(1, 3); }).find("out of range") != std::string::npos);
  CHECK(allocator.begin_capture(0, 3) != pool);  // a new pool for each capture
}

TEST_CASE("caching allocator: freeing an unknown pointer throws and nullptr is a no-op") {
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 1);
  allocator.free(nullptr);
  int not_allocated = 0;
  CHECK(error_message([&] { allocator.free(&not_allocated); }).rfind("[cuda] free of pointer", 0) == 0);
  void* block = allocator.allocate(0, 100, 0);
  void* inner = as_bytes(block) + 8;
  CHECK(error_message([&] { allocator.free(inner); }).find("did not allocate") != std::string::npos);
  CHECK(error_message([&] { allocator.record_stream(&not_allocated, 1); }).rfind("[cuda] record_stream", 0) == 0);
  allocator.free(block);
  CHECK(error_message([&] { allocator.free(block); }).find("already freed") != std::string::npos);
  CHECK(error_message([&] { allocator.allocation_size(block); }).rfind("[cuda] allocation_size", 0) == 0);
  CHECK(allocator.stats(0).num_frees == 1);
}

TEST_CASE("caching allocator: the destructor returns cached segments to the device") {
  FakeRawMemory raw;
  {
    CachingAllocator allocator(raw, 2);
    allocator.free(allocator.allocate(0, 100, 0));
    allocator.free(allocator.allocate(1, 5 * kMiB, 3));
    void* pending = allocator.allocate(0, 40 * kMiB, 0);
    allocator.record_stream(pending, 4);
    allocator.free(pending);
  }
  CHECK(raw.malloc_calls == 3);
  CHECK(raw.free_calls == 3);
  CHECK(raw.bytes_in_use == 0);
  CHECK(raw.live_events() == 0);
}

TEST_CASE("caching allocator: the destructor leaves segments that still hold live blocks alone") {
  FakeRawMemory raw;  // frees what the allocator leaves behind when the test ends
  {
    CachingAllocator allocator(raw, 1);
    allocator.allocate(0, 100, 0);  // never freed: the caller's bug
    allocator.free(allocator.allocate(0, 200, 0));
    allocator.free(allocator.allocate(0, 12 * kMiB, 0));
  }
  CHECK(raw.free_calls == 1);  // the 12 MiB segment; the small one is still in use
  CHECK(raw.bytes_in_use == 2 * kMiB);
}

TEST_CASE("caching allocator: live blocks never overlap and keep what was written to them") {
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 1);
  std::mt19937 random(1234);
  std::uniform_int_distribution<size_t> small_sizes(1, kMiB);
  std::uniform_int_distribution<size_t> large_sizes(kMiB + 1, 24 * kMiB);
  std::vector<std::pair<char*, size_t>> live;
  auto fill = [](char* ptr, size_t bytes, size_t index) { std::memset(ptr, static_cast<int>(index % 251), bytes); };
  for (int round = 0; round < 300; ++round) {
    if (!live.empty() && random() % 3 == 0) {
      const size_t victim = random() % live.size();
      allocator.free(live[victim].first);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
      continue;
    }
    const size_t nbytes = random() % 8 == 0 ? large_sizes(random) : small_sizes(random);
    live.emplace_back(as_bytes(allocator.allocate(0, nbytes, random() % 2)), nbytes);
  }
  for (size_t index = 0; index < live.size(); ++index) fill(live[index].first, live[index].second, index);
  for (size_t index = 0; index < live.size(); ++index) {
    const auto [ptr, bytes] = live[index];
    const bool intact = std::all_of(ptr, ptr + bytes, [&](char byte) { return byte == static_cast<char>(index % 251); });
    CHECK_MESSAGE(intact, "block ", index, " was overwritten");
  }
  std::vector<std::pair<char*, size_t>> by_address = live;
  std::sort(by_address.begin(), by_address.end());
  for (size_t index = 1; index < by_address.size(); ++index)
    CHECK(by_address[index - 1].first + allocator.allocation_size(by_address[index - 1].first) <= by_address[index].first);
  for (auto [ptr, bytes] : live) allocator.free(ptr);
  CHECK(allocator.stats(0).allocated_bytes == 0);
}

TEST_CASE("caching allocator: four threads allocating and freeing leave consistent stats") {
  FakeRawMemory raw;
  CachingAllocator allocator(raw, 1);
  constexpr int kThreads = 4;
  constexpr int kIterations = 1000;
  std::vector<std::thread> threads;
  std::vector<int> corrupted(kThreads, 0);  // blocks another thread wrote into while held
  for (int thread = 0; thread < kThreads; ++thread) {
    threads.emplace_back([&, thread] {
      std::mt19937 random(static_cast<unsigned>(thread));
      const char pattern = static_cast<char>(thread + 1);
      auto intact = [&](const std::pair<char*, size_t>& block) {
        for (size_t offset = 0; offset < block.second; offset += 4096)
          if (block.first[offset] != pattern) return false;
        return block.first[block.second - 1] == pattern;
      };
      std::vector<std::pair<char*, size_t>> held;
      for (int iteration = 0; iteration < kIterations; ++iteration) {
        const size_t nbytes = iteration % 50 == 0 ? 3 * kMiB : 1 + random() % (64 * kKiB);
        auto* ptr = as_bytes(allocator.allocate(0, nbytes, thread % 2));  // threads share streams
        std::memset(ptr, pattern, nbytes);
        if (iteration % 3 == 0) allocator.record_stream(ptr, 10 + thread);
        held.emplace_back(ptr, nbytes);
        if (held.size() > 4) {
          if (!intact(held.front())) ++corrupted[thread];
          allocator.free(held.front().first);
          held.erase(held.begin());
        }
        if (iteration % 100 == 0) raw.complete_events_on(10 + thread);
      }
      for (auto& block : held) {
        if (!intact(block)) ++corrupted[thread];
        allocator.free(block.first);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int count : corrupted) CHECK(count == 0);
  AllocatorStats stats = allocator.stats(0);
  CHECK(stats.num_allocs == kThreads * kIterations);
  CHECK(stats.num_frees == kThreads * kIterations);
  CHECK(stats.allocated_bytes == 0);
  CHECK(stats.reserved_bytes == static_cast<int64_t>(raw.bytes_in_use));
  CHECK(stats.device_mallocs == raw.malloc_calls);
  allocator.empty_cache();
  CHECK(allocator.stats(0).reserved_bytes == 0);
  CHECK(raw.bytes_in_use == 0);
  CHECK(raw.live_events() == 0);
}

TEST_CASE("caching allocator: sizes in messages read as bytes, KiB, MiB or GiB") {
  CHECK(format_bytes(0) == "0 bytes");
  CHECK(format_bytes(512) == "512 bytes");
  CHECK(format_bytes(1536) == "1.50 KiB");
  CHECK(format_bytes(256 * kMiB) == "256.00 MiB");
  CHECK(format_bytes(3 * kGiB / 2) == "1.50 GiB");
  CHECK(format_bytes(2 * kGiB) == "2.00 GiB");
}
