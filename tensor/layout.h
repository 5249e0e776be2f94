#pragma once
// Layout and MemoryFormat: how a tensor's elements are laid out, as in LibTorch. Strata tensors
// are always strided (kStrided); a memory format names an order of the strides of a strided
// tensor: row-major (Contiguous) or channels last (NHWC for 4-d, NDHWC for 5-d). Both box as
// ints in schemas (`Layout? layout=None`, `MemoryFormat? memory_format=None`), with PyTorch's
// numbering, so kernels written against ATen's signatures take them unchanged.
#include <cstdint>
#include <ostream>
#include <string_view>

#include <strata/tensor/array_ref.h>
#include <strata/tensor/dim_vector.h>

namespace strata {

// Only kStrided is supported; the others exist so that code naming them compiles and gets a
// clear error instead of a silently strided tensor.
enum class Layout : int8_t { Strided, Sparse, SparseCsr, Mkldnn, SparseCsc, SparseBsr, SparseBsc, Jagged };
inline constexpr Layout kStrided = Layout::Strided;
inline constexpr Layout kSparse = Layout::Sparse;
inline constexpr Layout kSparseCsr = Layout::SparseCsr;
inline constexpr Layout kMkldnn = Layout::Mkldnn;
inline constexpr Layout kSparseCsc = Layout::SparseCsc;
inline constexpr Layout kSparseBsr = Layout::SparseBsr;
inline constexpr Layout kSparseBsc = Layout::SparseBsc;
inline constexpr Layout kJagged = Layout::Jagged;
inline constexpr int kNumLayouts = 8;

// Preserve is only an argument (clone, _to_copy): keep the source's strides when they are
// dense, else pick the format they are closest to (suggest_memory_format).
enum class MemoryFormat : int8_t { Contiguous, Preserve, ChannelsLast, ChannelsLast3d };
inline constexpr int kNumMemoryFormats = 4;

std::string_view layout_name(Layout layout);                // "Strided", "Sparse", ...
std::string_view memory_format_name(MemoryFormat format);   // "Contiguous", "ChannelsLast", ...
std::ostream& operator<<(std::ostream& out, Layout layout);  // "Strided", as LibTorch prints it
std::ostream& operator<<(std::ostream& out, MemoryFormat format);

namespace detail {
// Throws ValueError naming `op` unless `layout` is kStrided.
void check_strided(Layout layout, const char* op);
// ChannelsLast needs 4 dims, ChannelsLast3d 5; Preserve is refused where a format must be
// concrete (empty, contiguous). Throws ValueError naming `op`.
void check_memory_format(MemoryFormat format, int64_t dim, const char* op);

// The strides of a dense tensor of `sizes` whose dims are laid out in `format` (not Preserve).
// As for contiguous strides, dims of size 0 or 1 do not scale the strides after them.
DimVector strides_for(IntArrayRef sizes, MemoryFormat format);
// Whether `strides` lay out `sizes` exactly as strides_for(sizes, format) would, ignoring the
// strides of size-1 dims (any tensor with fewer than 2 elements in a format is in it).
bool is_contiguous_as(IntArrayRef sizes, IntArrayRef strides, MemoryFormat format);
// Whether every element has its own location and the locations fill one block without gaps,
// in any order of dims (a transposed or channels-last tensor is; a slice or an expand is not).
bool is_non_overlapping_and_dense(IntArrayRef sizes, IntArrayRef strides);
// The format whose order of dims `strides` follow: ChannelsLast(3d) when a 4-d (5-d) tensor's
// channel dim has the smallest stride and the spatial dims follow it in order, else Contiguous.
MemoryFormat suggest_memory_format(IntArrayRef sizes, IntArrayRef strides);
// The strides of a new tensor that copies one with `sizes` and `strides` in `format`: Preserve
// keeps dense strides as they are and otherwise lays out in suggest_memory_format's order.
DimVector strides_for_copy(IntArrayRef sizes, IntArrayRef strides, MemoryFormat format);
}  // namespace detail

}  // namespace strata
