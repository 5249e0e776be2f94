// Tests for ops/reduce.cpp: sum over all dims and over lists of dims.
#include "op_test_util.h"

using namespace strata;
using strata::testing::check_meta_matches;
using strata::testing::check_values;
using strata::testing::expect_error;

TEST_CASE("sum: all elements, with the PyTorch output dtypes") {
  Tensor a = tensor(std::vector<float>{1, 2, 3, 4}, {2, 2});
  check_values(sum(a), {}, kFloat32, {10});
  check_values(a.sum(), {}, kFloat32, {10});
  check_values(sum(tensor({1, 2, 3}, kInt32)), {}, kInt64, {6});
  check_values(sum(tensor({200, 100}, kUInt8)), {}, kInt64, {300});
  check_values(sum(tensor({true, true, false})), {}, kInt64, {2});
  check_values(sum(tensor({1, 2}, kInt32), kFloat64), {}, kFloat64, {3});
  check_values(sum(tensor({1.5f, 2.5f}), kInt32), {}, kInt32, {3});  // input cast first, like PyTorch
  check_values(sum(tensor({0.5f, 0.25f}, kFloat16)), {}, kFloat16, {0.75});
  check_values(sum(tensor({true, false}), kBool), {}, kBool, {1});
  check_meta_matches(sum(zeros({2, 2}, kMeta)), sum(zeros({2, 2})));
  check_meta_matches(sum(zeros({3}, TensorOptions(kInt32).device(kMeta))), sum(zeros({3}, kInt32)));
}

TEST_CASE("sum: over dims, keepdim and negative dims") {
  Tensor a = arange(6, kFloat32).view({2, 3});  // [[0, 1, 2], [3, 4, 5]]
  check_values(sum(a, {0}), {3}, kFloat32, {3, 5, 7});
  check_values(sum(a, {1}), {2}, kFloat32, {3, 12});
  check_values(sum(a, {-1}, true), {2, 1}, kFloat32, {3, 12});
  check_values(a.sum({0, 1}), {}, kFloat32, {15});
  check_values(a.sum({0, 1}, true), {1, 1}, kFloat32, {15});
  check_values(sum(a, IntArrayRef{}), {}, kFloat32, {15});  // an empty list reduces every dim
  check_meta_matches(sum(a.to(kMeta), {1}, true), sum(a, {1}, true));
  check_meta_matches(sum(tensor({1, 2}).to(kMeta), {0}), sum(tensor({1, 2}), {0}));
}

TEST_CASE("sum: middle dims, scattered dims and non-contiguous inputs") {
  Tensor a = arange(24, kInt64).view({2, 3, 4});
  check_values(sum(a, {1}), {2, 4}, kInt64, {12, 15, 18, 21, 48, 51, 54, 57});
  check_values(sum(a, {0, 2}), {3}, kInt64, {60, 92, 124});
  check_values(sum(a, {2, 0}, true), {1, 3, 1}, kInt64, {60, 92, 124});
  Tensor t = a.transpose(0, 2);  // [4, 3, 2]
  check_values(sum(t, {2}), {4, 3}, kInt64, {12, 20, 28, 14, 22, 30, 16, 24, 32, 18, 26, 34});
  check_values(sum(t), {}, kInt64, {276});
  Tensor expanded = tensor({1.0f, 2.0f}).expand({3, 2});
  check_values(sum(expanded, {0}), {2}, kFloat32, {3, 6});
  check_values(sum(arange(6, kFloat64).view({1, 6, 1}), {1}), {1, 1}, kFloat64, {15});
}

TEST_CASE("sum: zero-size and zero-dim inputs") {
  check_values(sum(zeros({0})), {}, kFloat32, {0});
  check_values(sum(zeros({0, 3}), {0}), {3}, kFloat32, {0, 0, 0});
  check_values(sum(zeros({0, 3}), {1}), {0}, kFloat32, {});
  check_values(sum(zeros({0}, kInt32)), {}, kInt64, {0});
  check_values(sum(full({}, 4.0)), {}, kFloat32, {4});
  check_values(sum(full({}, 4.0), {0}), {}, kFloat32, {4});
  check_values(sum(full({}, 4.0), {-1}, true), {}, kFloat32, {4});
  check_meta_matches(sum(zeros({0, 3}, kMeta), {1}), sum(zeros({0, 3}), {1}));
}

TEST_CASE("sum: large float32 sums stay accurate and use the parallel paths") {
  const int64_t n = 1000000;
  Tensor tenths = full({n}, 0.1f);
  const double exact = static_cast<double>(0.1f) * n;  // 100000.0015
  CHECK(std::abs(sum(tenths).item<double>() - exact) < 0.05);  // a naive float loop is ~1000 off
  Tensor columns = full({n / 4, 4}, 0.1f);
  Tensor column_sums = sum(columns, {0});
  for (int64_t j = 0; j < 4; ++j) CHECK(std::abs(column_sums.data_ptr<float>()[j] - exact / 4) < 0.05);
  Tensor rows = full({4, n / 4}, 1, kInt32);
  check_values(sum(rows, {1}), {4}, kInt64, {n / 4.0, n / 4.0, n / 4.0, n / 4.0});
  Tensor many = full({3 * kDefaultGrainSize, 3}, 1.0);
  Tensor per_row = sum(many, {1});
  CHECK(per_row.numel() == 3 * kDefaultGrainSize);
  CHECK(sum(per_row).item<double>() == 9.0 * kDefaultGrainSize);
}

TEST_CASE("sum: errors") {
  expect_error<ValueError>([] { (void)sum(zeros({2, 3}), {1, -1}); }, "[sum] dim 1 appears multiple times");
  expect_error<IndexError>([] { (void)sum(zeros({2, 3}), {2}); }, "[sum]");
  expect_error<IndexError>([] { (void)sum(zeros({2, 3}, kMeta), {-3}); }, "[sum]");
}

TEST_CASE("sum_to: reduces broadcast dims back to a shape") {
  Tensor g = ones({2, 3, 4});
  check_values(sum_to(g, {3, 1}), {3, 1}, kFloat32, {8, 8, 8});
  check_values(sum_to(g, {4}), {4}, kFloat32, {6, 6, 6, 6});
  check_values(sum_to(g, {}), {}, kFloat32, {24});
  check_values(sum_to(g, {2, 1, 4}), {2, 1, 4}, kFloat32, {3, 3, 3, 3, 3, 3, 3, 3});
  CHECK(sum_to(g, {2, 3, 4}).is_same(g));
  CHECK(sum_to(ones({2}, kInt32), {1}).dtype() == kInt32);
  check_meta_matches(sum_to(ones({2, 3}, kMeta), {3}), sum_to(ones({2, 3}), {3}));
  expect_error<ValueError>([&] { (void)sum_to(g, {5}); }, "[sum_to] shape [5] is not broadcastable to [2, 3, 4]");
  expect_error<ValueError>([] { (void)sum_to(ones({3}), {2, 3}); }, "[sum_to] shape [2, 3] has more dims");
}
