#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace strata {

enum class DeviceType : int8_t { CPU, CUDA, Meta };
inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;
inline constexpr DeviceType kMeta = DeviceType::Meta;
inline constexpr int kNumDeviceTypes = 3;

namespace detail {
// Throws ValueError unless `index` is a valid index for a device of `type`.
void check_device_index(DeviceType type, int index);
}

class Device;
namespace detail {
// The device a bare DeviceType names where a tensor goes (x.to(kCUDA), TensorOptions(kCUDA),
// module.to(kCUDA)): the current device of that type, as in LibTorch (cuda:1 under a
// DeviceGuard for cuda:1). Index 0 for the CPU and Meta, and for CUDA without a backend or a
// device (the copy or allocation then says why not). Note [Bare device types].
Device current_device(DeviceType type);
}  // namespace detail

std::string_view device_type_name(DeviceType type);  // "cpu", "cuda", "meta"

class Device {
 public:
  // Index 0 is valid for every type, so the common Device(kCPU) checks nothing out of line
  // (the CPU allocator builds one per block).
  Device(DeviceType type, int index = 0)  // NOLINT: implicit like torch::Device
      : type_(type), index_(static_cast<int16_t>(index)) {
    if (index != 0) [[unlikely]] detail::check_device_index(type, index);
  }
  // "cpu", "cuda", "cuda:1", "meta"; throws ValueError otherwise.
  explicit Device(std::string_view text);

  DeviceType type() const { return type_; }
  int index() const { return index_; }
  bool is_cpu() const { return type_ == kCPU; }
  bool is_cuda() const { return type_ == kCUDA; }
  bool is_meta() const { return type_ == kMeta; }
  std::string str() const;  // "cpu", "cuda:0", "meta"

  bool operator==(const Device& other) const { return type_ == other.type_ && index_ == other.index_; }
  bool operator!=(const Device& other) const { return !(*this == other); }

 private:
  DeviceType type_;
  int16_t index_;
};

std::ostream& operator<<(std::ostream& out, const Device& device);
std::ostream& operator<<(std::ostream& out, DeviceType type);

}  // namespace strata
