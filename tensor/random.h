#pragma once
// The default CPU random generator, and manual_seed for every device's default generator.
#include <cstdint>
#include <mutex>
#include <random>

#include <strata/tensor/generator.h>

namespace strata {

// Seeds the default generator of the CPU and of every device of every loaded backend, as
// torch.manual_seed does.
void manual_seed(uint64_t seed);

namespace detail {
// A 64-bit Mersenne Twister. Kernels lock `mutex` (see Note [Generators]) and draw from
// `engine` directly.
class CpuGenerator final : public Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;

  CpuGenerator() : Generator(Device(kCPU)) {}

  void set_seed(uint64_t seed) override;
  uint64_t seed() const override;
  std::vector<uint8_t> state() const override;  // the engine's text form
  void set_state(const std::vector<uint8_t>& state) override;

  std::mt19937_64 engine{kDefaultSeed};

 private:
  uint64_t seed_ = kDefaultSeed;
};

CpuGenerator& default_cpu_generator();
// `generator` as the CPU generator it must be (InternalError otherwise), for CPU kernels:
// `auto& generator = detail::cpu_generator(default_generator(out.device()));`.
CpuGenerator& cpu_generator(Generator& generator);
}  // namespace detail

}  // namespace strata
