// operator<< for tensors, in the style of PyTorch's Python repr.
#include <strata/tensor/serialize.h>
#include <strata/tensor/tensor.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace strata {

// Note [Tensor printing]
// Tensors print as torch's repr does (torch/_tensor_str.py with default print options:
// precision 4, line width 80, threshold 1000, 3 edge items), so what users see matches what
// they know: one formatter chooses, from every element that will be printed, between integer
// style ("1.", "2."), fixed ("0.5000") and scientific ("1.0000e-05") notation and a common
// width; tensors of more than 1000 elements print 3 items at each edge of every dim with
// "..." between. Suffixes follow: device when not CPU, dtype when it cannot be inferred from
// the values (not float32, int64 or bool), size for empty and Meta tensors, requires_grad.
// dtypes print as "float64" (no "torch." prefix); Meta tensors print "..." for their values.
namespace {

constexpr int kPrecision = 4;
constexpr int64_t kLineWidth = 80;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;

std::string_view repr_dtype_name(ScalarType type) {
  switch (type) {
    case kBool: return "bool";
    case kUInt8: return "uint8";
    case kInt8: return "int8";
    case kInt16: return "int16";
    case kInt32: return "int32";
    case kInt64: return "int64";
    case kFloat16: return "float16";
    case kBFloat16: return "bfloat16";
    case kFloat32: return "float32";
    case kFloat64: return "float64";
  }
  return "unknown";
}

// Python's tuple repr of a shape: (2, 3), (5,), ().
std::string shape_tuple(IntArrayRef sizes) {
  std::string text = "(";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + (sizes.size() == 1 ? ",)" : ")");
}

// printf-style formatting with Python's spelling of non-finite values ("nan", never "-nan").
std::string format_double(double value, char style, int precision) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buffer[512];
  char format[] = {'%', '.', '*', style, '\0'};
  std::snprintf(buffer, sizeof(buffer), format, precision, value);
  return buffer;
}

// Reads one element of a CPU tensor, `offset` elements from its data start.
struct ElementReader {
  const char* data;
  ScalarType dtype;

  double floating(int64_t offset) const {
    return visit_dtype(dtype, [&]<class T>() {
      return static_cast<double>(static_cast<compute_type_t<T>>(reinterpret_cast<const T*>(data)[offset]));
    });
  }
  int64_t integral(int64_t offset) const {
    return visit_dtype(dtype, [&]<class T>() -> int64_t {
      // Only called for integral and bool dtypes; the float branch is there so every type compiles.
      if constexpr (std::is_integral_v<T>) return static_cast<int64_t>(reinterpret_cast<const T*>(data)[offset]);
      else return static_cast<int64_t>(static_cast<compute_type_t<T>>(reinterpret_cast<const T*>(data)[offset]));
    });
  }
};

bool elides(int64_t size, bool summarize) { return summarize && size > 2 * kEdgeItems; }

// The indices printed along a dim of `size`: all, or kEdgeItems at each end when summarising.
std::vector<int64_t> printed_indices(int64_t size, bool summarize) {
  std::vector<int64_t> indices;
  bool elide = elides(size, summarize);
  for (int64_t i = 0; i < size; ++i) {
    if (elide && i == kEdgeItems) i = size - kEdgeItems;
    indices.push_back(i);
  }
  return indices;
}

// Chooses notation and width from the printed elements, as torch's _Formatter does.
class ValueFormatter {
 public:
  ValueFormatter(const ElementReader& reader, const std::vector<int64_t>& offsets)
      : reader_(reader), floating_(is_floating_point(reader.dtype)) {
    if (floating_) {
      choose_floating_style(offsets);
      return;
    }
    for (int64_t offset : offsets) max_width_ = std::max(max_width_, static_cast<int64_t>(integral_text(offset).size()));
  }

  int64_t width() const { return max_width_; }

  std::string format(int64_t offset) const {
    std::string text = floating_ ? floating_text(reader_.floating(offset)) : integral_text(offset);
    if (static_cast<int64_t>(text.size()) < max_width_) text.insert(0, max_width_ - text.size(), ' ');
    return text;
  }

 private:
  std::string integral_text(int64_t offset) const {
    int64_t value = reader_.integral(offset);
    if (reader_.dtype == kBool) return value ? "True" : "False";
    return std::to_string(value);
  }

  std::string floating_text(double value) const {
    if (sci_mode_) return format_double(value, 'e', kPrecision);
    if (!int_mode_) return format_double(value, 'f', kPrecision);
    std::string text = format_double(value, 'f', 0);
    return std::isfinite(value) ? text + "." : text;
  }

  void choose_floating_style(const std::vector<int64_t>& offsets) {
    std::vector<double> values;  // the nonzero finite ones
    for (int64_t offset : offsets) {
      double value = reader_.floating(offset);
      if (std::isfinite(value) && value != 0.0) values.push_back(value);
    }
    if (values.empty()) return;
    double min_abs = std::fabs(values[0]), max_abs = min_abs;
    for (double value : values) {
      min_abs = std::min(min_abs, std::fabs(value));
      max_abs = std::max(max_abs, std::fabs(value));
      if (value != std::ceil(value)) int_mode_ = false;
    }
    bool wide_range = max_abs / min_abs > 1000.0 || max_abs > 1.0e8;
    sci_mode_ = int_mode_ ? wide_range : wide_range || min_abs < 1.0e-4;
    // In integer style the width counts the trailing ".", as torch's does.
    for (double value : values) max_width_ = std::max(max_width_, static_cast<int64_t>(floating_text(value).size()));
  }

  ElementReader reader_;
  bool floating_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  int64_t max_width_ = 1;
};

// Writes the bracketed values of a strided CPU tensor; see Note [Tensor printing].
class ValuePrinter {
 public:
  ValuePrinter(IntArrayRef sizes, IntArrayRef strides, const ElementReader& reader, bool summarize)
      : sizes_(sizes), strides_(strides), summarize_(summarize), formatter_(reader, printed_offsets()) {}

  std::string print(int64_t indent) const {
    if (sizes_.empty()) return formatter_.format(0);
    return dims_string(0, 0, indent);
  }

 private:
  std::vector<int64_t> printed_offsets() const {
    std::vector<int64_t> offsets;
    collect_offsets(0, 0, offsets);
    return offsets;
  }

  void collect_offsets(size_t dim, int64_t offset, std::vector<int64_t>& offsets) const {
    if (dim == sizes_.size()) {
      offsets.push_back(offset);
      return;
    }
    for (int64_t i : printed_indices(sizes_[dim], summarize_)) collect_offsets(dim + 1, offset + i * strides_[dim], offsets);
  }

  std::string dims_string(size_t dim, int64_t offset, int64_t indent) const {
    if (dim + 1 == sizes_.size()) return vector_string(offset, indent);
    std::string separator = "," + std::string(sizes_.size() - dim - 1, '\n') + std::string(indent + 1, ' ');
    std::string text = "[";
    bool elide = elides(sizes_[dim], summarize_);
    bool first = true;
    for (int64_t i : printed_indices(sizes_[dim], summarize_)) {
      if (!first) text += separator;
      if (elide && i == sizes_[dim] - kEdgeItems) text += "..." + separator;
      text += dims_string(dim + 1, offset + i * strides_[dim], indent + 1);
      first = false;
    }
    return text + "]";
  }

  std::string vector_string(int64_t offset, int64_t indent) const {
    int64_t size = sizes_.back(), stride = strides_.back();
    int64_t per_line = std::max<int64_t>(1, (kLineWidth - indent) / (formatter_.width() + 2));
    std::vector<std::string> items;
    for (int64_t i : printed_indices(size, summarize_)) {
      if (elides(size, summarize_) && i == size - kEdgeItems) items.push_back(" ...");
      items.push_back(formatter_.format(offset + i * stride));
    }
    std::string text = "[";
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) text += i % per_line == 0 ? ",\n" + std::string(indent + 1, ' ') : ", ";
      text += items[i];
    }
    return text + "]";
  }

  IntArrayRef sizes_;
  IntArrayRef strides_;
  bool summarize_;
  ValueFormatter formatter_;
};

// torch's _add_suffixes: ", suffix", or a new line when the line would pass the width.
std::string add_suffixes(std::string text, const std::vector<std::string>& suffixes, int64_t indent) {
  size_t newline = text.rfind('\n');
  int64_t last_line_length = static_cast<int64_t>(text.size()) -
                             (newline == std::string::npos ? -1 : static_cast<int64_t>(newline)) + 1;
  for (const std::string& suffix : suffixes) {
    int64_t length = static_cast<int64_t>(suffix.size());
    if (last_line_length + length + 2 > kLineWidth) {
      text += ",\n" + std::string(indent, ' ') + suffix;
      last_line_length = indent + length;
    } else {
      text += ", " + suffix;
      last_line_length += length + 2;
    }
  }
  return text + ")";
}

std::string values_string(const Tensor& tensor, int64_t indent) {
  // CPU values are read in place, through the strides, with no copy and no op (tensor/ calls
  // none); a device tensor's come to the host first (Note [Values without ops]).
  if (!tensor.is_cpu()) return values_string(detail::contiguous_cpu(tensor, "print"), indent);
  TensorImpl* impl = tensor.impl();
  ElementReader reader{static_cast<const char*>(impl->data()), impl->dtype()};
  ValuePrinter printer(impl->sizes(), impl->strides(), reader, impl->numel() > kThreshold);
  return printer.print(indent);
}

std::string tensor_repr(const Tensor& tensor) {
  const std::string prefix = "tensor(";
  const int64_t indent = static_cast<int64_t>(prefix.size());
  std::vector<std::string> suffixes;
  Device device = tensor.device();
  ScalarType dtype = tensor.dtype();
  std::string dtype_suffix = "dtype=" + std::string(repr_dtype_name(dtype));
  if (!device.is_cpu()) suffixes.push_back("device='" + device.str() + "'");
  std::string values;
  if (device.is_meta() || tensor.numel() == 0) {
    if (device.is_meta() || tensor.dim() != 1) suffixes.push_back("size=" + shape_tuple(tensor.sizes()));
    if (dtype != kFloat32) suffixes.push_back(dtype_suffix);
    values = device.is_meta() ? "..." : "[]";
  } else {
    if (dtype != kFloat32 && dtype != kInt64 && dtype != kBool) suffixes.push_back(dtype_suffix);
    values = values_string(tensor, indent);
  }
  AutogradMetaInterface* meta = tensor.impl()->autograd_meta();
  if (meta && meta->requires_grad()) suffixes.push_back("requires_grad=True");
  return add_suffixes(prefix + values, suffixes, indent);
}

}  // namespace

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) {
  if (!tensor.defined()) return out << "[ undefined Tensor ]";
  return out << tensor_repr(tensor);
}

}  // namespace strata
