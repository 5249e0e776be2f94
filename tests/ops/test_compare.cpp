// Tests for ops/compare.cpp: equal and allclose.
#include "op_test_util.h"

using namespace strata;
using strata::testing::expect_error;

TEST_CASE("equal: same shape and values, any dtypes and strides") {
  Tensor a = arange(6, kFloat32).view({2, 3});
  CHECK(equal(a, a.clone()));
  CHECK(equal(a, arange(6).view({2, 3})));  // int64 vs float32 compare by value
  CHECK_FALSE(equal(a, a.view({3, 2})));    // shapes differ
  CHECK_FALSE(equal(a, a + 1));
  CHECK(equal(a.transpose(0, 1), a.transpose(0, 1).contiguous()));
  CHECK(equal(tensor({1.0f}).expand({3}), ones({3})));
  CHECK_FALSE(equal(tensor({NAN}), tensor({NAN})));
  CHECK(equal(zeros({0, 2}), zeros({0, 2}, kInt32)));
  CHECK(equal(tensor({true, false}), tensor({1, 0})));
  expect_error<Error>([] { (void)equal(zeros({2}, kMeta), zeros({2}, kMeta)); }, "[equal] cannot compare meta tensors");
  expect_error<Error>([] { (void)equal(zeros({2}), zeros({2}, kMeta)); },
                      "[equal] expected all tensors on the same device, got cpu and meta");
}

TEST_CASE("allclose: tolerances, broadcasting, NaN and infinities") {
  Tensor a = tensor({1.0, 100.0}, kFloat64);
  CHECK(allclose(a, a + 1e-9));
  CHECK_FALSE(allclose(a, a + 1e-3));
  CHECK(allclose(a, a + 1e-3, 1e-4, 1e-2));
  CHECK(allclose(tensor({100.0}), tensor({100.5}), 0.01));  // rtol scales with |b|
  CHECK_FALSE(allclose(tensor({100.0}), tensor({100.5}), 0.001));
  CHECK(allclose(tensor({1.0f, 1.0f}), tensor({1.0f})));     // broadcasts
  CHECK(allclose(tensor({INFINITY, -INFINITY}), tensor({INFINITY, -INFINITY})));
  CHECK_FALSE(allclose(tensor({INFINITY}), tensor({-INFINITY})));
  CHECK_FALSE(allclose(tensor({NAN}), tensor({NAN})));
  CHECK(allclose(tensor({1, 2}), tensor({1.0f, 2.0f})));
  CHECK(allclose(zeros({0}), zeros({0})));
  expect_error<ValueError>([] { (void)allclose(zeros({2}), zeros({3})); }, "[allclose] shapes [2] and [3]");
  expect_error<ValueError>([] { (void)allclose(zeros({2}), zeros({2}), -1.0); }, "[allclose] rtol and atol");
  expect_error<Error>([] { (void)allclose(zeros({2}, kMeta), zeros({2}, kMeta)); }, "[allclose] cannot compare meta");
}
