// Tests for ops/binary.cpp: pow (tensor and scalar exponents), maximum and minimum.
#include "op_test_util.h"

#include <functional>

using namespace strata;
using strata::testing::check_meta_matches;
using strata::testing::check_values;
using strata::testing::expect_error;
using strata::testing::check_gradcheck;
using strata::testing::check_gradgradcheck;
using strata::testing::grad_input;
using strata::testing::uniform_input;

TEST_CASE("pow: scalar exponents, with the exact shortcuts and the general case") {
  Tensor x = tensor({1.0f, 2.0f, 4.0f});
  check_values(pow(x, 2), {3}, kFloat32, {1, 4, 16});
  check_values(pow(x, 3), {3}, kFloat32, {1, 8, 64});
  check_values(pow(x, 0.5), {3}, kFloat32, {1, std::sqrt(2.0), 2}, 1e-6);
  check_values(pow(x, -0.5), {3}, kFloat32, {1, 1 / std::sqrt(2.0), 0.5}, 1e-6);
  check_values(pow(x, -1), {3}, kFloat32, {1, 0.5, 0.25});
  check_values(x.pow(1), {3}, kFloat32, {1, 2, 4});
  check_values(pow(tensor({2.0, 9.0}, kFloat64), 2.5), {2}, kFloat64, {std::pow(2.0, 2.5), 243}, 1e-12);
  check_values(pow(tensor({NAN, 0.0f}), 0), {2}, kFloat32, {1, 1});
  check_values(pow(tensor({-8.0f}), 1.0 / 3), {1}, kFloat32, {NAN});
  check_values(pow(tensor({1.5f}, kFloat16), 2), {1}, kFloat16, {2.25});
  check_values(pow(arange(4, kFloat64).view({2, 2}).transpose(0, 1), 2), {2, 2}, kFloat64, {0, 4, 1, 9});
}

// See Note [pow of floating types]: torch_diff found Eigen's pow giving +inf for (-inf)^5.
TEST_CASE("pow: odd integer powers of -0 and -inf keep their sign, on the vectorised path too") {
  for (ScalarType dtype : {kFloat64, kFloat32, kFloat16, kBFloat16}) {
    for (int64_t repeat : {1, 32}) {
      CAPTURE(dtype);
      CAPTURE(repeat);
      const Tensor x = tensor(std::vector<double>{-HUGE_VAL, -0.0, -2.0, HUGE_VAL}).to(dtype).expand({repeat, 4}).flatten();
      const auto at = [](const Tensor& t, int64_t i) { return t.select(0, i).item<double>(); };
      for (int64_t base : {int64_t{0}, 4 * repeat - 4}) {  // the first and the last copy
        const Tensor fifth = pow(x, 5.0), cube_inverse = pow(x, -3.0), half_power = pow(x, 1.5);
        CHECK(at(fifth, base) == -HUGE_VAL);
        CHECK(at(fifth, base + 1) == 0.0);
        CHECK(std::signbit(at(fifth, base + 1)));
        CHECK(at(cube_inverse, base + 1) == -HUGE_VAL);
        CHECK(at(cube_inverse, base) == 0.0);
        CHECK(std::signbit(at(cube_inverse, base)));
        CHECK(at(half_power, base) == HUGE_VAL);
        CHECK(std::isnan(at(half_power, base + 2)));
        CHECK(!std::signbit(at(pow(x, -2.0), base)));  // (-inf)^-2 is +0
        const Tensor powers = pow(x, tensor(std::vector<double>{5.0, -3.0, 3.0, -1.0}).to(dtype).expand({repeat, 4}).flatten());
        CHECK(at(powers, base) == -HUGE_VAL);
        CHECK(at(powers, base + 1) == -HUGE_VAL);
        CHECK(at(powers, base + 2) == -8.0);
      }
    }
  }
  // The gradient 3 * -2 * x^-3 at -0 is +inf.
  Tensor x = tensor(std::vector<double>{-0.0, 0.0}).requires_grad_();
  pow(x, -2.0).sum().backward();
  check_values(x.grad(), {2}, kFloat64, {INFINITY, -INFINITY});
}

TEST_CASE("pow: integral results raise exactly and wrap; dtypes follow result_type") {
  check_values(pow(tensor({2, 3, -2}), 3), {3}, kInt64, {8, 27, -8});
  check_values(pow(tensor({2}, kInt32), 10), {1}, kInt32, {1024});
  check_values(pow(tensor({2}, kUInt8), 9), {1}, kUInt8, {0});  // 512 wraps
  check_values(pow(tensor({4}, kInt32), 0.5), {1}, kFloat32, {2});
  check_values(pow(tensor({true, false}), 2), {2}, kInt64, {1, 0});
  check_values(pow(tensor({2, 3}), tensor({3, 2})), {2}, kInt64, {8, 9});
  check_values(pow(tensor({1, -1, -1, 2}), tensor({-1, -3, -2, -2})), {4}, kInt64, {1, -1, 1, 0});
  check_values(pow(tensor({2}, kInt32), tensor({0.5f})), {1}, kFloat32, {std::sqrt(2.0)}, 1e-6);
  check_values(pow(tensor({2.0f}), full({}, 3, kInt64)), {1}, kFloat32, {8});
}

TEST_CASE("pow: broadcasting, zero-size, zero-dim and Meta") {
  Tensor base = tensor(std::vector<double>{1, 2}, {2, 1}, kFloat64);
  Tensor exponent = tensor({1.0, 2.0, 3.0}, kFloat64);
  check_values(pow(base, exponent), {2, 3}, kFloat64, {1, 1, 1, 2, 4, 8});
  check_values(pow(zeros({0, 2}), 2), {0, 2}, kFloat32, {});
  check_values(pow(full({}, 3.0), full({}, 2.0)), {}, kFloat32, {9});
  check_meta_matches(pow(base.to(kMeta), exponent.to(kMeta)), pow(base, exponent));
  check_meta_matches(pow(ones({3}, TensorOptions(kInt32).device(kMeta)), 2.5), pow(ones({3}, kInt32), 2.5));
  check_meta_matches(pow(ones({3}, TensorOptions(kInt32).device(kMeta)), 2), pow(ones({3}, kInt32), 2));
}

TEST_CASE("pow: errors") {
  expect_error<ValueError>([] { (void)pow(tensor({2}), -1); },
                           "[pow] integers to negative integer powers are not allowed");
  expect_error<TypeError>([] { (void)pow(tensor({true}), tensor({true})); }, "[pow] Bool results are not supported");
  expect_error<ValueError>([] { (void)pow(zeros({2}), zeros({3})); }, "[pow] shapes [2] and [3] cannot be broadcast");
  expect_error<ValueError>([] { (void)pow(ones({2}, TensorOptions(kInt64).device(kMeta)), -2); }, "[pow] integers");
  expect_error<Error>([] { (void)pow(zeros({2}), zeros({2}, kMeta)); }, "[pow] expected all tensors on the same device");
}

TEST_CASE("pow: gradients") {
  for (double e : {2.0, 3.0, 0.5, -1.0, 2.5}) {
    INFO("exponent ", e);
    check_gradcheck([e](const tensor_list& t) { return tensor_list{pow(t[0], e)}; }, {uniform_input({3, 2}, 1, 0.5, 2, true)});
  }
  check_gradcheck([](const tensor_list& t) { return tensor_list{pow(t[0], 2)}; }, {grad_input({4}, 2)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{pow(t[0], t[1])}; },
                   {uniform_input({2, 3}, 3, 0.5, 2, true), uniform_input({3}, 4, -2, 2)});
  check_gradgradcheck([](const tensor_list& t) { return tensor_list{pow(t[0], t[1])}; },
                   {uniform_input({2, 2}, 5, 0.5, 2), uniform_input({2, 2}, 6, -1, 2)});
  check_gradgradcheck([](const tensor_list& t) { return tensor_list{pow(t[0], 3)}; }, {grad_input({3}, 7)});
  // At x = 0: d(x^2) = 0, d(x^0) = 0, and d/de of 0^e is 0 for e >= 0.
  Tensor x = tensor({0.0, 2.0}, kFloat64).requires_grad_();
  Tensor e = tensor({2.0, 0.0}, kFloat64).requires_grad_();
  pow(x, e).sum().backward();
  check_values(x.grad(), {2}, kFloat64, {0, 0});
  check_values(e.grad(), {2}, kFloat64, {0, std::log(2.0)}, 1e-15);
  Tensor z = tensor({0.0, 3.0}, kFloat64).requires_grad_();
  pow(z, 0).sum().backward();
  check_values(z.grad(), {2}, kFloat64, {0, 0});
}

TEST_CASE("maximum and minimum: values, NaN, dtypes and broadcasting") {
  Tensor a = tensor({1.0f, 5.0f, NAN, 2.0f});
  Tensor b = tensor({3.0f, 2.0f, 1.0f, NAN});
  check_values(maximum(a, b), {4}, kFloat32, {3, 5, NAN, NAN});
  check_values(minimum(a, b), {4}, kFloat32, {1, 2, NAN, NAN});
  check_values(a.maximum(b), {4}, kFloat32, {3, 5, NAN, NAN});
  check_values(maximum(tensor({-1, 7}, kInt32), tensor({0, 3}, kInt32)), {2}, kInt32, {0, 7});
  check_values(minimum(tensor({true, true}), tensor({false, true})), {2}, kBool, {0, 1});
  check_values(maximum(tensor({1, 4}, kInt32), tensor({2.5f})), {2}, kFloat32, {2.5, 4});
  check_values(minimum(tensor(std::vector<int64_t>{1, 5}, {2, 1}), arange(3)), {2, 3}, kInt64, {0, 1, 1, 0, 1, 2});
  check_values(maximum(arange(6, kFloat32).view({2, 3}).transpose(0, 1), full({}, 2.0f)), {3, 2}, kFloat32,
               {2, 3, 2, 4, 2, 5});
  check_values(maximum(zeros({0}), zeros({1})), {0}, kFloat32, {});
  check_values(maximum(tensor({1.5f}, kBFloat16), tensor({0.5f}, kBFloat16)), {1}, kBFloat16, {1.5});
  check_meta_matches(maximum(ones({2, 1}, kMeta), ones({3}, TensorOptions(kFloat64).device(kMeta))),
                     maximum(ones({2, 1}), ones({3}, kFloat64)));
  check_meta_matches(minimum(ones({2}, TensorOptions(kInt32).device(kMeta)), ones({2}, kMeta)),
                     minimum(ones({2}, kInt32), ones({2})));
  expect_error<ValueError>([] { (void)maximum(zeros({2}), zeros({3})); }, "[maximum] shapes [2] and [3] cannot be broadcast");
  expect_error<Error>([] { (void)minimum(zeros({2}), zeros({2}, kMeta)); }, "[minimum] expected all tensors on the same");
}

TEST_CASE("maximum and minimum: gradients go to the picked operand; ties split evenly") {
  check_gradcheck([](const tensor_list& t) { return tensor_list{maximum(t[0], t[1])}; },
                   {uniform_input({3, 2}, 8, -1, 1, true), grad_input({2}, 9)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{minimum(t[0], t[1])}; },
                   {grad_input({2, 3}, 10), grad_input({2, 1}, 11)});
  Tensor x = tensor({1.0, 2.0, 5.0}, kFloat64).requires_grad_();
  Tensor y = tensor({1.0, 3.0, 4.0}, kFloat64).requires_grad_();
  maximum(x, y).sum().backward();
  check_values(x.grad(), {3}, kFloat64, {0.5, 0, 1});
  check_values(y.grad(), {3}, kFloat64, {0.5, 1, 0});
  x.grad().zero_();
  y.grad().zero_();
  minimum(x, y).sum().backward();
  check_values(x.grad(), {3}, kFloat64, {0.5, 1, 0});
  check_values(y.grad(), {3}, kFloat64, {0.5, 0, 1});
}

TEST_CASE("binary: maximum, minimum and pow on int8 and int16") {
  Tensor i8 = tensor({int8_t{-3}, int8_t{4}});
  Tensor i16 = tensor({int16_t{-300}, int16_t{300}});
  check_values(maximum(i8, i16), {2}, kInt16, {-3, 300});
  check_values(minimum(i8, i8.neg()), {2}, kInt8, {-3, -4});
  check_values(pow(i8, 2), {2}, kInt8, {9, 16});
  check_values(pow(i16, tensor({int8_t{1}, int8_t{2}})), {2}, kInt16, {-300, 90000 - 65536});  // wraps
}

TEST_CASE("pow, maximum, minimum: out= forms resize, cast, take strided outs and refuse misfits") {
  Tensor out = empty({0});
  CHECK(&pow_out(out, tensor({1.0f, 2.0f, 3.0f}), 2) == &out);
  check_values(out, {3}, kFloat32, {1, 4, 9});
  Tensor ints = empty({2}, kInt64);
  pow_out(ints, tensor({2, 3}), tensor({3, 2}));
  check_values(ints, {2}, kInt64, {8, 9});
  Tensor doubles = empty({2, 2}, kFloat64).t();  // strided, and float32 results cast into float64
  maximum_out(doubles, tensor({{1.0f, 5.0f}, {3.0f, 0.0f}}), tensor({2.0f}));
  check_values(doubles, {2, 2}, kFloat64, {2, 5, 3, 2});
  minimum_out(doubles, doubles, tensor({2.5}, kFloat64));  // out may be an input of the same geometry
  check_values(doubles, {2, 2}, kFloat64, {2, 2.5, 2.5, 2});
  expect_error<Error>([] { pow_out(empty({2}, kInt64), tensor({1.5f, 2.0f}), 2); },
                      "[pow.Tensor_Scalar_out] result type Float32 can't be cast to the desired output type Int64");
  expect_error<ValueError>([] { maximum_out(zeros({3}), ones({2}), ones({2})); },
                           "[maximum.out] out has shape [3] but the result has shape [2]");
  expect_error<ValueError>([] { pow_out(empty({0}, kInt64), tensor({2}), -1); }, "[pow] integers");
  expect_error<TypeError>([] { pow_out(empty({0}), tensor({true}), tensor({true})); }, "[pow] Bool results");
  const Tensor w = ones({2}).requires_grad_();
  expect_error<Error>([&] { minimum_out(empty({0}), w, ones({2})); }, "[strata::minimum.out]", {"out="});
  Tensor meta = empty({0}, kMeta);
  pow_out(meta, ones({2, 1}, kMeta), ones({3}, kMeta));
  CHECK(meta.sizes() == IntArrayRef{2, 3});
}
