// Tests for ops/unary.cpp: unary math, activations, clamp, and the in-place relu_ clamp_
// zero_ fill_ (values, dtypes, layouts, Meta shapes, gradients and errors).
#include "op_test_util.h"

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

using namespace strata;
using strata::testing::check_meta_matches;
using strata::testing::check_values;
using strata::testing::expect_error;
using strata::testing::check_gradcheck;
using strata::testing::check_gradgradcheck;
using strata::testing::grad_input;
using strata::testing::uniform_input;
using strata::testing::values_of;

namespace {

using Fn = std::function<tensor_list(const tensor_list&)>;

using UnaryOp = Tensor (*)(const Tensor&);
using UnaryOps = std::vector<UnaryOp>;

// The one-argument ops, by the inputs they accept.
const UnaryOps kAnyDtypeOps = {&strata::exp,  &strata::log,     &strata::sqrt, &strata::rsqrt,
                               &strata::sin,  &strata::cos,     &strata::tanh, &strata::sigmoid,
                               &strata::abs,  &strata::sign,    &strata::relu, &strata::neg};
const UnaryOps kAnyInputOps = {&strata::exp, &strata::sin, &strata::cos, &strata::tanh, &strata::sigmoid,
                               &strata::silu, &strata::neg, &strata::abs, &strata::relu, &strata::sign};
const UnaryOps kPositiveInputOps = {&strata::log, &strata::sqrt, &strata::rsqrt};
const UnaryOps kTwiceDifferentiableOps = {&strata::exp, &strata::log,  &strata::sqrt,    &strata::rsqrt, &strata::sin,
                                          &strata::cos, &strata::tanh, &strata::sigmoid, &strata::silu};

Fn unary(UnaryOp op) {
  return [op](const tensor_list& t) { return tensor_list{op(t[0])}; };
}

}  // namespace

TEST_CASE("unary: transcendental values against known results") {
  const double e = std::numbers::e;
  check_values(exp(tensor({0.0f, 1.0f, -1.0f})), {3}, kFloat32, {1, e, 1 / e}, 1e-6);
  check_values(log(tensor({1.0f, static_cast<float>(e), 0.0f, -1.0f})), {4}, kFloat32, {0, 1, -INFINITY, NAN}, 1e-6);
  check_values(sqrt(tensor({4.0, 0.0, 2.25, -1.0}, kFloat64)), {4}, kFloat64, {2, 0, 1.5, NAN});
  check_values(rsqrt(tensor({4.0f, 0.25f, 0.0f})), {3}, kFloat32, {0.5, 2, INFINITY}, 1e-6);
  const double pi = std::numbers::pi;
  check_values(sin(tensor({0.0, pi / 2, pi / 6}, kFloat64)), {3}, kFloat64, {0, 1, 0.5}, 1e-15);
  check_values(cos(tensor({0.0f, static_cast<float>(pi / 3)})), {2}, kFloat32, {1, 0.5}, 1e-6);
  check_values(tanh(tensor({0.0, 1.0, -20.0}, kFloat64)), {3}, kFloat64, {0, 0.7615941559557649, -1}, 1e-15);
  check_values(sigmoid(tensor({0.0f, 2.0f, -100.0f})), {3}, kFloat32, {0.5, 0.8807970779778823, 0}, 1e-6);
  check_values(exp(tensor({1.5}, kFloat64)), {1}, kFloat64, {std::exp(1.5)}, 1e-15);
}

// Eigen's fast sqrt packets (on by default) gave NaN for +inf, +0 for -0 and 0 for subnormals
// on the vectorised path, which tensors of 16 floats or more take.
TEST_CASE("unary: sqrt and pow(x, 0.5) are IEEE sqrt on the vectorised path too (inf, -0, subnormals)") {
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    INFO(dtype);
    const double tiny = dtype == kFloat32 ? 1e-40 : 1e-310;
    const std::vector<double> specials = {std::numeric_limits<double>::infinity(), -0.0, tiny, 4.0, 0.0};
    for (double value : specials) {
      const Tensor x = full({64}, value, TensorOptions(dtype));
      for (const Tensor& result : {sqrt(x), pow(x, 0.5)}) {
        const double expected = dtype == kFloat32 ? static_cast<double>(std::sqrt(static_cast<float>(value)))
                                                  : std::sqrt(value);
        const double got = result.select(0, 63).item<double>();
        CHECK(got == expected);
        CHECK(std::signbit(got) == std::signbit(expected));
      }
    }
  }
}

// Eigen's packet exp clamps its argument, so exp(-inf) was 5.6e-309 in double (and 2.9e-39 in
// float on SSE builds), sigmoid(-inf) likewise, and silu(-inf) -inf: Note [Eigen exp underflow].
TEST_CASE("unary: exp, sigmoid and silu give exact zeros and NaN at -inf on the vectorised path") {
  const double inf = std::numeric_limits<double>::infinity();
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    INFO(dtype);
    const Tensor x = full({64}, -inf, TensorOptions(dtype));
    CHECK(exp(x).select(0, 63).item<double>() == 0.0);
    CHECK(sigmoid(x).select(0, 63).item<double>() == 0.0);
    CHECK(std::isnan(silu(x).select(0, 63).item<double>()));
    // Arguments far below the clamp, and the results still representable above it.
    const Tensor deep = full({64}, dtype == kFloat32 ? -95.0 : -720.0, TensorOptions(dtype));
    CHECK(exp(deep).select(0, 63).item<double>() < (dtype == kFloat32 ? 1.2e-38 : 2.3e-308));
    const double edge = dtype == kFloat32 ? -87.0 : -708.0;
    const double expected = dtype == kFloat32 ? static_cast<double>(std::exp(static_cast<float>(edge))) : std::exp(edge);
    const double got = exp(full({64}, edge, TensorOptions(dtype))).select(0, 63).item<double>();
    CHECK(got == doctest::Approx(expected).epsilon(1e-5));
    CHECK(std::isnan(exp(full({64}, NAN, TensorOptions(dtype))).select(0, 63).item<double>()));
    CHECK(exp(full({64}, inf, TensorOptions(dtype))).select(0, 63).item<double>() == inf);
  }
}

// See Note [Eigen exp overflow]: torch_diff's jit cases found exp(88.5f) infinite on the
// vectorised path and finite (2.7e38) on the scalar one.
TEST_CASE("unary: exp just below the overflow threshold is finite on the vectorised path too") {
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    INFO(dtype);
    const bool single = dtype == kFloat32;
    for (double x : single ? std::vector<double>{88.3, 88.5, 88.72} : std::vector<double>{709.4, 709.5, 709.78}) {
      INFO(x);
      const double expected = single ? static_cast<double>(std::exp(static_cast<float>(x))) : std::exp(x);
      REQUIRE(std::isfinite(expected));
      for (int64_t count : {1, 64, 4096}) {
        const double got = exp(full({count}, x, TensorOptions(dtype))).select(0, count - 1).item<double>();
        CHECK(got == doctest::Approx(expected).epsilon(1e-6));
      }
    }
    const double beyond = single ? 88.73 : 709.79;
    CHECK(exp(full({64}, beyond, TensorOptions(dtype))).select(0, 63).item<double>() == HUGE_VAL);
  }
}

// See Note [Eigen exp underflow]: below log(smallest normal) exp's result is subnormal, and
// both paths give it (they flushed it to 0, where std::exp and LibTorch do not). One ulp of the
// subnormal grid is the tolerance: the packet version squares exp(x / 2).
TEST_CASE("unary: exp and sigmoid give subnormal results on the scalar and the vectorised path") {
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    INFO(dtype);
    const bool single = dtype == kFloat32;
    const double ulp = single ? static_cast<double>(std::numeric_limits<float>::denorm_min())
                              : std::numeric_limits<double>::denorm_min();
    const std::vector<double> xs = single ? std::vector<double>{-87.4, -88.5, -95.0, -100.0, -103.2, -103.9, -104.0}
                                          : std::vector<double>{-708.5, -715.0, -730.0, -744.0, -744.4, -745.2};
    for (double x : xs) {
      INFO(x);
      const double expected = single ? static_cast<double>(std::exp(static_cast<float>(x))) : std::exp(x);
      for (int64_t count : {1, 64, 4096}) {
        INFO(count);
        const double got = exp(full({count}, x, TensorOptions(dtype))).select(0, count - 1).item<double>();
        CHECK(std::abs(got - expected) <= ulp * (1 + 1e-6 * expected / ulp));
      }
    }
    CHECK(exp(full({64}, single ? -88.5 : -715.0, TensorOptions(dtype))).select(0, 63).item<double>() > 0.0);
    // sigmoid(x) = 1 / (1 + exp(-x)) is subnormal where exp(-x) is finite but above 1 / min.
    const double x = single ? -88.5 : -709.5;
    const double expected = single ? static_cast<double>(1.0f / (1.0f + std::exp(static_cast<float>(-x))))
                                   : 1.0 / (1.0 + std::exp(-x));
    REQUIRE(expected > 0.0);
    for (int64_t count : {1, 64}) {
      const double got = sigmoid(full({count}, x, TensorOptions(dtype))).select(0, count - 1).item<double>();
      CHECK(got == doctest::Approx(expected).epsilon(1e-5));
    }
  }
}

// Notes [Eigen log of subnormals] and RsqrtOp's comment: torch_diff's "extreme" cases.
TEST_CASE("unary: log and rsqrt of subnormal inputs, on the scalar and the vectorised path") {
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    const bool single = dtype == kFloat32;
    for (double x : single ? std::vector<double>{1e-45, 1e-40, 1e-38} : std::vector<double>{5e-324, 1e-310}) {
      const double value = single ? static_cast<double>(static_cast<float>(x)) : x;
      for (int64_t count : {1, 64}) {
        CAPTURE(dtype);
        CAPTURE(x);
        CAPTURE(count);
        const Tensor input = full({count}, x, TensorOptions(dtype));
        CHECK(log(input).select(0, count - 1).item<double>() == doctest::Approx(std::log(value)).epsilon(1e-6));
        CHECK(rsqrt(input).select(0, count - 1).item<double>() == doctest::Approx(1 / std::sqrt(value)).epsilon(1e-6));
        CHECK(pow(input, -0.5).select(0, count - 1).item<double>() ==
              doctest::Approx(1 / std::sqrt(value)).epsilon(1e-6));
      }
    }
    const Tensor edges = tensor(std::vector<double>{0.0, -1.0, HUGE_VAL, NAN}).to(dtype).expand({16, 4}).flatten();
    const Tensor logs = log(edges), roots = rsqrt(edges);
    CHECK(logs[60].item<double>() == -HUGE_VAL);
    CHECK(std::isnan(logs[61].item<double>()));
    CHECK(logs[62].item<double>() == HUGE_VAL);
    CHECK(std::isnan(logs[63].item<double>()));
    CHECK(roots[60].item<double>() == HUGE_VAL);
    CHECK(std::isnan(roots[61].item<double>()));
    CHECK(roots[62].item<double>() == 0.0);
  }
}

// See Note [Sigmoid from exp]: Eigen's logistic was 9.6e-5 off at -9.25f.
TEST_CASE("unary: sigmoid and silu are accurate to a few ulps in float32, scalar and vectorised") {
  for (float x : {-60.0f, -20.0f, -9.25f, -3.5f, -0.75f, 0.0f, 0.5f, 4.0f, 12.0f}) {
    for (int64_t count : {1, 64}) {
      CAPTURE(x);
      CAPTURE(count);
      const double exact = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
      const Tensor input = full({count}, x, TensorOptions(kFloat32));
      CHECK(sigmoid(input)[count - 1].item<double>() == doctest::Approx(exact).epsilon(5e-7));
      CHECK(silu(input)[count - 1].item<double>() == doctest::Approx(x * exact).epsilon(5e-7));
    }
  }
}

TEST_CASE("unary: activations against known results") {
  check_values(relu(tensor({-1.0f, 0.0f, 2.5f, NAN})), {4}, kFloat32, {0, 0, 2.5, NAN});
  check_values(gelu(tensor({-1.0, 0.0, 1.0, 2.0}, kFloat64)), {4}, kFloat64,
               {-0.15865525393145707, 0, 0.8413447460685429, 1.9544997361036416}, 1e-12);
  check_values(gelu(tensor({-1.0f, 1.0f}), "tanh"), {2}, kFloat32, {-0.15880800939172324, 0.8411919906082768}, 1e-6);
  check_values(silu(tensor({0.0, 1.0, -2.0}, kFloat64)), {3}, kFloat64, {0, 0.7310585786300049, -0.23840584404423515},
               1e-15);
  check_values(gelu_backward(tensor({1.0, 2.0}, kFloat64), tensor({0.0, 1.0}, kFloat64)), {2}, kFloat64,
               {0.5, 2 * 1.0833154705876864}, 1e-12);  // gelu'(0) = 1/2, gelu'(1) = Phi(1) + phi(1)
}

TEST_CASE("unary: neg, abs, sign and relu keep integral dtypes") {
  check_values(neg(tensor({1, -2, 0}, kInt32)), {3}, kInt32, {-1, 2, 0});
  check_values(-tensor({3}), {1}, kInt64, {-3});
  check_values(tensor({1.5}, kFloat64).neg(), {1}, kFloat64, {-1.5});
  check_values(neg(tensor({1, 0}, kUInt8)), {2}, kUInt8, {255, 0});  // wraps like PyTorch
  check_values(abs(tensor({-3, 4}, kInt64)), {2}, kInt64, {3, 4});
  check_values(abs(tensor({-2.5f, INFINITY, -0.0f})), {3}, kFloat32, {2.5, INFINITY, 0});
  check_values(abs(tensor({true, false})), {2}, kBool, {1, 0});
  check_values(sign(tensor({-3.0f, 0.0f, 2.0f, NAN})), {4}, kFloat32, {-1, 0, 1, 0});
  check_values(sign(tensor({-7, 0, 9}, kInt32)), {3}, kInt32, {-1, 0, 1});
  check_values(sign(tensor({0, 5}, kUInt8)), {2}, kUInt8, {0, 1});
  check_values(relu(tensor({-3, 0, 4}, kInt32)), {3}, kInt32, {0, 0, 4});
  check_values(relu(tensor({7}, kUInt8)), {1}, kUInt8, {7});
}

TEST_CASE("unary: integral and bool inputs of the float ops compute in float32") {
  check_values(exp(tensor({0, 1})), {2}, kFloat32, {1, std::numbers::e}, 1e-6);
  check_values(sqrt(tensor({true, false})), {2}, kFloat32, {1, 0});
  check_values(sigmoid(tensor({0}, kInt32)), {1}, kFloat32, {0.5});
  check_values(log(tensor({1}, kUInt8)), {1}, kFloat32, {0});
  check_values(tensor({4}).rsqrt(), {1}, kFloat32, {0.5});
}

TEST_CASE("unary: float16 and bfloat16 keep their dtype and compute in float") {
  check_values(exp(tensor({0.0f, 1.0f}, kFloat16)), {2}, kFloat16, {1, 2.71875}, 1e-6);
  check_values(tanh(tensor({0.5f}, kBFloat16)), {1}, kBFloat16, {0.462890625}, 1e-6);
  check_values(gelu(tensor({1.0f}, kFloat16)), {1}, kFloat16, {0.84130859375}, 1e-6);
  check_values(relu(tensor({-1.0f, 2.0f}, kBFloat16)), {2}, kBFloat16, {0, 2});
  check_values(neg(tensor({1.5f}, kFloat16)), {1}, kFloat16, {-1.5});
}

TEST_CASE("unary: non-contiguous, expanded, zero-size, zero-dim and large inputs") {
  Tensor a = arange(6, kFloat32).view({2, 3});
  Tensor t = a.transpose(0, 1);
  CHECK(allclose(exp(t), exp(t.contiguous())));
  CHECK(allclose(sigmoid(t), sigmoid(t.contiguous())));
  check_values(neg(t), {3, 2}, kFloat32, {0, -3, -1, -4, -2, -5});
  check_values(sqrt(tensor({4.0f}).expand({3})), {3}, kFloat32, {2, 2, 2});
  check_values(exp(zeros({0, 3})), {0, 3}, kFloat32, {});
  check_values(relu(zeros({2, 0}, kInt32)), {2, 0}, kInt32, {});
  check_values(tanh(full({}, 0.5)), {}, kFloat32, {std::tanh(0.5)}, 1e-6);
  check_values(abs(full({}, -2)), {}, kInt64, {2});
  // Larger than one grain: the parallel chunks and the 16-bit buffers agree with the scalar math.
  const int64_t n = 3 * kDefaultGrainSize + 17;
  Tensor big = arange(n, kFloat64).div(static_cast<double>(n)) * 8.0 - 4.0;
  const std::vector<double> x = values_of(big), y = values_of(gelu(big)), h = values_of(exp(big.to(kFloat16)));
  for (int64_t i = 0; i < n; i += 997) {
    CHECK(y[i] == doctest::Approx(x[i] * 0.5 * (1 + std::erf(x[i] / std::sqrt(2.0)))).epsilon(1e-12));
    CHECK(h[i] == doctest::Approx(std::exp(x[i])).epsilon(2e-3));
  }
}

TEST_CASE("unary: Meta outputs match the CPU outputs") {
  for (ScalarType dtype : {kFloat32, kFloat64, kFloat16, kInt32, kInt64, kUInt8}) {
    INFO("dtype ", dtype);
    Tensor cpu = ones({2, 3}, dtype);
    Tensor meta = ones({2, 3}, TensorOptions(dtype).device(kMeta));
    for (UnaryOp op : kAnyDtypeOps)
      check_meta_matches(op(meta), op(cpu));
    check_meta_matches(clamp(meta, 0, 1), clamp(cpu, 0, 1));
    check_meta_matches(clamp(meta, 0.5), clamp(cpu, 0.5));
  }
  Tensor meta = ones({4}, TensorOptions(kFloat32).device(kMeta));
  check_meta_matches(gelu(meta), gelu(ones({4})));
  check_meta_matches(silu(meta), silu(ones({4})));
  check_meta_matches(gelu_backward(meta, ones({1}, TensorOptions(kFloat64).device(kMeta))),
                     gelu_backward(ones({4}), ones({1}, kFloat64)));
  check_meta_matches(exp(ones({}, TensorOptions(kBool).device(kMeta))), exp(ones({}, kBool)));
}

TEST_CASE("unary: errors name the op and the dtype") {
  expect_error<TypeError>([] { (void)neg(tensor({true})); }, "[neg] Boolean inputs are not supported",
                          {"logical_not"});
  expect_error<TypeError>([] { (void)-tensor({true}); }, "[neg]");
  expect_error<TypeError>([] { (void)relu(tensor({true})); }, "[relu] Boolean inputs are not supported");
  expect_error<TypeError>([] { (void)gelu(tensor({1, 2})); }, "[gelu] expected a floating point input, got Int64");
  expect_error<TypeError>([] { (void)silu(tensor({1}, kInt32)); }, "[silu] expected a floating point input, got Int32");
  expect_error<ValueError>([] { (void)gelu(tensor({1.0f}), "fast"); },
                           "[gelu] approximate must be 'none' or 'tanh', got 'fast'");
  expect_error<TypeError>([] { (void)gelu(ones({2}, TensorOptions(kInt64).device(kMeta))); }, "[gelu]");
  expect_error<TypeError>([] { (void)relu_(tensor({true})); }, "[relu_] Boolean");
}

TEST_CASE("unary: gradients match finite differences (float64)") {
  for (UnaryOp op : kAnyInputOps) {
    check_gradcheck(unary(op), {uniform_input({3, 2}, 1, -1, 1, /*transposed=*/true)});
    check_gradcheck(unary(op), {grad_input({}, 2)});
  }
  for (UnaryOp op : kPositiveInputOps) check_gradcheck(unary(op), {uniform_input({2, 3}, 3, 0.5, 2, true)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{gelu(t[0])}; }, {uniform_input({4, 3}, 4, -3, 3, true)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{gelu(t[0], "tanh")}; }, {uniform_input({5}, 5, -3, 3)});
  // gelu_backward's own derivative, in both arguments and with broadcasting.
  for (const char* form : {"none", "tanh"}) {
    INFO("approximate=", form);
    check_gradcheck([form](const tensor_list& t) { return tensor_list{gelu_backward(t[0], t[1], form)}; },
                     {grad_input({2, 3}, 6), uniform_input({3}, 7, -3, 3)});
  }
}

TEST_CASE("tanh_backward and sigmoid_backward: tanh's and sigmoid's derivatives as ops of their own") {
  const auto tanh_backward = find_op("strata::tanh_backward").typed<Tensor(const Tensor&, const Tensor&)>();
  const auto sigmoid_backward = find_op("strata::sigmoid_backward").typed<Tensor(const Tensor&, const Tensor&)>();
  const Tensor g = tensor({2.0, -1.0, 0.5}, kFloat64), y = tensor({0.5, -0.25, 0.0}, kFloat64);
  check_values(tanh_backward.call(g, y), {3}, kFloat64, {1.5, -0.9375, 0.5});
  check_values(sigmoid_backward.call(g, y), {3}, kFloat64, {0.5, 0.3125, 0});
  // A float32 output and a float64 gradient promote; a row of gradients broadcasts.
  check_values(tanh_backward.call(ones({2, 1}, kFloat64), tensor({0.5f})), {2, 1}, kFloat64, {0.75, 0.75});
  // What backward through tanh and sigmoid gives is the composite formula's value.
  const Tensor x = tensor({-1.5, 0.25, 3.0}, kFloat64).requires_grad_();
  tanh(x).backward(g);
  CHECK(allclose(x.grad(), g * (1 - tanh(x.detach()) * tanh(x.detach())), 0, 1e-15));  // up to a fused 1 - y^2
  x.grad().zero_();
  sigmoid(x).backward(g);
  const Tensor s = sigmoid(x.detach());
  CHECK(allclose(x.grad(), g * s * (1 - s), 0, 0));
  // Their own derivatives, in both arguments and with broadcasting.
  for (const auto& op : {tanh_backward, sigmoid_backward})
    check_gradcheck([op](const tensor_list& t) { return tensor_list{op.call(t[0], t[1])}; },
                    {grad_input({2, 3}, 6), uniform_input({3}, 7, -0.9, 0.9)});
  expect_error<TypeError>([&] { (void)tanh_backward.call(ones({2}, kInt64), ones({2}, kInt64)); },
                          "[tanh_backward] expected floating point inputs, got Int64 and Int64");
  expect_error<ValueError>([&] { (void)sigmoid_backward.call(ones({2}), ones({3})); }, "[sigmoid_backward]");
}

TEST_CASE("unary: second derivatives (double backward)") {
  for (UnaryOp op : kTwiceDifferentiableOps)
    check_gradgradcheck(unary(op), {uniform_input({2, 2}, 8, 0.5, 2)});
  for (const char* form : {"none", "tanh"})
    check_gradgradcheck([form](const tensor_list& t) { return tensor_list{gelu(t[0], form)}; },
                     {uniform_input({3, 2}, 9, -2, 2, true)});
}

TEST_CASE("clamp: bounds, dtypes and edge values") {
  Tensor x = tensor({-2.0f, 0.5f, 3.0f, NAN});
  check_values(clamp(x, -1, 1), {4}, kFloat32, {-1, 0.5, 1, NAN});
  check_values(clamp(x, 0), {4}, kFloat32, {0, 0.5, 3, NAN});
  check_values(clamp(x, std::nullopt, 0), {4}, kFloat32, {-2, 0, 0, NAN});
  check_values(x.clamp(2, 1), {4}, kFloat32, {1, 1, 1, NAN});  // min > max gives max
  check_values(clamp(tensor({-5, 5, 50}, kInt32), 0, 10), {3}, kInt32, {0, 5, 10});
  check_values(clamp(tensor({-5, 5}, kInt32), 0.5), {2}, kFloat32, {0.5, 5});  // bounds promote
  check_values(clamp(tensor({true, false}), 0, 2), {2}, kInt64, {1, 0});
  check_values(clamp(tensor({0.25f, 4.0f}, kFloat16), 0.5, 2.5), {2}, kFloat16, {0.5, 2.5});
  check_values(clamp(arange(6, kFloat64).view({2, 3}).transpose(0, 1), 1, 3), {3, 2}, kFloat64, {1, 3, 1, 3, 2, 3});
  check_values(clamp(zeros({0}), 0, 1), {0}, kFloat32, {});
  check_values(clamp(full({}, 7), 0, 5), {}, kInt64, {5});
  expect_error<ValueError>([] { (void)clamp(ones({2})); }, "[clamp] at least one of 'min' or 'max' must not be None");
  expect_error<TypeError>([] { (void)clamp(tensor({true}), false, true); }, "[clamp] Boolean");
  expect_error<ValueError>([] { (void)clamp(tensor({1}, kUInt8), 0, 300); }, "[clamp] value 300 cannot be converted");
}

TEST_CASE("clamp: gradient passes inside the bounds, bounds included") {
  check_gradcheck([](const tensor_list& t) { return tensor_list{clamp(t[0], -0.3, 0.4)}; },
                   {uniform_input({4, 3}, 11, -1, 1, true)});
  check_gradcheck([](const tensor_list& t) { return tensor_list{clamp(t[0], std::nullopt, 0.1)}; }, {grad_input({5}, 12)});
  Tensor x = tensor({-1.0, 0.0, 0.5, 1.0, 2.0}, kFloat64).requires_grad_();
  clamp(x, 0, 1).sum().backward();
  check_values(x.grad(), {5}, kFloat64, {0, 1, 1, 1, 0});
}

// LibTorch's threshold_backward: the gradient is cut only where the result is <= 0, so NaN
// inputs pass it on (torch_diff's "unary relu f32 special").
TEST_CASE("relu: the gradient passes at NaN and is cut at 0 and below, in relu and relu_") {
  Tensor x = tensor(std::vector<double>{-1.0, 0.0, NAN, 2.0}).requires_grad_();
  (relu(x) * tensor({1.0, 2.0, 3.0, 4.0}, kFloat64)).sum().backward();
  check_values(x.grad(), {4}, kFloat64, {0, 0, 3, 4});
  Tensor y = tensor(std::vector<double>{-1.0, 0.0, NAN, 2.0}).requires_grad_();
  Tensor z = y * 1;
  relu_(z);
  z.sum().backward();
  check_values(y.grad(), {4}, kFloat64, {0, 0, 1, 1});
}

TEST_CASE("in-place: relu_, clamp_, zero_ and fill_ write into self and bump the version") {
  Tensor x = tensor({-1.0f, 2.0f, -3.0f});
  const uint32_t version = x.version();
  CHECK(&relu_(x) == &x);
  check_values(x, {3}, kFloat32, {0, 2, 0});
  CHECK(x.version() == version + 1);
  Tensor y = arange(6, kFloat64).view({2, 3}).transpose(0, 1);  // non-contiguous self
  y.clamp_(1, 4);
  check_values(y, {3, 2}, kFloat64, {1, 3, 1, 4, 2, 4});
  Tensor ints = tensor({-4, 9}, kInt32);
  ints.clamp_(std::nullopt, 5);
  check_values(ints, {2}, kInt32, {-4, 5});
  Tensor z = ones({2, 2}, kInt64);
  CHECK(&z.zero_() == &z);
  check_values(z, {2, 2}, kInt64, {0, 0, 0, 0});
  z.fill_(2.7);  // truncates into int64, as in PyTorch
  check_values(z, {2, 2}, kInt64, {2, 2, 2, 2});
  Tensor meta = ones({3}, kMeta);
  const uint32_t meta_version = meta.version();
  fill_(meta, 1.5);
  relu_(meta);
  clamp_(meta, 0, 1);
  zero_(meta);
  CHECK(meta.version() == meta_version + 4);
  CHECK(meta.is_meta());
  expect_error<Error>([] { clamp_(ones({2}, TensorOptions(kInt64).device(kMeta)), 0.5); },
                      "[clamp_] result type Float32 can't be cast to the desired output type Int64");
  expect_error<Error>([] { tensor({1, 2}, kInt32).clamp_(0.5); },
                      "[clamp_] result type Float32 can't be cast to the desired output type Int32");
  expect_error<ValueError>([] { ones({2}, kUInt8).fill_(300); }, "[fill_] value 300 cannot be converted to type UInt8");
  // 256.0 truncates to 256: past UInt8 (once accepted, and converted with undefined behaviour).
  expect_error<ValueError>([] { ones({2}, kUInt8).fill_(256.0); }, "[fill_] value 256.0 cannot be converted to type UInt8");
  expect_error<Error>([] { relu_(tensor({1.0f}).expand({3})); }, "[relu_] unsupported operation");
}

TEST_CASE("in-place: autograd records relu_ and clamp_, and cuts history at zero_ and fill_") {
  check_gradcheck(
      [](const tensor_list& t) {
        Tensor y = t[0] * 1.0;
        y.relu_();
        return tensor_list{y};
      },
      {uniform_input({3, 2}, 13, -1, 1, true)});
  check_gradcheck(
      [](const tensor_list& t) {
        Tensor y = t[0] * 2.0;
        clamp_(y, -0.5, 0.7);
        return tensor_list{y * y};
      },
      {grad_input({6}, 14)});
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor y = x * 3.0;
  y.zero_();
  (y + x).sum().backward();
  check_values(x.grad(), {2}, kFloat64, {1, 1});  // only the path around zero_ contributes
  expect_error<Error>([&] { x.relu_(); }, "[relu_] a leaf tensor that requires grad");
  expect_error<Error>([&] { x.fill_(0); }, "[fill_] a leaf tensor that requires grad");
  expect_error<Error>([&] { x.zero_(); }, "[zero_] a leaf tensor that requires grad");
  expect_error<Error>([&] { clamp_(x, 0); }, "[clamp_] a leaf tensor that requires grad");
  Tensor saved = x.exp();  // ExpBackward saves its result
  saved.zero_();
  expect_error<Error>([&] { saved.sum().backward(); }, "[ExpBackward]",
                      {"modified by an inplace operation", "which is output 0 of ExpBackward"});
}

TEST_CASE("unary: int8 and int16 keep their dtype or compute in float32") {
  Tensor i8 = tensor({int8_t{-128}, int8_t{-2}, int8_t{3}});
  Tensor i16 = tensor({int16_t{-32768}, int16_t{-5}, int16_t{7}});
  check_values(neg(i8), {3}, kInt8, {-128, 2, -3});  // -(-128) wraps, as in PyTorch
  check_values(abs(i16), {3}, kInt16, {-32768, 5, 7});
  check_values(relu(i8), {3}, kInt8, {0, 0, 3});
  check_values(clamp(i16, -6, 6), {3}, kInt16, {-6, -5, 6});
  check_values(sign(i8), {3}, kInt8, {-1, -1, 1});
  check_values(exp(tensor({int16_t{0}})), {1}, kFloat32, {1});
  Tensor filled = zeros({2}, kInt8);
  filled.fill_(-7);
  check_values(filled, {2}, kInt8, {-7, -7});
  expect_error<ValueError>([&] { filled.fill_(200); }, "[fill_] value 200 cannot be converted to type Int8");
}

TEST_CASE("unary: out= forms match the functional ops, resize, cast and refuse misfits") {
  using UnaryOutOp = const Tensor& (*)(const Tensor&, const Tensor&);
  const std::vector<std::pair<UnaryOutOp, UnaryOp>> ops = {
      {&strata::neg_out, &strata::neg},   {&strata::abs_out, &strata::abs},       {&strata::sign_out, &strata::sign},
      {&strata::exp_out, &strata::exp},   {&strata::log_out, &strata::log},       {&strata::sqrt_out, &strata::sqrt},
      {&strata::rsqrt_out, &strata::rsqrt}, {&strata::sin_out, &strata::sin},     {&strata::cos_out, &strata::cos},
      {&strata::tanh_out, &strata::tanh}, {&strata::sigmoid_out, &strata::sigmoid}, {&strata::silu_out, &strata::silu}};
  const Tensor x = tensor({0.5, 1.0, 2.0, 3.0}, kFloat64).view({2, 2});
  for (const auto& [op_out, op] : ops) {
    Tensor out = empty({0}, kFloat64);
    CHECK(&op_out(out, x) == &out);
    CHECK(allclose(out, op(x)));
    Tensor strided = zeros({2, 2}, kFloat64).t();
    op_out(strided, x);
    CHECK(allclose(strided, op(x)));
  }
  Tensor widened = empty({3}, kFloat64);  // float32 results cast into float64
  exp_out(widened, tensor({0.0f, 1.0f, 2.0f}));
  check_values(widened, {3}, kFloat64, {1, std::exp(1.0), std::exp(2.0)}, 1e-6);
  Tensor same = tensor({-1.0f, 4.0f});
  abs_out(same, same);  // out may be its input
  check_values(same, {2}, kFloat32, {1, 4});
  Tensor g = empty({0});
  gelu_out(g, tensor({-1.0f, 0.0f, 1.0f}), "tanh");
  CHECK(allclose(g, gelu(tensor({-1.0f, 0.0f, 1.0f}), "tanh")));
  Tensor c = empty({0});
  clamp_out(c, tensor({-5, 0, 5}, kInt32), 0.5);  // bounds promote: float32
  check_values(c, {3}, kFloat32, {0.5, 0.5, 5});
  expect_error<Error>([] { exp_out(empty({2}, kInt64), tensor({1, 2})); },
                      "[exp.out] result type Float32 can't be cast to the desired output type Int64");
  expect_error<ValueError>([] { sin_out(zeros({3}), ones({2})); }, "[sin.out] out has shape [3]");
  expect_error<Error>([] { clamp_out(empty({2}, kInt32), tensor({1, 2}, kInt32), 0.5); }, "[clamp.out] result type");
  expect_error<ValueError>([] { clamp_out(empty({0}), ones({2})); }, "[clamp] at least one of 'min' or 'max'");
  expect_error<TypeError>([] { silu_out(empty({0}), tensor({1})); }, "[silu] expected a floating point input");
  expect_error<ValueError>([] { gelu_out(empty({0}), ones({1}), "fast"); }, "[gelu] approximate must be");
  const Tensor w = ones({2}).requires_grad_();
  expect_error<Error>([&] { tanh_out(empty({0}), w); }, "[strata::tanh.out]", {"out="});
  Tensor meta = empty({0}, kMeta);
  sigmoid_out(meta, ones({2, 3}, TensorOptions(kInt64).device(kMeta)));
  CHECK(meta.sizes() == IntArrayRef{2, 3});
}

TEST_CASE("unary: scalar arguments are checked on Meta as on the CPU") {
  expect_error<ValueError>([] { (void)clamp(ones({2}, TensorOptions(kUInt8).device(kMeta)), 0, 300); },
                           "[clamp] value 300 cannot be converted to type UInt8");
  expect_error<ValueError>([] { fill_(ones({2}, TensorOptions(kInt8).device(kMeta)), 200); },
                           "[fill_] value 200 cannot be converted to type Int8");
  expect_error<ValueError>([] { clamp_(ones({2}, kFloat16), 70000); }, "[clamp_] value 70000 cannot be converted");
}

TEST_CASE("in-place: fill_ and zero_ take a self whose elements share memory; other in-place ops refuse it") {
  // Note [Idempotent in-place ops], as in PyTorch: every location ends up holding the value.
  const Tensor base = tensor({1.0f, 2.0f, 3.0f, 4.0f});
  const Tensor expanded = base.unsqueeze(0).expand({3, 4});
  const uint32_t version = base.version();
  fill_(expanded.slice(1, 1, 3), 7);  // expanded and strided
  CHECK(equal(base, tensor({1.0f, 7.0f, 7.0f, 4.0f})));
  CHECK(base.version() == version + 1);  // one write seen through every view
  zero_(expanded);
  CHECK(equal(base, zeros({4})));
  const Tensor scalar = zeros({}, kInt64);
  fill_(scalar.expand({2, 3, 4}), 5);
  CHECK(scalar.item<int64_t>() == 5);
  const Tensor large = zeros({1, 100000});  // threaded when not expanded
  fill_(large.expand({8, 100000}), 2.5);
  CHECK(large.sum().item<double>() == 250000.0);
  fill_(empty({1}, kMeta).expand({5}), 1);  // Meta agrees
  zero_(empty({1}, kMeta).expand({5}));
  // The value is still checked, and ops whose result depends on the order of writes refuse.
  expect_error<ValueError>([] { fill_(zeros({1}, kInt8).expand({3}), 300); }, "[fill_] value 300 cannot be converted");
  expect_error<Error>([] { relu_(zeros({1}).expand({3})); }, "[relu_] unsupported operation");
  expect_error<Error>([] { clamp_(zeros({1}).expand({3}), 0, 1); }, "[clamp_] unsupported operation");
  expect_error<Error>([] { (void)zeros({1}).expand({3}).add_(1); }, "[add_] unsupported operation");
}
