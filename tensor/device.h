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

std::string_view device_type_name(DeviceType type);  // "cpu", "cuda", "meta"

class Device {
 public:
  Device(DeviceType type, int index = 0);  // NOLINT: implicit like torch::Device
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
