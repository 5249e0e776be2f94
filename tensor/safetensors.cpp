// safetensors reading and writing (https://github.com/huggingface/safetensors, "Format").
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include <strata/tensor/json.h>
#include <strata/tensor/serialize.h>

namespace strata {
namespace {

constexpr size_t kHeaderAlignment = 8;
constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit
constexpr std::string_view kMetadataKey = "__metadata__";

std::string_view safetensors_dtype_name(ScalarType dtype) {
  switch (dtype) {
    case kBool: return "BOOL";
    case kUInt8: return "U8";
    case kInt8: return "I8";
    case kInt16: return "I16";
    case kInt32: return "I32";
    case kInt64: return "I64";
    case kFloat16: return "F16";
    case kBFloat16: return "BF16";
    case kFloat32: return "F32";
    case kFloat64: return "F64";
  }
  return "?";
}

std::optional<ScalarType> safetensors_dtype(std::string_view name) {
  for (ScalarType dtype : {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64})
    if (safetensors_dtype_name(dtype) == name) return dtype;
  return std::nullopt;
}

struct Entry {
  std::string name;
  ScalarType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

class HeaderReader {
 public:
  HeaderReader(const std::string& context, uint64_t data_size) : context_(context), data_size_(data_size) {}

  template <class... Args>
  [[noreturn]] void fail(const Args&... what) const {
    detail::throw_error<ValueError>(context_, what...);
  }

  Entry read_entry(const std::string& name, const detail::JsonValue& value) const {
    if (!value.is_object()) fail("the entry for tensor '", name, "' is not a JSON object");
    for (const auto& [key, member] : value.members)
      if (key != "dtype" && key != "shape" && key != "data_offsets")
        fail("unexpected key '", key, "' in the entry for tensor '", name, "'");
    const detail::JsonValue* dtype = value.find("dtype");
    const detail::JsonValue* shape = value.find("shape");
    const detail::JsonValue* offsets = value.find("data_offsets");
    if (!dtype || !shape || !offsets) fail("tensor '", name, "' needs 'dtype', 'shape' and 'data_offsets'");
    if (!dtype->is_string()) fail("the dtype of tensor '", name, "' is not a string");
    std::optional<ScalarType> scalar_type = safetensors_dtype(dtype->text);
    if (!scalar_type)
      fail("unknown dtype '", dtype->text, "' for tensor '", name, "' (supported: BOOL U8 I8 I16 I32 I64 F16 BF16 F32 F64)");

    Entry entry{name, *scalar_type, {}, 0, 0};
    if (!shape->is_array()) fail("the shape of tensor '", name, "' is not an array");
    if (shape->items.size() > 64) fail("tensor '", name, "' has more than 64 dimensions");
    for (const auto& item : shape->items) {
      std::optional<uint64_t> dim = item.as_uint64();
      if (!dim || *dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail("the shape of tensor '", name, "' has an entry that is not a non-negative 64-bit integer");
      entry.shape.push_back(static_cast<int64_t>(*dim));
    }
    std::optional<int64_t> nbytes = detail::checked_nbytes(entry.shape, element_size(entry.dtype));
    if (!nbytes) fail("the shape of tensor '", name, "' overflows 64 bits when multiplied out");

    if (!offsets->is_array() || offsets->items.size() != 2)
      fail("the data_offsets of tensor '", name, "' are not an array of two integers");
    std::optional<uint64_t> begin = offsets->items[0].as_uint64(), end = offsets->items[1].as_uint64();
    if (!begin || !end) fail("the data_offsets of tensor '", name, "' are not non-negative integers");
    entry.begin = *begin;
    entry.end = *end;
    if (entry.begin > entry.end) fail("the data_offsets of tensor '", name, "' run backwards [", entry.begin, ", ", entry.end, "]");
    if (entry.end > data_size_)
      fail("the data_offsets of tensor '", name, "' [", entry.begin, ", ", entry.end, "] run past the end of the ",
           data_size_, "-byte data buffer");
    if (entry.end - entry.begin != static_cast<uint64_t>(*nbytes))
      fail("tensor '", name, "' has data_offsets [", entry.begin, ", ", entry.end, "] spanning ", entry.end - entry.begin,
           " bytes but its dtype and shape need ", *nbytes);
    return entry;
  }

  void read_metadata(const detail::JsonValue& value, SafetensorsMetadata* metadata) const {
    if (!value.is_object()) fail("__metadata__ is not a JSON object");
    for (const auto& [key, member] : value.members) {
      if (!member.is_string()) fail("the __metadata__ value for '", key, "' is not a string");
      if (metadata) (*metadata)[key] = member.text;
    }
  }

  // The spec asks the tensors to tile the data buffer: no gaps, no overlaps, nothing after.
  void check_layout(std::vector<const Entry*> entries) const {
    std::sort(entries.begin(), entries.end(),
              [](const Entry* a, const Entry* b) { return std::tie(a->begin, a->end) < std::tie(b->begin, b->end); });
    uint64_t covered = 0;
    const Entry* previous = nullptr;
    for (const Entry* entry : entries) {
      if (entry->begin < covered)
        fail("tensors '", previous->name, "' and '", entry->name, "' overlap (bytes [", previous->begin, ", ",
             previous->end, ") and [", entry->begin, ", ", entry->end, "))");
      if (entry->begin > covered)
        fail("the data buffer has ", entry->begin - covered, " unused bytes before tensor '", entry->name, "'");
      covered = entry->end;
      previous = entry;
    }
    if (covered != data_size_)
      fail("the data buffer has ", data_size_ - covered, " bytes after the last tensor");
  }

 private:
  const std::string& context_;
  uint64_t data_size_;
};

}  // namespace

std::vector<uint8_t> save_safetensors_bytes(const std::map<std::string, Tensor>& tensors,
                                            const SafetensorsMetadata& metadata) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (auto it = metadata.begin(); it != metadata.end(); ++it)
      header += (it == metadata.begin() ? "" : ",") + detail::json_quote(it->first) + ":" + detail::json_quote(it->second);
    header += "}";
  }
  std::vector<Tensor> values;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    STRATA_CHECK_VALUE(name != kMetadataKey, "[save_safetensors] '__metadata__' is reserved and cannot name a tensor");
    STRATA_CHECK_VALUE(tensor.defined(), "[save_safetensors] tensor '", name, "' is undefined");
    STRATA_CHECK_VALUE(!tensor.is_meta(), "[save_safetensors] tensor '", name, "' is a Meta tensor, which has no values");
    values.push_back(detail::contiguous_cpu(tensor, "save_safetensors"));
    const Tensor& value = values.back();
    header += (header.size() > 1 ? "," : "") + detail::json_quote(name) + ":{\"dtype\":\"" +
              std::string(safetensors_dtype_name(value.dtype())) + "\",\"shape\":[";
    for (int64_t i = 0; i < value.dim(); ++i) header += (i ? "," : "") + std::to_string(value.size(i));
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + value.nbytes()) + "]}";
    offset += value.nbytes();
  }
  header += "}";
  header.append((kHeaderAlignment - header.size() % kHeaderAlignment) % kHeaderAlignment, ' ');

  std::vector<uint8_t> bytes;
  bytes.reserve(8 + header.size() + offset);
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(uint64_t{header.size()} >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  for (const Tensor& value : values) {
    if (value.numel() == 0) continue;
    const auto* data = static_cast<const uint8_t*>(value.data_ptr());
    bytes.insert(bytes.end(), data, data + value.nbytes());
  }
  return bytes;
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const SafetensorsMetadata& metadata) {
  std::vector<uint8_t> bytes = save_safetensors_bytes(tensors, metadata);
  detail::write_file_bytes(path, bytes, "save_safetensors");
}

std::map<std::string, Tensor> load_safetensors_bytes(std::span<const uint8_t> bytes, std::string_view source,
                                                     SafetensorsMetadata* metadata) {
  const std::string context = "[load_safetensors] " + std::string(source) + ": ";
  if (bytes.size() < 8)
    detail::throw_error<ValueError>(context, "the file has ", bytes.size(), " bytes, too few for the 8-byte header length");
  uint64_t header_length = 0;
  for (int i = 0; i < 8; ++i) header_length |= uint64_t{bytes[i]} << (8 * i);
  if (header_length > bytes.size() - 8)
    detail::throw_error<ValueError>(context, "the header length ", header_length, " runs past the end of the ",
                                    bytes.size(), "-byte file");
  if (header_length > kMaxHeaderBytes)
    detail::throw_error<ValueError>(context, "the header length ", header_length, " exceeds the limit of ", kMaxHeaderBytes);
  std::string_view header_text(reinterpret_cast<const char*>(bytes.data() + 8), header_length);
  detail::JsonValue header = detail::parse_json(header_text, context);
  if (!header.is_object()) detail::throw_error<ValueError>(context, "the header is not a JSON object");

  const uint8_t* data = bytes.data() + 8 + header_length;
  HeaderReader reader(context, bytes.size() - 8 - header_length);
  std::vector<Entry> entries;
  entries.reserve(header.members.size());
  for (const auto& [name, value] : header.members) {
    if (name == kMetadataKey) reader.read_metadata(value, metadata);
    else entries.push_back(reader.read_entry(name, value));
  }
  std::vector<const Entry*> layout;
  for (const Entry& entry : entries) layout.push_back(&entry);
  reader.check_layout(std::move(layout));

  std::map<std::string, Tensor> tensors;
  for (const Entry& entry : entries) {
    Tensor tensor = detail::make_empty(entry.shape, entry.dtype, kCPU);
    if (entry.end > entry.begin) {
      auto* destination = static_cast<uint8_t*>(tensor.data_ptr());
      std::memcpy(destination, data + entry.begin, entry.end - entry.begin);
      if (entry.dtype == kBool)  // bools must hold 0 or 1; any nonzero byte is true
        for (uint64_t i = 0; i < entry.end - entry.begin; ++i) destination[i] = destination[i] != 0;
    }
    tensors.emplace(entry.name, std::move(tensor));
  }
  return tensors;
}

std::map<std::string, Tensor> load_safetensors(const std::string& path) {
  std::vector<uint8_t> bytes = detail::read_file_bytes(path, "load_safetensors");
  return load_safetensors_bytes(bytes, "'" + path + "'");
}

SafetensorsMetadata load_safetensors_metadata(const std::string& path) {
  std::vector<uint8_t> bytes = detail::read_file_bytes(path, "load_safetensors");
  SafetensorsMetadata metadata;
  load_safetensors_bytes(bytes, "'" + path + "'", &metadata);
  return metadata;
}

}  // namespace strata
