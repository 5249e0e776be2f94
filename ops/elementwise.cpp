// The conversion and fill loops shared by the op families. See Note [Elementwise loops] in
// elementwise.h. Broadcasting and type promotion live in tensor/shape_checks.cpp.
#include <strata/ops/elementwise.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

namespace strata::detail {

namespace {

// Note [Transposing copies]
// A copy whose destination runs along one dim and whose source runs along another (x.t()
// made contiguous, NCHW to NHWC) reads the source down its columns. The tiled loop (Note
// [Tiled loops] in elementwise.h) keeps those lines in cache, but still moves one element per
// load. For 4-byte elements the copy instead moves 4 x 4 blocks: four contiguous loads along
// the source's run, a transpose in registers (GCC vector shuffles: SSE or wider on x86, NEON
// on ARM), four contiguous stores along the destination's. Edges take the scalar loop.
typedef uint32_t Word4 __attribute__((vector_size(16)));

// dst[r * dst_ld + c] = src[r + c * src_ld] for r < rows, c < cols (elements of 4 bytes).
void transpose_block(uint32_t* dst, const uint32_t* src, int64_t rows, int64_t cols, int64_t dst_ld,
                     int64_t src_ld) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    int64_t c = 0;
    for (; c + 4 <= cols; c += 4) {
      Word4 v[4];
      for (int k = 0; k < 4; ++k) std::memcpy(&v[k], src + r + (c + k) * src_ld, sizeof(Word4));
      const Word4 t0 = __builtin_shuffle(v[0], v[1], Word4{0, 4, 1, 5});
      const Word4 t1 = __builtin_shuffle(v[0], v[1], Word4{2, 6, 3, 7});
      const Word4 t2 = __builtin_shuffle(v[2], v[3], Word4{0, 4, 1, 5});
      const Word4 t3 = __builtin_shuffle(v[2], v[3], Word4{2, 6, 3, 7});
      const Word4 w[4] = {__builtin_shuffle(t0, t2, Word4{0, 1, 4, 5}), __builtin_shuffle(t0, t2, Word4{2, 3, 6, 7}),
                          __builtin_shuffle(t1, t3, Word4{0, 1, 4, 5}), __builtin_shuffle(t1, t3, Word4{2, 3, 6, 7})};
      for (int k = 0; k < 4; ++k) std::memcpy(dst + (r + k) * dst_ld + c, &w[k], sizeof(Word4));
    }
    for (; c < cols; ++c)
      for (int k = 0; k < 4; ++k) dst[(r + k) * dst_ld + c] = src[r + k + c * src_ld];
  }
  for (; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[r * dst_ld + c] = src[r + c * src_ld];
}

// The transposing copy of Note [Transposing copies], when the geometry is one: the innermost
// dim runs along dst, the next one along src, both dense in 4-byte elements.
bool try_transposing_copy(const LoopGeometry<2>& geometry, char* out, const char* in) {
  const size_t ndim = geometry.sizes.size();
  if (ndim < 2) return false;
  const auto& ds = geometry.strides[0];
  const auto& ss = geometry.strides[1];
  const int64_t rows = geometry.sizes[ndim - 2], cols = geometry.sizes[ndim - 1];
  if (rows < 8 || cols < 8 || ds[ndim - 1] != 4 || ss[ndim - 2] != 4 || ds[ndim - 2] % 4 != 0 ||
      ss[ndim - 1] % 4 != 0 || ds[ndim - 2] <= 0 || ss[ndim - 1] <= 0)
    return false;
  const int64_t dst_ld = ds[ndim - 2] / 4, src_ld = ss[ndim - 1] / 4;
  constexpr int64_t kBlock = 32;  // rows and columns per task, as the tiled loop's tiles
  const int64_t row_blocks = (rows + kBlock - 1) / kBlock, col_blocks = (cols + kBlock - 1) / kBlock;
  const int64_t per_matrix = row_blocks * col_blocks;
  const int64_t tasks = geometry.numel / (rows * cols) * per_matrix;
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      char* o = out;
      const char* x = in;
      int64_t matrix = task / per_matrix;
      for (size_t d = ndim - 2; d-- > 0;) {  // the dims outside the transposed pair
        o += (matrix % geometry.sizes[d]) * ds[d];
        x += (matrix % geometry.sizes[d]) * ss[d];
        matrix /= geometry.sizes[d];
      }
      const int64_t within = task % per_matrix;
      const int64_t r0 = within / col_blocks * kBlock, c0 = within % col_blocks * kBlock;
      transpose_block(reinterpret_cast<uint32_t*>(o) + r0 * dst_ld + c0,
                      reinterpret_cast<const uint32_t*>(x) + r0 + c0 * src_ld, std::min(kBlock, rows - r0),
                      std::min(kBlock, cols - c0), dst_ld, src_ld);
    }
  };
  const int64_t grain = std::max<int64_t>(1, kDefaultGrainSize / (kBlock * kBlock));
  if (tasks <= grain) run(0, tasks);
  else parallel_for(0, tasks, grain, [&run](int64_t begin, int64_t end) { run(begin, end); });
  return true;
}

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
  if constexpr (std::is_same_v<D, S> && sizeof(D) == 4) {
    if (try_transposing_copy(geometry, reinterpret_cast<char*>(out), reinterpret_cast<const char*>(in))) return;
  }
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
