// The default CPU generator, and manual_seed over every device's default generator.
#include <strata/tensor/random.h>

#include <sstream>
#include <string>

#include <strata/tensor/device_hooks.h>
#include <strata/tensor/errors.h>

namespace strata {

namespace detail {
CpuGenerator& default_cpu_generator() {
  static CpuGenerator generator;
  return generator;
}

CpuGenerator& cpu_generator(Generator& generator) {
  STRATA_INTERNAL_ASSERT(generator.device().is_cpu(), "a CPU kernel was given the generator of ", generator.device());
  return static_cast<CpuGenerator&>(generator);
}

void CpuGenerator::set_seed(uint64_t seed) {
  std::lock_guard lock(mutex);
  engine.seed(seed);
  seed_ = seed;
}

uint64_t CpuGenerator::seed() const {
  std::lock_guard lock(mutex);
  return seed_;
}

std::vector<uint8_t> CpuGenerator::state() const {
  std::ostringstream text;
  {
    std::lock_guard lock(mutex);
    text << seed_ << ' ' << engine;
  }
  const std::string bytes = text.str();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

void CpuGenerator::set_state(const std::vector<uint8_t>& state) {
  std::istringstream text(std::string(state.begin(), state.end()));
  uint64_t seed = 0;
  std::mt19937_64 restored;
  text >> seed >> restored;
  STRATA_CHECK_VALUE(!text.fail() && (text >> std::ws).eof(),
                     "[Generator.set_state] the bytes are not the state of a CPU generator");
  std::lock_guard lock(mutex);
  seed_ = seed;
  engine = restored;
}
}  // namespace detail

void manual_seed(uint64_t seed) {
  detail::default_cpu_generator().set_seed(seed);
  for (DeviceType type : {kCUDA}) {
    const DeviceHooks* hooks = detail::device_hooks(type);
    if (!hooks) continue;
    for (int index = 0, count = hooks->device_count(); index < count; ++index)
      hooks->default_generator(index).set_seed(seed);
  }
}

}  // namespace strata
