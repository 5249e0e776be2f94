// Tests for tensor/cuda.cpp: the cuda:: API on the fake backend, and without any backend.
#include <doctest/doctest.h>

#include <strata/tensor/cuda.h>
#include <strata/tensor/errors.h>
#include <strata/tensor/storage.h>

#include "fake_cuda.h"

using namespace strata;
using strata::testing::FakeCudaBackend;

TEST_CASE("cuda: without a backend, queries answer nothing and the rest throw Error") {
  strata::testing::NoCudaBackend no_backend;  // as in a build without CUDA
  CHECK_FALSE(cuda::is_available());
  CHECK(cuda::device_count() == 0);
  cuda::synchronize();
  cuda::synchronize(1);
  CHECK_THROWS_WITH_AS(cuda::current_device(), "[cuda] no CUDA backend is loaded (cuda.current_device needs one)",
                       Error);
  CHECK_THROWS_AS(cuda::set_device(0), Error);
  CHECK_THROWS_AS(cuda::Stream::create(), Error);
  CHECK_THROWS_AS(cuda::current_stream(), Error);
  CHECK_THROWS_AS(cuda::empty_cache(), Error);
  CHECK_THROWS_WITH_AS(cuda::memory_stats(), "[cuda] no CUDA backend is loaded (cuda.memory_stats needs one)", Error);
}

TEST_CASE("cuda: device count, current device and set_device ask the backend") {
  FakeCudaBackend backend;
  CHECK(cuda::is_available());
  CHECK(cuda::device_count() == 2);
  CHECK(cuda::current_device() == 0);
  cuda::set_device(1);
  CHECK(cuda::current_device() == 1);
  CHECK(backend.hooks.current_device() == 1);
  CHECK_THROWS_WITH_AS(cuda::set_device(2), "[cuda.set_device] cuda:2 is out of range: there are 2 CUDA devices",
                       IndexError);
  CHECK_THROWS_AS(cuda::set_device(-2), ValueError);
  CHECK(cuda::current_device() == 1);
}

TEST_CASE("cuda: synchronize waits for the current device or the one named") {
  FakeCudaBackend backend;
  cuda::synchronize();
  CHECK(backend.hooks.device_synchronizations[0] == 1);
  cuda::set_device(1);
  cuda::synchronize();
  cuda::synchronize(0);
  CHECK(backend.hooks.device_synchronizations[0] == 2);
  CHECK(backend.hooks.device_synchronizations[1] == 1);
  CHECK_THROWS_AS(cuda::synchronize(2), IndexError);
}

TEST_CASE("cuda: memory_stats keeps books per device; empty_cache returns cached memory") {
  FakeCudaBackend backend;
  CHECK(cuda::memory_stats().allocated_bytes == 0);
  {
    auto first = make_storage(1000, Device(kCUDA, 1));
    auto second = make_storage(24, Device(kCUDA, 1));
    const MemoryStats stats = cuda::memory_stats(1);
    CHECK(stats.allocated_bytes == 1024);
    CHECK(stats.reserved_bytes == 1024);
    CHECK(stats.peak_allocated_bytes == 1024);
    CHECK(stats.device_mallocs == 2);
    CHECK(cuda::memory_stats(0).allocated_bytes == 0);  // device 0 untouched
  }
  MemoryStats stats = cuda::memory_stats(1);
  CHECK(stats.allocated_bytes == 0);
  CHECK(stats.reserved_bytes == 1024);  // cached, not given back
  CHECK(stats.peak_allocated_bytes == 1024);
  {
    auto reused = make_storage(1000, Device(kCUDA, 1));
    CHECK(cuda::memory_stats(1).device_mallocs == 2);  // served from the cache
  }
  cuda::empty_cache();
  stats = cuda::memory_stats(1);
  CHECK(stats.reserved_bytes == 0);
  CHECK(backend.hooks.memory.frees == 2);
}
