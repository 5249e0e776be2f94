// Whole-tensor comparisons: equal and allclose. Plain functions, not ops: they return bool
// and work on any dtypes and strides of CPU tensors.
#include <strata/ops/elementwise.h>

namespace strata {
namespace {

void check_comparable(const char* op, const Tensor& a, const Tensor& b) {
  detail::check_same_device(op, a, b);
  STRATA_CHECK(!a.is_meta(), "[", op, "] cannot compare meta tensors: they have no data");
}

// Calls row(pointers, count, strides) over a and b (converted to T) broadcast to `sizes`.
template <class T, class RowFn>
void for_each_pair(const Tensor& a, const Tensor& b, IntArrayRef sizes, const RowFn& row) {
  const Tensor x = a.dtype() == scalar_type_of<T> ? a : detail::cast_to(a, scalar_type_of<T>);
  const Tensor y = b.dtype() == scalar_type_of<T> ? b : detail::cast_to(b, scalar_type_of<T>);
  const DimVector x_strides = detail::broadcast_strides(sizes, x), y_strides = detail::broadcast_strides(sizes, y);
  constexpr int64_t size = sizeof(T);
  const auto geometry = detail::make_geometry<2>(sizes, {x_strides.ref(), y_strides.ref()}, {size, size});
  if (geometry.numel == 0) return;
  detail::for_each_row<2>(geometry,
                          {static_cast<char*>(x.impl()->data()), static_cast<char*>(y.impl()->data())}, 0,
                          geometry.numel, row);
}

}  // namespace

bool equal(const Tensor& a, const Tensor& b) {
  check_comparable("equal", a, b);
  if (a.sizes() != b.sizes()) return false;
  bool same = true;
  visit_dtype(promote_types(a.dtype(), b.dtype()), [&]<class T>() {
    using C = compute_type_t<T>;
    for_each_pair<T>(a, b, a.sizes(), [&same](char* const* p, int64_t count, const int64_t* s) {
      for (int64_t i = 0; i < count && same; ++i) {
        const C x = static_cast<C>(*reinterpret_cast<const T*>(p[0] + i * s[0]));
        const C y = static_cast<C>(*reinterpret_cast<const T*>(p[1] + i * s[1]));
        same = x == y;
      }
    });
  });
  return same;
}

// |a - b| <= atol + rtol * |b| elementwise (broadcasting), computed in double; equal
// infinities are close, NaN is never close.
bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  check_comparable("allclose", a, b);
  STRATA_CHECK_VALUE(rtol >= 0 && atol >= 0, "[allclose] rtol and atol must be non-negative, got rtol=", rtol,
                     " and atol=", atol);
  const DimVector sizes = broadcast_shapes(a.sizes(), b.sizes(), "allclose");
  bool close = true;
  for_each_pair<double>(a, b, sizes, [&](char* const* p, int64_t count, const int64_t* s) {
    for (int64_t i = 0; i < count && close; ++i) {
      const double x = *reinterpret_cast<const double*>(p[0] + i * s[0]);
      const double y = *reinterpret_cast<const double*>(p[1] + i * s[1]);
      close = x == y || (std::isfinite(y) && std::abs(x - y) <= atol + rtol * std::abs(y));
    }
  });
  return close;
}

}  // namespace strata
