// .npy reading and writing, and the file helpers shared with safetensors.cpp.
#include <strata/tensor/serialize.h>

#include <strata/tensor/device_hooks.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

namespace strata {

// Note [Little-endian hosts]
// Both formats store little-endian data (a big-endian .npy descr is byte-swapped on load), and
// tensors are copied to and from files with memcpy, which is only right on a little-endian host.
static_assert(std::endian::native == std::endian::little, "strata's file formats assume a little-endian host");

namespace detail {

namespace {

// Copies the elements of a strided CPU tensor to `out` in row-major order, one row (last dim)
// at a time; Word is an unsigned integer as wide as an element.
template <class Word>
void copy_rows(const Tensor& source, Word* out) {
  const IntArrayRef sizes = source.sizes(), strides = source.strides();
  const auto* base = static_cast<const Word*>(source.impl()->data());
  const int64_t dims = source.dim();
  if (dims == 0) {
    *out = *base;
    return;
  }
  const int64_t row_size = sizes[dims - 1], row_stride = strides[dims - 1];
  std::vector<int64_t> index(static_cast<size_t>(dims - 1), 0);
  int64_t row_start = 0;  // in elements
  for (;;) {
    for (int64_t i = 0; i < row_size; ++i) *out++ = base[row_start + i * row_stride];
    int64_t d = dims - 2;
    for (; d >= 0; --d) {
      if (++index[d] < sizes[d]) {
        row_start += strides[d];
        break;
      }
      row_start -= (sizes[d] - 1) * strides[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace

// Note [Values without ops]
// tensor/ cannot call ops (Note [Layers] in cmake/StrataLayers.cmake), so the savers do not use
// contiguous() or cpu(): a contiguous CPU tensor is written from its own memory through an alias
// (no autograd history), any other CPU tensor is copied element by element here, moving each
// element's bytes unchanged. A tensor on a device whose elements fill one block (contiguous,
// transposed, channels last) comes to the host through its backend's copy_bytes (blocking),
// then is ordered there; one with gaps or shared locations must be made contiguous first.
Tensor contiguous_cpu(const Tensor& tensor, const char* op) {
  STRATA_CHECK_NOT_IMPLEMENTED(!tensor.is_meta(), "[", op, "] a Meta tensor has no values to read");
  if (!tensor.is_cpu()) {
    const bool contiguous = tensor.is_contiguous();
    STRATA_CHECK_NOT_IMPLEMENTED(contiguous || is_non_overlapping_and_dense(tensor.sizes(), tensor.strides()), "[",
                                 op, "] reading the values of a strided ", tensor.device(),
                                 " tensor is not supported; call contiguous() or cpu() first");
    Tensor block = make_empty(tensor.sizes(), tensor.dtype(), kCPU);
    if (block.numel() == 0) return block;
    const DeviceHooks& hooks = require_device_hooks(tensor.device().type(), op);
    hooks.copy_bytes(block.impl()->data(), Device(kCPU), tensor.data_ptr(), tensor.device(),
                     static_cast<size_t>(block.numel() * block.element_size()), nullptr, /*non_blocking=*/false);
    if (contiguous) return block;
    return contiguous_cpu(make_alias(block, tensor.sizes(), tensor.strides(), 0), op);  // the block, in order
  }
  if (tensor.is_contiguous()) return make_alias(tensor, tensor.sizes(), tensor.strides(), tensor.storage_offset());
  Tensor result = make_empty(tensor.sizes(), tensor.dtype(), kCPU);
  if (result.numel() == 0) return result;
  void* out = result.impl()->data();
  switch (tensor.element_size()) {
    case 1: copy_rows(tensor, static_cast<uint8_t*>(out)); break;
    case 2: copy_rows(tensor, static_cast<uint16_t*>(out)); break;
    case 4: copy_rows(tensor, static_cast<uint32_t*>(out)); break;
    case 8: copy_rows(tensor, static_cast<uint64_t*>(out)); break;
    default: STRATA_INTERNAL_ASSERT(false, "[", op, "] no copy for ", tensor.element_size(), "-byte elements");
  }
  return result;
}

std::optional<int64_t> checked_nbytes(std::span<const int64_t> shape, int64_t item_size) {
  int64_t reach = item_size;
  bool empty = false;
  for (int64_t dim : shape) {
    if (dim < 0) return std::nullopt;
    if (dim == 0) empty = true;
    else if (__builtin_mul_overflow(reach, dim, &reach)) return std::nullopt;
  }
  return empty ? 0 : reach;
}

void byteswap_elements(uint8_t* data, int64_t count, int64_t element_size) {
  if (element_size <= 1) return;
  for (int64_t i = 0; i < count; ++i) std::reverse(data + i * element_size, data + (i + 1) * element_size);
}

}  // namespace detail

namespace {

constexpr uint8_t kNpyMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kNpyAlignment = 64;

std::string_view npy_descr(ScalarType dtype) {
  switch (dtype) {
    case kBool: return "|b1";
    case kUInt8: return "|u1";
    case kInt8: return "|i1";
    case kInt16: return "<i2";
    case kInt32: return "<i4";
    case kInt64: return "<i8";
    case kFloat16: return "<f2";
    case kFloat32: return "<f4";
    case kFloat64: return "<f8";
    case kBFloat16: break;
  }
  detail::throw_error<TypeError>("[save_npy] NumPy has no dtype for ", dtype,
                                 "; convert the tensor to Float32 or save it with save_safetensors");
}

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses the Python dict literal of a .npy header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class NpyHeaderParser {
 public:
  NpyHeaderParser(std::string_view text, const std::string& context) : text_(text), context_(context) {}

  NpyHeader parse() {
    NpyHeader header;
    bool has_descr = false, has_fortran = false, has_shape = false;
    skip_spaces();
    expect('{');
    while (true) {
      skip_spaces();
      if (accept('}')) break;
      std::string key = parse_string();
      skip_spaces();
      expect(':');
      skip_spaces();
      if (key == "descr" && !has_descr) {
        header.descr = parse_string();
        has_descr = true;
      } else if (key == "fortran_order" && !has_fortran) {
        header.fortran_order = parse_bool();
        has_fortran = true;
      } else if (key == "shape" && !has_shape) {
        header.shape = parse_shape();
        has_shape = true;
      } else {
        fail("unexpected or repeated key '" + key + "'");
      }
      skip_spaces();
      if (accept(',')) continue;
      expect('}');
      break;
    }
    skip_spaces();
    if (position_ != text_.size()) fail("unexpected characters after the header dict");
    if (!has_descr || !has_fortran || !has_shape) fail("the header needs the keys 'descr', 'fortran_order' and 'shape'");
    return header;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    detail::throw_error<ValueError>(context_, "bad header: ", what, " at header byte ", position_);
  }
  void skip_spaces() {
    while (position_ < text_.size() && (text_[position_] == ' ' || text_[position_] == '\n' ||
                                        text_[position_] == '\t' || text_[position_] == '\r'))
      ++position_;
  }
  bool accept(char c) {
    if (position_ < text_.size() && text_[position_] == c) {
      ++position_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  std::string parse_string() {
    if (position_ >= text_.size() || (text_[position_] != '\'' && text_[position_] != '"')) fail("expected a string");
    char quote = text_[position_++];
    size_t end = text_.find(quote, position_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string value(text_.substr(position_, end - position_));
    position_ = end + 1;
    return value;
  }
  bool parse_bool() {
    if (text_.substr(position_, 4) == "True") {
      position_ += 4;
      return true;
    }
    if (text_.substr(position_, 5) == "False") {
      position_ += 5;
      return false;
    }
    fail("'fortran_order' must be True or False");
  }
  int64_t parse_dim() {
    int64_t value = 0;
    size_t start = position_;
    while (position_ < text_.size() && text_[position_] >= '0' && text_[position_] <= '9') {
      int digit = text_[position_++] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) fail("shape entry too large");
      value = value * 10 + digit;
    }
    if (position_ == start) fail("expected a non-negative integer in 'shape'");
    accept('L');  // Python 2 longs, as old NumPy wrote them
    return value;
  }
  std::vector<int64_t> parse_shape() {
    std::vector<int64_t> shape;
    expect('(');
    while (true) {
      skip_spaces();
      if (accept(')')) break;
      shape.push_back(parse_dim());
      if (shape.size() > 64) fail("more than 64 dimensions");
      skip_spaces();
      if (accept(',')) continue;
      expect(')');
      break;
    }
    return shape;
  }

  std::string_view text_;
  const std::string& context_;
  size_t position_ = 0;
};

struct NpyDtype {
  ScalarType dtype;
  bool big_endian;
};

NpyDtype parse_npy_descr(const std::string& descr, const std::string& context) {
  if (descr.size() >= 3 && (descr[0] == '<' || descr[0] == '>' || descr[0] == '|' || descr[0] == '=')) {
    std::string_view code = std::string_view(descr).substr(1);
    std::optional<ScalarType> dtype;
    if (code == "b1") dtype = kBool;
    else if (code == "u1") dtype = kUInt8;
    else if (code == "i1") dtype = kInt8;
    else if (code == "i2") dtype = kInt16;
    else if (code == "i4") dtype = kInt32;
    else if (code == "i8") dtype = kInt64;
    else if (code == "f2") dtype = kFloat16;
    else if (code == "f4") dtype = kFloat32;
    else if (code == "f8") dtype = kFloat64;
    if (dtype) {
      bool one_byte = element_size(*dtype) == 1;
      if (descr[0] == '|' && !one_byte) detail::throw_error<ValueError>(context, "descr '", descr, "' needs a byte order");
      return {*dtype, descr[0] == '>' && !one_byte};
    }
  }
  detail::throw_error<ValueError>(context, "unsupported descr '", descr,
                                  "' (supported: b1 u1 i1 i2 i4 i8 f2 f4 f8, little- or big-endian)");
}

int64_t checked_numel(const std::vector<int64_t>& shape, int64_t item_size, const std::string& context) {
  std::optional<int64_t> nbytes = detail::checked_nbytes(shape, item_size);
  if (!nbytes) detail::throw_error<ValueError>(context, "the shape's byte count overflows 64 bits");
  return *nbytes / item_size;
}

}  // namespace

std::vector<uint8_t> save_npy_bytes(const Tensor& tensor) {
  STRATA_CHECK_VALUE(tensor.defined(), "[save_npy] the tensor is undefined");
  STRATA_CHECK_VALUE(!tensor.is_meta(), "[save_npy] the tensor is a Meta tensor, which has no values");
  std::string_view descr = npy_descr(tensor.dtype());
  Tensor values = detail::contiguous_cpu(tensor, "save_npy");

  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (";
  for (int64_t i = 0; i < values.dim(); ++i) header += std::to_string(values.size(i)) + (values.dim() == 1 ? "," : i + 1 < values.dim() ? ", " : "");
  header += "), }";
  size_t unpadded = sizeof kNpyMagic + 4 + header.size() + 1;  // + version, length, '\n'
  header.append((kNpyAlignment - unpadded % kNpyAlignment) % kNpyAlignment, ' ');
  header += '\n';
  STRATA_CHECK_VALUE(header.size() <= 0xffff, "[save_npy] header too long (", header.size(), " bytes)");

  std::vector<uint8_t> bytes;
  bytes.reserve(sizeof kNpyMagic + 4 + header.size() + values.nbytes());
  for (uint8_t byte : kNpyMagic) bytes.push_back(byte);
  for (uint8_t byte : {uint8_t{1}, uint8_t{0}, static_cast<uint8_t>(header.size() & 0xff), static_cast<uint8_t>(header.size() >> 8)})
    bytes.push_back(byte);
  bytes.insert(bytes.end(), header.begin(), header.end());
  const uint8_t* data = values.numel() ? static_cast<const uint8_t*>(values.data_ptr()) : nullptr;
  if (data) bytes.insert(bytes.end(), data, data + values.nbytes());
  return bytes;
}

void save_npy(const std::string& path, const Tensor& tensor) {
  std::vector<uint8_t> bytes = save_npy_bytes(tensor);
  detail::write_file_bytes(path, bytes, "save_npy");
}

Tensor load_npy_bytes(std::span<const uint8_t> bytes, std::string_view source) {
  const std::string context = "[load_npy] " + std::string(source) + ": ";
  auto fail = [&](const auto&... what) -> void { detail::throw_error<ValueError>(context, what...); };
  if (bytes.size() < 10 || !std::equal(kNpyMagic, kNpyMagic + sizeof kNpyMagic, bytes.begin()))
    fail("not a .npy file (the magic string \\x93NUMPY is missing)");
  const uint8_t major = bytes[6];
  if (major < 1 || major > 3) fail("unsupported .npy version ", int(major), ".", int(bytes[7]));
  size_t length_size = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + length_size) fail("truncated before the header length");
  uint64_t header_length = 0;
  for (size_t i = 0; i < length_size; ++i) header_length |= uint64_t{bytes[8 + i]} << (8 * i);
  size_t header_start = 8 + length_size;
  if (header_length > bytes.size() - header_start)
    fail("the header length ", header_length, " runs past the end of the ", bytes.size(), "-byte file");

  std::string_view header_text(reinterpret_cast<const char*>(bytes.data() + header_start), header_length);
  NpyHeader header = NpyHeaderParser(header_text, context).parse();
  NpyDtype dtype = parse_npy_descr(header.descr, context);
  const int64_t item_size = element_size(dtype.dtype);
  const int64_t count = checked_numel(header.shape, item_size, context);

  size_t data_start = header_start + header_length;
  uint64_t available = bytes.size() - data_start;
  if (available != static_cast<uint64_t>(count * item_size))
    fail("the shape and descr need ", count * item_size, " bytes of data but the file has ", available);

  // Fortran order: the data is C order for the reversed shape; permute back afterwards.
  std::vector<int64_t> stored_shape = header.shape;
  if (header.fortran_order) std::reverse(stored_shape.begin(), stored_shape.end());
  Tensor result = detail::make_empty(stored_shape, dtype.dtype, kCPU);
  if (count > 0) {
    auto* data = static_cast<uint8_t*>(result.data_ptr());
    std::memcpy(data, bytes.data() + data_start, count * item_size);
    if (dtype.big_endian) detail::byteswap_elements(data, count, item_size);
    if (dtype.dtype == kBool)  // any nonzero byte is True, as in NumPy; bools must hold 0 or 1
      for (int64_t i = 0; i < count; ++i) data[i] = data[i] != 0;
  }
  if (header.fortran_order && result.dim() > 1) {
    std::vector<int64_t> sizes = result.sizes().vec(), strides = result.strides().vec();
    std::reverse(sizes.begin(), sizes.end());
    std::reverse(strides.begin(), strides.end());
    result = detail::contiguous_cpu(detail::make_alias(result, sizes, strides, 0), "load_npy");
  }
  return result;
}

Tensor load_npy(const std::string& path) {
  std::vector<uint8_t> bytes = detail::read_file_bytes(path, "load_npy");
  return load_npy_bytes(bytes, "'" + path + "'");
}

}  // namespace strata
