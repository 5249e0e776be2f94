// Conformance port of LibTorch's test/cpp/api/autograd.cpp, part 2 of 3: CustomAutogradTest's
// custom Functions (saved tensors, mark_dirty, mark_non_differentiable, materialized grads, errors).
// Upstream order; see README.md in this folder and the spelling map in autograd_helpers.h.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include "../test_util.h"
#include "autograd_helpers.h"

using namespace strata;
using namespace strata::autograd;
using strata::conformance::UndefinedGrad;
using strata::testing::expect_error;

// The upstream forward ends `return var1 * var2, var1;` (the comma operator): it returns var1.
TEST_CASE("conformance autograd.cpp: CustomFunctionReturnInputAsIsAndSavesIt") {
  struct MyFunction : public Function<MyFunction> {
    static Tensor forward(AutogradContext* ctx, const Tensor& var1, const Tensor& var2) {
      ctx->save_for_backward({var1, var2});
      return var1;
    }

    static tensor_list backward(AutogradContext*, tensor_list) { return {}; }
  };

  Tensor x = randn({5, 5}, requires_grad());
  Tensor y = randn({5, 5}, requires_grad());
  MyFunction::apply(x, y);
}

TEST_CASE("conformance autograd.cpp: CustomFunction") {
  struct MyFunction : public Function<MyFunction> {
    static Tensor forward(AutogradContext* ctx, const Tensor& var1, int mul, const Tensor& var2) {
      ctx->saved_data["mul"] = mul;
      ctx->save_for_backward({var1, var2});
      return var1 + mul * var2 + var1 * var2;
    }

    static tensor_list backward(AutogradContext* ctx, tensor_list grad_output) {
      int mul = static_cast<int>(ctx->saved_data["mul"].to_int());
      auto saved = ctx->get_saved_variables();
      auto var1 = saved[0];
      auto var2 = saved[1];
      tensor_list output = {grad_output[0] + grad_output[0] * var2, Tensor(),
                            grad_output[0] * mul + grad_output[0] * var1};
      return output;
    }
  };

  Tensor x = randn({5, 5}, requires_grad());
  Tensor y = randn({5, 5}, requires_grad());
  Tensor res = MyFunction::apply(x, 2, y);
  Tensor go = ones({}, requires_grad());
  res.sum().backward(go, false, true);

  CHECK(allclose(x.grad(), y + ones({5, 5})));
  CHECK(allclose(y.grad(), x + ones({5, 5}) * 2));
}

// at::TensorList -> const tensor_list&: backward returns one gradient per tensor in the list.
TEST_CASE("conformance autograd.cpp: CustomFunctionWithTensorList") {
  struct MyFunction : public Function<MyFunction> {
    static Tensor forward(AutogradContext* ctx, const tensor_list& tensors) {
      tensor_list vars;
      for (const Tensor& t : tensors) vars.push_back(t);
      ctx->save_for_backward(vars);
      return tensors[0] + tensors[1] + tensors[0] * tensors[1];
    }

    static tensor_list backward(AutogradContext* ctx, tensor_list grad_output) {
      auto saved = ctx->get_saved_variables();
      auto var1 = saved[0];
      auto var2 = saved[1];
      tensor_list output = {grad_output[0] + grad_output[0] * var2, grad_output[0] + grad_output[0] * var1};
      return output;
    }
  };

  Tensor x = randn({5, 5}, requires_grad());
  Tensor y = randn({5, 5}, requires_grad());
  tensor_list variables = {x, y};
  const tensor_list& tensors = variables;
  Tensor res = MyFunction::apply(tensors);
  Tensor go = ones({}, requires_grad());
  res.sum().backward(go, false, true);

  CHECK(allclose(x.grad(), y + ones({5, 5})));
  CHECK(allclose(y.grad(), x + ones({5, 5})));
}

// differs: strata's needs_input_grad takes one index; the IndexRange forms
// (needs_input_grad({range, ...})) are checked as the `or` of the single indices they cover.
TEST_CASE("conformance autograd.cpp: GraphTaskTrimEdges") {
  struct MyFunction : public Function<MyFunction> {
    static Tensor forward(AutogradContext* ctx, const Tensor& var1, const Tensor& var2, int mul,
                          bool needs_input1_grad, bool needs_input2_grad) {
      // setup the expected should and should not compute idx
      ctx->saved_data["needs_input1_grad"] = needs_input1_grad;
      ctx->saved_data["needs_input2_grad"] = needs_input2_grad;

      ctx->saved_data["mul"] = mul;
      ctx->save_for_backward({var1, var2});
      return var1 + mul * var2 + var1 * var2;
    }

    static tensor_list backward(AutogradContext* ctx, tensor_list grad_output) {
      // Test `needs_input_grad` method is working correctly.
      // We have to test this within the backward function.
      auto needs_input1_grad = ctx->saved_data["needs_input1_grad"].to_bool();
      auto needs_input2_grad = ctx->saved_data["needs_input2_grad"].to_bool();
      CHECK(ctx->needs_input_grad(0) == needs_input1_grad);
      CHECK(ctx->needs_input_grad(1) == needs_input2_grad);
      CHECK((ctx->needs_input_grad(0) || ctx->needs_input_grad(1)) == (needs_input1_grad || needs_input2_grad));

      // calculate gradients
      int mul = static_cast<int>(ctx->saved_data["mul"].to_int());
      auto saved = ctx->get_saved_variables();
      auto var1 = saved[0];
      auto var2 = saved[1];

      Tensor grad_var1, grad_var2;
      if (ctx->needs_input_grad(0)) grad_var1 = grad_output[0] + grad_output[0] * var2;
      if (ctx->needs_input_grad(1)) grad_var2 = grad_output[0] * mul + grad_output[0] * var1;
      tensor_list output = {grad_var1, grad_var2, Tensor(), Tensor(), Tensor()};
      return output;
    }
  };

  Tensor x = randn({5, 5}, requires_grad());
  Tensor y = randn({5, 5}, requires_grad());
  Tensor go = ones_like(x);
  Tensor out;

  // grad_x
  out = MyFunction::apply(x, y, 2, /* needs_input1_grad= */ true, /* needs_input2_grad= */ false);
  Tensor grad_x = autograd::grad({out}, {x}, {go})[0];
  CHECK(allclose(grad_x, y + ones({5, 5})));

  // grad_y
  out = MyFunction::apply(x, y, 2, /* needs_input1_grad= */ false, /* needs_input2_grad= */ true);
  Tensor grad_y = autograd::grad({out}, {y}, {go})[0];
  CHECK(allclose(grad_y, x + ones({5, 5}) * 2));

  // grad_x and grad_y
  out = MyFunction::apply(x, y, 2, /* needs_input1_grad= */ true, /* needs_input2_grad= */ true);
  tensor_list grads = autograd::grad({out}, {x, y}, {go});
  CHECK(allclose(grads[0], y + ones({5, 5})));
  CHECK(allclose(grads[1], x + ones({5, 5}) * 2));
}

TEST_CASE("conformance autograd.cpp: FunctionReturnsInput") {
  struct MyFunction : public Function<MyFunction> {
    static Tensor forward(AutogradContext*, const Tensor& var1) { return var1; }

    static tensor_list backward(AutogradContext*, tensor_list grad_output) { return {grad_output[0] * 2}; }
  };

  Tensor x(ones({1}, requires_grad()));
  MyFunction::apply(x).backward(ones({1}), true, true);
  CHECK(allclose(x.grad(), full({1}, 2.)));
}

TEST_CASE("conformance autograd.cpp: FunctionReturnsUndefined") {
  struct MyFunction : public Function<MyFunction> {
    static Tensor forward(AutogradContext*, const Tensor& var) { return var * 2; }

    static tensor_list backward(AutogradContext*, tensor_list) {
      Tensor undefined_tensor;
      return {undefined_tensor};
    }
  };

  Tensor x = ones({1}, requires_grad());

  MyFunction::apply(x).backward();
  CHECK_FALSE(x.grad().defined());

  MyFunction::apply(x.pow(2)).backward();
  CHECK_FALSE(x.grad().defined());

  MyFunction::apply(x).sum().backward();
  CHECK_FALSE(x.grad().defined());

  CHECK_FALSE(autograd::grad({MyFunction::apply(x)}, {x}, {}, false, false, true)[0].defined());
}

// UndefinedGrad: see the Function of that name in autograd_helpers.h.
TEST_CASE("conformance autograd.cpp: MaterializeGrads") {
  struct MyFunction : public Function<MyFunction> {
    static Tensor forward(AutogradContext*, const Tensor& var) { return var; }

    static tensor_list backward(AutogradContext*, tensor_list grad_output) {
      CHECK(allclose(grad_output[0], zeros({1})));
      return grad_output;
    }
  };

  Tensor x = ones({1}, requires_grad());
  UndefinedGrad::apply(MyFunction::apply(x)).backward();
}

TEST_CASE("conformance autograd.cpp: DontMaterializeGrads") {
  struct MyFunction : public Function<MyFunction> {
    static Tensor forward(AutogradContext* ctx, const Tensor& var) {
      ctx->set_materialize_grads(false);
      return var;
    }

    static tensor_list backward(AutogradContext*, tensor_list grad_output) {
      CHECK_FALSE(grad_output[0].defined());
      return grad_output;
    }
  };

  Tensor x = ones({1}, requires_grad());
  UndefinedGrad::apply(MyFunction::apply(x)).backward();
}

TEST_CASE("conformance autograd.cpp: NoGradCustomFunction") {
  // Custom Function should respect grad mode
  struct MyOp : public Function<MyOp> {
    static Tensor forward(AutogradContext*, const Tensor& x) { return x + 1; }

    static tensor_list backward(AutogradContext*, tensor_list dy) { return dy; }
  };

  Tensor x = ones({5, 5}, requires_grad());
  {
    NoGradGuard no_grad;
    Tensor y = MyOp::apply(x);
    CHECK_FALSE(y.requires_grad());
  }
}

TEST_CASE("conformance autograd.cpp: MarkDirty") {
  struct MyFunction : public Function<MyFunction> {
    static Tensor forward(AutogradContext* ctx, const Tensor& v) {
      // Change the value inplace
      auto v_data = v.data_ptr<float>();
      v_data[0] = 2;
      ctx->mark_dirty({v});
      return v;
    }

    static tensor_list backward(AutogradContext*, tensor_list grad_output) { return {(grad_output[0] * 2.0)}; }
  };

  // Clone here because modifying leafs inplace is not allowed
  Tensor x = randn({5, 5}, requires_grad()).clone();
  auto version_before = x.version();
  Tensor out = MyFunction::apply(x);
  auto version_after = x.version();
  CHECK(version_after >= (version_before + 1));
  out.sum().backward();
}

TEST_CASE("conformance autograd.cpp: MarkNonDifferentiable") {
  struct MyFunction : public Function<MyFunction> {
    static Tensor forward(AutogradContext* ctx, const Tensor& v) {
      Tensor output = v.gt(0);
      ctx->mark_non_differentiable({output});
      return output;
    }

    static tensor_list backward(AutogradContext*, tensor_list grad_output) { return {(grad_output[0] * 0.0)}; }
  };

  Tensor x = randn({5, 5}, requires_grad());
  Tensor mask = MyFunction::apply(x);
  CHECK_FALSE(mask.requires_grad());
  Tensor y = x.masked_fill(mask, 0);
  y.sum().backward();
}

TEST_CASE("conformance autograd.cpp: MarkNonDifferentiableMixed") {
  struct MyFunction : public Function<MyFunction> {
    static tensor_list forward(AutogradContext* ctx, const Tensor& input) {
      Tensor a = input + 1;
      Tensor b = input + 2;
      ctx->mark_non_differentiable({a});
      return {a, b};
    }

    static tensor_list backward(AutogradContext*, tensor_list grad_output) {
      const Tensor &grad_a = grad_output[0], &grad_b = grad_output[1];
      CHECK(allclose(grad_a, zeros({5, 5})));
      CHECK(allclose(grad_b, ones({5, 5})));
      return {grad_b};
    }
  };

  Tensor x = randn({5, 5}, requires_grad());
  tensor_list out = MyFunction::apply(x);

  CHECK_FALSE(out[0].requires_grad());
  CHECK(out[1].requires_grad());
  out[1].sum().backward();
  CHECK(allclose(x.grad(), ones({5, 5})));
}

TEST_CASE("conformance autograd.cpp: MarkNonDifferentiableNone") {
  struct MyFunction : public Function<MyFunction> {
    static Tensor forward(AutogradContext* ctx, const Tensor& input) {
      Tensor output = input.clone();
      ctx->mark_non_differentiable({output});
      return output;
    }

    static tensor_list backward(AutogradContext*, tensor_list) { return {}; }
  };

  Tensor x = randn({5, 5}, requires_grad());
  Tensor r = MyFunction::apply(x * x);
  (r * x).sum().backward();
}

TEST_CASE("conformance autograd.cpp: ReturnLeafInplace") {
  struct Inplace : public Function<Inplace> {
    static tensor_list forward(AutogradContext* ctx, const Tensor& a, const Tensor& b) {
      ctx->mark_dirty({a});
      return {a.add_(b), b + 2};
    }

    static tensor_list backward(AutogradContext*, tensor_list grad_output) {
      return {grad_output[0], grad_output[0] + grad_output[1]};
    }
  };

  Tensor x = randn({5, 5});
  Tensor y = randn({5, 5}, requires_grad());

  tensor_list out = Inplace::apply(x, y);
  Tensor& q = out[0];
  CHECK(equal(q, x));
  CHECK(q.requires_grad());
  q.sum().backward();
  CHECK(allclose(y.grad(), ones({5, 5})));
}

TEST_CASE("conformance autograd.cpp: ReturnDuplicateInplace") {
  struct DoubleInplace : public Function<DoubleInplace> {
    static tensor_list forward(AutogradContext* ctx, const Tensor& x) {
      x.mul_(2);
      ctx->mark_dirty({x});
      return {x, x};
    }

    static tensor_list backward(AutogradContext*, tensor_list grad_outputs) {
      return {grad_outputs[0] * 2 + grad_outputs[1] * 2};
    }
  };

  Tensor x = randn({5, 5}, requires_grad());

  expect_error<Error>([&] { DoubleInplace::apply(x); }, "[", {"leaf"});

  tensor_list out = DoubleInplace::apply(x.clone());
  CHECK(equal(out[0], out[1]));
}

TEST_CASE("conformance autograd.cpp: ReturnDuplicate") {
  struct DoubleDuplicate : public Function<DoubleDuplicate> {
    static tensor_list forward(AutogradContext*, const Tensor& x) {
      Tensor output = x * 2;
      return {output, output};
    }

    static tensor_list backward(AutogradContext*, tensor_list grad_outputs) {
      return {grad_outputs[0] * 2 + grad_outputs[1] * 2};
    }
  };

  Tensor x = randn({5, 5}, requires_grad());
  tensor_list out = DoubleDuplicate::apply(x);
  CHECK(equal(out[0], out[1]));
}

TEST_CASE("conformance autograd.cpp: SaveEmptyForBackward") {
  struct MyFunction : public Function<MyFunction> {
    static Tensor forward(AutogradContext* ctx, const Tensor& input) {
      ctx->save_for_backward({Tensor(), input, Tensor()});
      return input * input;
    }

    static tensor_list backward(AutogradContext* ctx, tensor_list grad_output) {
      auto saved = ctx->get_saved_variables();
      CHECK_FALSE(saved[0].defined());
      CHECK_FALSE(saved[2].defined());
      return {saved[1] * 2 * grad_output[0]};
    }
  };

  Tensor x = randn({5, 5}, requires_grad());
  Tensor y = MyFunction::apply(x);
  y.sum().backward();
  CHECK(allclose(x.grad(), 2 * x));
}

TEST_CASE("conformance autograd.cpp: InvalidGradients") {
  struct MyFunction : public Function<MyFunction> {
    static Tensor forward(AutogradContext*, const Tensor& x) { return x * 2; }

    static tensor_list backward(AutogradContext*, tensor_list) {
      return {randn({10}, dtype(kFloat).requires_grad(true))};
    }
  };

  Tensor input1 = randn({5, 5}, dtype(kFloat).requires_grad(true));
  expect_error<Error>([&] { MyFunction::apply(input1).sum().backward(); }, "[", {"shape"});
  Tensor input2 = randn({10}, dtype(kDouble).requires_grad(true));
}

TEST_CASE("conformance autograd.cpp: NoGradInput") {
  struct MyFunction : public Function<MyFunction> {
    static Tensor forward(AutogradContext*, const Tensor& x) { return x; }

    static tensor_list backward(AutogradContext*, tensor_list grad_outputs) { return grad_outputs; }
  };

  Tensor x = randn({5, 5}, requires_grad());
  Tensor y;
  {
    NoGradGuard no_grad;
    y = MyFunction::apply(x);
  }

  CHECK(x.requires_grad());
  CHECK_FALSE(y.grad_fn());
}

// As upstream: the Function is only defined (it must compile), never applied.
TEST_CASE("conformance autograd.cpp: TooManyGrads") {
  struct MyFunction : public Function<MyFunction> {
    static Tensor forward(AutogradContext*, const Tensor& input) { return input; }

    static tensor_list backward(AutogradContext*, tensor_list grad_output) {
      grad_output.insert(grad_output.end(), {Tensor(), Tensor()});
      return grad_output;
    }
  };
}

TEST_CASE("conformance autograd.cpp: DepNoGrad") {
  struct F1 : public Function<F1> {
    static tensor_list forward(AutogradContext* ctx, const Tensor& input) {
      Tensor out = randn(input.sizes());
      ctx->mark_non_differentiable({out});
      return {input, out};
    }

    static tensor_list backward(AutogradContext*, tensor_list grad_output) { return {grad_output[0]}; }
  };

  struct F2 : public Function<F2> {
    static Tensor forward(AutogradContext*, const Tensor& input, const Tensor&) { return input; }

    static tensor_list backward(AutogradContext*, tensor_list grad_output) { return {grad_output[0], Tensor()}; }
  };

  Tensor x = randn({5}, requires_grad());
  tensor_list out = F1::apply(x);
  Tensor &a = out[0], &b = out[1];
  b = b + 1;  // Separate F1 and F2 by another operation
  CHECK(a.requires_grad());
  CHECK_FALSE(b.requires_grad());

  Tensor c = F2::apply(a, b);
  c.backward(ones(c.sizes()), false, false);
  CHECK(allclose(x.grad(), ones(x.sizes())));
}
