// Tests for tensor/parallel.cpp: splitting, coverage, nesting, exceptions, thread counts.
#include <doctest/doctest.h>

#include <strata/tensor/errors.h>
#include <strata/tensor/parallel.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

using namespace strata;

namespace {

// Runs the test body with `count` OpenMP threads and restores the previous count.
struct ThreadCountScope {
  int previous = get_num_threads();
  explicit ThreadCountScope(int count) { set_num_threads(count); }
  ~ThreadCountScope() { set_num_threads(previous); }
};

using Chunks = std::vector<std::pair<int64_t, int64_t>>;

Chunks chunks_of(int64_t begin, int64_t end, int64_t grain) {
  Chunks chunks;
  std::mutex mutex;
  parallel_for(begin, end, grain, [&](int64_t chunk_begin, int64_t chunk_end) {
    std::lock_guard<std::mutex> lock(mutex);
    chunks.emplace_back(chunk_begin, chunk_end);
  });
  return chunks;
}

}  // namespace

TEST_CASE("parallel: a range of at most one grain runs inline in one call") {
  ThreadCountScope threads(4);
  std::thread::id caller = std::this_thread::get_id();
  int calls = 0;
  parallel_for(10, 110, 100, [&](int64_t begin, int64_t end) {
    ++calls;
    CHECK(begin == 10);
    CHECK(end == 110);
    CHECK(std::this_thread::get_id() == caller);
    CHECK_FALSE(in_parallel_region());
  });
  CHECK(calls == 1);
  CHECK(chunks_of(0, 150, 100).size() == 1);  // less than two grains: one chunk of at least a grain
}

TEST_CASE("parallel: empty and reversed ranges call nothing") {
  int calls = 0;
  parallel_for(5, 5, 1, [&](int64_t, int64_t) { ++calls; });
  parallel_for(7, 3, 1, [&](int64_t, int64_t) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("parallel: a large range is split into chunks of at least a grain covering it once") {
  ThreadCountScope threads(4);
  const int64_t begin = 3, end = 100003, grain = 1000;
  std::vector<std::atomic<int>> hits(static_cast<size_t>(end));
  std::atomic<int> chunks{0};
  std::atomic<bool> saw_region{false};
  parallel_for(begin, end, grain, [&](int64_t chunk_begin, int64_t chunk_end) {
    ++chunks;
    CHECK(chunk_end - chunk_begin >= grain);
    if (in_parallel_region()) saw_region = true;
    for (int64_t i = chunk_begin; i < chunk_end; ++i) ++hits[static_cast<size_t>(i)];
  });
  CHECK(chunks.load() > 1);
  CHECK(chunks.load() <= 4);
  CHECK(saw_region.load());
  int wrong = 0;
  for (int64_t i = 0; i < end; ++i) wrong += hits[static_cast<size_t>(i)].load() != (i >= begin ? 1 : 0);
  CHECK(wrong == 0);
  CHECK_FALSE(in_parallel_region());
}

TEST_CASE("parallel: chunk count is bounded by the grains in the range") {
  ThreadCountScope threads(8);
  Chunks chunks = chunks_of(0, 35, 10);  // three grains: at most three chunks, each >= 10
  CHECK(chunks.size() == 3);
  for (auto [begin, end] : chunks) CHECK(end - begin >= 10);
}

TEST_CASE("parallel: a grain of zero still splits and covers the range") {
  ThreadCountScope threads(2);
  std::atomic<int64_t> total{0};
  parallel_for(0, 1000, 0, [&](int64_t begin, int64_t end) { total += end - begin; });
  CHECK(total.load() == 1000);
}

TEST_CASE("parallel: nested parallel_for runs inline") {
  ThreadCountScope threads(4);
  std::atomic<int> inner_calls{0};
  parallel_for(0, 4, 1, [&](int64_t, int64_t) {
    parallel_for(0, 1000, 1, [&](int64_t begin, int64_t end) {
      ++inner_calls;
      CHECK(begin == 0);
      CHECK(end == 1000);
    });
  });
  CHECK(inner_calls.load() == static_cast<int>(chunks_of(0, 4, 1).size()));
}

TEST_CASE("parallel: an exception on any thread reaches the caller") {
  ThreadCountScope threads(4);
  CHECK_THROWS_WITH_AS(parallel_for(0, 4000, 100,
                                    [](int64_t begin, int64_t end) {
                                      if (begin <= 3999 && 3999 < end) throw ValueError("[kernel] bad element 3999");
                                    }),
                       "[kernel] bad element 3999", ValueError);
  CHECK_THROWS_AS(parallel_for(0, 4000, 100, [](int64_t, int64_t) { throw std::runtime_error("everywhere"); }),
                  std::runtime_error);
  CHECK_THROWS_AS(parallel_for(0, 10, 100, [](int64_t, int64_t) { throw IndexError("[kernel] inline"); }),
                  IndexError);
  CHECK_FALSE(in_parallel_region());
}

TEST_CASE("parallel: thread counts") {
  int original = get_num_threads();
  CHECK(original >= 1);
  {
    ThreadCountScope threads(3);
    CHECK(get_num_threads() == 3);
    CHECK(chunks_of(0, 1'000'000, kDefaultGrainSize).size() == 3);
  }
  CHECK(get_num_threads() == original);
  {
    ThreadCountScope threads(1);
    CHECK(chunks_of(0, 1'000'000, 1).size() == 1);  // one thread: never split
  }
  CHECK_THROWS_WITH_AS(set_num_threads(0), "[set_num_threads] expected a positive number of threads, got 0",
                       ValueError);
  CHECK_THROWS_AS(parallel_for(0, 10, -1, [](int64_t, int64_t) {}), ValueError);
}

TEST_CASE("parallel: set_num_threads is process-wide") {
  ThreadCountScope threads(1);
  int seen_count = 0;
  size_t seen_chunks = 0;
  std::thread worker([&] {
    seen_count = get_num_threads();
    seen_chunks = chunks_of(0, 1'000'000, 1).size();
  });
  worker.join();
  CHECK(seen_count == 1);
  CHECK(seen_chunks == 1);
}
