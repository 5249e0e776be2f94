// Engine and Function semantics shared with PyTorch: retain_grad across in-place ops,
// undefined gradients, per-call needs_input_grad, backward(inputs), hooks that change hooks,
// dense leaf gradients, tensor-list and optional Function inputs, reentrant backward.
#include <doctest/doctest.h>

#include <atomic>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;
using autograd::AutogradContext;

namespace {

Tensor f64(std::initializer_list<double> values) { return tensor(values, kFloat64); }

// Returns x unchanged; its backward gives no gradient at all.
struct Blocks : autograd::Function<Blocks> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 1; }
  static tensor_list backward(AutogradContext*, tensor_list) { return {Tensor()}; }
};

// x * y, recording what needs_input_grad said during backward.
struct RecordsNeeds : autograd::Function<RecordsNeeds> {
  static inline bool needs[2] = {false, false};
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& y) {
    ctx->save_for_backward({x, y});
    return x * y;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    needs[0] = ctx->needs_input_grad(0);
    needs[1] = ctx->needs_input_grad(1);
    tensor_list saved = ctx->get_saved_variables();
    return {needs[0] ? grads[0] * saved[1] : Tensor(), needs[1] ? grads[0] * saved[0] : Tensor()};
  }
};

// scale * sum(xs) + bias: slots are xs[0], xs[1], ..., bias, scale (Note [Function inputs]).
struct ScaledSum : autograd::Function<ScaledSum> {
  static Tensor forward(AutogradContext* ctx, const tensor_list& xs, const std::optional<Tensor>& bias,
                        double scale) {
    ctx->saved_data["n"] = static_cast<int64_t>(xs.size());
    ctx->saved_data["scale"] = scale;
    Tensor out = xs[0] * scale;
    for (size_t i = 1; i < xs.size(); ++i) out = out + xs[i] * scale;
    return bias ? out + *bias : out;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const int64_t n = ctx->saved_data["n"].to_int();
    const double scale = ctx->saved_data["scale"].to_double();
    tensor_list result(static_cast<size_t>(n), grads[0] * scale);
    result.push_back(ctx->needs_input_grad(static_cast<size_t>(n)) ? grads[0] : Tensor());
    result.push_back(Tensor());
    return result;
  }
};

// Two outputs from one input, for an op `-> (Tensor, Tensor)`.
struct PlusMinus : autograd::Function<PlusMinus> {
  static tensor_list forward(AutogradContext*, const Tensor& x) { return {x + 1, x - 1}; }
  static tensor_list backward(AutogradContext*, tensor_list grads) { return {grads[0] * 2 + grads[1] * 3}; }
};

// Nests a backward of its own in its backward, `depth` levels deep.
struct Reentrant : autograd::Function<Reentrant> {
  static inline std::atomic<int64_t> deepest{0};
  static Tensor forward(AutogradContext* ctx, const Tensor& x, int64_t depth) {
    ctx->saved_data["depth"] = depth;
    return x * 1;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const int64_t depth = ctx->saved_data["depth"].to_int();
    deepest = std::max<int64_t>(deepest, depth);
    if (depth > 0) {
      Tensor inner = full({}, 1.0, kFloat64).requires_grad_();
      {
        EnableGradGuard grad_mode;
        Reentrant::apply(inner, depth - 1).backward();
      }
      CHECK(inner.grad().item<double>() == 1.0);
    }
    return {grads[0], Tensor()};
  }
};

}  // namespace

TEST_CASE("engine: retain_grad() then an in-place op retains the new value's gradient") {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor y = x * 2;
  y.retain_grad();
  y.mul_(3);
  (y * f64({5.0, 7.0})).sum().backward();
  CHECK(allclose(y.grad(), f64({5.0, 7.0})));  // d out / d (new y), not 3x that
  CHECK(allclose(x.grad(), f64({30.0, 42.0})));
}

TEST_CASE("engine: undefined gradients stay undefined through the graph") {
  Tensor x = f64({1.0, 2.0}).requires_grad_();
  Tensor w = f64({3.0}).requires_grad_();
  Tensor out = Blocks::apply((x * 2).exp()).sum() + w.sum();
  out.backward();
  CHECK_FALSE(x.grad().defined());  // never materialized as zeros on the way
  CHECK(w.grad().item<double>() == 1.0);
}

TEST_CASE("function: needs_input_grad says what this backward call needs") {
  Tensor x = f64({2.0}).requires_grad_();
  Tensor y = f64({3.0}).requires_grad_();
  Tensor out = RecordsNeeds::apply(x, y);
  Tensor gx = autograd::grad({out.sum()}, {x}, {}, true)[0];
  CHECK(RecordsNeeds::needs[0]);
  CHECK_FALSE(RecordsNeeds::needs[1]);
  CHECK(gx.item<double>() == 3.0);
  out.sum().backward();
  CHECK(RecordsNeeds::needs[0]);
  CHECK(RecordsNeeds::needs[1]);
}

TEST_CASE("engine: backward(inputs) accumulates only into those tensors") {
  Tensor x = f64({2.0}).requires_grad_();
  Tensor y = f64({3.0}).requires_grad_();
  Tensor h = x * y;
  Tensor out = (h * 4).sum();
  out.backward({}, true, false, {x});
  CHECK(x.grad().item<double>() == 12.0);
  CHECK_FALSE(y.grad().defined());
  out.backward({}, false, false, {h});  // a non-leaf input keeps its gradient
  CHECK(h.grad().item<double>() == 4.0);
  CHECK(x.grad().item<double>() == 12.0);
  CHECK_FALSE(y.grad().defined());
}

TEST_CASE("hooks: a hook that adds a hook or removes itself during backward") {
  Tensor x = f64({1.0}).requires_grad_();
  Tensor y = x * 2;
  int first_runs = 0, added_runs = 0;
  unsigned first = 0;
  first = y.register_hook([&](const Tensor&) {
    ++first_runs;
    for (int i = 0; i < 50; ++i) y.register_hook([&](const Tensor&) { ++added_runs; });  // grows the list
    y.remove_hook(first);
  });
  y.sum().backward({}, true);
  CHECK(first_runs == 1);
  CHECK(added_runs == 0);  // added during the run: runs from the next backward on
  y.sum().backward();
  CHECK(first_runs == 1);
  CHECK(added_runs == 50);

  Tensor leaf = f64({1.0}).requires_grad_();
  int leaf_runs = 0;
  unsigned leaf_first = 0;
  leaf_first = leaf.register_hook([&](const Tensor&) {
    for (int i = 0; i < 50; ++i) leaf.register_hook([&](const Tensor&) { ++leaf_runs; });
    leaf.remove_hook(leaf_first);
  });
  (leaf * 3).sum().backward();
  (leaf * 3).sum().backward();
  CHECK(leaf_runs == 50);
}

TEST_CASE("hooks: a leaf hook must keep the gradient's shape and dtype") {
  Tensor x = zeros({2}).requires_grad_();
  unsigned h = x.register_hook([](const Tensor&) { return ones({5}); });
  expect_error<ValueError>([&] { (x * 2).sum().backward(); }, "[AccumulateGrad]", {"[5]", "[2]"});
  x.remove_hook(h);
  x.register_hook([](const Tensor& g) { return g.to(kFloat64); });
  expect_error<ValueError>([&] { (x * 2).sum().backward(); }, "[AccumulateGrad]", {"Float64", "Float32"});
}

TEST_CASE("engine: a leaf's .grad is dense and shares memory with no one") {
  Tensor x = zeros({2, 3}).requires_grad_();
  x.sum().backward();  // sum's backward gives an expanded (stride 0) gradient
  CHECK(x.grad().is_contiguous());
  CHECK(x.grad().strides() == IntArrayRef({3, 1}));
  for (bool create_graph : {false, true}) {
    Tensor a = zeros({3}).requires_grad_();
    Tensor b = zeros({3}).requires_grad_();
    Tensor gradient = ones({3});
    (a + b).backward(gradient, false, create_graph);
    CHECK(a.grad().impl()->storage() != b.grad().impl()->storage());
    CHECK(a.grad().impl()->storage() != gradient.impl()->storage());
    a.grad().add_(1);
    CHECK(allclose(b.grad().detach(), ones({3})));
    CHECK(allclose(gradient, ones({3})));
  }
}

TEST_CASE("function: tensor_list and optional arguments are differentiable inputs") {
  Tensor a = f64({1.0, 2.0}).requires_grad_();
  Tensor b = f64({3.0, 4.0}).requires_grad_();
  Tensor bias = f64({0.5, 0.5}).requires_grad_();
  ScaledSum::apply(tensor_list{a, b}, std::optional<Tensor>(bias), 3.0).sum().backward();
  CHECK(allclose(a.grad(), f64({3.0, 3.0})));
  CHECK(allclose(b.grad(), f64({3.0, 3.0})));
  CHECK(allclose(bias.grad(), f64({1.0, 1.0})));
  Tensor c = f64({1.0}).requires_grad_();
  Tensor out = ScaledSum::apply(tensor_list{c}, std::nullopt, 2.0);
  CHECK(out.requires_grad());
  out.sum().backward();
  CHECK(c.grad().item<double>() == 2.0);
}

TEST_CASE("function: kernel<F, tuple>() serves an op with two returns; ops returning Tensor[] get a node") {
  Library def("sem_test_ops", Library::DEF);
  def.def("plus_minus(Tensor x) -> (Tensor, Tensor)");
  def.def("pieces(Tensor x) -> Tensor[]");
  Library cpu("sem_test_ops", Library::IMPL, DispatchKey::CPU);
  cpu.impl("plus_minus", [](const Tensor& x) { return std::tuple<Tensor, Tensor>(x + 1, x - 1); });
  cpu.impl("pieces", [](const Tensor& x) { return tensor_list{x * 2, x * 3}; });
  Library autograd_impl("sem_test_ops", Library::IMPL, DispatchKey::Autograd);
  autograd_impl.impl("plus_minus", autograd::kernel<PlusMinus, std::tuple<Tensor, Tensor>>());
  Tensor x = f64({1.0}).requires_grad_();
  auto [plus, minus] = find_op("sem_test_ops::plus_minus").typed<std::tuple<Tensor, Tensor>(const Tensor&)>().call(x);
  CHECK(plus.item<double>() == 2.0);
  (plus + minus).sum().backward();
  CHECK(x.grad().item<double>() == 5.0);
  tensor_list pieces = find_op("sem_test_ops::pieces").typed<tensor_list(const Tensor&)>().call(x);
  for (const Tensor& piece : pieces) {
    CHECK(piece.requires_grad());
    expect_error<NotImplementedError>([&] { piece.sum().backward(); }, "[sem_test_ops::pieces]");
  }
}

TEST_CASE("engine: reentrant backward 10,000 levels deep does not overflow the stack") {
  Tensor x = full({}, 1.0, kFloat64).requires_grad_();
  Reentrant::deepest = 0;
  Reentrant::apply(x, 10000).backward();
  CHECK(Reentrant::deepest == 10000);
  CHECK(x.grad().item<double>() == 1.0);
}

namespace {

// Doubles x through data_ptr (no op bumps the version) and marks it dirty.
struct DoubleThroughPointer : autograd::Function<DoubleThroughPointer> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    double* data = x.data_ptr<double>();
    for (int64_t i = 0; i < x.numel(); ++i) data[i * x.stride(0)] *= 2;
    ctx->mark_dirty({x});
    return x;
  }
  static tensor_list backward(AutogradContext*, tensor_list grads) { return {grads[0] * 2}; }
};

}  // namespace

TEST_CASE("function: mark_dirty bumps a version forward did not, and only once") {
  Tensor leaf = f64({1.0, 2.0}).requires_grad_();
  Tensor x = leaf * 1;
  const uint32_t before = x.version();
  DoubleThroughPointer::apply(x);
  CHECK(x.version() == before + 1);  // written through data_ptr: still a mutation
  Tensor y = leaf * 1;
  const uint32_t y_before = y.version();
  y.add_(1.0);
  CHECK(y.version() == y_before + 1);  // the built-in op bumped; mark_dirty adds nothing
}

TEST_CASE("function: a dirty output that is a view rewrites its base's history") {
  Tensor leaf = f64({1.0, 2.0, 3.0}).requires_grad_();
  Tensor base = leaf * 1;
  DoubleThroughPointer::apply(base.slice(0, 1, 3));
  CHECK(allclose(base.detach(), f64({1.0, 4.0, 6.0})));
  base.sum().backward();
  CHECK(allclose(leaf.grad(), f64({1.0, 2.0, 2.0})));
}

// Note [Accumulating small gradients]: the direct loop and the dispatched add_ agree bit for
// bit, bump .grad's version, and leave every case the loop does not take to add_.
TEST_CASE("engine: accumulating into .grad gives add_'s bits and version on every path") {
  manual_seed(3);
  for (int64_t n : {1, 7, 4096, 4097}) {
    Tensor x = randn({n}).requires_grad_();
    Tensor first = randn({n}), second = randn({n});
    x.backward(first);
    const uint32_t version = x.grad().version();
    x.backward(second);
    CHECK(x.grad().version() == version + 1);
    CHECK(equal(x.grad(), first + second));
  }
  // float64, a strided .grad, and a gradient sharing .grad's storage go through add_.
  Tensor d = randn({5}, kFloat64).requires_grad_();
  d.backward(ones({5}, kFloat64));
  d.backward(full({5}, 0.25, kFloat64));
  CHECK(equal(d.grad(), full({5}, 1.25, kFloat64)));
  Tensor s = zeros({2, 3}).requires_grad_();
  s.set_grad(zeros({3, 2}).t());
  s.backward(ones({2, 3}));
  CHECK(equal(s.grad(), ones({2, 3})));
  CHECK(!s.grad().is_contiguous());
  Tensor own = zeros({4}).requires_grad_();
  own.backward(ones({4}));
  own.backward(own.grad());  // adds .grad to itself: doubles it, as add_ does
  CHECK(equal(own.grad(), full({4}, 2.0)));
}

TEST_CASE("engine: the implicit gradient of a one-element output is a one of its dtype") {
  for (ScalarType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    Tensor x = full({1, 1}, 2.0, dtype).requires_grad_();
    (x * 3).backward();
    CHECK(x.grad().dtype() == dtype);
    CHECK(x.grad().sizes() == IntArrayRef({1, 1}));
    CHECK(x.grad().item<double>() == 3.0);
  }
  Tensor z = tensor({1.0f}).requires_grad_();
  std::vector<Tensor> grads = autograd::grad({z.sum() * 5}, {z});
  CHECK(grads[0].item<float>() == 5.0f);
}
