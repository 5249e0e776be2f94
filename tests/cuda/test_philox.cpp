// Tests for cuda/philox.h on the host: the numbers CUDA kernels draw.
#include <doctest/doctest.h>

#include <strata/cuda/philox.h>

#include <set>

using namespace strata::cuda::detail;

TEST_CASE("philox: Philox4x32-10 matches the Random123 known-answer vectors") {
  const Philox4 zero = philox4x32_10(Philox4{{0, 0, 0, 0}}, 0, 0);
  CHECK(zero.word[0] == 0x6627e8d5u);
  CHECK(zero.word[1] == 0xe169c58du);
  CHECK(zero.word[2] == 0xbc57ac4cu);
  CHECK(zero.word[3] == 0x9b00dbd8u);
  const Philox4 ones = philox4x32_10(Philox4{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu);
  CHECK(ones.word[0] == 0x408f276du);
  CHECK(ones.word[1] == 0x41c83b0eu);
  CHECK(ones.word[2] == 0xa20bc7c6u);
  CHECK(ones.word[3] == 0x6d5451fdu);
  const Philox4 pi = philox4x32_10(Philox4{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  CHECK(pi.word[0] == 0xd16cfe09u);
  CHECK(pi.word[1] == 0x94fdccebu);
  CHECK(pi.word[2] == 0x5001e420u);
  CHECK(pi.word[3] == 0x24126ea1u);
}

TEST_CASE("philox: a stream is addressed by position, so offsets continue it") {
  const uint64_t seed = 1234;
  // The numbers at offset 8 are the numbers from index 8 at offset 0.
  for (uint64_t index = 0; index < 16; ++index)
    CHECK(philox_number(seed, 8, index) == philox_number(seed, 0, index + 8));
  // Different seeds and positions give different numbers.
  std::set<uint32_t> seen;
  for (uint64_t index = 0; index < 1000; ++index) seen.insert(philox_number(seed, 0, index));
  CHECK(seen.size() == 1000);
  CHECK(philox_number(seed, 0, 0) != philox_number(seed + 1, 0, 0));
}

TEST_CASE("philox: uniform numbers lie in [0, 1) and use their bits") {
  CHECK(uniform_float(0) == 0.0f);
  CHECK(uniform_float(0xffffffffu) < 1.0f);
  CHECK(uniform_float(0xffffffffu) == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(uniform_double(0, 0) == 0.0);
  CHECK(uniform_double(0xffffffffu, 0xffffffffu) < 1.0);
  double sum = 0;
  for (uint64_t index = 0; index < 10000; ++index) sum += uniform_float(philox_number(7, 0, index));
  CHECK(sum / 10000 == doctest::Approx(0.5).epsilon(0.02));
}
