// Tests for ops/reduce_stats.cpp: var, std, logsumexp and norm.
#include "op_test_util.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace strata;
using strata::testing::check_meta_matches;
using strata::testing::check_values;
using strata::testing::expect_error;
using strata::testing::check_gradcheck;
using strata::testing::check_gradgradcheck;
using strata::testing::grad_input;
using strata::testing::uniform_input;

namespace {


constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("var and std: unbiased by default, dims, keepdim and the no-bool overloads") {
  Tensor a = tensor(std::vector<double>{1, 2, 3, 4, 6, 8}, {2, 3}, kFloat64);
  check_values(var(a), {}, kFloat64, {34.0 / 5.0}, 1e-12);  // mean 4, squared deviations 9+4+1+0+4+16
  check_values(a.var(), {}, kFloat64, {34.0 / 5.0}, 1e-12);
  check_values(a.var(1), {2}, kFloat64, {1, 4}, 1e-12);
  check_values(a.var({1}, /*unbiased=*/false), {2}, kFloat64, {2.0 / 3, 8.0 / 3}, 1e-12);
  check_values(var(a, {0}, true, true), {1, 3}, kFloat64, {4.5, 8, 12.5}, 1e-12);
  check_values(var(a, {0, 1}), {}, kFloat64, {34.0 / 5.0}, 1e-12);
  check_values(a.std(1), {2}, kFloat64, {1, 2}, 1e-12);
  check_values(strata::std(a.transpose(0, 1), {0}), {2}, kFloat64, {1, 2}, 1e-12);
  check_values(var(tensor({1e8 + 1, 1e8 + 2, 1e8 + 3}, kFloat64)), {}, kFloat64, {1}, 1e-6);  // no cancellation
  check_values(var(tensor({2.0f}, kFloat16)), {}, kFloat16, {NAN});  // one element, correction 1: 0/0
  check_values(var(tensor({2.0f}), {}, false), {}, kFloat32, {0});
  check_values(strata::std(zeros({0})), {}, kFloat32, {NAN});
  check_values(var(full({}, 1.0)), {}, kFloat32, {NAN});
  check_meta_matches(var(a.to(kMeta), {1}, true, true), var(a, {1}, true, true));
  check_meta_matches(strata::std(a.to(kMeta)), strata::std(a));
  expect_error<TypeError>([] { (void)var(tensor({1, 2})); }, "[var] expected a floating point input, got Int64");
  expect_error<TypeError>([] { (void)strata::std(tensor({1, 2}, kInt32), {0}); }, "[std] expected a floating point input");
  expect_error<IndexError>([&] { (void)a.var(2); }, "[var]");
  // The ATen overload without dims is registered too: "var(Tensor self, bool unbiased=True)".
  CHECK(call("strata::var", a, false).to_tensor().item<double>() == doctest::Approx(34.0 / 6.0));
}

TEST_CASE("var and std: gradients") {
  check_gradcheck([](const tensor_list& t) { return tensor_list{var(t[0])}; }, {uniform_input({3, 2}, 1, -1, 1, true)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{var(t[0], {1}, false, true)}; }, {grad_input({2, 4}, 2)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{strata::std(t[0], {0})}; }, {uniform_input({3, 2}, 3, -1, 1, true)});
  check_gradgradcheck([](const tensor_list& t) { return tensor_list{strata::std(t[0], {1})}; },
                   {grad_input({2, 3}, 4)});
  Tensor constant = full({3}, 2.0, kFloat64).requires_grad_();
  strata::std(constant).backward();
  check_values(constant.grad(), {3}, kFloat64, {0, 0, 0});  // std is 0: the gradient is taken as 0
}

TEST_CASE("logsumexp: stable values, infinities and dtypes") {
  check_values(logsumexp(tensor({0.0, 0.0}, kFloat64), {0}), {}, kFloat64, {std::log(2.0)}, 1e-15);
  check_values(logsumexp(tensor({1000.0f, 1000.0f}), {0}), {}, kFloat32, {1000 + std::log(2.0)}, 1e-3);
  check_values(logsumexp(tensor({-1000.0, -1000.0}, kFloat64), {0}), {}, kFloat64, {-1000 + std::log(2.0)}, 1e-12);
  check_values(logsumexp(tensor({-kInf, -kInf}, kFloat64), {0}), {}, kFloat64, {-kInf});
  check_values(logsumexp(tensor({kInf, 1.0}, kFloat64), {0}), {}, kFloat64, {kInf});
  check_values(logsumexp(tensor({kInf, kInf}, kFloat64), {0}), {}, kFloat64, {kInf});
  check_values(logsumexp(tensor({NAN, 1.0f}), {0}), {}, kFloat32, {NAN});
  Tensor a = tensor(std::vector<double>{0, 1, 2, 3}, {2, 2}, kFloat64);
  const double row0 = std::log(1 + std::exp(1.0)), row1 = 2 + std::log(1 + std::exp(1.0));
  check_values(logsumexp(a, {1}), {2}, kFloat64, {row0, row1}, 1e-14);
  check_values(a.logsumexp({1}, true), {2, 1}, kFloat64, {row0, row1}, 1e-14);
  check_values(logsumexp(a.transpose(0, 1), {0}), {2}, kFloat64, {row0, row1}, 1e-14);
  check_values(logsumexp(a, {0, 1}), {}, kFloat64, {std::log(1 + std::exp(1.0) + std::exp(2.0) + std::exp(3.0))},
               1e-14);
  check_values(logsumexp(tensor({0, 0}), {0}), {}, kFloat32, {std::log(2.0)}, 1e-6);  // integral -> float32
  check_values(logsumexp(zeros({0}), {0}), {}, kFloat32, {-kInf});
  check_values(logsumexp(full({}, 3.0), {0}), {}, kFloat32, {3});
  check_meta_matches(logsumexp(a.to(kMeta), {1}, true), logsumexp(a, {1}, true));
  check_meta_matches(logsumexp(tensor({1, 2}).to(kMeta), {0}), logsumexp(tensor({1, 2}), {0}));
  expect_error<ValueError>([&] { (void)logsumexp(a, {1, 1}); }, "[logsumexp] dim 1 appears multiple times");
}

TEST_CASE("logsumexp: gradients are the softmax") {
  check_gradcheck([](const tensor_list& t) { return tensor_list{logsumexp(t[0], {1})}; },
                   {uniform_input({3, 4}, 5, -2, 2, true)});
  check_gradgradcheck([](const tensor_list& t) { return tensor_list{logsumexp(t[0], {0}, true)}; },
                   {grad_input({3, 2}, 6)});
  Tensor x = tensor({0.0, 0.0}, kFloat64).requires_grad_();
  logsumexp(x, {0}).backward();
  check_values(x.grad(), {2}, kFloat64, {0.5, 0.5}, 1e-15);
}

TEST_CASE("norm: p = 2, 1, 0, 3, +-inf over all elements") {
  Tensor a = tensor(std::vector<double>{3, -4, 0, 0}, {2, 2}, kFloat64);
  check_values(norm(a), {}, kFloat64, {5});
  check_values(a.norm(1), {}, kFloat64, {7});
  check_values(norm(a, 0), {}, kFloat64, {2});
  check_values(norm(a, 3), {}, kFloat64, {std::cbrt(91.0)}, 1e-12);
  check_values(norm(a, INFINITY), {}, kFloat64, {4});
  check_values(norm(a, -INFINITY), {}, kFloat64, {0});
  check_values(norm(a.transpose(0, 1)), {}, kFloat64, {5});
  check_values(norm(tensor({3.0f, 4.0f}, kFloat16)), {}, kFloat16, {5});
  check_values(norm(tensor({1.0f, NAN}), INFINITY), {}, kFloat32, {NAN});
  check_values(norm(zeros({0})), {}, kFloat32, {0});
  check_values(norm(full({}, -2.0)), {}, kFloat32, {2});
  check_meta_matches(norm(a.to(kMeta), 1), norm(a, 1));
  expect_error<TypeError>([] { (void)norm(tensor({3, 4})); }, "[norm] expected a floating point input, got Int64");
}

TEST_CASE("norm: gradients") {
  for (double p : {2.0, 1.0, 3.0, 1.5, 0.5, kInf, -kInf}) {
    INFO("p = ", p);
    check_gradcheck([p](const tensor_list& t) { return tensor_list{norm(t[0], p)}; }, {uniform_input({3, 2}, 7, 0.2, 1, true)});
  }
  check_gradgradcheck([](const tensor_list& t) { return tensor_list{norm(t[0])}; }, {grad_input({4}, 8)});
  Tensor zero = zeros({3}, TensorOptions(kFloat64).requires_grad(true));
  norm(zero).backward();
  check_values(zero.grad(), {3}, kFloat64, {0, 0, 0});
  Tensor x = tensor({3.0, -4.0}, kFloat64).requires_grad_();
  norm(x).backward();
  check_values(x.grad(), {2}, kFloat64, {0.6, -0.8}, 1e-15);
  Tensor y = tensor({1.0, -1.0}, kFloat64).requires_grad_();
  norm(y, 0).backward();
  check_values(y.grad(), {2}, kFloat64, {0, 0});
}

TEST_CASE("reduce_stats: int8 and int16 inputs: logsumexp computes in float32, var needs a floating dtype") {
  Tensor i16 = tensor({int16_t{1}, int16_t{3}});
  check_values(i16.to(kFloat32).var(), {}, kFloat32, {2});
  CHECK_THROWS_AS((void)i16.var(), Error);
  check_values(tensor({int8_t{0}, int8_t{0}}).logsumexp({0}), {}, kFloat32, {std::log(2.0)}, 1e-6);
}
