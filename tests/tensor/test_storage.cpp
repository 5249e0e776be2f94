// Tests for tensor/storage.cpp: the CPU size-class allocator, storages on every device, and
// external memory.
#include <doctest/doctest.h>

#include <strata/tensor/errors.h>
#include <strata/tensor/storage.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fake_cuda.h"

using namespace strata;

namespace {

bool is_aligned(const void* data, uintptr_t alignment) { return reinterpret_cast<uintptr_t>(data) % alignment == 0; }

}  // namespace

TEST_CASE("storage: CPU blocks are 64-byte aligned and writable for every size") {
  for (size_t nbytes : {size_t{1}, size_t{7}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}, size_t{4096},
                        size_t{100000}, size_t{(4u << 20) - 1}, size_t{4u << 20}, size_t{(4u << 20) + 1},
                        size_t{9000000}}) {
    INFO("nbytes = ", nbytes);
    auto storage = make_storage(nbytes, Device(kCPU));
    REQUIRE(storage->data() != nullptr);
    CHECK(is_aligned(storage->data(), 64));
    CHECK(storage->nbytes() == nbytes);
    CHECK(storage->device() == Device(kCPU));
    std::memset(storage->data(), 0xab, nbytes);  // ASan reports any overrun
  }
}

TEST_CASE("storage: live bytes go up while a block is held and back down after") {
  cpu_allocator_empty_cache();  // no cached large block that 5'000'000 bytes could reuse
  int64_t before = cpu_live_bytes();
  {
    auto small = make_storage(100, Device(kCPU));
    CHECK(cpu_live_bytes() == before + 128);  // rounded to its size class
    auto large = make_storage(5'000'000, Device(kCPU));
    CHECK(cpu_live_bytes() == before + 128 + 5'000'000);  // large blocks round to 64 bytes only
    auto copy = small;  // sharing a storage allocates nothing
    CHECK(cpu_live_bytes() == before + 128 + 5'000'000);
  }
  CHECK(cpu_live_bytes() == before);  // cached blocks do not count
}

// Note [Counting live bytes]: each thread counts its own allocations and frees; the sum over
// threads, exited ones included, is what cpu_live_bytes() reports.
TEST_CASE("storage: live bytes stay exact across threads that allocate, free and exit") {
  const int64_t before = cpu_live_bytes();
  intrusive_ptr<StorageImpl> made_elsewhere;
  std::thread maker([&] {
    made_elsewhere = make_storage(1000, Device(kCPU));  // 1024 after rounding
    auto freed_here = make_storage(100, Device(kCPU));
  });
  maker.join();  // the maker's count (+1024) outlives the thread
  CHECK(cpu_live_bytes() == before + 1024);
  auto made_here = make_storage(3000, Device(kCPU));  // 4096
  std::thread freer([&] {
    made_here.reset();  // counted down on a thread that never allocated it
    CHECK(cpu_live_bytes() == before + 1024);
  });
  freer.join();
  CHECK(cpu_live_bytes() == before + 1024);
  made_elsewhere.reset();  // allocated on an exited thread, freed here
  CHECK(cpu_live_bytes() == before);
}

TEST_CASE("storage: zero-byte allocations get distinct valid blocks") {
  int64_t before = cpu_live_bytes();
  auto first = make_storage(0, Device(kCPU));
  auto second = make_storage(0, Device(kCPU));
  CHECK(first->nbytes() == 0);
  CHECK(first->data() != nullptr);
  CHECK(first->data() != second->data());
  CHECK(is_aligned(first->data(), 64));
  CHECK(cpu_live_bytes() > before);
  first.reset();
  second.reset();
  CHECK(cpu_live_bytes() == before);
}

TEST_CASE("storage: a freed block is reused for the same size class on the same thread") {
  cpu_allocator_empty_cache();
  void* first_data = nullptr;
  {
    auto first = make_storage(3000, Device(kCPU));
    first_data = first->data();
  }
  auto same_class = make_storage(4000, Device(kCPU));  // 3000 and 4000 both round to 4096
  CHECK(same_class->data() == first_data);
  auto other_class = make_storage(100, Device(kCPU));
  CHECK(other_class->data() != first_data);
  cpu_allocator_empty_cache();
}

TEST_CASE("storage: freed large blocks are cached and reused for requests they fit") {
  cpu_allocator_empty_cache();
  CHECK(cpu_cached_bytes() == 0);
  const int64_t live = cpu_live_bytes();
  void* first_data = nullptr;
  {
    auto first = make_storage(64u << 20, Device(kCPU));
    first_data = first->data();
    CHECK(cpu_cached_bytes() == 0);
  }
  CHECK(cpu_cached_bytes() == int64_t{64} << 20);
  CHECK(cpu_live_bytes() == live);  // cached bytes are not live
  {
    auto too_small_a_request = make_storage(32u << 20, Device(kCPU));  // would waste half: not reused
    CHECK(too_small_a_request->data() != first_data);
    CHECK(cpu_cached_bytes() == int64_t{64} << 20);
  }
  cpu_allocator_empty_cache();  // drop the 32 MiB block too
  {
    auto first = make_storage(64u << 20, Device(kCPU));
    first_data = first->data();
  }
  auto slightly_smaller = make_storage((64u << 20) - 1'000'000, Device(kCPU));  // within 1/8: reused
  CHECK(slightly_smaller->data() == first_data);
  CHECK(cpu_cached_bytes() == 0);
  CHECK(cpu_live_bytes() == live + (int64_t{64} << 20));  // accounted at the block's true size
  std::memset(slightly_smaller->data(), 1, slightly_smaller->nbytes());
  slightly_smaller.reset();
  CHECK(cpu_live_bytes() == live);
  cpu_allocator_empty_cache();
  CHECK(cpu_cached_bytes() == 0);
}

// Note [Spilled class blocks]: the 4 MiB class list holds two blocks; the others go to the
// large-block cache, and later requests of that class take them back from there.
TEST_CASE("storage: class blocks a full list cannot keep are cached as large blocks and reused") {
  cpu_allocator_empty_cache();
  constexpr size_t kBlock = size_t{4} << 20;  // the largest class
  constexpr int kBlocks = 6;
  const int64_t live = cpu_live_bytes();
  std::vector<void*> first;
  {
    std::vector<intrusive_ptr<StorageImpl>> held;
    for (int i = 0; i < kBlocks; ++i) held.push_back(make_storage(kBlock, Device(kCPU)));
    for (const auto& storage : held) first.push_back(storage->data());
  }
  CHECK(cpu_cached_bytes() == static_cast<int64_t>((kBlocks - 2) * kBlock));  // two stay in the class list
  CHECK(cpu_live_bytes() == live);
  {
    std::vector<intrusive_ptr<StorageImpl>> again;
    for (int i = 0; i < kBlocks; ++i) again.push_back(make_storage(kBlock - 100, Device(kCPU)));
    for (const auto& storage : again) CHECK(std::find(first.begin(), first.end(), storage->data()) != first.end());
    CHECK(cpu_cached_bytes() == 0);
    CHECK(cpu_live_bytes() == live + static_cast<int64_t>(kBlocks * kBlock));
  }
  CHECK(cpu_live_bytes() == live);
  {
    auto small = make_storage(size_t{64} << 10, Device(kCPU));  // below the spill size: never in the large cache
  }
  CHECK(cpu_cached_bytes() == static_cast<int64_t>((kBlocks - 2) * kBlock));
  cpu_allocator_empty_cache();
  CHECK(cpu_cached_bytes() == 0);
}

TEST_CASE("storage: the large-block cache keeps to its limit, dropping the oldest blocks") {
  cpu_allocator_empty_cache();
  const size_t default_limit = cpu_allocator_cache_limit();
  CHECK(default_limit <= size_t{1} << 30);
  set_cpu_allocator_cache_limit(size_t{20} << 20);
  {
    auto a = make_storage(8u << 20, Device(kCPU));
    auto b = make_storage(9u << 20, Device(kCPU));
    auto c = make_storage(10u << 20, Device(kCPU));
    a.reset();
    b.reset();
    CHECK(cpu_cached_bytes() == int64_t{17} << 20);
    c.reset();  // 27 MiB > 20: the oldest (a) goes
    CHECK(cpu_cached_bytes() == int64_t{19} << 20);
    auto huge = make_storage(30u << 20, Device(kCPU));
    huge.reset();  // larger than the limit on its own: freed, the cache unchanged
    CHECK(cpu_cached_bytes() == int64_t{19} << 20);
    auto b_again = make_storage(9u << 20, Device(kCPU));  // b is still there, a is not
    CHECK(cpu_cached_bytes() == int64_t{10} << 20);
    auto a_again = make_storage(8u << 20, Device(kCPU));
    CHECK(cpu_cached_bytes() == int64_t{10} << 20);
  }
  set_cpu_allocator_cache_limit(0);  // caching off: everything cached is freed
  CHECK(cpu_cached_bytes() == 0);
  {
    auto d = make_storage(8u << 20, Device(kCPU));
  }
  CHECK(cpu_cached_bytes() == 0);
  set_cpu_allocator_cache_limit(default_limit);
  CHECK(cpu_allocator_cache_limit() == default_limit);
}

TEST_CASE("storage: large blocks freed on other threads go to the one cache") {
  cpu_allocator_empty_cache();
  const int64_t live = cpu_live_bytes();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 20; ++i) {
        auto block = make_storage(static_cast<size_t>((5 + (i + t) % 3)) << 20, Device(kCPU));
        std::memset(block->data(), t, 4096);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(cpu_live_bytes() == live);
  CHECK(cpu_cached_bytes() > 0);
  CHECK(cpu_cached_bytes() <= int64_t{4} * (18 << 20));  // at most one block of each size per thread
  cpu_allocator_empty_cache();
  CHECK(cpu_cached_bytes() == 0);
}

TEST_CASE("storage: the allocator interface hands out blocks directly") {
  int64_t before = cpu_live_bytes();
  DataPtr block = cpu_allocator()->allocate(256);
  REQUIRE(block.data != nullptr);
  REQUIRE((block.deleter != nullptr));
  CHECK(is_aligned(block.data, 64));
  CHECK(cpu_live_bytes() == before + 256);
  block.deleter(block.data, block.context, 256);
  CHECK(cpu_live_bytes() == before);
}

TEST_CASE("storage: blocks freed on another thread are accounted and recycled there") {
  int64_t before = cpu_live_bytes();
  std::vector<intrusive_ptr<StorageImpl>> storages;
  for (int i = 0; i < 100; ++i) storages.push_back(make_storage(static_cast<size_t>(64 * (i + 1)), Device(kCPU)));
  CHECK(cpu_live_bytes() > before);
  std::thread freeing_thread([&] {
    storages.clear();  // freed here: they join this thread's cache, which dies with the thread
    auto reused = make_storage(64, Device(kCPU));
    CHECK(reused->data() != nullptr);
  });
  freeing_thread.join();
  CHECK(cpu_live_bytes() == before);
}

TEST_CASE("storage: many threads allocating and freeing concurrently") {
  int64_t before = cpu_live_bytes();
  std::vector<intrusive_ptr<StorageImpl>> handed_over(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &handed_over] {
      std::vector<intrusive_ptr<StorageImpl>> held;
      for (int i = 0; i < 2000; ++i) {
        held.push_back(make_storage(static_cast<size_t>((i * 37 + t * 101) % 20000), Device(kCPU)));
        std::memset(held.back()->data(), t, held.back()->nbytes());
        if (held.size() > 16) held.erase(held.begin());
      }
      handed_over[static_cast<size_t>(t)] = make_storage(1024, Device(kCPU));  // freed by the main thread
    });
  }
  for (auto& thread : threads) thread.join();
  handed_over.clear();
  CHECK(cpu_live_bytes() == before);
}

TEST_CASE("storage: empty_cache is safe to call any time") {
  cpu_allocator_empty_cache();
  auto storage = make_storage(512, Device(kCPU));
  cpu_allocator_empty_cache();
  storage.reset();
  cpu_allocator_empty_cache();
  cpu_allocator_empty_cache();
}

TEST_CASE("storage: Meta storages record their size and allocate nothing") {
  int64_t before = cpu_live_bytes();
  auto storage = make_storage(1 << 30, Device(kMeta));
  CHECK(storage->data() == nullptr);
  CHECK(storage->nbytes() == size_t{1} << 30);
  CHECK(storage->device().is_meta());
  CHECK(cpu_live_bytes() == before);
}

TEST_CASE("storage: CUDA without a backend throws Error naming it") {
  strata::testing::NoCudaBackend no_backend;  // as in a build without CUDA
  CHECK_THROWS_WITH_AS(make_storage(16, Device(kCUDA)), "[cuda] no CUDA backend is loaded (empty needs one)", Error);
  CHECK_THROWS_AS(get_allocator(Device(kCUDA, 1)), Error);
}

TEST_CASE("storage: each device index has its own allocator, and DataPtrs name their device") {
  strata::testing::FakeCudaBackend backend;
  Allocator* first = get_allocator(Device(kCUDA, 0));
  Allocator* second = get_allocator(Device(kCUDA, 1));
  CHECK(first != second);
  CHECK(first == backend.hooks.allocator(0));
  {
    auto storage = make_storage(32, Device(kCUDA, 1));
    CHECK(storage->device() == Device(kCUDA, 1));
    CHECK(storage->nbytes() == 32);
    CHECK(backend.hooks.memory.mallocs == 1);
    CHECK(backend.hooks.memory_stats(1).allocated_bytes == 32);
    CHECK(backend.hooks.memory_stats(0).allocated_bytes == 0);
    DataPtr block = first->allocate(8);
    CHECK(block.device == Device(kCUDA, 0));
    block.deleter(block.data, block.context, 8);
  }
  CHECK(backend.hooks.memory_stats(1).allocated_bytes == 0);
  CHECK_THROWS_AS(make_storage(16, Device(kCUDA, 2)), IndexError);
}

TEST_CASE("storage: CPU and Meta allocators and DataPtrs") {
  CHECK(get_allocator(Device(kCPU)) == cpu_allocator());
  CHECK_THROWS_AS(get_allocator(Device(kMeta)), ValueError);
  DataPtr block = cpu_allocator()->allocate(8);
  CHECK(block.device == Device(kCPU));
  block.deleter(block.data, block.context, 8);
  CHECK(make_storage(4, Device(kMeta))->device() == Device(kMeta));
  CHECK(make_intrusive<StorageImpl>(nullptr, 0, Device(kCUDA, 1), nullptr)->device() == Device(kCUDA, 1));
}

TEST_CASE("storage: external memory runs on_release once, and not at all without one") {
  float buffer[4] = {1, 2, 3, 4};
  int releases = 0;
  void* released = nullptr;
  {
    auto storage = make_intrusive<StorageImpl>(buffer, sizeof(buffer), Device(kCPU), [&](void* data) {
      ++releases;
      released = data;
    });
    CHECK(storage->data() == buffer);
    CHECK(storage->nbytes() == sizeof(buffer));
    auto shared = storage;
    storage.reset();
    CHECK(releases == 0);
  }
  CHECK(releases == 1);
  CHECK(released == buffer);
  { auto unowned = make_intrusive<StorageImpl>(buffer, sizeof(buffer), Device(kCPU), nullptr); }
  CHECK(buffer[0] == 1);
}

TEST_CASE("storage: the version counter starts at zero and counts bumps") {
  auto storage = make_storage(8, Device(kCPU));
  CHECK(storage->version() == 0);
  storage->bump_version();
  storage->bump_version();
  CHECK(storage->version() == 2);
}
