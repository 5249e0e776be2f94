// The engine: backward, grad, retained graphs, higher order, hooks, threads, long graphs.
#include <doctest/doctest.h>

#include <cmath>
#include <thread>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;

TEST_CASE("engine: gradients accumulate into leaves across backward calls") {
  Tensor x = tensor({1.0f, 2.0f, 3.0f}).requires_grad_();
  Tensor w = tensor({0.5f, -1.0f, 2.0f}).requires_grad_();
  Tensor loss = (x * w + x).sum();
  CHECK_FALSE(loss.is_leaf());
  CHECK(x.is_leaf());
  loss.backward();
  CHECK(allclose(x.grad(), tensor({1.5f, 0.0f, 3.0f})));
  CHECK(allclose(w.grad(), tensor({1.0f, 2.0f, 3.0f})));
  (x * w).sum().backward();
  CHECK(allclose(x.grad(), tensor({2.0f, -1.0f, 5.0f})));
}

TEST_CASE("engine: broadcasting gradients are summed back to the input's shape") {
  Tensor a = ones({2, 3}).requires_grad_();
  Tensor b = tensor({1.0f, 2.0f, 3.0f}).requires_grad_();
  (a * b).sum().backward();
  CHECK(b.grad().sizes() == IntArrayRef{3});
  CHECK(allclose(b.grad(), tensor({2.0f, 2.0f, 2.0f})));
  CHECK(allclose(a.grad(), tensor(std::vector<float>{1, 2, 3, 1, 2, 3}, {2, 3})));
}

TEST_CASE("engine: a freed graph refuses a second backward unless retained") {
  Tensor x = tensor({2.0f}).requires_grad_();
  Tensor y = x * x;
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  CHECK(x.grad().item<float>() == 8.0f);
  expect_error<Error>([&] { y.backward(); }, "[", {"backward through the graph a second time"});
  Tensor z = x + 1.0;  // saves nothing: still refused
  z.backward();
  expect_error<Error>([&] { z.backward(); }, "[", {"second time"});
}

TEST_CASE("engine: autograd::grad returns gradients without touching .grad") {
  Tensor x = tensor({3.0}, kFloat64).requires_grad_();
  Tensor y = x * x * x;
  tensor_list g = autograd::grad({y}, {x}, {}, /*retain_graph=*/false, /*create_graph=*/true);
  CHECK(g[0].item<double>() == doctest::Approx(27.0));
  CHECK_FALSE(x.grad().defined());
  tensor_list g2 = autograd::grad({g[0]}, {x}, {}, false, true);  // second derivative 6x
  CHECK(g2[0].item<double>() == doctest::Approx(18.0));
  tensor_list g3 = autograd::grad({g2[0]}, {x});  // third derivative 6
  CHECK(g3[0].item<double>() == doctest::Approx(6.0));
}

TEST_CASE("engine: allow_unused and inputs that do not require grad") {
  Tensor x = tensor({1.0f}).requires_grad_();
  Tensor unused = tensor({1.0f}).requires_grad_();
  Tensor y = x * 2.0;
  expect_error<Error>([&] { autograd::grad({y}, {x, unused}, {}, true); }, "[grad]", {"not used"});
  tensor_list g = autograd::grad({y}, {x, unused}, {}, true, false, true);
  CHECK(g[0].item<float>() == 2.0f);
  CHECK_FALSE(g[1].defined());
  expect_error<Error>([&] { autograd::grad({y}, {tensor({1.0f})}); }, "[grad]", {"does not require grad"});
}

TEST_CASE("engine: bad calls") {
  Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
  expect_error<Error>([&] { (x * 2.0).backward(); }, "[backward]", {"one-element", "[2]"});
  expect_error<Error>([&] { tensor({1.0f}).backward(); }, "[backward]", {"does not require grad"});
  expect_error<TypeError>([&] { tensor({1, 2}).requires_grad_(); }, "[requires_grad_]", {"Int64"});
  expect_error<TypeError>([&] { tensor({true}).requires_grad_(); }, "[requires_grad_]", {"Bool"});
  expect_error<ValueError>([&] { (x * 2.0).backward(ones({3})); }, "[backward]", {"shape [3]"});
}

TEST_CASE("engine: hooks see and replace gradients; remove_hook stops them") {
  Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
  int seen = 0;
  unsigned doubler = x.register_hook([](const Tensor& g) { return g * 2.0; });
  unsigned counter = x.register_hook([&seen](const Tensor&) { ++seen; });
  (x * 3.0).sum().backward();
  CHECK(allclose(x.grad(), tensor({6.0f, 6.0f})));
  CHECK(seen == 1);
  x.remove_hook(doubler);
  x.remove_hook(counter);
  x.set_grad(Tensor());
  (x * 3.0).sum().backward();
  CHECK(allclose(x.grad(), tensor({3.0f, 3.0f})));
  CHECK(seen == 1);
  Tensor y = x * 1.0;  // hooks on a non-leaf run on its gradient
  y.register_hook([](const Tensor& g) { return g * 10.0; });
  x.set_grad(Tensor());
  (y * 1.0).sum().backward();
  CHECK(allclose(x.grad(), tensor({10.0f, 10.0f})));
  expect_error<ValueError>([&] { x.remove_hook(987654); }, "[remove_hook]");
}

TEST_CASE("engine: retain_grad keeps a non-leaf's gradient; detach leaves the graph") {
  Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
  Tensor mid = x * 2.0;
  mid.retain_grad();
  CHECK(mid.retains_grad());
  (mid * mid).sum().backward();
  CHECK(allclose(mid.grad(), tensor({4.0f, 8.0f})));
  Tensor detached = mid.detach();
  CHECK_FALSE(detached.requires_grad());
  CHECK(detached.version() == mid.version());
}

TEST_CASE("engine: saved tensors changed in place throw the classic error") {
  Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
  Tensor a = x * 1.0;
  Tensor y = a * a;  // saves a
  a.mul_(2.0);
  std::string message = expect_error<Error>([&] { y.sum().backward(); }, "[", {"modified by an inplace operation",
                                                                              "[2]", "version 1", "version 0"});
  CHECK(message.find("Mul") != std::string::npos);
  // A saved input names the op that made it when it was saved, not the in-place op since.
  Tensor e = x.exp();
  Tensor z = e * e;  // saves e, made by ExpBackward
  e.mul_(2.0);       // e's grad_fn is now mul_'s
  expect_error<Error>([&] { z.sum().backward(); }, "[MulBackward]", {"which is output 0 of ExpBackward"});
  expect_error<Error>([&] { x.add_(1.0); }, "[add_]", {"leaf"});
  NoGradGuard no_grad;
  x.add_(1.0);  // allowed without grad
}

TEST_CASE("engine: destroying a graph of 1,000,000 nodes does not overflow the stack") {
  Tensor x = tensor({1.0f}).requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 1000000; ++i) y = y + 1.0;
  y = Tensor();  // iterative destruction; see Note [Iterative graph destruction]
  Tensor z = x;
  for (int i = 0; i < 200000; ++i) z = z * 1.0;
  z.backward();  // and the engine does not recurse either
  CHECK(x.grad().item<float>() == 1.0f);
}

TEST_CASE("engine: two threads run backward on independent graphs at once") {
  auto work = [](float scale, float* result) {
    Tensor x = tensor({scale}).requires_grad_();
    for (int i = 0; i < 200; ++i) {
      Tensor y = x;
      for (int k = 0; k < 50; ++k) y = y * 1.0 + 0.0;
      (y * scale).backward();
    }
    *result = x.grad().item<float>();
  };
  float first = 0, second = 0;
  std::thread a(work, 2.0f, &first), b(work, 3.0f, &second);
  a.join();
  b.join();
  CHECK(first == 400.0f);
  CHECK(second == 600.0f);
}

TEST_CASE("engine: NoGradGuard and EnableGradGuard") {
  Tensor x = tensor({1.0f}).requires_grad_();
  CHECK(is_grad_enabled());
  {
    NoGradGuard no_grad;
    CHECK_FALSE(is_grad_enabled());
    CHECK_FALSE((x * 2.0).requires_grad());
    {
      EnableGradGuard enable;
      CHECK((x * 2.0).requires_grad());
    }
  }
  CHECK((x * 2.0).requires_grad());
}

TEST_CASE("engine: DetectAnomalyGuard names the op whose backward produced NaN") {
  Tensor x = tensor({0.0f}).requires_grad_();
  Tensor y = x / x;  // d/dx of x / x at 0 is nan
  {
    autograd::DetectAnomalyGuard anomaly;
    expect_error<Error>([&] { y.backward({}, true); }, "[", {"nan", "div"});
  }
  y.backward();  // without the guard nan just flows
  CHECK(std::isnan(x.grad().item<float>()));
}

TEST_CASE("engine: in-place ops on views are recorded when no input requires grad") {
  // Writing into a view through an op on a tensor that requires grad records that op on the
  // view and, through CopySlices, on its base (Note [In-place on views]).
  Tensor w = full({}, 3.0f).requires_grad_();
  Tensor buffer = zeros({3});
  Tensor slot = buffer.select(0, 1);
  slot.add_(w);
  CHECK(buffer.select(0, 1).item<float>() == 3.0f);
  slot.sum().backward();
  CHECK(w.grad().item<float>() == 1.0f);
}
