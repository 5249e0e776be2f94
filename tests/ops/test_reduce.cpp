// Tests for ops/reduce.cpp: sum, mean and prod over all dims and over lists of dims.
#include "op_test_util.h"

#include <functional>

using namespace strata;
using strata::testing::check_meta_matches;
using strata::testing::check_values;
using strata::testing::expect_error;
using strata::testing::check_gradcheck;
using strata::testing::uniform_input;

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

// ---------------------------------------------------------------------------------------
// mean and prod.

TEST_CASE("mean: all elements and dims, dtypes and layouts") {
  Tensor a = arange(6, kFloat32).view({2, 3});  // [[0, 1, 2], [3, 4, 5]]
  check_values(mean(a), {}, kFloat32, {2.5});
  check_values(a.mean({0}), {3}, kFloat32, {1.5, 2.5, 3.5});
  check_values(mean(a, {1}, true), {2, 1}, kFloat32, {1, 4});
  check_values(mean(a, {-1, 0}), {}, kFloat32, {2.5});
  check_values(mean(a.transpose(0, 1), {1}), {3}, kFloat32, {1.5, 2.5, 3.5});
  check_values(mean(tensor({1, 2}), kFloat64), {}, kFloat64, {1.5});  // integral input with a dtype
  check_values(mean(tensor({1.0f, 2.0f}, kFloat16)), {}, kFloat16, {1.5});
  check_values(mean(zeros({0})), {}, kFloat32, {NAN});
  check_values(mean(zeros({0, 2}), {0}), {2}, kFloat32, {NAN, NAN});
  check_values(mean(full({}, 3.0)), {}, kFloat32, {3});
  check_meta_matches(mean(a.to(kMeta), {1}, true), mean(a, {1}, true));
  check_meta_matches(mean(tensor({1, 2}).to(kMeta), kFloat64), mean(tensor({1, 2}), kFloat64));
  expect_error<TypeError>([] { (void)mean(tensor({1, 2})); },
                          "[mean] could not infer the output dtype: the input dtype must be floating point, got Int64");
  expect_error<TypeError>([] { (void)mean(tensor({1.0f}), kInt32); }, "[mean] could not infer the output dtype");
  expect_error<IndexError>([] { (void)mean(zeros({2}), {1}); }, "[mean]");
}

TEST_CASE("mean: gradients") {
  check_gradcheck([](const tensor_list& t) { return tensor_list{mean(t[0])}; }, {uniform_input({3, 2}, 1, -1, 1, true)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{mean(t[0], {0}, true)}; },
                   {uniform_input({3, 4}, 2, -1, 1, true)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{mean(t[0], {0, 2})}; }, {uniform_input({2, 3, 2}, 3, -1, 1)});
  Tensor x = ones({2, 2}, TensorOptions(kFloat64).requires_grad(true));
  mean(x, {1}).sum().backward();
  check_values(x.grad(), {2, 2}, kFloat64, {0.5, 0.5, 0.5, 0.5});
}

TEST_CASE("prod: all elements and one dim, dtypes, zeros and layouts") {
  Tensor a = tensor(std::vector<float>{1, 2, 3, 4}, {2, 2});
  check_values(prod(a), {}, kFloat32, {24});
  check_values(a.prod(1), {2}, kFloat32, {2, 12});
  check_values(prod(a, 0, true), {1, 2}, kFloat32, {3, 8});
  check_values(prod(a.transpose(0, 1), -1), {2}, kFloat32, {3, 8});
  check_values(prod(tensor({2, 3}, kInt32)), {}, kInt64, {6});
  check_values(prod(tensor({true, false})), {}, kInt64, {0});
  check_values(prod(tensor({2, 3}, kInt32), kFloat64), {}, kFloat64, {6});
  check_values(prod(tensor({1ll << 62, 4ll})), {}, kInt64, {0});  // wraps like int64 arithmetic
  check_values(prod(zeros({0})), {}, kFloat32, {1});
  check_values(prod(zeros({2, 0}), 1), {2}, kFloat32, {1, 1});
  check_values(prod(full({}, 5.0)), {}, kFloat32, {5});
  check_values(prod(full({}, 5.0), 0), {}, kFloat32, {5});
  check_values(prod(tensor({0.5f, 4.0f}, kBFloat16)), {}, kBFloat16, {2});
  check_meta_matches(prod(a.to(kMeta), 1, true), prod(a, 1, true));
  check_meta_matches(prod(tensor({1, 2}, kInt32).to(kMeta)), prod(tensor({1, 2}, kInt32)));
  expect_error<IndexError>([] { (void)prod(zeros({2, 2}), 2); }, "[prod]");
}

TEST_CASE("prod: gradients, with and without zeros") {
  check_gradcheck([](const tensor_list& t) { return tensor_list{prod(t[0])}; }, {uniform_input({3, 2}, 4, 0.5, 1.5, true)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{prod(t[0], 1)}; }, {uniform_input({2, 3}, 5, -1.5, 1.5)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{prod(t[0], 0, true)}; },
                   {uniform_input({3, 2}, 6, -1.5, 1.5, true)});
  for (const std::vector<double>& values : {std::vector<double>{2, 0, 3, 4}, std::vector<double>{0, 5, 0, 2}}) {
    Tensor x = tensor(values, {4}, kFloat64).requires_grad_();
    check_gradcheck([](const tensor_list& t) { return tensor_list{prod(t[0])}; }, {x});
    check_gradcheck([](const tensor_list& t) { return tensor_list{prod(t[0].view({2, 2}), 1)}; }, {x});
  }
  Tensor x = tensor({2.0, 0.0, 3.0}, kFloat64).requires_grad_();
  prod(x).backward();
  check_values(x.grad(), {3}, kFloat64, {0, 6, 0});
  auto first = [](const tensor_list& t) {
    Tensor y = prod(t[0], 1);
    return autograd::grad({y}, t, {ones_like(y)}, true, true);
  };
  check_gradcheck(first, {uniform_input({2, 3}, 7, 0.5, 1.5)});
}

TEST_CASE("reduce: sums and products of int8 and int16 are int64") {
  Tensor i8 = tensor({{int8_t{100}, int8_t{100}}, {int8_t{-128}, int8_t{1}}});
  check_values(i8.sum(), {}, kInt64, {73});
  check_values(i8.sum({1}), {2}, kInt64, {200, -127});
  check_values(tensor({int16_t{300}, int16_t{300}}).prod(), {}, kInt64, {90000});
  check_values(i8.sum({0}, false, kInt8), {2}, kInt8, {-28, 101});
}

TEST_CASE("sum_out and mean_out: resize an empty out, fill strided outs, cast, and check") {
  const Tensor a = tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor out = empty({0});
  const Tensor& result = sum_out(out, a, {1});
  CHECK(result.is_same(out));
  check_values(out, {2}, kFloat32, {6, 15});
  // A strided out (a column of a matrix) is filled in place.
  Tensor matrix = zeros({3, 2});
  sum_out(matrix.select(1, 1), a, {0});
  CHECK(equal(matrix, tensor({{0.0f, 5.0f}, {0.0f, 7.0f}, {0.0f, 9.0f}})));
  // keepdim, dtype, and a float64 out taking the float32 result.
  Tensor doubles = empty({2, 1}, kFloat64);
  mean_out(doubles, a, {1}, /*keepdim=*/true);
  check_values(doubles, {2, 1}, kFloat64, {2, 5});
  Tensor all = empty({0}, kFloat64);
  mean_out(all, a, {}, false, kFloat64);
  check_values(all, {}, kFloat64, {3.5});
  // Integral inputs sum into int64, then cast into the out's dtype when allowed.
  Tensor ints = empty({0}, kInt64);
  sum_out(ints, tensor({1, 2, 3}, kInt32), {0});
  check_values(ints, {}, kInt64, {6});
  expect_error<Error>([] { (void)sum_out(empty({2}, kInt64), tensor({{1.5f, 2.5f}}), {0}); },
                      "[sum.IntList_out] result type Float32 can't be cast to the desired output type Int64");
  expect_error<ValueError>([&] { (void)sum_out(zeros({3}), a, {1}); },
                           "[sum.IntList_out] out has shape [3] but the result has shape [2]");
  expect_error<TypeError>([] { (void)mean_out(empty({0}), tensor({1, 2}), {0}); },
                          "[mean] could not infer the output dtype");
  // out may be the input itself when the geometry is the same (a reduction over a size-1 dim).
  Tensor column = tensor(std::vector<float>{1, 2, 3}, {3, 1});
  sum_out(column, column, {1}, /*keepdim=*/true);
  check_values(column, {3, 1}, kFloat32, {1, 2, 3});
  // Meta outs follow the shape function.
  Tensor meta_out = empty({0}, kMeta);
  mean_out(meta_out, empty({4, 5}, kMeta), {0});
  CHECK(meta_out.sizes() == IntArrayRef{5});
}

TEST_CASE("sum_out and mean_out: not differentiable; NoGradGuard allows them") {
  const Tensor w = ones({2, 2}).requires_grad_();
  expect_error<Error>([&] { (void)sum_out(empty({0}), w, {0}); }, "[strata::sum.IntList_out]", {"out="});
  expect_error<Error>([&] { (void)mean_out(empty({0}), w, {0}); }, "[strata::mean.out]", {"out="});
  NoGradGuard no_grad;
  Tensor out = empty({0});
  mean_out(out, w, {0});
  check_values(out, {2}, kFloat32, {1, 1});
}
