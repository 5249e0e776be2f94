#pragma once
// Internal to cuda/: the Philox4x32-10 counter-based generator (Salmon et al., "Parallel random
// numbers: as easy as 1, 2, 3", SC 2011), on the host and the device alike, so the host tests
// check the numbers the kernels draw. See Note [Philox offsets] in tensor/generator.h.
#include <cstdint>

#include <strata/cuda/indexing.h>

namespace strata::cuda::detail {

struct Philox4 {
  uint32_t word[4];
};

STRATA_HOST_DEVICE inline void multiply_high_low(uint32_t a, uint32_t b, uint32_t& high, uint32_t& low) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  high = static_cast<uint32_t>(product >> 32);
  low = static_cast<uint32_t>(product);
}

// Ten rounds of Philox4x32 on `counter` under the 64-bit `key`.
STRATA_HOST_DEVICE inline Philox4 philox4x32_10(Philox4 counter, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kMultiplier0 = 0xD2511F53u, kMultiplier1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint32_t high0, low0, high1, low1;
    multiply_high_low(kMultiplier0, counter.word[0], high0, low0);
    multiply_high_low(kMultiplier1, counter.word[2], high1, low1);
    counter = Philox4{{high1 ^ counter.word[1] ^ key0, low1, high0 ^ counter.word[3] ^ key1, low0}};
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return counter;
}

// The 32-bit number at position `index` of the stream a kernel reserved as (seed, offset):
// number i is word i % 4 of block (offset + i) / 4, so a kernel that draws k numbers per
// element and reserved k * numel draws the same numbers however it is launched.
STRATA_HOST_DEVICE inline uint32_t philox_number(uint64_t seed, uint64_t offset, uint64_t index) {
  const uint64_t position = offset + index;
  const uint64_t block = position / 4;
  const Philox4 counter{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0u, 0u}};
  const Philox4 result = philox4x32_10(counter, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return result.word[position % 4];
}

// Uniform in [0, 1) from 24 (float) or 53 (double, two numbers) random bits.
STRATA_HOST_DEVICE inline float uniform_float(uint32_t bits) { return static_cast<float>(bits >> 8) * 0x1.0p-24f; }
STRATA_HOST_DEVICE inline double uniform_double(uint32_t high, uint32_t low) {
  const uint64_t bits = (static_cast<uint64_t>(high) << 32 | low) >> 11;
  return static_cast<double>(bits) * 0x1.0p-53;
}

}  // namespace strata::cuda::detail
