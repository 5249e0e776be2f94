#pragma once
// Dispatch keys and key sets. In tensor/ because every TensorImpl carries a key set; the
// dispatcher that reads them is in dispatch/.
// See Note [Key priority] below.
#include <bit>
#include <cstdint>
#include <ostream>
#include <string_view>

namespace strata {

// Note [Key priority]
// Runtime keys are numbered by priority, lowest first, so the key a call dispatches to is the
// highest set bit of its key set:
//   Tracer > AutogradCUDA > AutogradCPU > AutogradMeta > CUDA > CPU > Meta.
// Each backend has its own autograd key; a tensor that requires grad carries the one of its
// backend. Alias keys name groups of runtime keys and are only used to register kernels (and,
// for convenience, in guards and key sets, where they stand for their runtime keys: a key set
// holds runtime keys only). At most 16 keys in all.
enum class DispatchKey : uint8_t {
  Meta = 0,
  CPU = 1,
  CUDA = 2,
  AutogradMeta = 3,
  AutogradCPU = 4,
  AutogradCUDA = 5,
  Tracer = 6,
  // Alias keys.
  Autograd = 7,                   // AutogradMeta, AutogradCPU, AutogradCUDA
  CompositeImplicitAutograd = 8,  // every backend and autograd key
  CompositeExplicitAutograd = 9,  // every backend key
};
inline constexpr int kNumRuntimeKeys = 7;
inline constexpr int kNumDispatchKeys = 10;
static_assert(kNumDispatchKeys <= 16, "DispatchKeySet holds at most 16 keys");

inline constexpr bool is_runtime_key(DispatchKey key) { return static_cast<int>(key) < kNumRuntimeKeys; }
inline constexpr bool is_alias_key(DispatchKey key) { return !is_runtime_key(key); }
inline constexpr bool is_backend_key(DispatchKey key) {
  return key == DispatchKey::CPU || key == DispatchKey::CUDA || key == DispatchKey::Meta;
}
inline constexpr bool is_autograd_key(DispatchKey key) {
  return key == DispatchKey::AutogradCPU || key == DispatchKey::AutogradCUDA || key == DispatchKey::AutogradMeta;
}
// CPU -> AutogradCPU, CUDA -> AutogradCUDA, Meta -> AutogradMeta.
inline constexpr DispatchKey autograd_key_of(DispatchKey backend) {
  return static_cast<DispatchKey>(static_cast<int>(backend) + 3);
}
// AutogradCPU -> CPU, AutogradCUDA -> CUDA, AutogradMeta -> Meta.
inline constexpr DispatchKey backend_of(DispatchKey autograd_key) {
  return static_cast<DispatchKey>(static_cast<int>(autograd_key) - 3);
}

std::string_view dispatch_key_name(DispatchKey key);  // "CPU", "CompositeImplicitAutograd", ...
std::ostream& operator<<(std::ostream& out, DispatchKey key);

class DispatchKeySet {
 public:
  // DispatchKeySet(DispatchKeySet::FULL_AFTER, key): every runtime key below `key` in priority,
  // the keys a kernel for `key` redispatches to (PyTorch's spelling).
  enum FullAfter { FULL_AFTER };

  constexpr DispatchKeySet() = default;
  // An alias key stands for its runtime keys.
  constexpr explicit DispatchKeySet(DispatchKey key) : bits_(mask(key)) {}
  constexpr DispatchKeySet(FullAfter, DispatchKey key) : bits_(below_bits(key)) {}
  static constexpr DispatchKeySet from_bits(uint16_t bits) {
    DispatchKeySet set;
    set.bits_ = bits;
    return set;
  }
  // The runtime keys of lower priority than `key` (for an alias key: than its lowest runtime key).
  static constexpr DispatchKeySet full_after(DispatchKey key) { return DispatchKeySet(FULL_AFTER, key); }

  // For an alias key: whether any of its runtime keys is in the set.
  constexpr bool has(DispatchKey key) const { return (bits_ & mask(key)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr uint16_t bits() const { return bits_; }
  constexpr DispatchKeySet add(DispatchKey key) const { return from_bits(bits_ | mask(key)); }
  constexpr DispatchKeySet remove(DispatchKey key) const { return from_bits(bits_ & ~mask(key)); }
  constexpr DispatchKeySet operator|(DispatchKeySet other) const { return from_bits(bits_ | other.bits_); }
  constexpr DispatchKeySet operator&(DispatchKeySet other) const { return from_bits(bits_ & other.bits_); }
  constexpr DispatchKeySet operator-(DispatchKeySet other) const { return from_bits(bits_ & ~other.bits_); }
  constexpr bool operator==(const DispatchKeySet&) const = default;
  // The key a call goes to. Undefined for an empty set.
  constexpr DispatchKey highest() const { return static_cast<DispatchKey>(15 - std::countl_zero(bits_)); }

 private:
  static constexpr uint16_t bit(int key) { return static_cast<uint16_t>(1u << key); }
  static constexpr uint16_t mask(DispatchKey key) {
    constexpr uint16_t backends = bit(0) | bit(1) | bit(2);
    constexpr uint16_t autograd = bit(3) | bit(4) | bit(5);
    switch (key) {
      case DispatchKey::Autograd: return autograd;
      case DispatchKey::CompositeImplicitAutograd: return backends | autograd;
      case DispatchKey::CompositeExplicitAutograd: return backends;
      default: return bit(static_cast<int>(key));
    }
  }
  static constexpr uint16_t below_bits(DispatchKey key) {
    const uint16_t keys = mask(key);
    return static_cast<uint16_t>((keys & -keys) - 1);  // the bits under the lowest one
  }
  uint16_t bits_ = 0;
};

inline constexpr DispatchKeySet kAutogradKeys{DispatchKey::Autograd};
inline constexpr DispatchKeySet kBackendKeys{DispatchKey::CompositeExplicitAutograd};

std::ostream& operator<<(std::ostream& out, DispatchKeySet set);

}  // namespace strata
