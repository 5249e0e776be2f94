// Loops that once leaked in frameworks like this one run 10,000 times with no growth in the
// CPU allocator's live bytes (cpu_live_bytes()). Under STRATA_SANITIZE=address LeakSanitizer
// also checks every other allocation when the test binary exits.
#include <doctest/doctest.h>

#include <functional>

#include <strata/strata.h>

using namespace strata;

namespace {

constexpr int kIterations = 10'000;
constexpr int kWarmUp = 50;

// Runs `step` kWarmUp times (optimizer state, caches), then kIterations times, and returns
// the growth of live bytes over the second run.
int64_t live_bytes_growth(const std::function<void(int)>& step) {
  for (int i = 0; i < kWarmUp; ++i) step(i);
  const int64_t before = cpu_live_bytes();
  for (int i = 0; i < kIterations; ++i) step(i);
  return cpu_live_bytes() - before;
}

// Saves its output for backward: the output's grad_fn holds the saved output, which must
// not hold the grad_fn back (that cycle would keep every graph alive).
struct ExpSavingOutput : autograd::Function<ExpSavingOutput> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
    Tensor y = exp(x);
    ctx->save_for_backward({y});
    return y;
  }
  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grads) {
    return {grads[0] * ctx->get_saved_variables()[0]};
  }
};

}  // namespace

TEST_CASE("leaks: training loops with SGD and Adam keep live bytes flat") {
  Tensor inputs = linspace(-1, 1, 16 * 8).reshape({16, 8});
  Tensor targets = linspace(0, 1, 16).reshape({16, 1});
  auto net = nn::Sequential(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 1));
  optim::SGD sgd(net.parameters(), optim::SGDOptions(0.01).momentum(0.9));
  optim::Adam adam(net.parameters(), optim::AdamOptions(1e-3));
  double first_loss = 0, last_loss = 0;
  int64_t growth = live_bytes_growth([&](int i) {
    optim::Optimizer& optimizer = i % 2 == 0 ? static_cast<optim::Optimizer&>(sgd) : adam;
    optimizer.zero_grad();
    Tensor loss = mse_loss(net.forward(inputs), targets);
    loss.backward();
    optimizer.step();
    (i == 0 ? first_loss : last_loss) = loss.item<double>();
  });
  CHECK(growth == 0);
  CHECK(last_loss < first_loss);
}

TEST_CASE("leaks: a custom Function that saves its output frees its graph") {
  Tensor x = tensor({0.5f, -1.0f, 2.0f}).requires_grad_();
  int64_t growth = live_bytes_growth([&](int i) {
    Tensor y = ExpSavingOutput::apply(x);
    if (i % 2 == 0) y.sum().backward();  // the other half drop the graph without a backward
  });
  CHECK(growth == 0);
  x.set_grad(Tensor());
  ExpSavingOutput::apply(x).sum().backward();
  CHECK(allclose(x.grad(), exp(x.detach())));
}

TEST_CASE("leaks: hooks on leaves and non-leaves are freed with their tensors") {
  Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
  Tensor scale = tensor({3.0f, 3.0f});
  int64_t growth = live_bytes_growth([&](int) {
    Tensor y = x * 2.0;
    y.register_hook([scale](const Tensor& g) { return g * scale; });  // captures a tensor
    unsigned on_leaf = x.register_hook([](const Tensor& g) { return g + 1.0; });
    y.sum().backward();
    x.remove_hook(on_leaf);
    x.set_grad(Tensor());
  });
  CHECK(growth == 0);
  (x * 2.0).sum().backward();
  CHECK(allclose(x.grad(), tensor({2.0f, 2.0f})));
}

TEST_CASE("leaks: backward with retain_graph, then backward again, frees the graph") {
  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  int64_t growth = live_bytes_growth([&](int) {
    Tensor y = (exp(x) * x).sum();
    y.backward({}, /*retain_graph=*/true);
    y.backward();
    x.set_grad(Tensor());
  });
  CHECK(growth == 0);
}

TEST_CASE("leaks: kernels replaced by a Library and restored by its destruction") {
  struct LoudNeg : autograd::Function<LoudNeg> {
    static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return neg(x); }
    static tensor_list backward(autograd::AutogradContext*, tensor_list grads) { return {neg(grads[0])}; }
  };
  Tensor x = tensor({1.0f, -2.0f}).requires_grad_();
  int64_t growth = live_bytes_growth([&](int i) {
    Library cpu("strata", Library::IMPL, DispatchKey::CPU);
    cpu.impl("neg", [offset = i](const Tensor& t) { return mul(t, -1.0) + 0.0 * offset; });
    Library derivative("strata", Library::IMPL, DispatchKey::Autograd);
    derivative.impl("neg", autograd::kernel<LoudNeg>());
    neg(x).sum().backward();
    x.set_grad(Tensor());
  });
  CHECK(growth == 0);
  CHECK(dump_dispatch_table("strata::neg").find("test_leaks") == std::string::npos);
}
