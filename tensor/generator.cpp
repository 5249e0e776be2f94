// Default generators per device, and the Philox counter bookkeeping. See Note [Generators].
#include <strata/tensor/generator.h>

#include <cstring>

#include <strata/tensor/device_hooks.h>
#include <strata/tensor/errors.h>
#include <strata/tensor/random.h>

namespace strata {

Generator& default_generator(Device device) {
  switch (device.type()) {
    case kCPU: return detail::default_cpu_generator();
    case kMeta: detail::throw_error<ValueError>("[default_generator] meta tensors hold no values, hence no generator");
    case kCUDA: break;
  }
  const DeviceHooks& hooks = detail::require_device_hooks(device.type(), "default_generator");
  detail::check_device_in_range(hooks, device, "default_generator");
  return hooks.default_generator(device.index());
}

void PhiloxGenerator::set_seed(uint64_t seed) {
  std::lock_guard lock(mutex);
  seed_ = seed;
  offset_ = 0;
}

uint64_t PhiloxGenerator::seed() const {
  std::lock_guard lock(mutex);
  return seed_;
}

uint64_t PhiloxGenerator::offset() const {
  std::lock_guard lock(mutex);
  return offset_;
}

std::vector<uint8_t> PhiloxGenerator::state() const {
  std::lock_guard lock(mutex);
  std::vector<uint8_t> bytes(2 * sizeof(uint64_t));
  std::memcpy(bytes.data(), &seed_, sizeof(uint64_t));
  std::memcpy(bytes.data() + sizeof(uint64_t), &offset_, sizeof(uint64_t));
  return bytes;
}

void PhiloxGenerator::set_state(const std::vector<uint8_t>& state) {
  STRATA_CHECK_VALUE(state.size() == 2 * sizeof(uint64_t), "[Generator.set_state] a Philox state has ",
                     2 * sizeof(uint64_t), " bytes, got ", state.size());
  std::lock_guard lock(mutex);
  std::memcpy(&seed_, state.data(), sizeof(uint64_t));
  std::memcpy(&offset_, state.data() + sizeof(uint64_t), sizeof(uint64_t));
}

// Kernels call this while holding `mutex` (see Note [Generators]), so it does not lock.
std::pair<uint64_t, uint64_t> PhiloxGenerator::reserve_offset(uint64_t increment) {
  const uint64_t start = offset_;
  offset_ += (increment + 3) / 4 * 4;
  return {seed_, start};
}

}  // namespace strata
