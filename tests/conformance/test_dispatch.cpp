// Conformance port of LibTorch's test/cpp/api/dispatch.cpp (DispatchTest): our code, LibTorch's
// expectations. See README.md in this folder for the mapping, skips and deliberate differences.
#include <doctest/doctest.h>

#include <vector>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;

namespace {

// Integer pow through tensor(std::vector<int>): the vector keeps int's dtype (kInt32), and
// pow of two kInt32 tensors stays kInt32.
void check_int_pow() {
  const std::vector<int> ints{1, 2, 3, 4};
  const std::vector<int> result{1, 4, 27, 256};
  const Tensor vals_tensor = tensor(ints);
  const Tensor pows_tensor = tensor(ints);
  CHECK(vals_tensor.dtype() == kInt32);
  const Tensor actual = vals_tensor.pow(pows_tensor);
  CHECK(actual.dtype() == kInt32);
  for (int i = 0; i < 4; i++) CHECK(result[i] == actual.select(0, i).item<int>());
}

}  // namespace

// differs (all three): ATEN_CPU_CAPABILITY picks an ATen CPU kernel variant; strata has one CPU
// kernel per op, so the three upstream variants run the same check.
TEST_CASE("conformance dispatch.cpp: TestAVX2") { check_int_pow(); }

TEST_CASE("conformance dispatch.cpp: TestAVX") { check_int_pow(); }

TEST_CASE("conformance dispatch.cpp: TestDefault") { check_int_pow(); }
