// The default CPU generator.
#include <strata/tensor/random.h>

namespace strata {

namespace detail {
CpuGenerator& default_cpu_generator() {
  static CpuGenerator generator;
  return generator;
}
}  // namespace detail

void manual_seed(uint64_t seed) {
  auto& generator = detail::default_cpu_generator();
  std::lock_guard<std::mutex> lock(generator.mutex);
  generator.engine.seed(seed);
}

}  // namespace strata
