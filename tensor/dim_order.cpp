// The dim order of elementwise results and loops. See Note [Strides of elementwise results].
#include <strata/tensor/dim_order.h>

#include <utility>

#include <strata/tensor/layout.h>

namespace strata::detail {

namespace {

// > 0: `inner` belongs outside `outer`; < 0: it is in place; 0: no operand says.
int compare_dims(IntArrayRef sizes, std::span<const IntArrayRef> strides, int64_t inner, int64_t outer) {
  const auto i = static_cast<size_t>(inner), o = static_cast<size_t>(outer);
  for (const IntArrayRef s : strides) {
    const int64_t a = s[i], b = s[o];
    if (a == 0 || b == 0) continue;
    if (a < b) return -1;
    if (a > b) return 1;
    if (sizes[i] > sizes[o]) return 1;  // equal strides: the smaller dim goes inside
  }
  return 0;
}

}  // namespace

DimVector innermost_first(IntArrayRef sizes, std::span<const IntArrayRef> strides) {
  const auto ndim = static_cast<int64_t>(sizes.size());
  DimVector order(sizes.size());
  for (int64_t i = 0; i < ndim; ++i) order[static_cast<size_t>(i)] = ndim - 1 - i;
  // Insertion sort that steps over pairs no operand orders: dim `moving` sinks past every dim
  // that belongs outside it and stops at the first that belongs inside.
  for (int64_t i = 1; i < ndim; ++i) {
    auto moving = static_cast<size_t>(i);
    for (auto j = static_cast<size_t>(i); j-- > 0;) {
      const int c = compare_dims(sizes, strides, order[j], order[moving]);
      if (c > 0) {
        std::swap(order[j], order[moving]);
        moving = j;
      } else if (c < 0) {
        break;
      }
    }
  }
  return order;
}

DimVector elementwise_strides(IntArrayRef sizes, std::initializer_list<std::reference_wrapper<const Tensor>> inputs) {
  const size_t ndim = sizes.size();
  if (ndim < 2) return {};
  bool contiguous = true;
  for (const Tensor& t : inputs) contiguous = contiguous && t.is_contiguous();
  if (contiguous) return {};  // the hot path: no size or stride comparisons
  bool same_dense = true;
  const Tensor* first = nullptr;
  for (const Tensor& t : inputs) {
    if (t.sizes() != sizes || (first != nullptr && t.strides() != first->strides())) {
      same_dense = false;
      break;
    }
    if (first == nullptr) first = &t;
  }
  if (same_dense && first != nullptr && is_non_overlapping_and_dense(first->sizes(), first->strides()))
    return DimVector(first->strides());
  // Each input's strides along the result's dims: 0 where it is broadcast. A size-1 dim of
  // the result keeps the input's stride there, as in TensorIterator.
  DimVector aligned[8];
  IntArrayRef views[8];
  size_t count = 0;
  for (const Tensor& t : inputs) {
    if (count == 8) break;  // elementwise ops have at most a handful of inputs
    DimVector& s = aligned[count];
    s.assign(ndim, 0);
    const size_t offset = ndim - static_cast<size_t>(t.dim());
    for (size_t d = 0; d < static_cast<size_t>(t.dim()); ++d)
      s[offset + d] = t.size(static_cast<int64_t>(d)) == 1 && sizes[offset + d] != 1 ? 0 : t.stride(static_cast<int64_t>(d));
    views[count] = s.ref();
    ++count;
  }
  const DimVector order = innermost_first(sizes, std::span<const IntArrayRef>(views, count));
  bool identity = true;
  for (size_t i = 0; i < ndim; ++i) identity = identity && order[i] == static_cast<int64_t>(ndim - 1 - i);
  if (identity) return {};
  DimVector strides(ndim, 1);
  int64_t stride = 1;
  for (int64_t d : order) {
    strides[static_cast<size_t>(d)] = stride;
    stride *= std::max<int64_t>(sizes[static_cast<size_t>(d)], 1);
  }
  return strides;
}

}  // namespace strata::detail
