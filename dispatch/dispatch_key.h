#pragma once
// Dispatch keys and key sets. Header-only so TensorImpl can carry a key set.
// See Note [Key priority] below.
#include <bit>
#include <cstdint>
#include <ostream>
#include <string_view>

namespace strata {

// Note [Key priority]
// Runtime keys are numbered by priority, lowest first, so the key a call dispatches to is the
// highest set bit of its key set: Tracer > Autograd > CUDA > CPU > Meta. Alias keys name groups
// of runtime keys and are only used to register kernels. At most 16 keys in all.
enum class DispatchKey : uint8_t {
  CPU = 1,
  CUDA = 2,
  Meta = 0,
  Autograd = 3,
  Tracer = 4,
  CompositeImplicitAutograd = 5,
  CompositeExplicitAutograd = 6,
};
inline constexpr int kNumRuntimeKeys = 5;
inline constexpr int kNumDispatchKeys = 7;
static_assert(kNumDispatchKeys <= 16, "DispatchKeySet holds at most 16 keys");

inline constexpr bool is_runtime_key(DispatchKey key) { return static_cast<int>(key) < kNumRuntimeKeys; }
inline constexpr bool is_alias_key(DispatchKey key) { return !is_runtime_key(key); }
inline constexpr bool is_backend_key(DispatchKey key) {
  return key == DispatchKey::CPU || key == DispatchKey::CUDA || key == DispatchKey::Meta;
}

std::string_view dispatch_key_name(DispatchKey key);  // "CPU", "CompositeImplicitAutograd", ...
std::ostream& operator<<(std::ostream& out, DispatchKey key);

class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(DispatchKey key) : bits_(bit(key)) {}
  static constexpr DispatchKeySet from_bits(uint16_t bits) {
    DispatchKeySet set;
    set.bits_ = bits;
    return set;
  }

  constexpr bool has(DispatchKey key) const { return (bits_ & bit(key)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr uint16_t bits() const { return bits_; }
  constexpr DispatchKeySet add(DispatchKey key) const { return from_bits(bits_ | bit(key)); }
  constexpr DispatchKeySet remove(DispatchKey key) const { return from_bits(bits_ & ~bit(key)); }
  constexpr DispatchKeySet operator|(DispatchKeySet other) const { return from_bits(bits_ | other.bits_); }
  constexpr DispatchKeySet operator&(DispatchKeySet other) const { return from_bits(bits_ & other.bits_); }
  constexpr DispatchKeySet operator-(DispatchKeySet other) const { return from_bits(bits_ & ~other.bits_); }
  constexpr bool operator==(const DispatchKeySet&) const = default;
  // The key a call goes to. Undefined for an empty set.
  constexpr DispatchKey highest() const { return static_cast<DispatchKey>(15 - std::countl_zero(bits_)); }

 private:
  static constexpr uint16_t bit(DispatchKey key) { return static_cast<uint16_t>(1u << static_cast<int>(key)); }
  uint16_t bits_ = 0;
};

std::ostream& operator<<(std::ostream& out, DispatchKeySet set);

}  // namespace strata
