#pragma once
// Internal to ops/ (not public API): broadcasting and promotion helpers, checked scalar
// conversion, and the elementwise loops shared by the pointwise, creation, shape and
// comparison kernels. See Note [Elementwise loops].
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>

#include <strata/ops/ops.h>
#include <strata/tensor/dim_order.h>
#include <strata/tensor/shape_checks.h>

namespace strata::detail {

// ---------------------------------------------------------------------------------------
// Devices, shapes and dtypes.

// check_same_device, can_cast, the overlap checks...: tensor/shape_checks.h.

// ---------------------------------------------------------------------------------------
// Kernel-level helpers for CPU tensors (no dispatch).

// Copies src, broadcast to dst's shape, into dst with dtype conversion. Both on the CPU.
void copy_kernel(const Tensor& dst, const Tensor& src);
// A new contiguous CPU tensor with t's values converted to `dtype`.
Tensor cast_to(const Tensor& t, ScalarType dtype);
// t itself when contiguous, else a contiguous copy.
Tensor as_contiguous(const Tensor& t);
// Sets every element of dst to value (checked conversion; errors name `op`). dst may refer to
// one memory location from several elements (Note [Idempotent in-place ops] in structured.h):
// each location is written once.
void fill_kernel(const Tensor& dst, const Scalar& value, const char* op);
// t without its repeats: dims of stride 0 (expanded) cut to size 1, so that every memory
// location t reaches is reached once. An alias of t (no dispatch); t itself when it has none.
Tensor distinct_locations(const Tensor& t);
// The single element of a one-element CPU tensor.
Scalar read_scalar(const Tensor& t);

// ---------------------------------------------------------------------------------------
// Scalars.

// Note [Checked scalar conversion]
// A Scalar given by the user (a fill value, alpha, the `other` of add.Scalar) converts to a
// dtype like PyTorch's checked_convert: out-of-range values throw instead of wrapping, except
// that negative integers may wrap into unsigned types (uint8 - 1 works). The value is returned
// in the compute type, so a Half tensor plus 0.1 adds 0.1f, not 0.1 rounded to Half.
template <class T>
compute_type_t<T> checked_scalar(const Scalar& value, const char* op) {
  using C = compute_type_t<T>;
  if constexpr (std::is_same_v<T, bool>) {
    return value.to_bool();
  } else if constexpr (std::is_integral_v<T>) {
    return value.to<T>(op);  // integral types compute in themselves (C == T)
  } else {
    const double d = value.to_double();
    double max_value = 0;
    if constexpr (std::is_same_v<T, Half>) max_value = 65504.0;
    else if constexpr (std::is_same_v<T, BFloat16>) max_value = 3.3895313892515355e38;
    else max_value = static_cast<double>(std::numeric_limits<T>::max());
    if (std::isfinite(d) && std::abs(d) > max_value) value.throw_does_not_fit(op, scalar_type_name(scalar_type_of<T>));
    return static_cast<C>(d);
  }
}

// Value conversion between storage types (through float for the 16-bit floats).
// Note [Floating to narrow integer]
// A floating value converted to an integer type narrower than 64 bits goes through int64 and
// wraps (-1.0 -> uint8 255), as PyTorch does on both devices. A direct cast is undefined
// behaviour when the value does not fit, and the devices really differ: x86 wraps through a
// 32-bit register, the GPU's conversion saturates (-1.0 -> 0). cuda/elementwise.cuh's store()
// does the same.
template <class To, class From>
inline To convert(From value) {
  if constexpr (std::is_same_v<To, From>) return value;
  else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>)
    return To(static_cast<float>(value));
  else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>)
    return convert<To>(static_cast<float>(value));
  else if constexpr (std::is_integral_v<To> && !std::is_same_v<To, bool> && sizeof(To) < 8 &&
                     std::is_floating_point_v<From>)
    return static_cast<To>(static_cast<int64_t>(value));
  else return static_cast<To>(value);
}

// Integer arithmetic that wraps like PyTorch's instead of overflowing into undefined behaviour.
template <class C>
inline C wrapping_add(C x, C y) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
    return static_cast<C>(static_cast<std::make_unsigned_t<C>>(x) + static_cast<std::make_unsigned_t<C>>(y));
  else return static_cast<C>(x + y);
}
template <class C>
inline C wrapping_sub(C x, C y) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
    return static_cast<C>(static_cast<std::make_unsigned_t<C>>(x) - static_cast<std::make_unsigned_t<C>>(y));
  else return static_cast<C>(x - y);
}
template <class C>
inline C wrapping_mul(C x, C y) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
    return static_cast<C>(static_cast<std::make_unsigned_t<C>>(x) * static_cast<std::make_unsigned_t<C>>(y));
  else return static_cast<C>(x * y);
}

// ---------------------------------------------------------------------------------------
// Note [Elementwise loops]
// Every elementwise kernel first tries a contiguous fast path: plain pointer loops over
// [begin, end) that the compiler vectorises, chunked with parallel_for only when the tensor
// holds more than one grain (kDefaultGrainSize), so small tensors never touch the thread
// pool or build a std::function. Only tensors that need it pay for the general machinery:
// a LoopGeometry of byte strides in which size-1 dimensions are dropped and dimensions that
// are contiguous with respect to each other (for every operand) are merged, walked row by
// row: the innermost dimension is one call of a row function with its own strides, so the
// row function can still pick a fast loop when the inner strides allow it. Dimensions are
// ordered by stride before merging, so operands that share a permuted dense layout (a
// transposed or channels-last result of such inputs) still give one contiguous row. Parallel chunks
// split the flat element range; each chunk finds its starting index by division once.

// Note [Loops kept out of line]
// A kernel's loop body is a lambda. Inlined into the large function that sets it up, GCC 12
// compiled it as a scalar loop, with no vectorised version at all: an add of 16K floats ran at
// 0.35 ns an element against 0.09 through the out-of-line copy parallel_for calls. So the
// serial call goes through a function of its own too, where the loop vectorises (with a
// run-time alias check) as it does on the thread pool. Below kInlineElements the inline
// scalar loop is kept: for a handful of elements the call, the alias check and the vector
// epilogue are not worth it (a chain of 300 ops on 8 floats measured 0-9% slower without it).
constexpr int64_t kInlineElements = 64;

template <class Body>
[[gnu::noinline]] void run_serial_chunk(const Body& body, int64_t n) {
  body(int64_t{0}, n);
}

// Runs body(begin, end) over [0, n): on this thread for small n (Note [Loops kept out of
// line]), else on the thread pool. The lambda given to parallel_for captures one reference,
// so std::function stores it inline.
template <class Body>
inline void run_chunked(int64_t n, const Body& body) {
  if (n <= kInlineElements) {
    body(int64_t{0}, n);
    return;
  }
  if (n <= kDefaultGrainSize) {
    run_serial_chunk(body, n);
    return;
  }
  parallel_for(0, n, kDefaultGrainSize, [&body](int64_t begin, int64_t end) { body(begin, end); });
}

template <int N>
struct LoopGeometry {
  DimVector sizes;                   // outermost first; never empty
  std::array<DimVector, N> strides;  // bytes, per operand
  int64_t numel = 0;
};

// Drops size-1 dimensions of an N-operand loop over `sizes`, orders the others innermost first
// by the operands' strides (the first operand decides first, Note [Strides of elementwise
// results] in tensor/dim_order.h), and merges neighbours that are contiguous with respect to
// each other for every operand. So a loop over operands that share any dense layout
// (transposed, channels last) is one contiguous row. element_strides[k] are in elements of
// operand k, whose element size is element_sizes[k].
template <int N>
LoopGeometry<N> make_geometry(IntArrayRef sizes, const std::array<IntArrayRef, N>& element_strides,
                              const std::array<int64_t, N>& element_sizes) {
  LoopGeometry<N> geometry;
  geometry.numel = 1;
  for (int64_t size : sizes) geometry.numel *= size;
  DimVector kept_sizes;
  std::array<DimVector, N> kept_strides;
  DimVector kept_dims;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    kept_dims.push_back(static_cast<int64_t>(d));
    kept_sizes.push_back(sizes[d]);
    for (int k = 0; k < N; ++k) kept_strides[k].push_back(element_strides[k][d]);
  }
  std::array<IntArrayRef, N> views;
  for (int k = 0; k < N; ++k) views[k] = kept_strides[k].ref();
  const DimVector order = innermost_first(kept_sizes.ref(), std::span<const IntArrayRef>(views.data(), N));
  // Built innermost first, reversed at the end.
  for (const int64_t kept : order) {
    const auto d = static_cast<size_t>(kept_dims[static_cast<size_t>(kept)]);
    bool mergeable = !geometry.sizes.empty();
    for (int k = 0; k < N && mergeable; ++k) {
      const int64_t inner = geometry.strides[k].back();
      mergeable = element_strides[k][d] * element_sizes[k] == inner * geometry.sizes.back();
    }
    if (mergeable) {
      geometry.sizes.back() *= sizes[d];
      continue;
    }
    geometry.sizes.push_back(sizes[d]);
    for (int k = 0; k < N; ++k) geometry.strides[k].push_back(element_strides[k][d] * element_sizes[k]);
  }
  if (geometry.sizes.empty()) {
    geometry.sizes.push_back(1);
    for (int k = 0; k < N; ++k) geometry.strides[k].push_back(0);
  }
  std::reverse(geometry.sizes.begin(), geometry.sizes.end());
  for (int k = 0; k < N; ++k) std::reverse(geometry.strides[k].begin(), geometry.strides[k].end());
  return geometry;
}

// Calls row(pointers, count, inner_strides) for the rows covering flat elements [begin, end).
template <int N, class RowFn>
void for_each_row(const LoopGeometry<N>& geometry, const std::array<char*, N>& base, int64_t begin, int64_t end,
                  const RowFn& row) {
  const size_t ndim = geometry.sizes.size();
  const size_t last = ndim - 1;
  int64_t inner_strides[N];
  for (int k = 0; k < N; ++k) inner_strides[k] = geometry.strides[k][last];
  DimVector index(ndim, 0);
  std::array<char*, N> pointers = base;
  int64_t remainder = begin;
  for (size_t d = ndim; d-- > 0;) {
    index[d] = remainder % geometry.sizes[d];
    remainder /= geometry.sizes[d];
    for (int k = 0; k < N; ++k) pointers[k] += index[d] * geometry.strides[k][d];
  }
  int64_t remaining = end - begin;
  while (remaining > 0) {
    const int64_t count = std::min(geometry.sizes[last] - index[last], remaining);
    row(pointers.data(), count, inner_strides);
    remaining -= count;
    if (remaining == 0) break;
    for (int k = 0; k < N; ++k) pointers[k] -= index[last] * inner_strides[k];  // back to the row start
    index[last] = 0;
    for (size_t d = last; d-- > 0;) {  // carry into the outer dimensions
      ++index[d];
      for (int k = 0; k < N; ++k) pointers[k] += geometry.strides[k][d];
      if (index[d] < geometry.sizes[d]) break;
      for (int k = 0; k < N; ++k) pointers[k] -= geometry.sizes[d] * geometry.strides[k][d];
      index[d] = 0;
    }
  }
}

// Note [Tiled loops]
// When some operand walks the two innermost dims in the opposite order (a transposed input
// copied into a contiguous output), whole rows would touch a new cache line of that operand
// per element, and the line is evicted before its neighbours are used. Such loops run in
// kTile x kTile tiles instead, so every line fetched is used kTile times. Broadcast (stride
// 0) dims never ask for tiles.
inline constexpr int64_t kTile = 32;

template <int N>
bool wants_tiles(const LoopGeometry<N>& geometry) {
  const size_t ndim = geometry.sizes.size();
  if (ndim < 2 || geometry.sizes[ndim - 1] < 8 || geometry.sizes[ndim - 2] < 8) return false;
  for (int k = 0; k < N; ++k) {
    const int64_t outer = std::abs(geometry.strides[k][ndim - 2]), inner = std::abs(geometry.strides[k][ndim - 1]);
    if (outer != 0 && outer < inner) return true;
  }
  return false;
}

template <int N, class RowFn>
void run_tiles(const LoopGeometry<N>& geometry, const std::array<char*, N>& base, const RowFn& row) {
  const size_t ndim = geometry.sizes.size();
  const int64_t rows = geometry.sizes[ndim - 2], cols = geometry.sizes[ndim - 1];
  const int64_t col_tiles = (cols + kTile - 1) / kTile;
  const int64_t tiles_per_matrix = (rows + kTile - 1) / kTile * col_tiles;
  int64_t inner_strides[N];
  for (int k = 0; k < N; ++k) inner_strides[k] = geometry.strides[k][ndim - 1];
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t tile = begin; tile < end; ++tile) {
      std::array<char*, N> corner = base;
      int64_t matrix = tile / tiles_per_matrix;
      for (size_t d = ndim - 2; d-- > 0;) {  // the dims outside the tiled pair
        for (int k = 0; k < N; ++k) corner[k] += (matrix % geometry.sizes[d]) * geometry.strides[k][d];
        matrix /= geometry.sizes[d];
      }
      const int64_t within = tile % tiles_per_matrix;
      const int64_t row_begin = within / col_tiles * kTile, col_begin = within % col_tiles * kTile;
      const int64_t row_end = std::min(row_begin + kTile, rows), width = std::min(kTile, cols - col_begin);
      for (int64_t r = row_begin; r < row_end; ++r) {
        std::array<char*, N> pointers;
        for (int k = 0; k < N; ++k)
          pointers[k] = corner[k] + r * geometry.strides[k][ndim - 2] + col_begin * inner_strides[k];
        row(pointers.data(), width, inner_strides);
      }
    }
  };
  const int64_t tiles = geometry.numel / (rows * cols) * tiles_per_matrix;
  const int64_t grain = std::max<int64_t>(1, kDefaultGrainSize / (kTile * kTile));
  if (tiles <= grain) run(0, tiles);
  else parallel_for(0, tiles, grain, [&run](int64_t begin, int64_t end) { run(begin, end); });
}

// Runs `row` over every element of the geometry, in parallel chunks when it is large.
template <int N, class RowFn>
void run_rows(const LoopGeometry<N>& geometry, const std::array<char*, N>& base, const RowFn& row) {
  if (wants_tiles<N>(geometry)) {
    run_tiles<N>(geometry, base, row);
    return;
  }
  auto chunk = [&](int64_t begin, int64_t end) { for_each_row<N>(geometry, base, begin, end, row); };
  run_chunked(geometry.numel, chunk);
}

template <class T>
inline T* data_of(const Tensor& t) {
  return static_cast<T*>(t.impl()->data());
}

// out[i] = op(a[i]) with a broadcast to out's shape; a has out's dtype T, op works in
// compute_type_t<T>. out may be a itself (in-place).
template <class T, class Op>
void unary_kernel(const Tensor& out, const Tensor& a, const Op& op) {
  using C = compute_type_t<T>;
  const int64_t n = out.numel();
  if (n == 0) return;
  T* o = data_of<T>(out);
  const T* x = data_of<T>(a);
  if (out.is_contiguous() && a.is_contiguous() && a.numel() == n) {
    if (o == x) {
      run_chunked(n, [o, &op](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) o[i] = static_cast<T>(op(static_cast<C>(o[i])));
      });
    } else {
      run_chunked(n, [o, x, &op](int64_t begin, int64_t end) {
        T* __restrict out_data = o;
        const T* __restrict in_data = x;
        for (int64_t i = begin; i < end; ++i) out_data[i] = static_cast<T>(op(static_cast<C>(in_data[i])));
      });
    }
    return;
  }
  const DimVector a_strides = broadcast_strides(out.sizes(), a);
  const auto geometry = make_geometry<2>(out.sizes(), {out.strides(), a_strides.ref()}, {sizeof(T), sizeof(T)});
  run_rows<2>(geometry, {reinterpret_cast<char*>(o), reinterpret_cast<char*>(const_cast<T*>(x))},
              [&op](char* const* p, int64_t count, const int64_t* s) {
                if (s[0] == sizeof(T) && s[1] == sizeof(T)) {  // one dense layout, permuted
                  T* __restrict out_data = reinterpret_cast<T*>(p[0]);
                  const T* __restrict in_data = reinterpret_cast<const T*>(p[1]);
                  if (p[0] == p[1]) {
                    for (int64_t i = 0; i < count; ++i)
                      out_data[i] = static_cast<T>(op(static_cast<C>(out_data[i])));
                  } else {
                    for (int64_t i = 0; i < count; ++i)
                      out_data[i] = static_cast<T>(op(static_cast<C>(in_data[i])));
                  }
                  return;
                }
                for (int64_t i = 0; i < count; ++i) {
                  const T value = *reinterpret_cast<const T*>(p[1] + i * s[1]);
                  *reinterpret_cast<T*>(p[0] + i * s[0]) = static_cast<T>(op(static_cast<C>(value)));
                }
              });
}

// Note [Short broadcast rows]
// Broadcasting a small tensor over the rows of a large one ([N, 2] + [2]) leaves rows too
// short to pay for the per-row bookkeeping of for_each_row. When the loop is two-dimensional
// with rows shorter than kShortRow, the output walks its rows contiguously, and each input
// either does too or repeats one row (outer stride 0), the repeated rows are copied side by
// side into a stack buffer once per chunk, so that runs of many rows become one contiguous
// loop the compiler vectorises.
inline constexpr int64_t kShortRow = 64;
inline constexpr int64_t kShortRowRun = 512;  // elements per run, at most

template <class T, class Op>
bool binary_kernel_short_rows(const LoopGeometry<3>& geometry, const std::array<char*, 3>& base, const Op& op) {
  using C = compute_type_t<T>;
  constexpr int64_t size = sizeof(T);
  if (geometry.sizes.size() != 2 || geometry.sizes[1] >= kShortRow) return false;
  const int64_t rows = geometry.sizes[0], inner = geometry.sizes[1];
  bool repeats[3];
  for (int k = 0; k < 3; ++k) {
    const int64_t outer_stride = geometry.strides[k][0], inner_stride = geometry.strides[k][1];
    repeats[k] = outer_stride == 0;
    const bool contiguous_rows = inner_stride == size && outer_stride == inner * size;
    if (!contiguous_rows && !(repeats[k] && k > 0)) return false;
  }
  const int64_t rows_per_run = std::max<int64_t>(1, kShortRowRun / inner);
  auto run = [&](int64_t row_begin, int64_t row_end) {
    T repeated[2][kShortRowRun + kShortRow];
    for (int k = 1; k < 3; ++k) {
      if (!repeats[k]) continue;
      for (int64_t j = 0; j < rows_per_run * inner; ++j)
        repeated[k - 1][j] = *reinterpret_cast<const T*>(base[k] + (j % inner) * geometry.strides[k][1]);
    }
    for (int64_t row = row_begin; row < row_end; row += rows_per_run) {
      const int64_t count = std::min(rows_per_run, row_end - row) * inner;
      T* o = reinterpret_cast<T*>(base[0]) + row * inner;
      const T* x = repeats[1] ? repeated[0] : reinterpret_cast<const T*>(base[1]) + row * inner;
      const T* y = repeats[2] ? repeated[1] : reinterpret_cast<const T*>(base[2]) + row * inner;
      for (int64_t i = 0; i < count; ++i) o[i] = static_cast<T>(op(static_cast<C>(x[i]), static_cast<C>(y[i])));
    }
  };
  if (rows * inner <= kDefaultGrainSize) run(0, rows);
  else parallel_for(0, rows, std::max<int64_t>(1, kDefaultGrainSize / inner), [&run](int64_t begin, int64_t end) {
    run(begin, end);
  });
  return true;
}

// The general case of binary_kernel: any strides, broadcasting by stride 0.
template <class T, class Op>
void binary_kernel_strided(const Tensor& out, const Tensor& a, const Tensor& b, const Op& op) {
  using C = compute_type_t<T>;
  const DimVector a_strides = broadcast_strides(out.sizes(), a);
  const DimVector b_strides = broadcast_strides(out.sizes(), b);
  const auto geometry = make_geometry<3>(out.sizes(), {out.strides(), a_strides.ref(), b_strides.ref()},
                                         {sizeof(T), sizeof(T), sizeof(T)});
  const std::array<char*, 3> base = {reinterpret_cast<char*>(data_of<T>(out)), reinterpret_cast<char*>(data_of<T>(a)),
                                     reinterpret_cast<char*>(data_of<T>(b))};
  if (binary_kernel_short_rows<T>(geometry, base, op)) return;  // See Note [Short broadcast rows]
  auto row = [&op](char* const* p, int64_t count, const int64_t* s) {
    T* o = reinterpret_cast<T*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const T* y = reinterpret_cast<const T*>(p[2]);
    constexpr int64_t size = sizeof(T);
    if (s[0] == size && s[1] == size && s[2] == size) {
      for (int64_t i = 0; i < count; ++i) o[i] = static_cast<T>(op(static_cast<C>(x[i]), static_cast<C>(y[i])));
    } else if (s[0] == size && s[1] == size && s[2] == 0) {
      const C c = static_cast<C>(*y);
      for (int64_t i = 0; i < count; ++i) o[i] = static_cast<T>(op(static_cast<C>(x[i]), c));
    } else if (s[0] == size && s[1] == 0 && s[2] == size) {
      const C c = static_cast<C>(*x);
      for (int64_t i = 0; i < count; ++i) o[i] = static_cast<T>(op(c, static_cast<C>(y[i])));
    } else {
      for (int64_t i = 0; i < count; ++i) {
        const T u = *reinterpret_cast<const T*>(p[1] + i * s[1]);
        const T v = *reinterpret_cast<const T*>(p[2] + i * s[2]);
        *reinterpret_cast<T*>(p[0] + i * s[0]) = static_cast<T>(op(static_cast<C>(u), static_cast<C>(v)));
      }
    }
  };
  run_rows<3>(geometry, base, row);
}

// out[i] = op(a[i], b[i]) with a and b broadcast to out's shape, all of dtype T; op works in
// compute_type_t<T>. out may be a itself (in-place).
template <class T, class Op>
void binary_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Op& op) {
  using C = compute_type_t<T>;
  const int64_t n = out.numel();
  if (n == 0) return;
  if (out.is_contiguous() && a.is_contiguous() && b.is_contiguous() && a.numel() == n && b.numel() == n) {
    T* o = data_of<T>(out);
    const T* x = data_of<T>(a);
    const T* y = data_of<T>(b);
    if (o == x) {
      run_chunked(n, [o, y, &op](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) o[i] = static_cast<T>(op(static_cast<C>(o[i]), static_cast<C>(y[i])));
      });
    } else {
      run_chunked(n, [o, x, y, &op](int64_t begin, int64_t end) {
        T* __restrict out_data = o;
        const T* __restrict lhs = x;
        const T* __restrict rhs = y;
        for (int64_t i = begin; i < end; ++i)
          out_data[i] = static_cast<T>(op(static_cast<C>(lhs[i]), static_cast<C>(rhs[i])));
      });
    }
    return;
  }
  binary_kernel_strided<T>(out, a, b, op);
}

}  // namespace strata::detail
