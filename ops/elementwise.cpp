// The conversion and fill loops shared by the op families. See Note [Elementwise loops] in
// elementwise.h. Broadcasting and type promotion live in tensor/shape_checks.cpp.
#include <strata/ops/elementwise.h>

#include <cstring>
#include <optional>
#include <vector>

namespace strata::detail {

namespace {

template <class D, class S>
void convert_copy(const Tensor& dst, const Tensor& src) {
  const int64_t n = dst.numel();
  D* out = data_of<D>(dst);
  const S* in = data_of<S>(src);
  if (dst.is_contiguous() && src.is_contiguous() && src.numel() == n) {
    run_chunked(n, [out, in](int64_t begin, int64_t end) {
      D* __restrict o = out;
      const S* __restrict x = in;
      for (int64_t i = begin; i < end; ++i) o[i] = convert<D>(x[i]);
    });
    return;
  }
  const DimVector src_strides = broadcast_strides(dst.sizes(), src);
  const auto geometry =
      make_geometry<2>(dst.sizes(), {dst.strides(), src_strides.ref()}, {int64_t{sizeof(D)}, int64_t{sizeof(S)}});
  run_rows<2>(geometry, {reinterpret_cast<char*>(out), reinterpret_cast<char*>(const_cast<S*>(in))},
              [](char* const* p, int64_t count, const int64_t* s) {
                if (s[0] == static_cast<int64_t>(sizeof(D)) && s[1] == static_cast<int64_t>(sizeof(S))) {
                  D* o = reinterpret_cast<D*>(p[0]);
                  const S* x = reinterpret_cast<const S*>(p[1]);
                  for (int64_t i = 0; i < count; ++i) o[i] = convert<D>(x[i]);
                } else {
                  for (int64_t i = 0; i < count; ++i)
                    *reinterpret_cast<D*>(p[0] + i * s[0]) = convert<D>(*reinterpret_cast<const S*>(p[1] + i * s[1]));
                }
              });
}

}  // namespace

void copy_kernel(const Tensor& dst, const Tensor& src) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() && src.numel() == n) {
    char* out = static_cast<char*>(dst.impl()->data());
    const char* in = static_cast<const char*>(src.impl()->data());
    if (out == in) return;
    const int64_t item = dst.element_size();
    run_chunked(n, [out, in, item](int64_t begin, int64_t end) {
      std::memcpy(out + begin * item, in + begin * item, static_cast<size_t>((end - begin) * item));
    });
    return;
  }
  visit_dtype(dst.dtype(), [&]<class D>() {
    visit_dtype(src.dtype(), [&]<class S>() { convert_copy<D, S>(dst, src); });
  });
}

Tensor cast_to(const Tensor& t, ScalarType dtype) {
  Tensor out = make_empty(t.sizes(), dtype, t.device());
  copy_kernel(out, t);
  return out;
}

Tensor as_contiguous(const Tensor& t) { return t.is_contiguous() ? t : cast_to(t, t.dtype()); }

Tensor distinct_locations(const Tensor& t) {
  const IntArrayRef sizes = t.sizes(), strides = t.strides();
  bool repeats = false;
  for (size_t d = 0; d < sizes.size(); ++d) repeats = repeats || (sizes[d] > 1 && strides[d] == 0);
  if (!repeats) return t;
  std::vector<int64_t> distinct(sizes.begin(), sizes.end());
  for (size_t d = 0; d < sizes.size(); ++d)
    if (strides[d] == 0 && sizes[d] > 1) distinct[d] = 1;
  return make_alias(t, distinct, strides, t.storage_offset());
}

void fill_kernel(const Tensor& target, const Scalar& value, const char* op) {
  const Tensor dst = distinct_locations(target);
  visit_dtype(dst.dtype(), [&]<class T>() {
    const T fill = static_cast<T>(checked_scalar<T>(value, op));
    const int64_t n = dst.numel();
    if (n == 0) return;
    T* out = data_of<T>(dst);
    if (dst.is_contiguous()) {
      run_chunked(n, [out, fill](int64_t begin, int64_t end) { std::fill(out + begin, out + end, fill); });
      return;
    }
    const auto geometry = make_geometry<1>(dst.sizes(), {dst.strides()}, {int64_t{sizeof(T)}});
    run_rows<1>(geometry, {reinterpret_cast<char*>(out)}, [fill](char* const* p, int64_t count, const int64_t* s) {
      for (int64_t i = 0; i < count; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = fill;
    });
  });
}

Scalar read_scalar(const Tensor& t) {
  STRATA_INTERNAL_ASSERT(t.numel() == 1 && t.is_cpu(), "read_scalar needs one CPU element");
  return visit_dtype(t.dtype(), [&]<class T>() { return Scalar(*data_of<T>(t)); });
}

}  // namespace strata::detail
