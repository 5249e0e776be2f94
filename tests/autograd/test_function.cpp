// Custom Functions: saved tensors, saved data, context flags, kernel<F>() registration.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;

namespace {

// y = x * x * beta, saved input and a saved double.
struct ScaledSquare : autograd::Function<ScaledSquare> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, double beta) {
    ctx->save_for_backward({x});
    ctx->saved_data["beta"] = beta;
    return x * x * beta;
  }
  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grads) {
    Tensor x = ctx->get_saved_variables()[0];
    double beta = ctx->saved_data["beta"].to_double();
    return {grads[0] * x * (2 * beta), Tensor()};
  }
};

// Saves its own output: y = x * 3, dy/dx from the output (y / x * ...): uses y to compute.
struct TripleSavesOutput : autograd::Function<TripleSavesOutput> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
    Tensor y = x * 3.0;
    ctx->save_for_backward({y});
    return y;
  }
  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grads) {
    Tensor y = ctx->get_saved_variables()[0];
    CHECK(y.defined());
    return {grads[0] * 3.0};
  }
};

struct WrongCount : autograd::Function<WrongCount> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * 2.0; }
  static tensor_list backward(autograd::AutogradContext*, tensor_list grads) { return {grads[0], grads[0]}; }
};

struct WrongShape : autograd::Function<WrongShape> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * 2.0; }
  static tensor_list backward(autograd::AutogradContext*, tensor_list) { return {ones({7})}; }
};

struct InPlaceDouble : autograd::Function<InPlaceDouble> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
    x.mul_(2.0);
    ctx->mark_dirty({x});
    return x;
  }
  static tensor_list backward(autograd::AutogradContext*, tensor_list grads) { return {grads[0] * 2.0}; }
};

struct TwoOutputs : autograd::Function<TwoOutputs> {
  static tensor_list forward(autograd::AutogradContext* ctx, const Tensor& x) {
    Tensor index = zeros({1}, kInt64);
    ctx->mark_non_differentiable({index});
    return {x * 2.0, index};
  }
  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grads) {
    CHECK(ctx->needs_input_grad(0));
    return {grads[0] * 2.0};
  }
};

// The same without the mark: an integral output is non-differentiable by its dtype (PyTorch).
struct UnmarkedIndex : autograd::Function<UnmarkedIndex> {
  static tensor_list forward(autograd::AutogradContext*, const Tensor& x) { return {x * 2.0, x.argmax()}; }
  static tensor_list backward(autograd::AutogradContext*, tensor_list grads) { return {grads[0] * 2.0}; }
};

// Counts into an integral input in place (marked dirty) and returns it.
struct CountInPlace : autograd::Function<CountInPlace> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, const Tensor& counter) {
    counter.add_(1);
    ctx->mark_dirty({counter});
    return counter;
  }
  static tensor_list backward(autograd::AutogradContext*, tensor_list) { return {Tensor(), Tensor()}; }
};

struct NoMaterialize : autograd::Function<NoMaterialize> {
  static tensor_list forward(autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->set_materialize_grads(false);
    return {x * 1.0, x * 2.0};
  }
  static tensor_list backward(autograd::AutogradContext*, tensor_list grads) {
    CHECK_FALSE(grads[1].defined());  // the second output was not used
    return {grads[0]};
  }
};

// Gradient reversal: the identity forward (a view of x), the negated gradient backward.
struct GradReverse : autograd::Function<GradReverse> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x.view(x.sizes()); }
  static tensor_list backward(autograd::AutogradContext*, tensor_list grads) { return {-grads[0]}; }
};

// Returns its input as it is.
struct Passthrough : autograd::Function<Passthrough> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x; }
  static tensor_list backward(autograd::AutogradContext*, tensor_list grads) { return {grads[0] * 3.0}; }
};

}  // namespace

TEST_CASE("function: forward and backward with saved tensors and saved data") {
  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  Tensor y = ScaledSquare::apply(x, 0.5);
  CHECK(y.grad_fn() != nullptr);
  CHECK(y.grad_fn()->name() == "ScaledSquare");
  y.sum().backward();
  CHECK(allclose(x.grad(), tensor({1.0, 2.0, 3.0}, kFloat64)));
  auto result = autograd::gradcheck([](const tensor_list& in) { return tensor_list{ScaledSquare::apply(in[0], 1.5)}; },
                                    {x});
  CHECK_MESSAGE(static_cast<bool>(result), result.message());
}

TEST_CASE("function: no graph is recorded without grad") {
  Tensor x = tensor({1.0, 2.0});
  CHECK(ScaledSquare::apply(x, 1.0).grad_fn() == nullptr);
  Tensor leaf = tensor({1.0f}).requires_grad_();
  NoGradGuard no_grad;
  CHECK_FALSE(ScaledSquare::apply(leaf, 1.0).requires_grad());
}

TEST_CASE("function: saving its own output does not leak") {
  Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
  for (int i = 0; i < 100; ++i) TripleSavesOutput::apply(x).sum().backward();  // warm the allocator caches
  const int64_t before = cpu_live_bytes();
  for (int i = 0; i < 10000; ++i) TripleSavesOutput::apply(x).sum().backward();
  CHECK(cpu_live_bytes() == before);
  CHECK(x.grad().sum().item<float>() == doctest::Approx(2 * 3.0f * 10100));
}

TEST_CASE("function: backward returning the wrong number or shape of gradients") {
  Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
  expect_error<ValueError>([&] { WrongCount::apply(x).sum().backward(); }, "[WrongCount]", {"returned 2 gradients"});
  expect_error<ValueError>([&] { WrongShape::apply(x).sum().backward(); }, "[WrongShape]", {"shape [7]"});
}

TEST_CASE("function: mark_dirty rebases an in-place change; leaves refuse it") {
  Tensor leaf = tensor({1.0f, 2.0f}).requires_grad_();
  Tensor x = leaf * 1.0;
  Tensor y = InPlaceDouble::apply(x);
  CHECK(y.is_same(x));
  CHECK(x.grad_fn()->name() == "InPlaceDouble");
  y.sum().backward();
  CHECK(allclose(leaf.grad(), tensor({2.0f, 2.0f})));
  expect_error<Error>([&] { InPlaceDouble::apply(leaf); }, "[InPlaceDouble]", {"leaf"});
}

TEST_CASE("function: non-differentiable outputs and needs_input_grad") {
  Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
  tensor_list outputs = TwoOutputs::apply(x);
  CHECK(outputs[0].requires_grad());
  CHECK_FALSE(outputs[1].requires_grad());
  outputs[0].sum().backward();
  CHECK(allclose(x.grad(), tensor({2.0f, 2.0f})));
}

TEST_CASE("function: integral outputs are non-differentiable without a mark, as in PyTorch") {
  Tensor x = tensor({1.0f, 3.0f}).requires_grad_();
  tensor_list outputs = UnmarkedIndex::apply(x);
  CHECK(outputs[0].requires_grad());
  CHECK_FALSE(outputs[1].requires_grad());
  CHECK(outputs[1].grad_fn() == nullptr);
  CHECK(outputs[1].item<int64_t>() == 1);
  outputs[0].sum().backward();
  CHECK(allclose(x.grad(), tensor({2.0f, 2.0f})));

  Tensor counter = zeros({1}, kInt64);
  const auto version = counter.version();
  Tensor same = CountInPlace::apply(x, counter);
  CHECK(counter.item<int64_t>() == 1);
  CHECK(counter.version() > version);
  CHECK_FALSE(same.requires_grad());
}

TEST_CASE("function: set_materialize_grads(false) passes undefined gradients through") {
  Tensor x = tensor({1.0f}).requires_grad_();
  tensor_list outputs = NoMaterialize::apply(x);
  outputs[0].sum().backward();
  CHECK(x.grad().item<float>() == 1.0f);
}

TEST_CASE("function: kernel<F>() makes a Function the Autograd kernel of a new op") {
  Library def("fn_test_ops", Library::DEF);
  def.def("scaled_square(Tensor x, float beta=1.0) -> Tensor");
  Library cpu("fn_test_ops", Library::IMPL, DispatchKey::CPU);
  cpu.impl("scaled_square", [](const Tensor& x, double beta) { return x * x * beta; });
  Library autograd_impl("fn_test_ops", Library::IMPL, DispatchKey::Autograd);
  autograd_impl.impl("scaled_square", autograd::kernel<ScaledSquare>());
  auto op = find_op("fn_test_ops::scaled_square").typed<Tensor(const Tensor&, double)>();
  Tensor x = tensor({1.0, -2.0}, kFloat64).requires_grad_();
  Tensor y = op.call(x, 2.0);
  CHECK(y.grad_fn()->name() == "ScaledSquare");
  y.sum().backward();
  CHECK(allclose(x.grad(), tensor({4.0, -8.0}, kFloat64)));
  // Without grad the Autograd kernel is skipped: no graph.
  CHECK(op.call(tensor({1.0}, kFloat64), 2.0).grad_fn() == nullptr);
}

TEST_CASE("function: a built-in op's derivative is replaced inside a scope and restored") {
  struct LoudMul : autograd::Function<LoudMul> {
    static Tensor forward(autograd::AutogradContext* ctx, const Tensor& a, const Tensor& b) {
      ctx->save_for_backward({a, b});
      return mul(a, b);
    }
    static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grads) {
      auto saved = ctx->get_saved_variables();
      return {grads[0] * saved[1] * 100.0, grads[0] * saved[0] * 100.0};
    }
  };
  Tensor a = tensor({2.0f}).requires_grad_();
  Tensor b = tensor({3.0f});
  {
    Library replace("strata", Library::IMPL, DispatchKey::Autograd);
    replace.impl("mul.Tensor", autograd::kernel<LoudMul>());
    (a * b).backward();
    CHECK(a.grad().item<float>() == 300.0f);
  }
  a.set_grad(Tensor());
  (a * b).backward();
  CHECK(a.grad().item<float>() == 3.0f);
}

TEST_CASE("function: an op without a derivative runs, and backward through it names the op") {
  Library def("fn_test_noderiv", Library::DEF);
  def.def("twice(Tensor x) -> Tensor");
  Library cpu("fn_test_noderiv", Library::IMPL, DispatchKey::CPU);
  cpu.impl("twice", [](const Tensor& x) { return x * 2.0; });
  Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
  Tensor y = call("fn_test_noderiv::twice", x).to_tensor();
  CHECK(y.requires_grad());
  CHECK(allclose(y.detach(), tensor({2.0f, 4.0f})));
  expect_error<NotImplementedError>([&] { y.sum().backward(); }, "[fn_test_noderiv::twice]",
                                    {"derivative", "not implemented",
                                     "STRATA_LIBRARY_IMPL(fn_test_noderiv, Autograd, m) { m.impl(\"twice\","});
  NoGradGuard no_grad;
  CHECK_FALSE(call("fn_test_noderiv::twice", x).to_tensor().requires_grad());
}

// Note [Views returned by custom Functions]: changing such a view in place would send the
// change's gradient around the Function's backward (here: the reversal would be lost).
TEST_CASE("function: a view a Function returns is not changed in place with grad on") {
  Tensor x = tensor({1.0, -2.0, 3.0}, kFloat64).requires_grad_();
  Tensor y = x * 1.0;
  Tensor r = GradReverse::apply(y);
  CHECK(r.is_view());
  expect_error<Error>([&] { r.mul_(2.0); }, "[mul_]", {"custom Function", "GradReverse", "clone"});
  expect_error<Error>([&] { r.t().mul_(2.0); }, "[mul_]", {"custom Function"});  // a view of it
  Tensor p = Passthrough::apply(y);
  expect_error<Error>([&] { p.relu_(); }, "[relu_]", {"custom Function", "Passthrough"});
  // Cloned, the output changes in place and the gradient goes through the Function.
  Tensor c = r.clone();
  c.mul_(2.0);
  c.sum().backward();
  CHECK(equal(x.grad(), full({3}, -2.0, kFloat64)));
  // Under NoGradGuard the view changes like any tensor; with grad on it is then stale, and
  // using it is refused rather than given a history that skips the Function.
  {
    NoGradGuard no_grad;
    r.add_(1.0);
  }
  CHECK(equal(y.detach(), tensor({2.0, -1.0, 4.0}, kFloat64)));
  expect_error<Error>([&] { (void)(r * 2.0); }, "[autograd]", {"custom Function", "clone"});
  // Unchanged, it is used as any output: the reversal applies.
  Tensor z = tensor({1.0, 1.0}, kFloat64).requires_grad_();
  (GradReverse::apply(z * 1.0) * 5.0).sum().backward();
  CHECK(equal(z.grad(), full({2}, -5.0, kFloat64)));
}

// The mark passes to views of such a view made by an op without a derivative (the autograd
// fallback), as to those made by built-in view ops; a view made without grad keeps its own.
TEST_CASE("function: an op without a derivative passes a Function view's mark on") {
  Library def("fn_test_first_row", Library::DEF);
  def.def("first_row(Tensor(a) x) -> Tensor(a)");
  Library cpu("fn_test_first_row", Library::IMPL, DispatchKey::CPU);
  cpu.impl("first_row", [](const Tensor& x) { return x.select(0, 0); });
  Tensor x = tensor({1.0, -2.0, 3.0, 4.0}, kFloat64).requires_grad_();
  Tensor r = GradReverse::apply(x.view({2, 2}) * 1.0);
  Tensor row = call("fn_test_first_row::first_row", r).to_tensor();
  CHECK(row.is_view());
  expect_error<Error>([&] { row.mul_(2.0); }, "[mul_]", {"custom Function", "clone"});
  CHECK(row.requires_grad());
  {
    NoGradGuard no_grad;
    row.mul_(2.0);  // as any tensor, under NoGradGuard
  }
  expect_error<Error>([&] { (void)(row * 2.0); }, "[autograd]", {"custom Function"});  // stale now
  Tensor y = x.view({2, 2}) * 1.0;
  Tensor leaf_view;
  {
    NoGradGuard no_grad;
    leaf_view = y.t();
  }
  Tensor of_leaf = call("fn_test_first_row::first_row", leaf_view).to_tensor();
  expect_error<Error>([&] { of_leaf.mul_(2.0); }, "[mul_]", {"NoGradGuard"});
}

TEST_CASE("function: the views of a built-in op's Function change in place as before") {
  Tensor x = tensor({1.0, -2.0, 3.0, 4.0}, kFloat64).requires_grad_();
  Tensor y = x * 1.0;
  Tensor v = y.view({2, 2}).t();
  v.mul_(3.0);
  y.sum().backward();
  CHECK(equal(x.grad(), full({4}, 3.0, kFloat64)));
  // A Function registered as an op's Autograd kernel is the op's own: its views follow the
  // schema's alias annotation, not the custom-Function rule.
  Library def("fn_test_alias", Library::DEF);
  def.def("same(Tensor(a) x) -> Tensor(a)");
  Library cpu("fn_test_alias", Library::IMPL, DispatchKey::CPU);
  cpu.impl("same", [](const Tensor& x) { return x.view(x.sizes()); });
  Library grad("fn_test_alias", Library::IMPL, DispatchKey::Autograd);
  grad.impl("same", autograd::kernel<GradReverse>());
  Tensor w = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor s = call("fn_test_alias::same", w * 1.0).to_tensor();
  s.mul_(2.0);
  CHECK(s.requires_grad());
}
