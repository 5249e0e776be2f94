// The fused optimizer ops: values per dtype and layout, Meta checks, errors, registration.
#include <doctest/doctest.h>

#include <strata/ops/optim.h>
#include <strata/ops/structured.h>

#include "op_test_util.h"

using namespace strata;
using strata::testing::check_values;
using strata::testing::expect_error;

TEST_CASE("_fused_sgd_: one step with momentum on each floating dtype") {
  // p = [1, -2], g = [1, 2], buf = [0.5, 0.5], momentum 0.9, dampening 0.5, weight decay 0.1, lr 0.1:
  // d = g + 0.1 p = [1.1, 1.8]; buf = 0.9 * 0.5 + 0.5 * d = [1.0, 1.35]; p -= 0.1 * buf -> [0.9, -2.135]
  for (ScalarType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    INFO("dtype ", dtype);
    Tensor p = tensor({1.0, -2.0}, dtype), g = tensor({1.0, 2.0}, dtype), buf = full({2}, 0.5, dtype);
    _fused_sgd_(p, g, buf, 0.1, 0.9, 0.5, 0.1, false, false, false);
    const double tolerance = dtype == kFloat64 ? 1e-15 : dtype == kFloat32 ? 1e-6 : 2e-2;
    check_values(buf, {2}, dtype, {1.0, 1.35}, tolerance);
    check_values(p, {2}, dtype, {0.9, -2.135}, tolerance);
  }
}

TEST_CASE("_fused_sgd_: maximize and a strided parameter") {
  // A transposed (non-contiguous) 2x2 view is updated through its own strides.
  Tensor base = tensor(std::vector<double>{1, 2, 3, 4}, {2, 2}, kFloat64);
  Tensor p = base.transpose(0, 1);
  _fused_sgd_(p, ones({2, 2}, kFloat64), std::nullopt, 0.5, 0, 0, 0, false, /*maximize=*/true, false);
  check_values(base, {2, 2}, kFloat64, {1.5, 2.5, 3.5, 4.5});
}

TEST_CASE("_fused_adam_: first step moves each element by about lr") {
  Tensor p = tensor({1.0, -2.0}, kFloat64), g = tensor({1.0, 2.0}, kFloat64);
  Tensor m = zeros({2}, kFloat64), v = zeros({2}, kFloat64);
  _fused_adam_(p, g, m, v, std::nullopt, 1, 0.1, 0.9, 0.999, 0, 1e-8, false, false, false);
  check_values(m, {2}, kFloat64, {0.1, 0.2}, 1e-15);
  check_values(v, {2}, kFloat64, {0.001, 0.004}, 1e-15);
  check_values(p, {2}, kFloat64, {0.900000001, -2.0999999995}, 1e-12);
}

TEST_CASE("_fused_sgd_: Meta checks the arguments; errors name the op") {
  const Tensor p = empty({2, 3}, kMeta), g = empty({2, 3}, kMeta);
  _fused_sgd_(p, g, std::nullopt, 0.1, 0, 0, 0, false, false, true);
  _fused_adam_(p, g, empty({2, 3}, kMeta), empty({2, 3}, kMeta), std::nullopt, 1, 0.1, 0.9, 0.999, 0, 1e-8, false,
               false, false);
  expect_error<ValueError>([&] { _fused_sgd_(p, empty({3}, kMeta), std::nullopt, 0.1, 0, 0, 0, false, false, true); },
                           "[_fused_sgd_]", {"grad of shape [3]", "[2, 3]"});
  const Tensor cpu = ones({2});
  expect_error<ValueError>([&] { _fused_sgd_(cpu, cpu, std::nullopt, -1, 0, 0, 0, false, false, true); },
                           "[_fused_sgd_]", {"learning rate -1"});
  expect_error<ValueError>([&] { _fused_sgd_(cpu, cpu, std::nullopt, 0.1, 0.9, 0, 0, false, false, true); },
                           "[_fused_sgd_]", {"momentum_buffer"});
  expect_error<TypeError>([&] { _fused_sgd_(cpu, ones({2}, kFloat64), std::nullopt, 0.1, 0, 0, 0, false, false, true); },
                          "[_fused_sgd_]", {"Float64"});
  expect_error<ValueError>([&] { _fused_adam_(cpu, cpu, cpu, cpu, std::nullopt, 0, 0.1, 0.9, 0.999, 0, 1e-8, false,
                                              false, false); },
                           "[_fused_adam_]", {"step"});
  expect_error<ValueError>([&] { _fused_adam_(cpu, cpu, cpu, cpu, std::nullopt, 1, 0.1, 0.9, 0.999, 0, 1e-8, true,
                                              false, false); },
                           "[_fused_adam_]", {"max_exp_avg_sq"});
  // The Meta kernels derive from the shape functions of shapes/optim.h (Note [Checked updates]).
  CHECK(detail::has_derived_meta("strata::_fused_sgd_"));
  CHECK(detail::has_derived_meta("strata::_fused_adam_"));
  expect_error<ValueError>([&] { _fused_adam_(p, g, empty({2, 3}, kMeta), empty({2, 3}, kMeta), std::nullopt, 0, 0.1,
                                              0.9, 0.999, 0, 1e-8, false, false, false); },
                           "[_fused_adam_]", {"step"});
  expect_error<Error>([&] { _fused_sgd_(p, ones({2, 3}), std::nullopt, 0.1, 0, 0, 0, false, false, true); },
                      "[_fused_sgd_] expected all tensors on the same device");
}

TEST_CASE("_fused_sgd_: in place on a leaf that requires grad throws while recording, runs under no_grad") {
  Tensor p = ones({2});
  p.requires_grad_();
  expect_error<Error>([&] { _fused_sgd_(p, ones({2}), std::nullopt, 0.1, 0, 0, 0, false, false, true); }, "[");
  NoGradGuard no_grad;
  _fused_sgd_(p, ones({2}), std::nullopt, 0.1, 0, 0, 0, false, false, true);
  check_values(p, {2}, kFloat32, {0.9, 0.9}, 1e-7);
  CHECK(dump_dispatch_table("strata::_fused_adam_").find("ops/optim.cpp") != std::string::npos);
}

TEST_CASE("_fused_adam_: maximize equals a step on the negated gradient, over vector bodies and tails") {
  manual_seed(5);
  for (bool amsgrad : {false, true}) {
    INFO("amsgrad ", amsgrad);
    const Tensor start = randn({1037}), grad = randn({1037});
    tensor_list a = {start.clone(), zeros({1037}), zeros({1037}), zeros({1037})};
    tensor_list b = {start.clone(), zeros({1037}), zeros({1037}), zeros({1037})};
    for (int64_t step = 1; step <= 3; ++step) {
      _fused_adam_(a[0], grad, a[1], a[2], a[3], step, 0.01, 0.9, 0.999, 0.1, 1e-8, amsgrad, /*maximize=*/true, true);
      _fused_adam_(b[0], neg(grad), b[1], b[2], b[3], step, 0.01, 0.9, 0.999, 0.1, 1e-8, amsgrad, false, true);
    }
    for (size_t i = 0; i < a.size(); ++i) CHECK(equal(a[i], b[i]));
    CHECK_FALSE(equal(a[0], start));
  }
}

// ---------------------------------------------------------------------------------------
// The list overloads (Note [Multi-tensor optimizer steps]): entry i is bit-identical to the
// per-tensor op on the same tensors.

namespace {

// Parameters of different sizes (a vector body with a tail, a 0-d one, an empty one, a matrix).
const std::vector<std::vector<int64_t>> kListShapes = {{1037}, {}, {0}, {3, 5}, {64}};

tensor_list random_list(ScalarType dtype, double scale = 1, bool positive = false) {
  tensor_list out;
  for (const auto& shape : kListShapes) {
    Tensor t = randn(shape, dtype) * scale;
    out.push_back(positive ? abs(t) : t);
  }
  return out;
}

tensor_list clones(const tensor_list& list) {
  tensor_list out;
  for (const Tensor& t : list) out.push_back(t.clone());
  return out;
}

void check_lists_equal(const tensor_list& actual, const tensor_list& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("entry ", i);
    CHECK(equal(actual[i], expected[i]));
  }
}

}  // namespace

TEST_CASE("_fused_sgd_.list: equals the per-tensor op bit for bit") {
  manual_seed(11);
  struct Config {
    double momentum, dampening, weight_decay;
    bool nesterov, maximize, first;
  };
  const Config configs[] = {{0, 0, 0, false, false, true},     {0, 0, 0.01, false, true, false},
                            {0.9, 0, 0, false, false, true},   {0.9, 0.1, 0.01, false, false, false},
                            {0.9, 0, 0.01, true, false, false}, {0.9, 0, 0.01, true, true, true}};
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    for (const Config& c : configs) {
      INFO("dtype ", dtype, " momentum ", c.momentum, " nesterov ", c.nesterov, " maximize ", c.maximize);
      const tensor_list params = random_list(dtype), grads = random_list(dtype, 0.1), buffers = random_list(dtype);
      const tensor_list list_params = clones(params), list_buffers = clones(buffers);
      const tensor_list one_params = clones(params), one_buffers = clones(buffers);
      for (int step = 0; step < 2; ++step) {
        _fused_sgd_(list_params, grads, c.momentum != 0 ? list_buffers : tensor_list{}, 0.05, c.momentum,
                    c.dampening, c.weight_decay, c.nesterov, c.maximize, c.first && step == 0);
        for (size_t i = 0; i < params.size(); ++i)
          _fused_sgd_(one_params[i], grads[i], c.momentum != 0 ? std::optional<Tensor>(one_buffers[i]) : std::nullopt,
                      0.05, c.momentum, c.dampening, c.weight_decay, c.nesterov, c.maximize, c.first && step == 0);
      }
      check_lists_equal(list_params, one_params);
      check_lists_equal(list_buffers, one_buffers);
      CHECK_FALSE(equal(list_params[0], params[0]));
    }
  }
}

TEST_CASE("_fused_adam_.list: equals the per-tensor op bit for bit, each entry at its own step") {
  manual_seed(12);
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    for (bool amsgrad : {false, true}) {
      for (bool decoupled : {false, true}) {
        INFO("dtype ", dtype, " amsgrad ", amsgrad, " adamw ", decoupled);
        const tensor_list params = random_list(dtype), grads = random_list(dtype, 0.1);
        const tensor_list avgs = random_list(dtype, 0.01), avg_sqs = random_list(dtype, 0.01, true),
                          max_sqs = random_list(dtype, 0.01, true);
        tensor_list list_state[4] = {clones(params), clones(avgs), clones(avg_sqs), clones(max_sqs)};
        tensor_list one_state[4] = {clones(params), clones(avgs), clones(avg_sqs), clones(max_sqs)};
        std::vector<int64_t> steps = {1, 3, 2, 7, 1};
        for (int round = 0; round < 2; ++round) {
          _fused_adam_(list_state[0], grads, list_state[1], list_state[2], amsgrad ? list_state[3] : tensor_list{},
                       steps, 0.01, 0.9, 0.999, 0.05, 1e-8, amsgrad, round == 1, decoupled);
          for (size_t i = 0; i < params.size(); ++i)
            _fused_adam_(one_state[0][i], grads[i], one_state[1][i], one_state[2][i],
                         amsgrad ? std::optional<Tensor>(one_state[3][i]) : std::nullopt, steps[i], 0.01, 0.9, 0.999,
                         0.05, 1e-8, amsgrad, round == 1, decoupled);
          for (int64_t& step : steps) ++step;
        }
        for (int k = 0; k < 4; ++k) check_lists_equal(list_state[k], one_state[k]);
        CHECK_FALSE(equal(list_state[0][0], params[0]));
      }
    }
  }
}

TEST_CASE("_fused_sgd_.list / _fused_adam_.list: empty lists, mixed dtypes, Meta") {
  _fused_sgd_(tensor_list{}, tensor_list{}, tensor_list{}, 0.1, 0.9, 0, 0, false, false, true);
  _fused_adam_(tensor_list{}, tensor_list{}, tensor_list{}, tensor_list{}, tensor_list{}, std::vector<int64_t>{}, 0.1,
               0.9, 0.999, 0, 1e-8, true, false, false);
  // Entries of different dtypes in one call, each as its own per-tensor step.
  const tensor_list params = {ones({3}, kFloat32), ones({2}, kFloat64)}, grads = {ones({3}, kFloat32), ones({2}, kFloat64)};
  _fused_sgd_(params, grads, tensor_list{}, 0.5, 0, 0, 0, false, false, true);
  check_values(params[0], {3}, kFloat32, {0.5, 0.5, 0.5});
  check_values(params[1], {2}, kFloat64, {0.5, 0.5});
  const tensor_list meta = {empty({2, 3}, kMeta), empty({4}, kMeta)};
  _fused_sgd_(meta, meta, tensor_list{}, 0.1, 0, 0, 0, false, false, true);
  _fused_adam_(meta, meta, meta, meta, tensor_list{}, std::vector<int64_t>{1, 2}, 0.1, 0.9, 0.999, 0, 1e-8, false,
               false, false);
  CHECK(detail::has_derived_meta("strata::_fused_sgd_.list"));
  CHECK(detail::has_derived_meta("strata::_fused_adam_.list"));
}

TEST_CASE("_fused_sgd_.list / _fused_adam_.list: errors name the op and the entry; nothing is updated") {
  const Tensor a = ones({3}), b = ones({3});
  const tensor_list two = {a, b};
  expect_error<ValueError>([&] { _fused_sgd_(two, tensor_list{a}, tensor_list{}, 0.1, 0, 0, 0, false, false, true); },
                           "[_fused_sgd_]", {"grads has 1 entries but params has 2"});
  expect_error<ValueError>([&] { _fused_sgd_(two, two, tensor_list{a}, 0.1, 0.9, 0, 0, false, false, true); },
                           "[_fused_sgd_]", {"momentum_buffers has 1 entries"});
  expect_error<ValueError>(
      [&] { _fused_sgd_(two, tensor_list{ones({3}), ones({4})}, tensor_list{}, 0.1, 0, 0, 0, false, false, true); },
      "[_fused_sgd_]", {"grads[1] of shape [4] does not match params[1] of shape [3]"});
  expect_error<TypeError>([&] { _fused_sgd_(two, tensor_list{ones({3}), ones({3}, kFloat64)}, tensor_list{}, 0.1, 0,
                                            0, 0, false, false, true); },
                          "[_fused_sgd_]", {"grads[1] has dtype Float64"});
  expect_error<TypeError>([&] { _fused_sgd_(tensor_list{a, ones({3}, kInt64)}, two, tensor_list{}, 0.1, 0, 0, 0, false,
                                            false, true); },
                          "[_fused_sgd_]", {"floating-point", "params[1]"});
  expect_error<Error>([&] { _fused_sgd_(tensor_list{a, empty({3}, kMeta)}, tensor_list{a, empty({3}, kMeta)},
                                        tensor_list{}, 0.1, 0, 0, 0, false, false, true); },
                      "[_fused_sgd_]", {"params[1] on meta", "params[0] on cpu"});
  expect_error<ValueError>([&] { _fused_adam_(two, two, two, tensor_list{a}, tensor_list{}, std::vector<int64_t>{1, 1},
                                              0.1, 0.9, 0.999, 0, 1e-8, false, false, false); },
                           "[_fused_adam_]", {"exp_avg_sqs has 1 entries"});
  expect_error<ValueError>([&] { _fused_adam_(two, two, two, two, tensor_list{}, std::vector<int64_t>{1}, 0.1, 0.9,
                                              0.999, 0, 1e-8, false, false, false); },
                           "[_fused_adam_]", {"steps has 1 entries"});
  expect_error<ValueError>([&] { _fused_adam_(two, two, two, two, tensor_list{}, std::vector<int64_t>{1, 1}, 0.1, 0.9,
                                              0.999, 0, 1e-8, true, false, false); },
                           "[_fused_adam_]", {"max_exp_avg_sqs has 0 entries"});
  expect_error<ValueError>([&] { _fused_adam_(two, two, two, tensor_list{ones({3}), ones({2})}, tensor_list{},
                                              std::vector<int64_t>{1, 1}, 0.1, 0.9, 0.999, 0, 1e-8, false, false,
                                              false); },
                           "[_fused_adam_]", {"exp_avg_sqs[1] of shape [2]"});
  expect_error<ValueError>([&] { _fused_adam_(two, two, tensor_list{zeros({3}), zeros({3})},
                                              tensor_list{zeros({3}), zeros({3})}, tensor_list{},
                                              std::vector<int64_t>{1, 0}, 0.1, 0.9, 0.999, 0, 1e-8, false, false,
                                              false); },
                           "[_fused_adam_]", {"steps[1] must be >= 1, got 0"});
  // Every entry is checked before any is written.
  CHECK(equal(a, ones({3})));
  CHECK(equal(b, ones({3})));
  // In place on a leaf that requires grad: refused while recording, as for the per-tensor op.
  Tensor leaf = ones({2});
  leaf.requires_grad_();
  expect_error<Error>(
      [&] { _fused_sgd_(tensor_list{leaf}, tensor_list{ones({2})}, tensor_list{}, 0.1, 0, 0, 0, false, false, true); },
      "[");
  NoGradGuard no_grad;
  _fused_sgd_(tensor_list{leaf}, tensor_list{ones({2})}, tensor_list{}, 0.1, 0, 0, 0, false, false, true);
  check_values(leaf, {2}, kFloat32, {0.9, 0.9}, 1e-7);
}
