// Threads sharing parameters that require grad: forward passes that all ask for the same
// leaves' accumulators, backward passes accumulating into one .grad, and Hogwild-style
// training. See Note [Threads sharing a leaf] in autograd/variable.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include <strata/strata.h>

using namespace strata;

namespace {

int64_t scaled_iterations(int64_t iterations) {
  const char* text = std::getenv("STRATA_STRESS_DIVISOR");
  int64_t divisor = text ? std::max<int64_t>(1, std::atoll(text)) : 1;
  return std::max<int64_t>(1, iterations / divisor);
}

template <class Body>
std::vector<std::string> run_threads(int count, Body body) {
  std::mutex mutex;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int t = 0; t < count; ++t) {
    threads.emplace_back([&, t] {
      try {
        body(t);
      } catch (const std::exception& error) {
        std::lock_guard<std::mutex> lock(mutex);
        errors.emplace_back(error.what());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return errors;
}

}  // namespace

TEST_CASE("concurrency: threads running forward on one module's parameters") {
  auto net = nn::Linear(16, 16);
  Tensor x = ones({4, 16});
  const int64_t iterations = scaled_iterations(20000);
  auto errors = run_threads(2, [&](int) {
    for (int64_t i = 0; i < iterations; ++i) {
      Tensor y = net.forward(x);
      if (!y.requires_grad()) throw Error("[test] output does not require grad");
    }
  });
  CHECK(errors.empty());
}

TEST_CASE("concurrency: threads running backward into one leaf lose no update") {
  Tensor w = zeros({}).requires_grad_();
  const int64_t iterations = scaled_iterations(20000);
  auto errors = run_threads(2, [&](int) {
    for (int64_t i = 0; i < iterations; ++i) (w * 1).backward();
  });
  CHECK(errors.empty());
  CHECK(w.grad().item<double>() == static_cast<double>(2 * iterations));
}

TEST_CASE("concurrency: Hogwild-style training on shared parameters") {
  manual_seed(3);
  auto net = nn::Linear(8, 1);
  Tensor x = randn({32, 8});
  Tensor target = x.sum({1}, true);
  optim::SGD sgd(net.parameters(), optim::SGDOptions(0.05));
  std::shared_mutex step_lock;  // many threads run backward; one at a time steps
  const int64_t steps = scaled_iterations(400);
  auto loss_now = [&] {
    NoGradGuard no_grad;
    return mse_loss(net.forward(x), target).item<double>();
  };
  const double before = loss_now();
  auto errors = run_threads(4, [&](int) {
    for (int64_t i = 0; i < steps; ++i) {
      {
        std::shared_lock<std::shared_mutex> shared(step_lock);
        mse_loss(net.forward(x), target).backward();
      }
      std::unique_lock<std::shared_mutex> exclusive(step_lock);
      sgd.step();
      sgd.zero_grad();
    }
  });
  CHECK(errors.empty());
  CHECK(loss_now() < before * 0.1);
}
