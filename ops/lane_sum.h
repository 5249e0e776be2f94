#pragma once
// Internal to ops/ (not public API): sums of f(x) over a contiguous run, accumulated in double
// in eight independent lanes. See Note [Lane sums].
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include <strata/tensor/parallel.h>

namespace strata::detail {

// Note [Lane sums]
// A row statistic accumulated in double one element at a time is a chain of dependent adds:
// 4 cycles each, and the compiler may not reorder floating adds to vectorise it. Eight running
// sums held as two vectors of four doubles (GCC vector extensions) take x[i], x[i + 1], ...
// in turn: each vector add does four elements, with two chains in flight, and the lanes are
// combined in a fixed tree at the end. The result does not depend on the machine's vector
// width or on thread count (chunked_lane_sum splits at fixed points), only on n. f maps
// doubles to doubles and is called with a vector of four or with one double (the tail), so
// it is written once with auto: [](auto v) { return v * v; }.
using Double4 = double __attribute__((vector_size(4 * sizeof(double))));

template <class C>
Double4 load_as_double4(const C* x) {
  static_assert(std::is_same_v<C, float> || std::is_same_v<C, double>);
  if constexpr (std::is_same_v<C, double>) {
    Double4 v;
    std::memcpy(&v, x, sizeof(v));
    return v;
  } else {
    typedef float Float4 __attribute__((vector_size(4 * sizeof(float))));
    Float4 v;
    std::memcpy(&v, x, sizeof(v));
    return __builtin_convertvector(v, Double4);
  }
}

template <class C, class F>
double lane_sum(const C* x, int64_t n, const F& f) {
  Double4 a = {0, 0, 0, 0}, b = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    a += f(load_as_double4(x + i));
    b += f(load_as_double4(x + i + 4));
  }
  double total = ((a[0] + b[0]) + (a[1] + b[1])) + ((a[2] + b[2]) + (a[3] + b[3]));
  for (; i < n; ++i) total += f(static_cast<double>(x[i]));
  return total;
}

// lane_sum over fixed chunks, in parallel for long runs, the chunks' sums added in order.
inline constexpr int64_t kLaneSumChunk = 1 << 16;

template <class C, class F>
double chunked_lane_sum(const C* x, int64_t n, const F& f) {
  if (n <= 2 * kLaneSumChunk) return lane_sum(x, n, f);
  const int64_t chunks = (n + kLaneSumChunk - 1) / kLaneSumChunk;
  std::vector<double> partials(static_cast<size_t>(chunks));
  parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c)
      partials[static_cast<size_t>(c)] =
          lane_sum(x + c * kLaneSumChunk, std::min(kLaneSumChunk, n - c * kLaneSumChunk), f);
  });
  double total = 0;
  for (double partial : partials) total += partial;
  return total;
}

}  // namespace strata::detail
