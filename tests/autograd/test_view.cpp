// Views under autograd: _base tracking, in-place ops on views (CopySlices), stale views whose
// base changed in place, and as_strided's derivative. See Note [In-place on views].
#include <doctest/doctest.h>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;

namespace {

using Fn = std::function<tensor_list(const tensor_list&)>;

Tensor f64(std::initializer_list<double> values) { return tensor(values, kFloat64); }

void check_gradcheck(const Fn& fn, const tensor_list& inputs) {
  auto result = autograd::gradcheck(fn, inputs);
  INFO(result.message());
  CHECK(static_cast<bool>(result));
}

}  // namespace

TEST_CASE("view: is_view and _base name the root base, with or without grad") {
  Tensor base = zeros({2, 3});
  CHECK_FALSE(base.is_view());
  CHECK_FALSE(base._base().defined());
  Tensor row = base.select(0, 1);
  CHECK(row.is_view());
  CHECK(row._base().is_same(base));
  Tensor nested = row.slice(0, 1, 3).unsqueeze(0).t();
  CHECK(nested._base().is_same(base));  // a view of a view has the root as base
  for (const Tensor& piece : base.chunk(3, 1)) CHECK(piece._base().is_same(base));
  CHECK(base.view({6})._base().is_same(base));
  CHECK(base.reshape({3, 2})._base().is_same(base));
  CHECK(base.expand({4, 2, 3})._base().is_same(base));
  CHECK_FALSE(base.permute({1, 0}).flatten().is_view());  // flattening a transpose copies
  CHECK_FALSE(base.t().reshape({6}).is_view());
  CHECK(base.narrow(1, 0, 2).squeeze()._base().is_same(base));
  CHECK(as_strided(base, {2}, {1})._base().is_same(base));
  CHECK_FALSE(base.detach().is_view());  // detach shares storage but is not a view
  CHECK_FALSE(base.clone().is_view());
}

TEST_CASE("view: copy_ into a select of a buffer reaches the source's gradient") {
  Tensor w = full({}, 1.0, kFloat64).requires_grad_();
  Tensor out = zeros({2}, kFloat64);
  out.select(0, 0).copy_(w * 2);
  CHECK(out.grad_fn()->name() == "CopySlices");
  (out.sum() + w).backward();
  CHECK(w.grad().item<double>() == 3.0);
}

TEST_CASE("view: add_ into a slice of a buffer reaches the added tensor's gradient") {
  Tensor v = f64({1.0}).requires_grad_();
  Tensor out = zeros({3}, kFloat64);
  out.slice(0, 0, 1).add_(v);
  (out * f64({5.0, 7.0, 9.0})).sum().backward();
  CHECK(v.grad().item<double>() == 5.0);
}

TEST_CASE("view: in-place on a view of a non-leaf keeps the base's other gradients") {
  Tensor x = f64({1.0, 2.0, 3.0}).requires_grad_();
  Tensor w = full({}, 4.0, kFloat64).requires_grad_();
  Tensor base = x * 2;              // d base / d x = 2
  base.narrow(0, 1, 1).mul_(w);     // element 1 becomes 2 * x1 * w
  base.sum().backward();
  CHECK(allclose(x.grad(), f64({2.0, 8.0, 2.0})));
  CHECK(w.grad().item<double>() == doctest::Approx(4.0));  // 2 * x1
}

TEST_CASE("view: copy_ overwrites the region, so the base's old values get no gradient there") {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor y = f64({5.0}).requires_grad_();
  Tensor base = x * 3;
  base.slice(0, 1, 2).copy_(y);
  (base * f64({10.0, 100.0})).sum().backward();
  CHECK(allclose(x.grad(), f64({30.0, 0.0})));
  CHECK(y.grad().item<double>() == 100.0);
}

TEST_CASE("view: fill_ and zero_ on an expanded view of a non-leaf cut the filled locations off") {
  // Note [Idempotent in-place ops]: several elements of the view are one location of the base.
  Tensor x = f64({1.0, 2.0, 3.0}).requires_grad_();
  Tensor base = x * 3;
  base.unsqueeze(0).expand({4, 3}).slice(1, 0, 2).fill_(7.0);
  CHECK(equal(base.detach(), f64({7.0, 7.0, 9.0})));
  (base * f64({10.0, 100.0, 1000.0})).sum().backward();
  CHECK(allclose(x.grad(), f64({0.0, 0.0, 3000.0})));

  Tensor y = f64({1.0, 2.0}).requires_grad_();
  Tensor other = y * y;
  Tensor expanded = other.unsqueeze(1).expand({2, 5});
  expanded.select(0, 1).zero_();  // one location, five elements
  other.sum().backward();
  CHECK(allclose(y.grad(), f64({2.0, 0.0})));
}

TEST_CASE("view: the view itself carries the new history") {
  Tensor w = full({}, 2.0, kFloat64).requires_grad_();
  Tensor base = zeros({2, 2}, kFloat64);
  Tensor row = base.select(0, 1);
  row.add_(w);
  CHECK(row.grad_fn()->name() == "AsStridedBackward");
  (row * f64({3.0, 4.0})).sum().backward();
  CHECK(w.grad().item<double>() == 7.0);
}

TEST_CASE("view: views taken before the base changed in place get a fresh history") {
  Tensor w = full({}, 2.0, kFloat64).requires_grad_();
  Tensor base = zeros({3}, kFloat64);
  Tensor whole = base.view({3});        // taken before; no history at that time
  Tensor first = base.slice(0, 0, 2);
  base.select(0, 0).copy_(w * w);
  CHECK(whole.requires_grad());
  (whole.sum() + first.sum()).backward();
  CHECK(w.grad().item<double>() == doctest::Approx(8.0));  // 2 * (2w)
}

TEST_CASE("view: a stale view of a non-leaf follows the base's in-place change") {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor base = x * 1;
  Tensor view = base.view({2});  // grad_fn made before the change
  base.mul_(3);
  view.sum().backward();
  CHECK(allclose(x.grad(), f64({3.0, 3.0})));
}

TEST_CASE("view: nested views and views of views write through to the root") {
  Tensor w = f64({1.0, 2.0}).requires_grad_();
  Tensor base = zeros({2, 3}, kFloat64);
  Tensor inner = base.t().slice(0, 1, 3).select(1, 1);  // base[1, 1:3]
  inner.add_(w * 3);
  Tensor weights = arange(6, kFloat64).view({2, 3});
  (base * weights).sum().backward();
  CHECK(allclose(w.grad(), f64({12.0, 15.0})));  // 3 * weights[1, 1:3]
  CHECK(allclose(base.detach(), f64({0.0, 0.0, 0.0, 0.0, 3.0, 6.0}).view({2, 3})));
}

TEST_CASE("view: in-place on a view of a leaf that requires grad throws") {
  Tensor leaf = f64({1.0, 2.0}).requires_grad_();
  expect_error<Error>([&] { leaf.slice(0, 0, 1).add_(1.0); }, "[add_]", {"view", "leaf"});
  expect_error<Error>([&] { leaf.select(0, 0).copy_(full({}, 3.0, kFloat64)); }, "[copy_]", {"view", "leaf"});
  NoGradGuard no_grad;  // an optimizer step may
  leaf.slice(0, 0, 1).add_(1.0);
  CHECK(leaf.detach().select(0, 0).item<double>() == 2.0);
}

TEST_CASE("view: gradcheck through in-place ops on views") {
  check_gradcheck(
      [](const tensor_list& in) {
        Tensor base = in[0] * 1;
        base.select(0, 1).mul_(in[1]);
        base.slice(1, 0, 2).add_(in[2]);
        return tensor_list{base.exp()};
      },
      {rand({3, 2}, kFloat64).requires_grad_(), rand({2}, kFloat64).requires_grad_(),
       rand({3, 2}, kFloat64).requires_grad_()});
  check_gradcheck(
      [](const tensor_list& in) {
        Tensor base = zeros({4}, kFloat64);
        Tensor view = base.view({2, 2});
        view.t().select(0, 0).copy_(in[0].sin());  // base[0], base[2]
        return tensor_list{(base * base).sum().unsqueeze(0), view};
      },
      {rand({2}, kFloat64).requires_grad_()});
}


// Note [In-place operand aliasing self] (ops/pointwise.cpp): torch_diff's autograd cases found
// v.mul_(v) giving g * (v^2 + v); LibTorch refuses these cases, strata computes them.
TEST_CASE("view: mul_ and div_ by an operand sharing self's storage") {
  Tensor x = f64({-1.0, -0.5, 0.25, 0.75, 1.5, 2.0}).reshape({2, 3}).requires_grad_();
  Tensor y = x * 1;
  Tensor v = y.select(0, 0);
  v.mul_(v);
  y.sum().backward();
  CHECK(allclose(x.grad(), tensor({-2.0, -1.0, 0.5, 1.0, 1.0, 1.0}, kFloat64).reshape({2, 3})));
  using In = const tensor_list&;
  const auto input = [] { return (rand({2, 3}, kFloat64) + 0.5).requires_grad_(); };
  check_gradcheck([](In in) { Tensor y = in[0] * 1; y.mul_(y); return tensor_list{y}; }, {input()});
  check_gradcheck([](In in) { Tensor y = in[0] * 1; y.div_(y.t().t()); return tensor_list{y}; }, {input()});
  check_gradcheck(
      [](In in) {
        Tensor y = in[0] * 1;
        y.select(0, 1).mul_(y.select(0, 0));
        y.select(0, 0).div_(y.select(0, 1));  // row 1 was changed above: its new values divide
        return tensor_list{y};
      },
      {input()});
}
TEST_CASE("view: double backward through an in-place write into a view") {
  Tensor x = f64({1.5}).requires_grad_();
  Tensor buffer = zeros({2}, kFloat64);
  buffer.slice(0, 1, 2).copy_(x * x * x);
  Tensor g = autograd::grad({buffer.sum()}, {x}, {}, false, true)[0];
  CHECK(g.item<double>() == doctest::Approx(3 * 1.5 * 1.5));
  Tensor gg = autograd::grad({g.sum()}, {x})[0];
  CHECK(gg.item<double>() == doctest::Approx(6 * 1.5));
}

TEST_CASE("as_strided: values, errors and gradients (overlapping outputs sum)") {
  Tensor base = arange(6, kFloat64);
  CHECK(allclose(as_strided(base, {2, 2}, {1, 2}, 1), f64({1.0, 3.0, 2.0, 4.0}).view({2, 2})));
  expect_error<ValueError>([&] { as_strided(base, {2}, {1, 1}); }, "[as_strided]", {"sizes"});
  expect_error<ValueError>([&] { as_strided(base, {4}, {2}); }, "[make_view]");
  check_gradcheck([](const tensor_list& in) { return tensor_list{as_strided(in[0], {2, 2}, {1, 2}, 1)}; },
                  {rand({6}, kFloat64).requires_grad_()});
  check_gradcheck([](const tensor_list& in) { return tensor_list{as_strided(in[0], {3, 2}, {1, 1})}; },
                  {rand({4}, kFloat64).requires_grad_()});
  Tensor x = zeros({3}, kFloat64).requires_grad_();
  as_strided(x, {2, 3}, {0, 1}).sum().backward();  // every element read twice
  CHECK(allclose(x.grad(), f64({2.0, 2.0, 2.0})));
}

TEST_CASE("view: in-place activations and divisions on views, checked numerically") {
  // One in-place op per graph: relu_ and clamp_ save self, which a later write would invalidate
  // (as in PyTorch: views share the version counter).
  const tensor_list inputs{(rand({3, 2}, kFloat64) - 0.5).requires_grad_(), (rand({3}, kFloat64) + 1).requires_grad_()};
  check_gradcheck(
      [](const tensor_list& in) {
        Tensor base = in[0] * in[1].sum();
        base.select(1, 0).relu_();
        return tensor_list{base * base};
      },
      inputs);
  check_gradcheck(
      [](const tensor_list& in) {
        Tensor base = in[0] * 1;
        base.narrow(0, 1, 2).clamp_(-0.2, 0.3);
        return tensor_list{base.exp()};
      },
      inputs);
  check_gradcheck(
      [](const tensor_list& in) {
        Tensor base = in[0] * 1;
        base.t().select(0, 1).div_(in[1]);
        return tensor_list{base * base};
      },
      inputs);
}

TEST_CASE("view: retain_grad on a view follows its in-place change") {
  Tensor w = f64({2.0}).requires_grad_();
  Tensor base = zeros({2}, kFloat64);
  Tensor first = base.slice(0, 0, 1);
  first.add_(w);
  first.retain_grad();
  first.mul_(3);
  (first * 5).sum().backward();
  CHECK(first.grad().item<double>() == 5.0);  // the gradient of the new value
  CHECK(w.grad().item<double>() == 15.0);
}

// Note [Views made without grad]
TEST_CASE("views: a view taken under NoGradGuard of a tensor that requires grad is not changed in place with grad on") {
  Tensor leaf = ones({2, 3}).requires_grad_();
  Tensor base = leaf * 2;
  Tensor v;
  {
    NoGradGuard guard;
    v = base.view({6});
  }
  Tensor w = v.view({3, 2});  // a view of that view, made with grad on, inherits the mark
  {
    NoGradGuard guard;
    v.mul_(3);  // allowed: the view and the change are both under the guard
  }
  expect_error<Error>([&] { v.add_(1); }, "[add_]", {"NoGradGuard", "in place"});
  expect_error<Error>([&] { w.add_(1); }, "[add_]", {"NoGradGuard"});
  // v changed in place (under the guard) after it was taken: it no longer matches its base's
  // tape, so uses that need its history are refused too, as LibTorch refuses them.
  expect_error<Error>([&] { (void)(v * 2); }, "[autograd]", {"NoGradGuard", "changed in place"});
  expect_error<Error>([&] { (void)v.grad_fn(); }, "[autograd]", {"NoGradGuard"});
  CHECK(v.is_leaf());  // asking does not throw
  {
    NoGradGuard guard;
    w.add_(1);
    CHECK(equal(v * 2, w.reshape({6}) * 2));  // without grad mode every use is fine
  }
  // Views made with grad on change in place as before; so do views of tensors without grad.
  Tensor fine = base.view({6});
  fine.add_(1);
  CHECK(fine.grad_fn() != nullptr);
  Tensor plain = ones({4});
  Tensor plain_view;
  {
    NoGradGuard guard;
    plain_view = plain.view({2, 2});
  }
  plain_view.add_(1);
  CHECK(equal(plain, full({4}, 2.0)));
  fine.sum().backward();
  CHECK(leaf.grad().defined());
}

// Note [Views made without grad]: what no_grad made is not recorded, so no gradient crosses it;
// as in LibTorch, the gradient reaching such a view is dropped, not kept in its grad().
TEST_CASE("views: a view taken under NoGradGuard is a leaf of its own; its gradient does not reach the base") {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, kFloat64).reshape({2, 3}).clone().requires_grad_();
  Tensor w = tensor({0.5, -1.0, 2.0, 1.5, -0.5, 3.0}, kFloat64).reshape({3, 2}).requires_grad_();
  Tensor y = x * 2;
  Tensor of_leaf, of_nonleaf;
  {
    NoGradGuard guard;
    of_leaf = x.t();
    of_nonleaf = y.select(0, 1);
  }
  for (const Tensor& v : {of_leaf, of_nonleaf}) {
    CHECK(v.requires_grad());
    CHECK(v.is_leaf());
    CHECK(v.grad_fn() == nullptr);
  }
  (of_leaf * w).sum().backward();
  CHECK_FALSE(x.grad().defined());
  CHECK_FALSE(of_leaf.grad().defined());
  CHECK(allclose(w.grad(), x.t()));
  // A view of such a view, taken with grad on, records its op on top of the leaf view.
  Tensor u = of_nonleaf.unsqueeze(0);
  CHECK_FALSE(u.is_leaf());
  (u * 3 + y.select(0, 0).unsqueeze(0)).sum().backward();
  CHECK(equal(x.grad(), tensor({2.0, 2.0, 2.0, 0.0, 0.0, 0.0}, kFloat64).reshape({2, 3})));
  CHECK_FALSE(of_nonleaf.grad().defined());
  // requires_grad_(true) makes the view a leaf that keeps its gradient.
  of_leaf.requires_grad_(true);
  (of_leaf * w).sum().backward();
  CHECK(allclose(of_leaf.grad(), w));
  // Once the storage changes, using the view with grad on is refused (LibTorch's rule).
  y.mul_(2);
  expect_error<Error>([&] { (void)(of_nonleaf * 2); }, "[autograd]", {"NoGradGuard", "changed in place"});
  {
    NoGradGuard guard;
    CHECK(equal(of_nonleaf * 1, y.select(0, 1)));
  }
}
