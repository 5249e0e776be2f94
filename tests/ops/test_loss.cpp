// Tests for ops/loss.cpp: nll_loss, cross_entropy, mse_loss, binary_cross_entropy_with_logits.
#include "op_test_util.h"

#include <strata/ops/structured.h>

#include <cmath>

using namespace strata;
using strata::testing::check_gradcheck;
using strata::testing::check_gradgradcheck;
using strata::testing::check_meta_matches;
using strata::testing::check_values;
using strata::testing::expect_error;
using strata::testing::grad_input;
using strata::testing::values_of;

namespace {
// log_softmax([1, 2, 3]) and log_softmax([0, 0, 0]).
constexpr double kLp0 = -2.4076059644443806, kLp1 = -1.4076059644443804, kLp2 = -0.4076059644443804;
const double kLogThird = -std::log(3.0);

Tensor logits_2x3() { return tensor(std::vector<double>{1, 2, 3, 0, 0, 0}, {2, 3}, kFloat64); }
}  // namespace

TEST_CASE("nll_loss: reductions, weights, ignore_index") {
  Tensor input = tensor(std::vector<float>{-1, -2, -3, -4, -5, -6}, {2, 3});
  Tensor target = tensor({2, 0});
  check_values(nll_loss(input, target), {}, kFloat32, {3.5});
  check_values(nll_loss(input, target, {}, Reduction::Sum), {}, kFloat32, {7});
  check_values(nll_loss(input, target, {}, Reduction::None), {2}, kFloat32, {3, 4});
  Tensor weight = tensor({1.0f, 2.0f, 3.0f});
  check_values(nll_loss(input, target, weight), {}, kFloat32, {(3.0 * 3 + 4.0 * 1) / 4});
  check_values(nll_loss(input, target, weight, Reduction::None), {2}, kFloat32, {9, 4});
  check_values(nll_loss(input, tensor({2, -100})), {}, kFloat32, {3});
  check_values(nll_loss(input, tensor({1, 1}), {}, Reduction::Mean, 1), {}, kFloat32, {NAN});  // all ignored: 0 / 0
  check_values(nll_loss(input, tensor({5, 0}), {}, Reduction::None, 5), {2}, kFloat32, {0, 4});
  check_values(nll_loss(tensor({-1.0, -2.0}, kFloat64), full({}, 1)), {}, kFloat64, {2});  // [C], 0-d target
  Tensor spatial = tensor(std::vector<double>{1, 2, 3, 4}, {1, 2, 2}, kFloat64);          // [N, C, d]
  check_values(nll_loss(spatial, tensor(std::vector<int64_t>{1, 0}, {1, 2}), {}, Reduction::None), {1, 2},
               kFloat64, {-3, -2});
  check_values(nll_loss(input.transpose(0, 1).contiguous().transpose(0, 1), target), {}, kFloat32, {3.5});
  check_values(nll_loss(zeros({0, 3}), zeros({0}, kInt64), {}, Reduction::Sum), {}, kFloat32, {0});
  check_meta_matches(nll_loss(input.to(kMeta), target.to(kMeta), {}, Reduction::None), nll_loss(input, target, {},
                                                                                                Reduction::None));
}

TEST_CASE("nll_loss: errors name the argument and shapes") {
  Tensor input = zeros({2, 3});
  expect_error<ValueError>([&] { (void)nll_loss(input, tensor({1, 2, 0})); },
                           "[nll_loss] expected target of shape [2] for input of shape [2, 3], got target of shape [3]");
  expect_error<IndexError>([&] { (void)nll_loss(input, tensor({1, 3})); },
                           "[nll_loss] target 3 is out of bounds for 3 classes");
  expect_error<TypeError>([&] { (void)nll_loss(input, tensor({1, 2}).to(kInt32)); },
                          "[nll_loss] expected an int64 target of class indices, got Int32");
  expect_error<ValueError>([&] { (void)nll_loss(input, tensor({1, 2}), ones({2})); },
                           "[nll_loss] expected a weight of shape [3] (one per class), got weight of shape [2]");
  expect_error<ValueError>([&] { (void)nll_loss(input, tensor({1, 2}), {}, static_cast<Reduction>(4)); },
                           "[nll_loss] reduction must be 0 (None), 1 (Mean) or 2 (Sum), got 4");
  Tensor weight = ones({3}, kFloat64).requires_grad_();
  expect_error<NotImplementedError>(
      [&] { (void)nll_loss(grad_input({2, 3}, 1), tensor({1, 2}), weight); },
      "[nll_loss] the derivative for 'weight' is not implemented");
}

TEST_CASE("nll_loss: gradients, first and second order") {
  Tensor x = grad_input({4, 3}, 41, /*transposed=*/true);
  const Tensor target = tensor({2, -100, 0, 2});
  const Tensor weight = tensor({0.5, 2.0, 1.5}, kFloat64);
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    auto fn = [&](const tensor_list& in) { return tensor_list{nll_loss(in[0], target, weight, reduction)}; };
    check_gradcheck(fn, {x});
    // The product makes the incoming gradient of nll_loss depend on x, so double backward
    // also goes through nll_loss_backward's own derivative.
    check_gradgradcheck(
        [&](const tensor_list& in) { return tensor_list{nll_loss(in[0], target, weight, reduction) * in[0].sum()}; },
        {x});
  }
  Tensor spatial = grad_input({2, 3, 2}, 42);
  check_gradcheck([](const tensor_list& in) {
    return tensor_list{nll_loss(in[0], tensor(std::vector<int64_t>{0, 2, 1, 1}, {2, 2}))};
  }, {spatial});
}

TEST_CASE("cross_entropy: class indices, hand-worked values") {
  Tensor logits = logits_2x3();
  check_values(cross_entropy(logits, tensor({2, 1})), {}, kFloat64, {(-kLp2 - kLogThird) / 2}, 1e-15);
  check_values(cross_entropy(logits, tensor({2, 1}), {}, Reduction::None), {2}, kFloat64, {-kLp2, -kLogThird}, 1e-15);
  check_values(cross_entropy(logits, tensor({2, -100})), {}, kFloat64, {-kLp2}, 1e-15);
  check_values(cross_entropy(logits, tensor({2, 7}), {}, Reduction::Sum, 7), {}, kFloat64, {-kLp2}, 1e-15);
  check_values(cross_entropy(logits.select(0, 0), full({}, 0)), {}, kFloat64, {-kLp0}, 1e-15);  // [C] input
  Tensor weight = tensor({1.0, 2.0, 3.0}, kFloat64);
  check_values(cross_entropy(logits, tensor({2, 1}), weight), {}, kFloat64, {(-3 * kLp2 - 2 * kLogThird) / 5}, 1e-15);
  check_meta_matches(cross_entropy(logits.to(kMeta), tensor({2, 1}).to(kMeta)), cross_entropy(logits, tensor({2, 1})));
}

TEST_CASE("cross_entropy: label smoothing as PyTorch defines it") {
  // loss = (1 - s) * nll + (s / C) * smooth, smooth_n = -sum_c w_c log_softmax(x)_{n,c}; computed
  // by hand from log_softmax([1, 2, 3]) and log_softmax([0, 0, 0]) with s = 0.2, C = 3.
  Tensor logits = logits_2x3();
  const Tensor target = tensor({2, 1});
  check_values(cross_entropy(logits, target, {}, Reduction::Mean, -100, 0.2), {}, kFloat64, {0.8531091265562452},
               1e-14);
  check_values(cross_entropy(logits, target, {}, Reduction::Sum, -100, 0.2), {}, kFloat64, {1.7062182531124903},
               1e-14);
  check_values(cross_entropy(logits, target, {}, Reduction::None, -100, 0.2), {2}, kFloat64,
               {0.6076059644443805, 1.0986122886681098}, 1e-14);
  // Weighted, the second sample ignored: Mean divides both terms by the kept weight (3).
  check_values(cross_entropy(logits, tensor({2, -100}), tensor({1.0, 2.0, 3.0}, kFloat64), Reduction::Mean, -100, 0.2),
               {}, kFloat64, {0.46932112237031065}, 1e-14);
  check_values(cross_entropy(logits, tensor({2, -100}), {}, Reduction::None, -100, 0.2), {2}, kFloat64,
               {0.8 * -kLp2 + 0.2 / 3 * -(kLp0 + kLp1 + kLp2), 0}, 1e-14);
}

TEST_CASE("cross_entropy: class-probability targets") {
  Tensor logits = logits_2x3().select(0, 0).unsqueeze(0);
  Tensor probabilities = tensor(std::vector<double>{0.1, 0.2, 0.7}, {1, 3}, kFloat64);
  check_values(cross_entropy(logits, probabilities), {}, kFloat64, {0.8076059644443805}, 1e-14);
  check_values(cross_entropy(logits, probabilities, {}, Reduction::None, -100, 0.3), {1}, kFloat64,
               {0.9876059644443804}, 1e-14);
  expect_error<ValueError>([&] { (void)cross_entropy(logits, ones({1, 2}, kFloat64)); },
                           "[cross_entropy] a floating-point target holds class probabilities and must have the "
                           "input's shape [1, 3], got [1, 2]");
}

TEST_CASE("cross_entropy: errors and gradients") {
  expect_error<ValueError>([] { (void)cross_entropy(zeros({2, 3}), tensor({0, 1}), {}, Reduction::Mean, -100, 1.5); },
                           "[cross_entropy] label_smoothing must be between 0.0 and 1.0, got 1.5");
  expect_error<ValueError>([] { (void)cross_entropy(zeros({2, 3}), tensor({0})); }, "[cross_entropy] expected target of shape [2]");
  Tensor x = grad_input({4, 3}, 43, /*transposed=*/true);
  const Tensor target = tensor({2, -100, 0, 1});
  const Tensor weight = tensor({0.5, 2.0, 1.5}, kFloat64);
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    auto fn = [&](const tensor_list& in) {
      return tensor_list{cross_entropy(in[0], target, weight, reduction, -100, 0.1)};
    };
    check_gradcheck(fn, {x});
    check_gradgradcheck(fn, {x});
  }
  Tensor probabilities = softmax(grad_input({4, 3}, 44), 1).detach();
  check_gradcheck([&](const tensor_list& in) { return tensor_list{cross_entropy(in[0], in[1], weight)}; },
                  {x, probabilities.requires_grad_()});
}

TEST_CASE("mse_loss: reductions, broadcasting, gradients") {
  Tensor input = tensor({1.0f, 2.0f, 3.0f}), target = tensor({1.0f, 0.0f, 0.0f});
  check_values(mse_loss(input, target), {}, kFloat32, {13.0 / 3}, 1e-6);
  check_values(mse_loss(input, target, Reduction::Sum), {}, kFloat32, {13});
  check_values(mse_loss(input, target, Reduction::None), {3}, kFloat32, {0, 4, 9});
  check_values(mse_loss(input.view({3, 1}), full({}, 1.0)), {}, kFloat32, {5.0 / 3}, 1e-6);
  check_values(mse_loss(zeros({0}), zeros({0})), {}, kFloat32, {NAN});
  check_meta_matches(mse_loss(input.to(kMeta), target.to(kMeta)), mse_loss(input, target));
  expect_error<TypeError>([] { (void)mse_loss(tensor({1, 2}), tensor({1, 2})); },
                          "[mse_loss] expected floating-point input and target, got Int64 and Int64");
  expect_error<ValueError>([&] { (void)mse_loss(input, zeros({2})); }, "[mse_loss] shapes [3] and [2] cannot be broadcast");
  Tensor x = grad_input({3, 2}, 45, /*transposed=*/true), y = grad_input({3, 2}, 46);
  check_gradcheck([](const tensor_list& in) { return tensor_list{mse_loss(in[0], in[1])}; }, {x, y});
  check_gradgradcheck([](const tensor_list& in) { return tensor_list{mse_loss(in[0], in[1], Reduction::None)}; }, {x, y});
}

TEST_CASE("binary_cross_entropy_with_logits: stable values, weights, pos_weight") {
  Tensor logits = tensor({0.5, -2.0, 30.0}, kFloat64), target = tensor({1.0, 0.0, 0.25}, kFloat64);
  // w * ((1 - t) * x - (1 + (p - 1) * t) * log_sigmoid(x)), computed by hand in double.
  check_values(binary_cross_entropy_with_logits(logits, target, {}, {}, Reduction::None), {3}, kFloat64,
               {0.4740769841801067, 0.1269280110429727, 22.500000000000092}, 1e-13);
  check_values(binary_cross_entropy_with_logits(logits, target), {}, kFloat64, {7.700334998407723}, 1e-13);
  check_values(binary_cross_entropy_with_logits(logits, target, tensor({1.0, 2.0, 0.5}, kFloat64), full({}, 3.0),
                                                Reduction::None),
               {3}, kFloat64, {1.42223095254032, 0.2538560220859454, 11.250000000000071}, 1e-13);
  check_values(binary_cross_entropy_with_logits(tensor({1e4f, -1e4f}), tensor({0.0f, 1.0f}), {}, {}, Reduction::Sum),
               {}, kFloat32, {20000});  // no overflow for huge logits
  check_values(binary_cross_entropy_with_logits(zeros({2, 2}), ones({2, 2}), {}, ones({2}) * 2.0, Reduction::Sum), {},
               kFloat32, {4 * 2 * std::log(2.0)}, 1e-5);
  check_meta_matches(binary_cross_entropy_with_logits(logits.to(kMeta), target.to(kMeta), {}, {}, Reduction::None),
                     binary_cross_entropy_with_logits(logits, target, {}, {}, Reduction::None));
  expect_error<ValueError>([&] { (void)binary_cross_entropy_with_logits(logits, zeros({2}, kFloat64)); },
                           "[binary_cross_entropy_with_logits] target of shape [2] must have the input's shape [3]");
  expect_error<ValueError>([&] { (void)binary_cross_entropy_with_logits(logits, target, zeros({2}, kFloat64)); },
                           "[binary_cross_entropy_with_logits] weight of shape [2] cannot be broadcast");
  expect_error<TypeError>([] { (void)binary_cross_entropy_with_logits(tensor({1, 0}), tensor({1, 0})); },
                          "[binary_cross_entropy_with_logits] expected floating-point input and target");
}

TEST_CASE("binary_cross_entropy_with_logits: gradients for every input") {
  Tensor x = grad_input({3, 2}, 47, /*transposed=*/true);
  Tensor t = (grad_input({3, 2}, 48) * 0.5 + 0.5).detach().requires_grad_();
  Tensor w = grad_input({2}, 49), p = (grad_input({2}, 50) + 2.0).detach().requires_grad_();
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    auto fn = [reduction](const tensor_list& in) {
      return tensor_list{binary_cross_entropy_with_logits(in[0], in[1], in[2], in[3], reduction)};
    };
    check_gradcheck(fn, {x, t, w, p});
    check_gradgradcheck(fn, {x, t, w, p});
  }
  check_gradcheck([](const tensor_list& in) { return tensor_list{binary_cross_entropy_with_logits(in[0], in[1])}; },
                  {x, t});
}

TEST_CASE("loss: int8 and int16 targets are refused by name") {
  Tensor logits = zeros({2, 3});
  CHECK_THROWS_AS((void)cross_entropy(logits, tensor({int8_t{0}, int8_t{1}})), Error);
  CHECK_THROWS_AS((void)nll_loss(logits, tensor({int16_t{0}, int16_t{1}})), Error);
}

TEST_CASE("nll_loss and cross_entropy: target classes are checked by the CPU compute, not on Meta") {
  for (const char* name : {"strata::nll_loss_forward", "strata::nll_loss_backward",
                           "strata::binary_cross_entropy_with_logits"}) {
    INFO(name);
    CHECK(detail::has_derived_meta(name));
  }
  const Tensor input = zeros({2, 3}), target = tensor({1, 5});
  check_meta_matches(nll_loss(input.to(kMeta), target.to(kMeta)), nll_loss(input, tensor({1, 2})));
  check_meta_matches(cross_entropy(input.to(kMeta), target.to(kMeta), {}, Reduction::None),
                     cross_entropy(input, tensor({1, 2}), {}, Reduction::None));
  expect_error<IndexError>([&] { (void)cross_entropy(input, target); }, "[cross_entropy] target 5 is out of bounds");
  // The backward's compute checks them too (a total_weight from elsewhere can pair with any target).
  static const auto backward = find_op("strata::nll_loss_backward")
                                   .typed<Tensor(const Tensor&, const Tensor&, const Tensor&,
                                                 const std::optional<Tensor>&, int64_t, int64_t, const Tensor&)>();
  expect_error<IndexError>([&] { (void)backward.call(ones({}), input, target, std::nullopt, 1, -100, full({}, 2.0f)); },
                           "[nll_loss] target 5 is out of bounds for 3 classes");
  const Tensor meta_grad = backward.call(ones({}).to(kMeta), input.to(kMeta), target.to(kMeta), std::nullopt, 1, -100,
                                         full({}, 2.0f).to(kMeta));
  check_meta_matches(meta_grad, input);
  expect_error<ValueError>([&] { (void)backward.call(ones({2}).to(kMeta), input.to(kMeta), target.to(kMeta),
                                                     std::nullopt, 1, -100, full({}, 2.0f).to(kMeta)); },
                           "[nll_loss_backward] expected grad_output of shape [] for reduction Mean, got [2]");
}
