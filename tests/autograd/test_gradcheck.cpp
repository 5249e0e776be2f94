// gradcheck over every differentiable op registered so far, first and second order, with
// broadcasting and non-contiguous inputs; and gradcheck's own behaviour.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;

namespace {

using Fn = std::function<tensor_list(const tensor_list&)>;

struct Case {
  std::string name;
  Fn fn;
  std::vector<std::vector<int64_t>> shapes;  // one per input, float64, requires grad
  bool transpose_first = false;              // feed the first input as a non-contiguous view
  double eps = 1e-6;                         // finite-difference step
};

Tensor input(const std::vector<int64_t>& shape, bool transposed, uint64_t seed) {
  manual_seed(seed);
  if (!transposed || shape.size() < 2) return (rand(shape, kFloat64) + 0.5).detach().requires_grad_();
  std::vector<int64_t> flipped(shape.rbegin(), shape.rend());
  return (rand(flipped, kFloat64) + 0.5).detach().permute({1, 0}).requires_grad_();
}

tensor_list inputs_for(const Case& c) {
  tensor_list inputs;
  for (size_t i = 0; i < c.shapes.size(); ++i) inputs.push_back(input(c.shapes[i], c.transpose_first && i == 0, 17 + i));
  return inputs;
}

// d/d(inputs) of <fn(inputs), v>, with the graph kept, so gradcheck differentiates it again.
Fn first_derivative(const Fn& fn) {
  return [fn](const tensor_list& in) {
    tensor_list out = fn(in);
    manual_seed(99);
    tensor_list seeds{rand(out[0].sizes(), kFloat64)};
    return autograd::grad({out[0]}, in, seeds, /*retain_graph=*/true, /*create_graph=*/true, /*allow_unused=*/true);
  };
}

std::vector<Case> cases() {
  return {
      {"add", [](const tensor_list& t) { return tensor_list{add(t[0], t[1], 2.5)}; }, {{2, 3}, {3}}},
      {"add.Scalar", [](const tensor_list& t) { return tensor_list{t[0] + 1.5}; }, {{2, 3}}},
      {"sub", [](const tensor_list& t) { return tensor_list{sub(t[0], t[1], 0.5)}; }, {{2, 1}, {1, 3}}},
      {"sub.Scalar", [](const tensor_list& t) { return tensor_list{t[0] - 1.0}; }, {{3}}},
      {"mul", [](const tensor_list& t) { return tensor_list{t[0] * t[1]}; }, {{3, 2}, {3, 2}}, true},
      {"mul.Scalar", [](const tensor_list& t) { return tensor_list{t[0] * 3.0}; }, {{2, 2}}},
      {"div", [](const tensor_list& t) { return tensor_list{t[0] / t[1]}; }, {{2, 3}, {2, 1}}},
      {"div.Scalar", [](const tensor_list& t) { return tensor_list{t[0] / 4.0}; }, {{4}}},
      {"neg", [](const tensor_list& t) { return tensor_list{-t[0]}; }, {{3}}},
      {"add_", [](const tensor_list& t) { return tensor_list{(t[0] * 1.0).add_(t[1], 2.0)}; }, {{2, 2}, {2}}},
      {"sub_", [](const tensor_list& t) { return tensor_list{(t[0] * 1.0).sub_(t[1])}; }, {{2, 2}, {2, 2}}},
      {"mul_", [](const tensor_list& t) { return tensor_list{(t[0] * 1.0).mul_(t[1])}; }, {{2, 3}, {3}}},
      {"div_", [](const tensor_list& t) { return tensor_list{(t[0] * 1.0).div_(t[1])}; }, {{2, 3}, {3}}},
      {"mul_.Scalar", [](const tensor_list& t) { return tensor_list{(t[0] * 1.0).mul_(2.0).add_(1.0)}; }, {{3}}},
      {"sum", [](const tensor_list& t) { return tensor_list{t[0].sum()}; }, {{2, 3}}, true},
      {"sum.dim", [](const tensor_list& t) { return tensor_list{t[0].sum({1})}; }, {{2, 3, 2}}},
      {"sum.keepdim", [](const tensor_list& t) { return tensor_list{t[0].sum({0, 2}, true)}; }, {{2, 3, 2}}},
      {"matmul 2d", [](const tensor_list& t) { return tensor_list{matmul(t[0], t[1])}; }, {{2, 3}, {3, 4}}, true},
      {"matmul 1d", [](const tensor_list& t) { return tensor_list{matmul(t[0], t[1])}; }, {{3}, {3}}},
      {"matmul mv", [](const tensor_list& t) { return tensor_list{matmul(t[0], t[1])}; }, {{2, 3}, {3}}},
      {"matmul vm", [](const tensor_list& t) { return tensor_list{matmul(t[0], t[1])}; }, {{3}, {3, 2}}},
      {"matmul batched", [](const tensor_list& t) { return tensor_list{matmul(t[0], t[1])}; }, {{2, 2, 3}, {3, 2}}},
      {"view", [](const tensor_list& t) { return tensor_list{t[0].view({3, 2}) * 2.0}; }, {{2, 3}}},
      {"reshape", [](const tensor_list& t) { return tensor_list{t[0].reshape({6}) * 2.0}; }, {{2, 3}}, true},
      {"transpose", [](const tensor_list& t) { return tensor_list{t[0].transpose(0, 1) * 2.0}; }, {{2, 3}}},
      {"permute", [](const tensor_list& t) { return tensor_list{t[0].permute({2, 0, 1}) * 2.0}; }, {{2, 3, 2}}},
      {"expand", [](const tensor_list& t) { return tensor_list{t[0].expand({2, 3, 2}) * 2.0}; }, {{3, 1}}},
      {"contiguous", [](const tensor_list& t) { return tensor_list{t[0].contiguous() * 2.0}; }, {{2, 3}}, true},
      {"clone", [](const tensor_list& t) { return tensor_list{t[0].clone() * 2.0}; }, {{2, 3}}},
      {"copy_", [](const tensor_list& t) { return tensor_list{zeros({2, 3}, kFloat64).copy_(t[0] * 2.0)}; }, {{3}}},
      // A float32 round trip: a coarser step keeps float32 rounding out of the differences.
      {"to", [](const tensor_list& t) { return tensor_list{t[0].to(kFloat32).to(kFloat64) * 2.0}; }, {{2, 2}}, false,
       1e-2},
  };
}

}  // namespace

TEST_CASE("gradcheck: every differentiable op so far, first order") {
  for (const Case& c : cases()) {
    INFO("op: " << c.name);
    auto result = autograd::gradcheck(c.fn, inputs_for(c), c.eps);
    CHECK_MESSAGE(static_cast<bool>(result), c.name << ": " << result.message());
  }
}

TEST_CASE("gradcheck: every differentiable op so far, second order (double backward)") {
  for (const Case& c : cases()) {
    if (c.name == "to") continue;  // float32 round trip: its finite differences are too coarse
    INFO("op: " << c.name);
    auto result = autograd::gradcheck(first_derivative(c.fn), inputs_for(c), 1e-6, 1e-5, 1e-3);
    CHECK_MESSAGE(static_cast<bool>(result), c.name << ": " << result.message());
  }
}

TEST_CASE("gradcheck: reports the worst mismatch of a wrong derivative") {
  struct WrongSquare : autograd::Function<WrongSquare> {
    static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
      ctx->save_for_backward({x});
      return x * x;
    }
    static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grads) {
      return {grads[0] * ctx->get_saved_variables()[0] * 3.0};  // should be 2x
    }
  };
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  auto result = autograd::gradcheck([](const tensor_list& t) { return tensor_list{WrongSquare::apply(t[0])}; }, {x});
  CHECK_FALSE(static_cast<bool>(result));
  CHECK(result.message().find("analytical") != std::string::npos);
  std::ostringstream printed;
  printed << result;
  CHECK(printed.str().rfind("gradcheck failed", 0) == 0);
}

TEST_CASE("gradcheck: bad inputs") {
  expect_error<TypeError>(
      [] { autograd::gradcheck([](const tensor_list& t) { return t; }, {tensor({1.0f}).requires_grad_()}); },
      "[gradcheck]", {"float64"});
  expect_error<ValueError>([] { autograd::gradcheck([](const tensor_list& t) { return t; }, {tensor({1.0})}); },
                           "[gradcheck]", {"no input requires grad"});
}

TEST_CASE("autograd: views share the version counter; saved views detect in-place changes") {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, kFloat64).requires_grad_();
  Tensor base = x * 1.0;
  Tensor v = base.view({2, 2});
  CHECK(v.version() == base.version());
  Tensor y = v * v;  // saves the view
  base.add_(1.0);    // bumps the shared counter
  CHECK(v.version() == base.version());
  expect_error<Error>([&] { y.sum().backward(); }, "[MulBackward]", {"modified by an inplace operation"});
}
