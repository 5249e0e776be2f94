#pragma once
// Internal to ops/ (not public API): elementwise loops that hand a kernel whole blocks of
// values in the compute type, so the kernel can use vector math on any dtype and any strides.
// See Note [Blockwise loops].
#include <algorithm>
#include <type_traits>

#include <strata/ops/elementwise.h>

namespace strata::detail {

// Note [Blockwise loops]
// Transcendental functions (exp, tanh, erf, pow...) vectorise only when the code computing
// them sees arrays rather than one element at a time; the .cpp files that use these loops
// give a block function built on Eigen array expressions (Eigen stays out of headers). The
// block function receives contiguous arrays of compute_type_t<T>: contiguous tensors of a type
// that is its own compute type (float, double) are passed directly, in parallel chunks;
// everything else (16-bit floats, strided or broadcast operands) is gathered row by row into
// stack buffers of kBlock values, computed, and scattered back. The buffers hold values in
// the compute type, so float16/bfloat16 compute in float.
inline constexpr int64_t kBlock = 256;

template <class T, class C>
inline void gather_block(C* buffer, const char* source, int64_t stride, int64_t count) {
  for (int64_t i = 0; i < count; ++i) buffer[i] = static_cast<C>(*reinterpret_cast<const T*>(source + i * stride));
}

template <class T, class C>
inline void scatter_block(char* target, int64_t stride, const C* buffer, int64_t count) {
  for (int64_t i = 0; i < count; ++i) *reinterpret_cast<T*>(target + i * stride) = static_cast<T>(buffer[i]);
}

// out = fn(a), with fn(const C* in, C* result, int64_t count) applied block by block; a has
// out's dtype T and is broadcast to out's shape. out may be a itself.
template <class T, class BlockFn>
void blockwise_unary(const Tensor& out, const Tensor& a, const BlockFn& fn) {
  using C = compute_type_t<T>;
  const int64_t n = out.numel();
  if (n == 0) return;
  T* o = data_of<T>(out);
  T* x = data_of<T>(a);
  if constexpr (std::is_same_v<T, C>) {
    if (out.is_contiguous() && a.is_contiguous() && a.numel() == n) {
      run_chunked(n, [o, x, &fn](int64_t begin, int64_t end) { fn(x + begin, o + begin, end - begin); });
      return;
    }
  }
  const DimVector a_strides = broadcast_strides(out.sizes(), a);
  constexpr int64_t size = sizeof(T);
  const auto geometry = make_geometry<2>(out.sizes(), {out.strides(), a_strides.ref()}, {size, size});
  run_rows<2>(geometry, {reinterpret_cast<char*>(o), reinterpret_cast<char*>(x)},
              [&fn](char* const* p, int64_t count, const int64_t* s) {
                if constexpr (std::is_same_v<T, C>) {
                  if (s[0] == size && s[1] == size) {
                    fn(reinterpret_cast<const C*>(p[1]), reinterpret_cast<C*>(p[0]), count);
                    return;
                  }
                }
                C buffer[kBlock];
                for (int64_t start = 0; start < count; start += kBlock) {
                  const int64_t m = std::min(kBlock, count - start);
                  gather_block<T>(buffer, p[1] + start * s[1], s[1], m);
                  fn(buffer, buffer, m);
                  scatter_block<T>(p[0] + start * s[0], s[0], buffer, m);
                }
              });
}

// out = fn(a, b), with fn(const C* x, const C* y, C* result, int64_t count) applied block by
// block; a and b have out's dtype T and are broadcast to out's shape.
template <class T, class BlockFn>
void blockwise_binary(const Tensor& out, const Tensor& a, const Tensor& b, const BlockFn& fn) {
  using C = compute_type_t<T>;
  const int64_t n = out.numel();
  if (n == 0) return;
  T* o = data_of<T>(out);
  T* x = data_of<T>(a);
  T* y = data_of<T>(b);
  if constexpr (std::is_same_v<T, C>) {
    if (out.is_contiguous() && a.is_contiguous() && b.is_contiguous() && a.numel() == n && b.numel() == n) {
      run_chunked(n, [o, x, y, &fn](int64_t begin, int64_t end) { fn(x + begin, y + begin, o + begin, end - begin); });
      return;
    }
  }
  const DimVector a_strides = broadcast_strides(out.sizes(), a), b_strides = broadcast_strides(out.sizes(), b);
  constexpr int64_t size = sizeof(T);
  const auto geometry =
      make_geometry<3>(out.sizes(), {out.strides(), a_strides.ref(), b_strides.ref()}, {size, size, size});
  run_rows<3>(geometry, {reinterpret_cast<char*>(o), reinterpret_cast<char*>(x), reinterpret_cast<char*>(y)},
              [&fn](char* const* p, int64_t count, const int64_t* s) {
                C left[kBlock], right[kBlock];
                for (int64_t start = 0; start < count; start += kBlock) {
                  const int64_t m = std::min(kBlock, count - start);
                  gather_block<T>(left, p[1] + start * s[1], s[1], m);
                  gather_block<T>(right, p[2] + start * s[2], s[2], m);
                  fn(left, right, left, m);
                  scatter_block<T>(p[0] + start * s[0], s[0], left, m);
                }
              });
}

// Calls fn.template operator()<T>() for the floating dtypes only; others are a bug (the
// shape function has already refused or promoted them).
template <class Fn>
void visit_floating(ScalarType dtype, Fn&& fn) {
  visit_dtype(dtype, [&]<class T>() {
    if constexpr (is_floating_point(scalar_type_of<T>)) fn.template operator()<T>();
    else STRATA_INTERNAL_ASSERT(false, "visit_floating on a non-floating dtype");
  });
}

}  // namespace strata::detail
