// Tests for ops/linalg.cpp: matmul in all its torch.matmul forms, mm, bmm, t and linear.
#include "op_test_util.h"

#include <strata/ops/gemm.h>

#include <cmath>
#include <functional>
#include <limits>

using namespace strata;
using strata::testing::check_meta_matches;
using strata::testing::check_values;
using strata::testing::expect_error;
using strata::testing::check_gradcheck;
using strata::testing::grad_input;
using strata::testing::values_of;

namespace {

// torch.matmul computed naively in double from the operands' values.
std::vector<double> reference_matmul(const Tensor& a, const Tensor& b, const std::vector<int64_t>& out_sizes) {
  const bool a_vector = a.dim() == 1, b_vector = b.dim() == 1;
  Tensor a2 = a_vector ? a.view({1, a.size(0)}) : a;
  Tensor b2 = b_vector ? b.view({b.size(0), 1}) : b;
  const int64_t n = a2.size(-2), k = a2.size(-1), p = b2.size(-1);
  std::vector<int64_t> batch(out_sizes.begin(), out_sizes.end() - (a_vector ? 0 : 1) - (b_vector ? 0 : 1));
  std::vector<int64_t> a_full = batch, b_full = batch;
  a_full.insert(a_full.end(), {n, k});
  b_full.insert(b_full.end(), {k, p});
  const std::vector<double> x = values_of(a2.expand(a_full)), y = values_of(b2.expand(b_full));
  int64_t batches = 1;
  for (int64_t size : batch) batches *= size;
  std::vector<double> result(static_cast<size_t>(batches * n * p), 0.0);
  for (int64_t s = 0; s < batches; ++s)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < p; ++j)
        for (int64_t l = 0; l < k; ++l)
          result[(s * n + i) * p + j] += x[(s * n + i) * k + l] * y[(s * k + l) * p + j];
  return result;
}

void check_against_reference(const Tensor& a, const Tensor& b, const std::vector<int64_t>& out_sizes,
                             double tolerance = 1e-9) {
  Tensor result = matmul(a, b);
  check_values(result, out_sizes, a.dtype(), reference_matmul(a, b, out_sizes), tolerance);
  check_meta_matches(matmul(a.to(kMeta), b.to(kMeta)), result);
}

}  // namespace

TEST_CASE("matmul: 2-d by 2-d with hand-worked values") {
  Tensor a = tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = tensor(std::vector<float>{7, 8, 9, 10, 11, 12}, {3, 2});
  check_values(matmul(a, b), {2, 2}, kFloat32, {58, 64, 139, 154});
  check_values(a.matmul(b), {2, 2}, kFloat32, {58, 64, 139, 154});
  check_values(matmul(b, a), {3, 3}, kFloat32, {39, 54, 69, 49, 68, 87, 59, 82, 105});
  check_meta_matches(matmul(a.to(kMeta), b.to(kMeta)), matmul(a, b));
}

TEST_CASE("matmul: vectors give dot, mv and vm") {
  Tensor v = tensor({1.0, 2.0, 3.0}, kFloat64);
  Tensor w = tensor({4.0, 5.0, 6.0}, kFloat64);
  check_values(matmul(v, w), {}, kFloat64, {32});
  Tensor m = tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}, kFloat64);
  check_values(matmul(m, v), {2}, kFloat64, {14, 32});
  check_values(matmul(tensor({1.0, 2.0}, kFloat64), m), {3}, kFloat64, {9, 12, 15});
  check_meta_matches(matmul(v.to(kMeta), w.to(kMeta)), matmul(v, w));
  check_meta_matches(matmul(m.to(kMeta), v.to(kMeta)), matmul(m, v));
}

TEST_CASE("matmul: batched with broadcast batch dims") {
  Tensor x = arange(8, kFloat32).view({2, 2, 2});
  check_values(matmul(x, ones({2, 2})), {2, 2, 2}, kFloat32, {1, 1, 5, 5, 9, 9, 13, 13});
  check_against_reference(arange(12, kFloat64).view({2, 1, 2, 3}), arange(18, kFloat64).view({3, 3, 2}), {2, 3, 2, 2});
  check_against_reference(arange(24, kFloat64).view({2, 3, 4}), arange(4, kFloat64), {2, 3});
  check_against_reference(arange(3, kFloat64), arange(24, kFloat64).view({2, 3, 4}), {2, 4});
  check_against_reference(arange(6, kFloat64).view({2, 3}), arange(24, kFloat64).view({2, 3, 4}), {2, 2, 4});
}

TEST_CASE("matmul: transposed, strided and expanded operands") {
  Tensor a = arange(6, kFloat32).view({3, 2}).transpose(0, 1);  // column-major [2, 3]
  Tensor b = arange(12, kFloat32).view({4, 3}).transpose(0, 1);  // column-major [3, 4]
  check_against_reference(a, b, {2, 4});
  check_against_reference(a, arange(12, kFloat32).view({3, 4}), {2, 4});
  std::vector<double> buffer(16);
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<double>(i);
  Tensor strided = from_blob(buffer.data(), {2, 2}, {4, 2}, kFloat64);  // neither row- nor column-major
  check_against_reference(strided, arange(6, kFloat64).view({2, 3}), {2, 3});
  Tensor expanded = tensor({1.0, 2.0, 3.0}, kFloat64).view({3, 1}).expand({3, 4});
  check_against_reference(expanded, arange(8, kFloat64).view({4, 2}), {3, 2});
  check_against_reference(arange(4, kFloat64).view({1, 4}).expand({3, 4}), arange(8, kFloat64).view({4, 2}), {3, 2});
  check_against_reference(tensor({2.0}, kFloat64).expand({4}), arange(8, kFloat64).view({4, 2}), {2});
  Tensor batched = arange(24, kFloat64).view({2, 3, 4}).permute({1, 0, 2});  // [3, 2, 4]
  check_against_reference(batched, arange(8, kFloat64).view({4, 2}), {3, 2, 2});
}

TEST_CASE("matmul: integer and 16-bit dtypes use the plain loop") {
  Tensor a = tensor(std::vector<int64_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = tensor(std::vector<int64_t>{7, 8, 9, 10, 11, 12}, {3, 2});
  check_values(matmul(a, b), {2, 2}, kInt64, {58, 64, 139, 154});
  check_values(matmul(a.to(kInt32), b.to(kInt32)), {2, 2}, kInt32, {58, 64, 139, 154});
  check_values(matmul(tensor({-1, 2}, kInt32), tensor({3, 4}, kInt32)), {}, kInt32, {5});
  check_values(matmul(a.to(kFloat16), b.to(kFloat16)), {2, 2}, kFloat16, {58, 64, 139, 154});
  check_values(matmul(a.to(kBFloat16), b.to(kBFloat16)), {2, 2}, kBFloat16, {58, 64, 139, 154});
  check_values(matmul(tensor({200}, kUInt8), tensor({2}, kUInt8)), {}, kUInt8, {144});
  check_against_reference(arange(24, kInt64).view({2, 3, 4}).transpose(1, 2), arange(6, kInt64).view({3, 2}), {2, 4, 2});
}

TEST_CASE("matmul: large products run in parallel tasks") {
  Tensor a = arange(96 * 80, kFloat64).view({96, 80}).div(1000.0);
  Tensor b = arange(80 * 70, kFloat64).view({80, 70}).div(1000.0);
  check_against_reference(a, b, {96, 70}, 1e-9);
  check_against_reference(a.transpose(0, 1), a, {80, 80}, 1e-9);
  Tensor wide = arange(8 * 200, kFloat64).view({8, 200}).div(100.0);
  check_against_reference(wide.transpose(0, 1), wide, {200, 200}, 1e-9);  // split by rows
  check_against_reference(wide, arange(200 * 300, kFloat64).view({200, 300}).div(1e4), {8, 300}, 1e-9);  // by columns
  Tensor batch_a = arange(6 * 40 * 50, kFloat32).view({6, 40, 50}).div(1e4);
  Tensor batch_b = arange(50 * 30, kFloat32).view({50, 30}).div(1e4);
  check_against_reference(batch_a, batch_b, {6, 40, 30}, 1e-4);
  check_against_reference(arange(70 * 70, kInt64).view({70, 70}), arange(70 * 70, kInt64).view({70, 70}), {70, 70}, 0);
}

namespace {

// Runs `check` once with each GEMM library this build has (see Note [CPU GEMM library]), then
// restores the one in use.
void for_each_gemm_library(const std::function<void()>& check) {
  const detail::GemmLibrary in_use = detail::gemm_library();
  for (detail::GemmLibrary library : {detail::GemmLibrary::eigen, detail::GemmLibrary::openblas}) {
    if (!detail::set_gemm_library(library)) continue;
    CAPTURE(static_cast<int>(library));
    CHECK(detail::gemm_library() == library);
    check();
  }
  CHECK(detail::set_gemm_library(in_use));
}

}  // namespace

TEST_CASE("matmul: every GEMM library gives the products of every layout") {
  const int threads = get_num_threads();
  for_each_gemm_library([] {
    for (ScalarType dtype : {kFloat32, kFloat64}) {
      const double tolerance = dtype == kFloat32 ? 1e-3 : 1e-12;
      Tensor a = arange(5 * 7, dtype).view({5, 7}).div(10.0), b = arange(7 * 6, dtype).view({7, 6}).div(10.0);
      Tensor a_t = a.t().contiguous().t(), b_t = b.t().contiguous().t();  // column-major copies
      check_against_reference(a, b, {5, 6}, tolerance);
      check_against_reference(a_t, b, {5, 6}, tolerance);
      check_against_reference(a, b_t, {5, 6}, tolerance);
      check_against_reference(a_t, b_t, {5, 6}, tolerance);
      // Leading dimensions larger than the extents: slices of wider and taller matrices.
      Tensor wide = arange(5 * 11, dtype).view({5, 11}).div(10.0), tall = arange(9 * 6, dtype).view({9, 6}).div(10.0);
      check_against_reference(wide.slice(1, 2, 9), tall.slice(0, 1, 8), {5, 6}, tolerance);
      const Tensor column_major_slice = arange(7 * 9, dtype).div(10.0).view({7, 9}).slice(1, 2, 7).t();  // [5, 7], ld 9
      check_against_reference(tall.slice(0, 1, 6).t(), column_major_slice, {6, 7}, tolerance);
      // Vectors (one row or one column), batches with broadcast, and products split into tasks.
      check_against_reference(arange(7, dtype), b, {6}, tolerance);
      check_against_reference(a, arange(7, dtype), {5}, tolerance);
      check_against_reference(arange(7, dtype), arange(7, dtype), {}, tolerance);
      check_against_reference(arange(3 * 5 * 7, dtype).view({3, 5, 7}).div(100.0), b_t, {3, 5, 6}, tolerance);
      Tensor big = arange(90 * 80, dtype).view({90, 80}).div(1e4);
      check_against_reference(big, big.t(), {90, 90}, dtype == kFloat32 ? 1e-3 : 1e-9);
    }
    // out= with NaN in it: the product overwrites it, also through a transposed out.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const Tensor a = tensor({{1.0f, 2.0f}, {3.0f, 4.0f}}), b = tensor({{5.0f, 6.0f}, {7.0f, 8.0f}});
    Tensor out = full({2, 2}, nan), transposed = full({2, 2}, nan).t();
    CHECK(equal(mm_out(out, a, b), tensor({{19.0f, 22.0f}, {43.0f, 50.0f}})));
    CHECK(equal(mm_out(transposed, a, b), tensor({{19.0f, 22.0f}, {43.0f, 50.0f}})));
    CHECK(equal(linear(a, b, tensor({1.0f, -1.0f})), tensor({{18.0f, 22.0f}, {40.0f, 52.0f}})));
  });
  CHECK(get_num_threads() == threads);  // the GEMM library leaves strata's thread count alone
}

TEST_CASE("matmul: zero-size operands") {
  check_values(matmul(zeros({2, 0}), zeros({0, 3})), {2, 3}, kFloat32, {0, 0, 0, 0, 0, 0});
  check_values(matmul(zeros({0, 2, 3}), zeros({3, 4})), {0, 2, 4}, kFloat32, {});
  check_values(matmul(zeros({0}), zeros({0})), {}, kFloat32, {0});
  check_meta_matches(matmul(zeros({0, 2, 3}, kMeta), zeros({3, 4}, kMeta)), matmul(zeros({0, 2, 3}), zeros({3, 4})));
}

TEST_CASE("matmul: errors") {
  expect_error<ValueError>([] { (void)matmul(zeros({2, 3}), zeros({4, 5})); },
                           "[matmul] shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)");
  expect_error<ValueError>([] { (void)matmul(zeros({3}), zeros({4})); }, "[matmul] shapes [3] and [4]");
  expect_error<ValueError>([] { (void)matmul(full({}, 1.0f), zeros({2})); }, "[matmul] both arguments need at least 1 dimension");
  expect_error<TypeError>([] { (void)matmul(zeros({2, 2}), zeros({2, 2}, kFloat64)); },
                          "[matmul] expected both inputs to have the same dtype, got Float32 and Float64");
  expect_error<Error>([] { (void)matmul(zeros({2, 2}), zeros({2, 2}, kMeta)); },
                      "[matmul] expected all tensors on the same device, got cpu and meta");
  expect_error<TypeError>([] { (void)matmul(ones({2, 2}, kBool), ones({2, 2}, kBool)); }, "[matmul] Bool");
  expect_error<ValueError>([] { (void)matmul(zeros({2, 2, 3}), zeros({3, 3, 4})); }, "[matmul] shapes [2] and [3]");
  expect_error<ValueError>([] { (void)matmul(zeros({2, 3}, kMeta), zeros({4, 5}, kMeta)); }, "[matmul] shapes [2, 3]");
}

// ---------------------------------------------------------------------------------------
// mm, bmm, t and linear.

TEST_CASE("mm and bmm: values, layouts and Meta") {
  Tensor a = tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = tensor(std::vector<float>{7, 8, 9, 10, 11, 12}, {3, 2});
  check_values(mm(a, b), {2, 2}, kFloat32, {58, 64, 139, 154});
  check_values(a.mm(b), {2, 2}, kFloat32, {58, 64, 139, 154});
  check_values(mm(b.t(), a.t()), {2, 2}, kFloat32, {58, 139, 64, 154});
  check_values(mm(zeros({2, 0}), zeros({0, 3})), {2, 3}, kFloat32, {0, 0, 0, 0, 0, 0});
  check_values(mm(tensor(std::vector<int64_t>{1, 2}, {1, 2}), tensor(std::vector<int64_t>{3, 4}, {2, 1})), {1, 1},
               kInt64, {11});
  Tensor x = arange(12, kFloat64).view({2, 2, 3});
  Tensor y = arange(12, kFloat64).view({2, 3, 2});
  check_against_reference(x, y, {2, 2, 2});
  check_values(bmm(x, y), {2, 2, 2}, kFloat64, reference_matmul(x, y, {2, 2, 2}));
  check_values(x.bmm(y.transpose(1, 2).contiguous().transpose(1, 2)), {2, 2, 2}, kFloat64,
               reference_matmul(x, y, {2, 2, 2}));
  check_values(bmm(zeros({0, 2, 3}), zeros({0, 3, 4})), {0, 2, 4}, kFloat32, {});
  check_meta_matches(mm(a.to(kMeta), b.to(kMeta)), mm(a, b));
  check_meta_matches(bmm(x.to(kMeta), y.to(kMeta)), bmm(x, y));
}

TEST_CASE("mm and bmm: errors") {
  expect_error<ValueError>([] { (void)mm(zeros({2, 3}), zeros({3})); },
                           "[mm] expected two matrices (2-d tensors), got shapes [2, 3] and [3]");
  expect_error<ValueError>([] { (void)mm(zeros({2, 3}), zeros({4, 5})); },
                           "[mm] shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)");
  expect_error<TypeError>([] { (void)mm(zeros({2, 2}), zeros({2, 2}, kFloat64)); }, "[mm] expected both inputs");
  expect_error<ValueError>([] { (void)bmm(zeros({2, 3}), zeros({2, 3, 4})); }, "[bmm] expected two batches");
  expect_error<ValueError>([] { (void)bmm(zeros({2, 2, 3}), zeros({3, 3, 4})); },
                           "[bmm] batch sizes differ: shapes [2, 2, 3] and [3, 3, 4]");
  expect_error<ValueError>([] { (void)bmm(zeros({2, 2, 3}, kMeta), zeros({2, 4, 4}, kMeta)); },
                           "[bmm] shapes [2, 2, 3] and [2, 4, 4] cannot be multiplied");
}

TEST_CASE("mm and bmm: gradients") {
  check_gradcheck([](const tensor_list& t) { return tensor_list{mm(t[0], t[1])}; },
                   {grad_input({2, 3}, 1, true), grad_input({3, 4}, 2)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{bmm(t[0], t[1])}; },
                   {grad_input({2, 2, 3}, 3), grad_input({2, 3, 2}, 4, true)});
  check_gradcheck(
      [](const tensor_list& t) {
        Tensor y = mm(t[0], t[1]);
        return autograd::grad({y}, t, {ones_like(y)}, true, true);
      },
      {grad_input({2, 3}, 5), grad_input({3, 2}, 6)});
}

TEST_CASE("t: transposes matrices as views; 0-d and 1-d come back as themselves") {
  Tensor m = arange(6, kFloat32).view({2, 3});
  Tensor mt = t(m);
  check_values(mt, {3, 2}, kFloat32, {0, 3, 1, 4, 2, 5});
  CHECK(mt.data_ptr() == m.data_ptr());  // a view
  check_values(m.t().t(), {2, 3}, kFloat32, {0, 1, 2, 3, 4, 5});
  Tensor v = arange(3, kFloat32);
  check_values(t(v), {3}, kFloat32, {0, 1, 2});
  CHECK(t(v).data_ptr() == v.data_ptr());
  check_values(t(full({}, 2.0)), {}, kFloat32, {2});
  check_meta_matches(t(m.to(kMeta)), t(m));
  expect_error<ValueError>([] { (void)t(zeros({2, 3, 4})); }, "[t] expects a tensor with at most 2 dimensions",
                           {"[2, 3, 4]"});
  check_gradcheck([](const tensor_list& x) { return tensor_list{t(x[0]) * 2.0}; }, {grad_input({2, 3}, 7)});
}

TEST_CASE("linear: x @ w^T + b for any leading dims") {
  Tensor x = tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor w = tensor(std::vector<float>{1, 0, 0, 0, 1, 1}, {2, 3});  // [out=2, in=3]
  Tensor b = tensor({10.0f, 20.0f});
  check_values(linear(x, w, b), {2, 2}, kFloat32, {11, 25, 14, 31});
  check_values(linear(x, w), {2, 2}, kFloat32, {1, 5, 4, 11});
  check_values(linear(x, w, {}), {2, 2}, kFloat32, {1, 5, 4, 11});
  check_values(linear(tensor({1.0f, 2.0f, 3.0f}), w, b), {2}, kFloat32, {11, 25});
  check_values(linear(x.view({1, 2, 3}), w, full({}, 1.0f)), {1, 2, 2}, kFloat32, {2, 6, 5, 12});
  check_values(linear(x.t().contiguous().t(), w.t().contiguous().t(), b), {2, 2}, kFloat32, {11, 25, 14, 31});
  Tensor batch = arange(24, kFloat64).view({2, 3, 4}).transpose(0, 1);  // [3, 2, 4], non-contiguous
  Tensor weight = arange(20, kFloat64).view({5, 4}).div(10.0);
  Tensor expected = matmul(batch, weight.t()) + arange(5, kFloat64);
  CHECK(allclose(linear(batch, weight, arange(5, kFloat64)), expected));
  check_values(linear(tensor(std::vector<int64_t>{1, 2}, {1, 2}), tensor(std::vector<int64_t>{3, 4}, {1, 2}),
                      tensor({5})),
               {1, 1}, kInt64, {16});
  check_values(linear(zeros({0, 3}), w, b), {0, 2}, kFloat32, {});
  check_values(linear(zeros({2, 0}), zeros({2, 0}), b), {2, 2}, kFloat32, {10, 20, 10, 20});
  check_meta_matches(linear(x.to(kMeta), w.to(kMeta), b.to(kMeta)), linear(x, w, b));
  check_meta_matches(linear(x.to(kMeta).view({1, 2, 3}), w.to(kMeta)), linear(x.view({1, 2, 3}), w));
}

TEST_CASE("linear: errors") {
  expect_error<ValueError>([] { (void)linear(zeros({2, 3}), zeros({4, 5})); },
                           "[linear] input shape [2, 3] and weight shape [4, 5] cannot be multiplied");
  expect_error<ValueError>([] { (void)linear(zeros({2, 3}), zeros({3})); }, "[linear] weight must be 2-d");
  expect_error<ValueError>([] { (void)linear(zeros({2, 3}), zeros({4, 3}), zeros({3})); },
                           "[linear] bias must have shape [out_features] = [4], got [3]");
  expect_error<TypeError>([] { (void)linear(zeros({2, 3}), zeros({4, 3}, kFloat64)); },
                          "[linear] expected both inputs to have the same dtype, got Float32 and Float64");
  expect_error<Error>([] { (void)linear(zeros({2, 3}), zeros({4, 3}), zeros({4}, kMeta)); },
                      "[linear] expected all tensors on the same device");
}

TEST_CASE("linear: gradients for input, weight and bias, first and second order") {
  auto with_bias = [](const tensor_list& t) { return tensor_list{linear(t[0], t[1], t[2])}; };
  check_gradcheck(with_bias, {grad_input({3, 4}, 8, true), grad_input({2, 4}, 9), grad_input({2}, 10)});
  check_gradcheck(with_bias, {grad_input({2, 3, 4}, 11), grad_input({2, 4}, 12, true), grad_input({}, 13)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{linear(t[0], t[1])}; },
                   {grad_input({3}, 14), grad_input({2, 3}, 15)});
  check_gradcheck(
      [](const tensor_list& t) {
        Tensor y = linear(t[0], t[1], t[2]);
        return autograd::grad({y}, t, {ones_like(y)}, true, true, true);
      },
      {grad_input({3, 2}, 16), grad_input({2, 2}, 17), grad_input({2}, 18)});
  Tensor x = ones({4, 3}, TensorOptions(kFloat64).requires_grad(true));
  Tensor w = ones({2, 3}, TensorOptions(kFloat64).requires_grad(true));
  Tensor b = zeros({2}, TensorOptions(kFloat64).requires_grad(true));
  linear(x, w, b).sum().backward();
  check_values(b.grad(), {2}, kFloat64, {4, 4});
  check_values(w.grad(), {2, 3}, kFloat64, {4, 4, 4, 4, 4, 4});
  check_values(x.grad(), {4, 3}, kFloat64, std::vector<double>(12, 2.0));
}

TEST_CASE("linalg: int8 and int16 matrix products keep the promoted dtype") {
  Tensor a = tensor({{int8_t{1}, int8_t{2}}, {int8_t{3}, int8_t{4}}});
  Tensor b = tensor({{int16_t{100}, int16_t{0}}, {int16_t{0}, int16_t{200}}});
  check_values(mm(a, a), {2, 2}, kInt8, {7, 10, 15, 22});
  check_values(matmul(a.to(kInt16), b), {2, 2}, kInt16, {100, 400, 300, 800});
  check_values(matmul(a, tensor({int8_t{1}, int8_t{1}})), {2}, kInt8, {3, 7});
}

TEST_CASE("mm_out, bmm_out and matmul_out: resize, strided outs, aliasing and checks") {
  const Tensor a = tensor({{1.0f, 2.0f}, {3.0f, 4.0f}}), b = tensor({{5.0f, 6.0f}, {7.0f, 8.0f}});
  const Tensor expected = tensor({{19.0f, 22.0f}, {43.0f, 50.0f}});
  Tensor out = empty({0});
  const Tensor& result = mm_out(out, a, b);
  CHECK(result.is_same(out));
  CHECK(equal(out, expected));
  // A transposed (column-major) out gets the same values.
  Tensor transposed = zeros({2, 2}).t();
  mm_out(transposed, a, b);
  CHECK(equal(transposed, expected));
  // out may be an input with the same geometry: the product is formed before it is written.
  Tensor c = a.clone();
  mm_out(c, c, b);
  CHECK(equal(c, expected));
  // float32 result into float64 out.
  Tensor doubles = empty({2, 2}, kFloat64);
  mm_out(doubles, a, b);
  CHECK(equal(doubles, expected.to(kFloat64)));
  Tensor batched = empty({0});
  bmm_out(batched, stack({a, b}), stack({b, a}));
  CHECK(batched.sizes() == IntArrayRef{2, 2, 2});
  CHECK(equal(batched, stack({mm(a, b), mm(b, a)})));
  Tensor vector = empty({0});
  matmul_out(vector, a, tensor({1.0f, 1.0f}));
  CHECK(equal(vector, tensor({3.0f, 7.0f})));
  Tensor broadcast = empty({0});
  matmul_out(broadcast, ones({3, 2, 2}), b);
  CHECK(broadcast.sizes() == IntArrayRef{3, 2, 2});
  CHECK(equal(broadcast.select(0, 2), mm(ones({2, 2}), b)));
  expect_error<ValueError>([&] { (void)mm_out(empty({0}), a, ones({3, 2})); }, "[mm] shapes [2, 2] and [3, 2]");
  expect_error<ValueError>([&] { (void)bmm_out(empty({0}), a, b); }, "[bmm] expected two batches");
  expect_error<ValueError>([&] { (void)mm_out(zeros({3, 2}), a, b); }, "[mm.out] out has shape [3, 2]");
  expect_error<Error>([&] { (void)matmul_out(empty({2, 2}, kInt64), a, b); },
                      "[matmul.out] result type Float32 can't be cast");
  const Tensor w = ones({2, 2}).requires_grad_();
  expect_error<Error>([&] { (void)mm_out(empty({0}), w, b); }, "[strata::mm.out]", {"out="});
  Tensor meta_out = empty({0}, kMeta);
  matmul_out(meta_out, empty({4, 1, 2, 3}, kMeta), empty({5, 3, 6}, kMeta));
  CHECK(meta_out.sizes() == IntArrayRef{4, 5, 2, 6});
}
