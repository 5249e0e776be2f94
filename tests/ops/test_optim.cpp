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
