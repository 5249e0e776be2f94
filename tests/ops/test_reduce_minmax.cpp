// Tests for ops/reduce_minmax.cpp: max and min (all elements and along a dim), argmax, argmin.
#include "op_test_util.h"

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

using namespace strata;
using strata::testing::check_meta_matches;
using strata::testing::check_values;
using strata::testing::expect_error;
using strata::testing::check_gradcheck;

namespace {


// A float64 leaf of well-separated values (sin of distinct multiples of 1.7 rad), so max and
// min have no ties; `transposed` gives it reversed strides.
Tensor separated_leaf(int64_t rows, int64_t cols, bool transposed = false) {
  Tensor values = sin(arange(rows * cols, kFloat64) * 1.7 + 0.3);
  Tensor t = transposed ? values.view({cols, rows}).transpose(0, 1) : values.view({rows, cols});
  return t.detach().requires_grad_();
}

}  // namespace

TEST_CASE("max and min: all elements, dtypes, NaN and zero-dim") {
  Tensor a = tensor(std::vector<float>{3, -1, 7, 2}, {2, 2});
  check_values(max(a), {}, kFloat32, {7});
  check_values(a.min(), {}, kFloat32, {-1});
  check_values(max(a.transpose(0, 1)), {}, kFloat32, {7});
  check_values(max(tensor({4, 9, -2}, kInt32)), {}, kInt32, {9});
  check_values(min(tensor({200, 3}, kUInt8)), {}, kUInt8, {3});
  check_values(max(tensor({false, true})), {}, kBool, {1});
  check_values(min(tensor({1.5f, -0.5f}, kFloat16)), {}, kFloat16, {-0.5});
  check_values(max(tensor({1.0f, NAN, 3.0f})), {}, kFloat32, {NAN});
  check_values(min(tensor({NAN, 1.0f})), {}, kFloat32, {NAN});
  check_values(max(full({}, 2.5)), {}, kFloat32, {2.5});
  check_meta_matches(max(a.to(kMeta)), max(a));
  expect_error<IndexError>([] { (void)max(zeros({0})); }, "[max] cannot reduce over a zero-size dimension");
  expect_error<IndexError>([] { (void)min(zeros({2, 0}, kMeta)); }, "[min] cannot reduce over a zero-size dimension");
}

TEST_CASE("max and min along a dim: values, indices, ties and keepdim") {
  Tensor a = tensor(std::vector<double>{3, 9, 9, 1, 5, 0}, {2, 3}, kFloat64);
  auto [values, indices] = max(a, 1);
  check_values(values, {2}, kFloat64, {9, 5});
  check_values(indices, {2}, kInt64, {1, 1});  // the first of the tied 9s
  auto [low, where_low] = a.min(0, true);
  check_values(low, {1, 3}, kFloat64, {1, 5, 0});
  check_values(where_low, {1, 3}, kInt64, {1, 1, 1});
  auto [column_max, column_index] = max(a.transpose(0, 1), -1);  // non-contiguous input
  check_values(column_max, {3}, kFloat64, {3, 9, 9});
  check_values(column_index, {3}, kInt64, {0, 0, 0});
  auto [nan_max, nan_index] = max(tensor({1.0f, NAN, 5.0f, NAN}), 0);
  check_values(nan_max, {}, kFloat32, {NAN});
  check_values(nan_index, {}, kInt64, {1});
  auto [int_min, int_index] = min(arange(24, kInt32).view({2, 3, 4}), 1);
  check_values(int_min, {2, 4}, kInt32, {0, 1, 2, 3, 12, 13, 14, 15});
  check_values(int_index, {2, 4}, kInt64, {0, 0, 0, 0, 0, 0, 0, 0});
  auto [scalar_max, scalar_index] = max(full({}, 4.0), 0, true);
  check_values(scalar_max, {}, kFloat32, {4});
  check_values(scalar_index, {}, kInt64, {0});
  auto [empty_max, empty_index] = max(zeros({0, 3}), 1);
  check_values(empty_max, {0}, kFloat32, {});
  auto [meta_values, meta_indices] = max(a.to(kMeta), 1, true);
  check_meta_matches(meta_values, std::get<0>(max(a, 1, true)));
  check_meta_matches(meta_indices, std::get<1>(max(a, 1, true)));
  expect_error<IndexError>([] { (void)max(zeros({0, 3}), 0); }, "[max] cannot reduce over a zero-size dimension");
  expect_error<IndexError>([&] { (void)max(a, 2); }, "[max]");
}

TEST_CASE("argmax and argmin: flattened and along a dim") {
  Tensor a = tensor(std::vector<float>{3, 9, 2, 1, 5, 9}, {2, 3});
  check_values(argmax(a), {}, kInt64, {1});
  check_values(a.argmin(), {}, kInt64, {3});
  check_values(argmax(a, 1), {2}, kInt64, {1, 2});
  check_values(argmin(a, 0, true), {1, 3}, kInt64, {1, 1, 0});
  check_values(argmax(a, std::nullopt, true), {1, 1}, kInt64, {1});
  // The flat index is in the logical (row-major) order, whatever the strides.
  check_values(argmax(a.transpose(0, 1)), {}, kInt64, {2});
  check_values(argmin(tensor({true, false, true})), {}, kInt64, {1});
  check_values(argmax(full({}, 1.0)), {}, kInt64, {0});
  check_meta_matches(argmax(a.to(kMeta), 0), argmax(a, 0));
  check_meta_matches(argmin(a.to(kMeta)), argmin(a));
  expect_error<IndexError>([] { (void)argmax(zeros({0})); }, "[argmax] cannot reduce over a zero-size dimension");
  expect_error<IndexError>([] { (void)argmin(zeros({2}), 1); }, "[argmin]");
}

TEST_CASE("max and min: gradients") {
  check_gradcheck([](const tensor_list& t) { return tensor_list{max(t[0])}; }, {separated_leaf(3, 2, true)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{min(t[0])}; }, {separated_leaf(2, 3)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{std::get<0>(max(t[0], 1))}; },
                   {separated_leaf(3, 4, true)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{std::get<0>(min(t[0], 0, true))}; },
                   {separated_leaf(3, 4)});
  // Ties: max() shares the gradient evenly; max(dim) sends it to the reported index.
  Tensor x = tensor({1.0, 3.0, 3.0}, kFloat64).requires_grad_();
  max(x).backward();
  check_values(x.grad(), {3}, kFloat64, {0, 0.5, 0.5});
  Tensor y = tensor({1.0, 3.0, 3.0}, kFloat64).requires_grad_();
  auto [values, indices] = max(y, 0);
  CHECK_FALSE(indices.requires_grad());
  (values * 2.0).backward();
  check_values(y.grad(), {3}, kFloat64, {0, 2, 0});
  Tensor z = tensor({2.0, static_cast<double>(NAN)}, kFloat64).requires_grad_();
  min(z).backward();
  check_values(z.grad(), {2}, kFloat64, {0, 1});
  Tensor s = full({}, 2.0, kFloat64).requires_grad_();
  std::get<0>(max(s, 0)).backward();
  check_values(s.grad(), {}, kFloat64, {1});
}

TEST_CASE("reduce_minmax: int8 and int16 extremes and their indices") {
  Tensor i8 = tensor({{int8_t{-128}, int8_t{127}}, {int8_t{5}, int8_t{-6}}});
  check_values(i8.max(), {}, kInt8, {127});
  check_values(i8.min(), {}, kInt8, {-128});
  auto [values, indices] = i8.max(1);
  check_values(values, {2}, kInt8, {127, 5});
  check_values(indices, {2}, kInt64, {1, 0});
  check_values(tensor({int16_t{-1}, int16_t{-300}, int16_t{2}}).argmin(), {}, kInt64, {1});
}

namespace {

// The first NaN, else the first position of the largest (smallest) value: max's and min's rule.
template <class T>
std::pair<T, int64_t> reference_extremum(const T* row, int64_t n, bool is_max) {
  int64_t at = 0;
  for (int64_t i = 1; i < n && !std::isnan(row[at]); ++i)
    if (std::isnan(row[i]) || (is_max ? row[i] > row[at] : row[i] < row[at])) at = i;
  return {row[at], at};
}

// Rows of small integers (many ties), zeros of both signs, and in some rows NaNs.
template <class T>
std::vector<T> tie_heavy_rows(int64_t rows, int64_t n, std::mt19937& random) {
  std::vector<T> data(static_cast<size_t>(rows * n));
  for (T& value : data) {
    const int pick = static_cast<int>(random() % 10);
    value = pick == 0 ? T(-0.0) : pick == 1 ? T(0.0) : static_cast<T>(static_cast<int>(random() % 7) - 3);
  }
  for (int64_t r = 1; r < rows; r += 2) {  // odd rows get one or two NaNs
    data[static_cast<size_t>(r * n + static_cast<int64_t>(random() % n))] = std::numeric_limits<T>::quiet_NaN();
    if (r % 4 == 3)
      data[static_cast<size_t>(r * n + static_cast<int64_t>(random() % n))] = -std::numeric_limits<T>::quiet_NaN();
  }
  return data;
}

template <class T>
void check_rows_against_reference(int64_t n, std::mt19937& random) {
  constexpr int64_t kRows = 4;
  const std::vector<T> data = tie_heavy_rows<T>(kRows, n, random);
  const Tensor x = tensor(data, {kRows, n}, std::is_same_v<T, float> ? kFloat32 : kFloat64);
  for (bool is_max : {true, false}) {
    auto [values, indices] = is_max ? max(x, 1) : min(x, 1);
    const Tensor arg = is_max ? argmax(x, 1) : argmin(x, 1);
    for (int64_t r = 0; r < kRows; ++r) {
      const auto [value, at] = reference_extremum(data.data() + r * n, n, is_max);
      CAPTURE(n);
      CAPTURE(r);
      CAPTURE(is_max);
      CHECK(indices.data_ptr<int64_t>()[r] == at);
      CHECK(arg.data_ptr<int64_t>()[r] == at);
      const T got = values.data_ptr<T>()[r];
      CHECK(std::isnan(got) == std::isnan(value));
      if (!std::isnan(value)) CHECK(std::signbit(got) == std::signbit(value));  // -0.0 and 0.0 keep the first
      if (!std::isnan(value)) CHECK(got == value);
    }
    const auto [all_value, all_at] = reference_extremum(data.data(), kRows * n, is_max);
    const Tensor all = is_max ? max(x) : min(x);
    CHECK(std::isnan(all.item<T>()) == std::isnan(all_value));
    if (!std::isnan(all_value)) CHECK(all.item<T>() == all_value);
    CHECK((is_max ? argmax(x) : argmin(x)).item<int64_t>() == all_at);
  }
}

}  // namespace

// Contiguous float rows run in vector lanes (Note [Extremum lanes], ops/reduce_minmax.cpp);
// every length around the lane widths must give the scalar rule's value and index.
TEST_CASE("max and min along contiguous rows: every length agrees with the scalar rule, ties, -0.0 and NaN") {
  std::mt19937 random(7);
  for (int64_t n = 1; n <= 80; ++n) {
    check_rows_against_reference<float>(n, random);
    check_rows_against_reference<double>(n, random);
  }
  for (int64_t n : {127, 128, 129, 1000, 4099, 65537}) {
    check_rows_against_reference<float>(n, random);
    check_rows_against_reference<double>(n, random);
  }
}

namespace {

// max and min along dim 1 of [2, rows, columns]: every output column against the scalar rule.
template <class T>
void check_columns_against_reference(int64_t rows, int64_t columns, std::mt19937& random) {
  constexpr int64_t kOuter = 2;
  std::vector<T> data = tie_heavy_rows<T>(kOuter * rows, columns, random);
  const Tensor x = tensor(data, {kOuter, rows, columns}, std::is_same_v<T, float> ? kFloat32 : kFloat64);
  for (bool is_max : {true, false}) {
    auto [values, indices] = is_max ? max(x, 1) : min(x, 1);
    for (int64_t o = 0; o < kOuter; ++o)
      for (int64_t c = 0; c < columns; ++c) {
        std::vector<T> column(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) column[r] = data[static_cast<size_t>((o * rows + r) * columns + c)];
        const auto [value, at] = reference_extremum(column.data(), rows, is_max);
        CAPTURE(rows);
        CAPTURE(columns);
        CAPTURE(c);
        CHECK(indices.data_ptr<int64_t>()[o * columns + c] == at);
        const T got = values.data_ptr<T>()[o * columns + c];
        CHECK(std::isnan(got) == std::isnan(value));
        if (!std::isnan(value)) CHECK((got == value && std::signbit(got) == std::signbit(value)));
      }
  }
}

}  // namespace

// Columns of neighbouring outputs run in vector lanes too (Note [Extremum lanes]).
TEST_CASE("max and min along a dim with neighbours: every column agrees with the scalar rule") {
  std::mt19937 random(11);
  for (int64_t rows : {1, 2, 5, 33})
    for (int64_t columns : {1, 7, 8, 9, 15, 16, 17, 31, 63, 64, 65, 130}) {
      check_columns_against_reference<float>(rows, columns, random);
      check_columns_against_reference<double>(rows, columns, random);
    }
}
