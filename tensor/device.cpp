// Device names and parsing.
#include <strata/tensor/device.h>

#include <charconv>
#include <cstdint>
#include <limits>

#include <strata/tensor/errors.h>

namespace strata {

std::string_view device_type_name(DeviceType type) {
  switch (type) {
    case kCPU: return "cpu";
    case kCUDA: return "cuda";
    case kMeta: return "meta";
  }
  return "unknown";
}

namespace detail {
void check_device_index(DeviceType type, int index) {
  STRATA_CHECK_VALUE(index >= 0 && index <= std::numeric_limits<int16_t>::max(),
                     "[Device] device index must be between 0 and ", std::numeric_limits<int16_t>::max(),
                     ", got ", index);
  STRATA_CHECK_VALUE(type == kCUDA || index == 0, "[Device] a ", device_type_name(type),
                     " device has only index 0, got ", index);
}
}  // namespace detail

namespace {

DeviceType parse_device_type(std::string_view name, std::string_view text) {
  for (DeviceType type : {kCPU, kCUDA, kMeta})
    if (name == device_type_name(type)) return type;
  detail::throw_error<ValueError>("[Device] expected a device string like \"cpu\", \"cuda\", \"cuda:1\" or \"meta\", got \"",
                                  text, "\"");
}

// Digits only: no sign, no spaces, no trailing text.
int parse_device_index(std::string_view digits, std::string_view text) {
  int index = -1;
  const char* end = digits.data() + digits.size();
  auto [stop, error] = std::from_chars(digits.data(), end, index);
  bool all_digits = !digits.empty() && digits.front() != '-' && digits.front() != '+';
  STRATA_CHECK_VALUE(all_digits && error == std::errc() && stop == end,
                     "[Device] invalid device index \"", digits, "\" in \"", text, "\"");
  return index;
}

}  // namespace

Device::Device(std::string_view text) : type_(kCPU), index_(0) {
  size_t colon = text.find(':');
  type_ = parse_device_type(text.substr(0, colon), text);
  int index = colon == std::string_view::npos ? 0 : parse_device_index(text.substr(colon + 1), text);
  detail::check_device_index(type_, index);
  index_ = static_cast<int16_t>(index);
}

std::string Device::str() const {
  std::string result(device_type_name(type_));
  if (type_ == kCUDA) result += ":" + std::to_string(index_);
  return result;
}

std::ostream& operator<<(std::ostream& out, const Device& device) { return out << device.str(); }
std::ostream& operator<<(std::ostream& out, DeviceType type) { return out << device_type_name(type); }

}  // namespace strata
