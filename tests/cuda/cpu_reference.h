#pragma once
// Helpers for the host tests of cuda/'s functor headers (unary_ops.h, binary_ops.h,
// creation_ops.h): CPU tensors from values, their values back, and comparisons in which NaN
// matches NaN, so each functor is checked against the CPU op it mirrors.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace strata::testing::cuda_host {

template <class T>
Tensor cpu_tensor(const std::vector<T>& values) {
  return tensor(values, TensorOptions(scalar_type_of<T>));
}

template <class T>
std::vector<T> cpu_values(const Tensor& t) {
  REQUIRE(t.dtype() == scalar_type_of<T>);
  const Tensor flat = t.contiguous();
  const T* data = flat.data_ptr<T>();
  return std::vector<T>(data, data + flat.numel());
}

// The same value: NaN matches NaN and zeros match in sign.
template <class T>
bool same(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b && std::signbit(a) == std::signbit(b);
  } else {
    return a == b;
  }
}

// Within `tolerance` relative to the larger magnitude (absolute below 1); NaN matches NaN and an
// infinity only itself.
template <class T>
bool close(T a, T b, double tolerance) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  const double scale = std::max({1.0, std::abs(static_cast<double>(a)), std::abs(static_cast<double>(b))});
  return std::abs(static_cast<double>(a) - static_cast<double>(b)) <= tolerance * scale;
}

// Edge values of an integral type: its extremes, their neighbours, -1, 0, 1.
template <class T>
std::vector<T> integer_edges() {
  using Limits = std::numeric_limits<T>;
  std::vector<T> values = {Limits::min(), static_cast<T>(Limits::min() + 1), T(0),
                           T(1),           static_cast<T>(Limits::max() - 1), Limits::max()};
  if constexpr (std::is_signed_v<T>) values.push_back(T(-1));
  return values;
}

// Floating values with the specials: infinities, signed zeros, NaN, tiny and large ones.
template <class T>
std::vector<T> floating_specials() {
  const T inf = std::numeric_limits<T>::infinity();
  return {-inf, T(-100), T(-20), T(-2.5), T(-1), T(-1e-30), T(-0.0), T(0), T(1e-30), T(0.5), T(1), T(3), T(20), T(100),
          inf, std::numeric_limits<T>::quiet_NaN()};
}

}  // namespace strata::testing::cuda_host
