#pragma once
// Helpers shared by the op tests: reading values out of tensors and comparing Meta results.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "../test_util.h"

namespace strata::testing {

// The values of a CPU tensor of any dtype and strides, as doubles in row-major order.
inline std::vector<double> values_of(const Tensor& t) {
  Tensor flat = detail::make_empty(t.sizes(), kFloat64, Device(kCPU));
  flat.copy_(t);
  const double* data = flat.data_ptr<double>();
  return std::vector<double>(data, data + flat.numel());
}

inline std::vector<int64_t> sizes_of(const Tensor& t) { return t.sizes().vec(); }

// Checks shape, dtype and values (within `tolerance`, NaN matching NaN).
inline void check_values(const Tensor& t, const std::vector<int64_t>& sizes, ScalarType dtype,
                         const std::vector<double>& expected, double tolerance = 0) {
  CHECK(sizes_of(t) == sizes);
  CHECK(t.dtype() == dtype);
  const std::vector<double> actual = values_of(t);
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element ", i, ": got ", actual[i], ", expected ", expected[i]);
    if (std::isnan(expected[i])) CHECK(std::isnan(actual[i]));
    else CHECK((actual[i] == expected[i] || std::abs(actual[i] - expected[i]) <= tolerance));
  }
}

// A Meta result must have the CPU result's shape and dtype.
inline void check_meta_matches(const Tensor& meta, const Tensor& cpu) {
  CHECK(meta.is_meta());
  CHECK(sizes_of(meta) == sizes_of(cpu));
  CHECK(meta.dtype() == cpu.dtype());
}

// gradcheck in float64, reporting the worst mismatch on failure.
inline void check_gradcheck(const std::function<tensor_list(const tensor_list&)>& fn, const tensor_list& inputs,
                            double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3) {
  const autograd::GradcheckResult result = autograd::gradcheck(fn, inputs, eps, atol, rtol);
  CHECK_MESSAGE(static_cast<bool>(result), result.message());
}

// d/d(inputs) <fn(inputs)[0], v> for a fixed random v, built with create_graph, so that a
// gradcheck of it checks the second derivative.
inline std::function<tensor_list(const tensor_list&)> first_derivative(
    const std::function<tensor_list(const tensor_list&)>& fn) {
  return [fn](const tensor_list& in) {
    tensor_list out = fn(in);
    manual_seed(99);
    tensor_list seeds{rand(out[0].sizes(), kFloat64)};
    tensor_list grads =
        autograd::grad({out[0]}, in, seeds, /*retain_graph=*/true, /*create_graph=*/true, /*allow_unused=*/true);
    // A first derivative that is not itself on the tape would pass vacuously.
    CHECK(std::any_of(grads.begin(), grads.end(), [](const Tensor& g) { return g.defined() && g.requires_grad(); }));
    return grads;
  };
}

// gradcheck of the first derivative (see first_derivative).
inline void check_gradgradcheck(const std::function<tensor_list(const tensor_list&)>& fn, const tensor_list& inputs,
                                double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3) {
  check_gradcheck(first_derivative(fn), inputs, eps, atol, rtol);
}

// A float64 leaf requiring grad with values in [low, high); `transposed` gives it reversed
// strides (a non-contiguous leaf of the same shape).
inline Tensor uniform_input(const std::vector<int64_t>& sizes, uint64_t seed, double low, double high,
                            bool transposed = false) {
  manual_seed(seed);
  if (!transposed || sizes.size() < 2) return (rand(sizes, kFloat64) * (high - low) + low).detach().requires_grad_();
  std::vector<int64_t> reversed(sizes.rbegin(), sizes.rend()), order;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) order.push_back(d);
  return (rand(reversed, kFloat64) * (high - low) + low).detach().permute(order).requires_grad_();
}

// uniform_input in [-1, 1).
inline Tensor grad_input(const std::vector<int64_t>& sizes, uint64_t seed, bool transposed = false) {
  return uniform_input(sizes, seed, -1.0, 1.0, transposed);
}

}  // namespace strata::testing
