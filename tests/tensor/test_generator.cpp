// Tests for tensor/generator.cpp: one default generator per device, manual_seed reaching every
// one of them, and the Philox (seed, offset) bookkeeping.
#include <doctest/doctest.h>

#include <strata/tensor/errors.h>
#include <strata/tensor/generator.h>
#include <strata/tensor/random.h>

#include "fake_cuda.h"

using namespace strata;
using strata::testing::FakeCudaBackend;

TEST_CASE("Generator: the CPU default generator is the one CPU kernels draw from") {
  Generator& generator = default_generator(Device(kCPU));
  CHECK(&generator == &detail::default_cpu_generator());
  CHECK(generator.device() == Device(kCPU));
  CHECK(&detail::cpu_generator(generator) == &detail::default_cpu_generator());
  CHECK_THROWS_AS(default_generator(Device(kMeta)), ValueError);
}

TEST_CASE("Generator: each device of a backend has its own") {
  FakeCudaBackend backend;
  Generator& first = default_generator(Device(kCUDA, 0));
  Generator& second = default_generator(Device(kCUDA, 1));
  CHECK(&first != &second);
  CHECK(first.device() == Device(kCUDA, 0));
  CHECK(second.device() == Device(kCUDA, 1));
  CHECK_THROWS_AS(default_generator(Device(kCUDA, 2)), IndexError);
  CHECK_THROWS_AS(detail::cpu_generator(first), Error);  // a CUDA generator is no CPU generator
}

TEST_CASE("Generator: manual_seed seeds the CPU and every device") {
  FakeCudaBackend backend;
  auto& philox = static_cast<PhiloxGenerator&>(default_generator(Device(kCUDA, 1)));
  {
    std::lock_guard lock(philox.mutex);
    philox.reserve_offset(100);
  }
  CHECK(philox.offset() == 100);
  manual_seed(1234);
  for (int device = 0; device < 2; ++device) CHECK(default_generator(Device(kCUDA, device)).seed() == 1234);
  CHECK(philox.offset() == 0);
  CHECK(default_generator(Device(kCPU)).seed() == 1234);
}

TEST_CASE("Generator: without a backend, CUDA generators throw and manual_seed seeds the CPU") {
  strata::testing::NoCudaBackend no_backend;  // as in a build without CUDA
  CHECK_THROWS_WITH_AS(default_generator(Device(kCUDA)),
                       "[cuda] no CUDA backend is loaded (default_generator needs one)", Error);
  manual_seed(3);
  CHECK(default_generator(Device(kCPU)).seed() == 3);
}

TEST_CASE("PhiloxGenerator: offsets advance in multiples of four from the seed's start") {
  PhiloxGenerator generator(Device(kCUDA, 0), 42);
  CHECK(generator.seed() == 42);
  std::lock_guard lock(generator.mutex);
  CHECK(generator.reserve_offset(10) == std::pair<uint64_t, uint64_t>(42, 0));
  CHECK(generator.reserve_offset(4) == std::pair<uint64_t, uint64_t>(42, 12));
  CHECK(generator.reserve_offset(1) == std::pair<uint64_t, uint64_t>(42, 16));
}

TEST_CASE("PhiloxGenerator: the state round-trips and restarts the sequence") {
  PhiloxGenerator generator(Device(kCUDA, 0), 7);
  {
    std::lock_guard lock(generator.mutex);
    generator.reserve_offset(8);
  }
  const std::vector<uint8_t> saved = generator.state();
  CHECK(saved.size() == 16);
  generator.set_seed(99);
  CHECK(generator.offset() == 0);
  generator.set_state(saved);
  CHECK(generator.seed() == 7);
  CHECK(generator.offset() == 8);
  CHECK_THROWS_AS(generator.set_state({1, 2, 3}), ValueError);
}
