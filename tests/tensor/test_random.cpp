// Tests for tensor/random.cpp: manual_seed makes the default generator reproducible.
#include <doctest/doctest.h>

#include <strata/tensor/errors.h>
#include <strata/tensor/random.h>

#include <cstdint>
#include <vector>

using namespace strata;

namespace {
std::vector<uint64_t> draw(int count) {
  auto& generator = detail::default_cpu_generator();
  std::lock_guard<std::mutex> lock(generator.mutex);
  std::vector<uint64_t> values;
  for (int i = 0; i < count; ++i) values.push_back(generator.engine());
  return values;
}
}  // namespace

TEST_CASE("random: manual_seed makes draws repeat") {
  manual_seed(1234);
  std::vector<uint64_t> first = draw(5);
  manual_seed(1234);
  CHECK(draw(5) == first);
  manual_seed(1235);
  CHECK(draw(5) != first);
  CHECK(&detail::default_cpu_generator() == &detail::default_cpu_generator());
}

TEST_CASE("random: the seed fully determines the engine state") {
  manual_seed(42);
  std::mt19937_64 reference(42);
  std::vector<uint64_t> expected;
  for (int i = 0; i < 3; ++i) expected.push_back(reference());
  CHECK(draw(3) == expected);
}

TEST_CASE("random: the CPU generator's state round-trips, seed included") {
  auto& generator = detail::default_cpu_generator();
  generator.set_seed(77);
  draw(4);
  const std::vector<uint8_t> saved = generator.state();
  const std::vector<uint64_t> next = draw(3);
  generator.set_seed(1);
  CHECK(generator.seed() == 1);
  generator.set_state(saved);
  CHECK(generator.seed() == 77);
  CHECK(draw(3) == next);
  CHECK_THROWS_AS(generator.set_state({'x', 'y'}), ValueError);
  CHECK(draw(0).empty());
}

TEST_CASE("random: set_seed is manual_seed for the CPU") {
  detail::default_cpu_generator().set_seed(5);
  const std::vector<uint64_t> first = draw(2);
  manual_seed(5);
  CHECK(draw(2) == first);
}
