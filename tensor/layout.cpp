#include <strata/tensor/errors.h>
#include <strata/tensor/layout.h>

#include <algorithm>
#include <array>

namespace strata {

std::string_view layout_name(Layout layout) {
  static constexpr std::array<std::string_view, kNumLayouts> names = {"Strided",   "Sparse",    "SparseCsr", "Mkldnn",
                                                                      "SparseCsc", "SparseBsr", "SparseBsc", "Jagged"};
  const auto index = static_cast<size_t>(layout);
  return index < names.size() ? names[index] : std::string_view("UnknownLayout");
}

std::string_view memory_format_name(MemoryFormat format) {
  static constexpr std::array<std::string_view, kNumMemoryFormats> names = {"Contiguous", "Preserve", "ChannelsLast",
                                                                            "ChannelsLast3d"};
  const auto index = static_cast<size_t>(format);
  return index < names.size() ? names[index] : std::string_view("UnknownMemoryFormat");
}

std::ostream& operator<<(std::ostream& out, Layout layout) { return out << layout_name(layout); }
std::ostream& operator<<(std::ostream& out, MemoryFormat format) { return out << memory_format_name(format); }

namespace detail {

void check_strided(Layout layout, const char* op) {
  STRATA_CHECK_VALUE(layout == kStrided, "[", op, "] layout ", layout,
                     " is not supported: strata tensors are strided (kStrided)");
}

namespace {
// The rank a channels-last format needs; 0 for the others.
int64_t channels_last_rank(MemoryFormat format) {
  if (format == MemoryFormat::ChannelsLast) return 4;
  if (format == MemoryFormat::ChannelsLast3d) return 5;
  return 0;
}

// The dims of a `rank`-d tensor from the fastest-varying to the slowest in `format`:
// channels last is C, then the spatial dims from the last, then N.
DimVector dim_order(int64_t rank, MemoryFormat format) {
  DimVector order;
  if (channels_last_rank(format) != 0) {
    order.push_back(1);
    for (int64_t d = rank - 1; d >= 2; --d) order.push_back(d);
    order.push_back(0);
  } else {
    for (int64_t d = rank - 1; d >= 0; --d) order.push_back(d);
  }
  return order;
}
}  // namespace

void check_memory_format(MemoryFormat format, int64_t dim, const char* op) {
  STRATA_CHECK_VALUE(static_cast<int>(format) >= 0 && static_cast<int>(format) < kNumMemoryFormats, "[", op,
                     "] unknown memory format ", static_cast<int>(format));
  STRATA_CHECK_VALUE(format != MemoryFormat::Preserve, "[", op,
                     "] memory format Preserve is not a layout to make: "
                     "use Contiguous, ChannelsLast or ChannelsLast3d");
  const int64_t rank = channels_last_rank(format);
  STRATA_CHECK_VALUE(rank == 0 || dim == rank, "[", op, "] memory format ", format, " needs a ", rank,
                     "-d tensor, got ", dim, " dims");
}

DimVector strides_for(IntArrayRef sizes, MemoryFormat format) {
  const auto rank = static_cast<int64_t>(sizes.size());
  DimVector strides(sizes.size(), 1);
  int64_t stride = 1;
  for (int64_t d : dim_order(rank, format)) {
    strides[static_cast<size_t>(d)] = stride;
    stride *= std::max<int64_t>(sizes[static_cast<size_t>(d)], 1);
  }
  return strides;
}

bool is_contiguous_as(IntArrayRef sizes, IntArrayRef strides, MemoryFormat format) {
  const int64_t rank = channels_last_rank(format);
  if (rank != 0 && static_cast<int64_t>(sizes.size()) != rank) return false;
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return true;  // no elements
  int64_t expected = 1;
  for (int64_t d : dim_order(static_cast<int64_t>(sizes.size()), format)) {
    const auto i = static_cast<size_t>(d);
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

bool is_non_overlapping_and_dense(IntArrayRef sizes, IntArrayRef strides) {
  DimVector order;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return true;
    if (sizes[d] != 1) order.push_back(static_cast<int64_t>(d));
  }
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return strides[static_cast<size_t>(a)] < strides[static_cast<size_t>(b)]; });
  int64_t expected = 1;
  for (int64_t d : order) {
    if (strides[static_cast<size_t>(d)] != expected) return false;
    expected *= sizes[static_cast<size_t>(d)];
  }
  return true;
}

MemoryFormat suggest_memory_format(IntArrayRef sizes, IntArrayRef strides) {
  const auto rank = static_cast<int64_t>(sizes.size());
  const MemoryFormat candidate = rank == 4   ? MemoryFormat::ChannelsLast
                                 : rank == 5 ? MemoryFormat::ChannelsLast3d
                                             : MemoryFormat::Contiguous;
  if (candidate == MemoryFormat::Contiguous || strides[1] == 0) return MemoryFormat::Contiguous;
  // In channels-last order each dim's stride is at least the span of the dims before it. A
  // batch dim whose stride only matches the channels' span (N x 1 x 1 x 1 views) is ambiguous
  // and, as in PyTorch, read as contiguous.
  int64_t span = 0;
  for (int64_t d : dim_order(rank, candidate)) {
    const auto i = static_cast<size_t>(d);
    if (sizes[i] == 0 || strides[i] < span) return MemoryFormat::Contiguous;
    if (d == 0 && span == strides[1]) return MemoryFormat::Contiguous;
    span = strides[i] * (sizes[i] > 1 ? sizes[i] : 1);
  }
  return candidate;
}

DimVector strides_for_copy(IntArrayRef sizes, IntArrayRef strides, MemoryFormat format) {
  if (format != MemoryFormat::Preserve) return strides_for(sizes, format);
  if (is_non_overlapping_and_dense(sizes, strides)) return DimVector(strides);
  return strides_for(sizes, suggest_memory_format(sizes, strides));
}

}  // namespace detail
}  // namespace strata
