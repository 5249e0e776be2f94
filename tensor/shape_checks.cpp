// Broadcasting, type promotion and the checks of written tensors (see shape_checks.h).
#include <strata/tensor/shape_checks.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace strata {

DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op) {
  if (a == b) return DimVector(a);
  const size_t ndim = std::max(a.size(), b.size());
  DimVector result(ndim, 1);
  for (size_t i = 0; i < ndim; ++i) {  // i counts from the right
    const int64_t size_a = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t size_b = i < b.size() ? b[b.size() - 1 - i] : 1;
    const size_t dim = ndim - 1 - i;
    if (size_a == size_b || size_b == 1) {
      result[dim] = size_a;
    } else if (size_a == 1) {
      result[dim] = size_b;
    } else {
      detail::throw_error<ValueError>("[", op, "] shapes ", a, " and ", b, " cannot be broadcast (dimension ", dim,
                                      ": ", size_a, " vs ", size_b, ")");
    }
  }
  return result;
}

// Note [Result type]
// torch.result_type sorts operands into three groups: tensors with dimensions, zero-dim
// tensors, and wrapped numbers (C++ Scalars here). Each group promotes within itself; then a
// lower group only matters when it is of a higher category (bool < integral < floating) than
// the group above it, or when the group above is bool. So int32[3] + int64 0-d -> int32,
// int32[3] + 2.5 -> float32 (a floating Scalar counts as the default dtype), float16[3] + 2.5
// -> float16, bool[3] + 1 -> int64, and two zero-dim tensors promote normally.
namespace {

struct ResultTypeState {
  std::optional<ScalarType> dimensioned;
  std::optional<ScalarType> zero_dim;
  std::optional<ScalarType> wrapped;
};

void promote_into(std::optional<ScalarType>& slot, ScalarType type) {
  slot = slot ? promote_types(*slot, type) : type;
}

void add_tensor(ResultTypeState& state, const Tensor& t) {
  promote_into(t.dim() == 0 ? state.zero_dim : state.dimensioned, t.dtype());
}

std::optional<ScalarType> combine_categories(std::optional<ScalarType> higher, std::optional<ScalarType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating_point(*higher)) return higher;
  if (*higher == kBool || is_floating_point(*lower)) return promote_types(*higher, *lower);
  return higher;
}

ScalarType resolve(const ResultTypeState& state) {
  return *combine_categories(state.dimensioned, combine_categories(state.zero_dim, state.wrapped));
}

}  // namespace

ScalarType result_type(const Tensor& a, const Tensor& b) {
  if (a.dtype() == b.dtype()) return a.dtype();
  ResultTypeState state;
  add_tensor(state, a);
  add_tensor(state, b);
  return resolve(state);
}

ScalarType result_type(const Tensor& a, const Scalar& b) {
  ResultTypeState state;
  add_tensor(state, a);
  promote_into(state.wrapped, b.default_dtype());
  return resolve(state);
}

namespace detail {

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  if (a.device() != b.device()) [[unlikely]]
    throw_error<Error>("[", op, "] expected all tensors on the same device, got ", a.device(), " and ", b.device());
}

DimVector broadcast_strides(IntArrayRef sizes, const Tensor& t) {
  const IntArrayRef t_sizes = t.sizes();
  const IntArrayRef t_strides = t.strides();
  const size_t offset = sizes.size() - t_sizes.size();
  DimVector strides(sizes.size(), 0);
  for (size_t d = 0; d < t_sizes.size(); ++d) strides[offset + d] = t_sizes[d] == 1 ? 0 : t_strides[d];
  return strides;
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating_point(from) && is_integral(to, /*include_bool=*/true)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

void check_can_cast(const char* op, ScalarType from, ScalarType to) {
  if (!can_cast(from, to)) [[unlikely]]
    throw_error<TypeError>("[", op, "] result type ", from, " can't be cast to the desired output type ", to);
}

void check_no_internal_overlap(const char* op, const Tensor& t) {
  const IntArrayRef sizes = t.sizes();
  const IntArrayRef strides = t.strides();
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > 1 && strides[d] == 0) [[unlikely]]
      throw_error<Error>("[", op, "] unsupported operation: more than one element of the written-to tensor refers to "
                         "a single memory location (shape ", sizes, ", strides ", strides, "); clone() it first");
  }
}

namespace {

// The first and last storage elements a tensor with elements reaches.
std::pair<int64_t, int64_t> element_range(const Tensor& t) {
  int64_t lowest = t.storage_offset(), highest = lowest;
  for (int64_t d = 0; d < t.dim(); ++d) (t.strides()[d] < 0 ? lowest : highest) += (t.sizes()[d] - 1) * t.strides()[d];
  return {lowest, highest};
}

// Calls fn(first byte) for each element of t, in storage bytes from the storage's start.
template <class F>
void for_each_element_byte(const Tensor& t, F&& fn) {
  const int64_t item = element_size(t.dtype());
  const IntArrayRef sizes = t.sizes(), strides = t.strides();
  DimVector index(sizes.size(), 0);
  int64_t offset = t.storage_offset();
  for (int64_t n = t.numel(); n > 0; --n) {
    fn(offset * item);
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
      if (++index[d] < sizes[d]) {
        offset += strides[d];
        break;
      }
      offset -= (sizes[d] - 1) * strides[d];
      index[d] = 0;
    }
  }
}

// Whether some byte of `a` is also a byte of `b`, where their byte ranges intersect in
// [low, high): a bitmap of a's bytes in that window, probed with b's. nullopt when the window
// is too large to map (then the caller assumes they overlap).
std::optional<bool> elements_overlap(const Tensor& a, const Tensor& b, int64_t low, int64_t high) {
  constexpr int64_t kMaxWindowBytes = int64_t{1} << 28;  // a 32 MiB bitmap
  if (high - low > kMaxWindowBytes) return std::nullopt;
  std::vector<bool> marked(static_cast<size_t>(high - low), false);
  const int64_t a_item = element_size(a.dtype()), b_item = element_size(b.dtype());
  for_each_element_byte(a, [&](int64_t first) {
    for (int64_t byte = std::max(first, low); byte < std::min(first + a_item, high); ++byte) marked[byte - low] = true;
  });
  bool overlap = false;
  for_each_element_byte(b, [&](int64_t first) {
    for (int64_t byte = std::max(first, low); byte < std::min(first + b_item, high) && !overlap; ++byte)
      overlap = marked[byte - low];
  });
  return overlap;
}

}  // namespace

// See Note [Overlapping in-place ops].
void check_no_partial_overlap(const char* op, const Tensor& written, const Tensor& input) {
  if (!input.defined() || written.impl()->storage() != input.impl()->storage()) return;
  if (written.numel() == 0 || input.numel() == 0) return;
  const bool same_geometry = written.storage_offset() == input.storage_offset() &&
                             written.sizes() == input.sizes() && written.strides() == input.strides();
  if (same_geometry) return;
  const auto [w_low, w_high] = element_range(written);
  const auto [i_low, i_high] = element_range(input);
  const int64_t w_size = element_size(written.dtype()), i_size = element_size(input.dtype());
  const int64_t low = std::max(w_low * w_size, i_low * i_size);
  const int64_t high = std::min((w_high + 1) * w_size, (i_high + 1) * i_size);
  if (high <= low) return;  // the byte ranges are disjoint
  // Ranges that interleave (x.select(1, 0) and x.select(1, 1)) may still share no element.
  if (elements_overlap(written, input, low, high) == false) return;
  throw_error<Error>("[", op, "] unsupported operation: some elements of the input tensor and the written-to tensor "
                     "refer to a single memory location. Please clone() the tensor before performing the operation.");
}

}  // namespace detail
}  // namespace strata
