#pragma once
// Random number generators: one default generator per device, seeded by manual_seed.
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include <strata/tensor/device.h>

namespace strata {

// Note [Generators]
// Each device has one default Generator (the CPU's lives in tensor/, a backend owns one per
// device index and hands it out through its DeviceHooks). A kernel locks `mutex` once per
// tensor, draws all its numbers, and unlocks, so results depend only on the seed and the order
// of calls. The state is opaque bytes that only a generator of the same kind reads back.
class Generator {
 public:
  explicit Generator(Device device) : device_(device) {}
  virtual ~Generator() = default;
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  Device device() const { return device_; }

  // Each of these locks `mutex` itself: do not call them while holding it.
  // Restarts the sequence from `seed`.
  virtual void set_seed(uint64_t seed) = 0;
  // The seed last set (or the initial one).
  virtual uint64_t seed() const = 0;
  virtual std::vector<uint8_t> state() const = 0;
  // Throws ValueError for bytes that are not a state of this kind of generator.
  virtual void set_state(const std::vector<uint8_t>& state) = 0;

  // Held by a kernel across all its draws from this generator.
  mutable std::mutex mutex;

 private:
  Device device_;
};

// The default generator of `device`: the CPU's, or the one its backend registered. Throws
// Error when the backend is not loaded or the index is out of range; Meta has none (ValueError).
Generator& default_generator(Device device);

// Note [Philox offsets]
// Device kernels draw from a counter-based generator (Philox, as PyTorch's CUDA generator
// does): every thread derives its numbers from (seed, offset + its own counter), so no state is
// shared between threads. A kernel reserves the counters it will use with
// reserve_offset(increment) and gets the (seed, offset) pair to start from; the next kernel
// starts after it. Backends use this class for their per-device generators.
class PhiloxGenerator : public Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;

  explicit PhiloxGenerator(Device device, uint64_t seed = kDefaultSeed) : Generator(device), seed_(seed) {}

  void set_seed(uint64_t seed) override;
  uint64_t seed() const override;
  std::vector<uint8_t> state() const override;  // 16 bytes: seed, offset
  void set_state(const std::vector<uint8_t>& state) override;

  uint64_t offset() const;
  // Returns (seed, offset) for a kernel and moves the offset past `increment` counters
  // (rounded up to a multiple of 4, the numbers one Philox round gives).
  std::pair<uint64_t, uint64_t> reserve_offset(uint64_t increment);

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

}  // namespace strata
