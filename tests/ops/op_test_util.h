#pragma once
// Helpers shared by the op tests: reading values out of tensors and comparing Meta results.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include <cmath>
#include <cstdint>
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

}  // namespace strata::testing
