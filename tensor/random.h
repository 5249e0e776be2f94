#pragma once
// The default CPU random generator, seeded by manual_seed.
#include <cstdint>
#include <mutex>
#include <random>

namespace strata {

void manual_seed(uint64_t seed);

namespace detail {
// A 64-bit Mersenne Twister behind a mutex. Kernels lock it once per tensor, draw all their
// numbers, and unlock, so results depend only on the seed and the order of calls.
struct CpuGenerator {
  std::mutex mutex;
  std::mt19937_64 engine{67280421310721ull};
};
CpuGenerator& default_cpu_generator();
}  // namespace detail

}  // namespace strata
