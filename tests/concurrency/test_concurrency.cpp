// Calls, lookups and backward passes on several threads while other threads register and
// unregister kernels, libraries and .so files. Built into strata_tests and, alone, into
// strata_concurrency_tests for the ThreadSanitizer job. STRATA_STRESS_DIVISOR=N divides every
// iteration count by N (the sanitizer job uses 20); the default run makes over a million calls.
// Under ThreadSanitizer run with OMP_NUM_THREADS=1: libgomp is not built with TSan, so its
// barriers are invisible to it and parallel kernels would be reported as false races.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <strata/strata.h>

using namespace strata;

namespace {

int64_t scaled(int64_t iterations) {
  const char* text = std::getenv("STRATA_STRESS_DIVISOR");
  int64_t divisor = text ? std::max<int64_t>(1, std::atoll(text)) : 1;
  return std::max<int64_t>(1, iterations / divisor);
}

Tensor constant(float value) {
  Tensor t = detail::make_empty({}, kFloat32, kCPU);
  *t.data_ptr<float>() = value;
  return t;
}

// The first failure seen on any thread (doctest's assertions stay on the main thread).
class Failures {
 public:
  void add(std::string message) {
    std::lock_guard lock(mutex_);
    if (count_++ == 0) first_ = std::move(message);
  }
  int count() const {
    std::lock_guard lock(mutex_);
    return count_;
  }
  std::string first() const {
    std::lock_guard lock(mutex_);
    return first_;
  }

 private:
  mutable std::mutex mutex_;
  int count_ = 0;
  std::string first_;
};

// Releases threads together, so they race for the same first lookup.
class StartLine {
 public:
  explicit StartLine(int threads) : waiting_(threads) {}
  void arrive_and_wait() {
    waiting_.fetch_sub(1);
    while (waiting_.load() > 0) std::this_thread::yield();
  }

 private:
  std::atomic<int> waiting_;
};

// A replacement CPU kernel for strata::neg: same values, counted.
std::atomic<int64_t> replaced_neg_calls{0};
Tensor counting_neg(const Tensor& x) {
  replaced_neg_calls.fetch_add(1, std::memory_order_relaxed);
  Tensor out = detail::make_empty(x.sizes(), kFloat32, kCPU);
  const float* in = x.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = -in[i];
  return out;
}

// A replacement derivative for strata::neg: the same gradient.
struct CountingNeg : autograd::Function<CountingNeg> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return neg(x); }
  static tensor_list backward(autograd::AutogradContext*, tensor_list grads) { return {neg(grads[0])}; }
};

// One round of registering and unregistering, chosen by `round`. Returns an error message, or "".
std::string churn_registrations(int64_t round, const Tensor& x) {
  switch (round % 4) {
    case 0: {  // replace a custom op's kernel with a stateful one, then restore it
      int captured = 2;
      Library replacement("conc_test", Library::IMPL, DispatchKey::CPU);
      replacement.impl("value", [captured](const Tensor&) { return constant(static_cast<float>(captured)); });
      std::this_thread::yield();
      return "";
    }
    case 1: {  // replace a built-in op's CPU kernel and derivative, then restore them
      Library cpu("strata", Library::IMPL, DispatchKey::CPU);
      cpu.impl("neg", counting_neg);
      Library derivative("strata", Library::IMPL, DispatchKey::Autograd);
      derivative.impl("neg", autograd::kernel<CountingNeg>());
      std::this_thread::yield();
      return "";
    }
    case 2: {  // define a whole namespace, use it, destroy it
      Library def("conc_scratch", Library::DEF);
      def.def("twice(Tensor x) -> Tensor");
      Library cpu("conc_scratch", Library::IMPL, DispatchKey::CPU);
      cpu.impl("twice", [](const Tensor& t) { return constant(2 * t.item<float>()); });
      float twice = call("conc_scratch::twice", x).to_tensor().item<float>();
      return twice == 2 * x.item<float>() ? "" : "conc_scratch::twice gave " + std::to_string(twice);
    }
    default: {  // load the plugin, use it, unload it
      if (round % 16 != 3) return "";
      LibraryHandle plugin = load_library(STRATA_TEST_PLUGIN_PATH);
      Tensor tripled = call("plugin_ops::triple", x.reshape({1})).to_tensor();
      return tripled.item<float>() == 3 * x.item<float>() ? "" : "plugin_ops::triple gave a wrong value";
    }
  }
}

// One caller iteration: two calls the caller is entitled to (the op and the built-in exist
// throughout), and now and then a differentiable call and lookups of ops that come and go.
// Returns the number of calls made.
int64_t call_round(int64_t i, const TypedOperatorHandle<Tensor(const Tensor&)>& value_op, const Tensor& x,
                   const Tensor& differentiable, Failures& failures) {
  float value = value_op.call(x).item<float>();
  if (value != 1 && value != 2) failures.add("conc_test::value gave " + std::to_string(value));
  float negated = neg(x).item<float>();
  if (negated != -x.item<float>()) failures.add("neg gave " + std::to_string(negated));
  if (i % 64 == 0) {
    Tensor y = neg(differentiable);
    tensor_list grads = autograd::grad({y}, {differentiable});
    if (!y.grad_fn() || grads[0].item<float>() != -1) failures.add("neg's gradient is wrong");
  }
  if (i % 256 == 0) {
    // These ops come and go: any answer is fine, a crash or a wrong value is not.
    try {
      float twice = call("conc_scratch::twice", x).to_tensor().item<float>();
      if (twice != 2 * x.item<float>()) failures.add("conc_scratch::twice gave " + std::to_string(twice));
    } catch (const Error&) {
    }
    (void)has_op("plugin_ops::triple");  // the .so's code may be unmapping: look it up, never call it
  }
  return 2;
}

}  // namespace

TEST_CASE("concurrency: a million calls see the old or the new kernel while kernels, libraries and .so files come and go") {
  Library def("conc_test", Library::DEF);
  def.def("value(Tensor x) -> Tensor");
  Library base("conc_test", Library::IMPL, DispatchKey::CPU);
  base.impl("value", [](const Tensor&) { return constant(1); });
  const auto value_op = find_op("conc_test::value").typed<Tensor(const Tensor&)>();

  constexpr int kCallers = 4;
  const int64_t rounds_per_caller = scaled(1'000'000) / (2 * kCallers) + 1;
  std::atomic<int> callers_running{kCallers};
  std::atomic<int64_t> calls{0};
  Failures failures;
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      try {
        Tensor x = constant(1.5f + static_cast<float>(c));
        Tensor differentiable = tensor({2.0f}).requires_grad_();
        int64_t made = 0;
        for (int64_t i = 0; i < rounds_per_caller; ++i) made += call_round(i, value_op, x, differentiable, failures);
        calls.fetch_add(made);
      } catch (const std::exception& error) {
        failures.add(std::string("caller threw: ") + error.what());
      }
      callers_running.fetch_sub(1);
    });
  }
  int64_t churn_rounds = 0;
  std::thread registrar([&] {
    Tensor x = constant(4.0f);
    try {
      while (callers_running.load() > 0) {
        std::string problem = churn_registrations(churn_rounds++, x);
        if (!problem.empty()) failures.add(problem);
      }
    } catch (const std::exception& error) {
      failures.add(std::string("registrar threw: ") + error.what());
    }
  });
  for (auto& caller : callers) caller.join();
  registrar.join();

  INFO("first failure: " << failures.first());
  CHECK(failures.count() == 0);
  CHECK(calls.load() >= scaled(1'000'000));
  CHECK(churn_rounds > 4);
  // Everything is restored.
  CHECK(value_op.call(constant(0)).item<float>() == 1.0f);
  CHECK_FALSE(has_op("conc_scratch::twice"));
  CHECK_FALSE(has_op("plugin_ops::triple"));
  int64_t before = replaced_neg_calls.load();
  CHECK(neg(constant(3)).item<float>() == -3.0f);
  CHECK(replaced_neg_calls.load() == before);
}

namespace {

// A small graph with a custom Function, a hook and a few primitives; returns d loss / d inputs.
struct Cube : autograd::Function<Cube> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grads) {
    Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * 3.0 * x * x};
  }
};

tensor_list small_graph_gradients(int seed) {
  Tensor x = arange(0, 12, 1, kFloat64).reshape({3, 4}).mul(0.1 * (seed + 1)).requires_grad_();
  Tensor w = linspace(-1, 1, 20, kFloat64).reshape({4, 5}).add(0.01 * seed).requires_grad_();
  Tensor h = tanh(matmul(x, w));
  h.register_hook([](const Tensor& g) { return g * 0.5; });
  Tensor loss = (log_softmax(Cube::apply(h), 1) * sigmoid(h)).sum() + (w * w).mean();
  loss.backward();
  return {x.grad(), w.grad()};
}

}  // namespace

TEST_CASE("concurrency: independent backward passes on several threads match one thread's gradients") {
  constexpr int kThreads = 4;
  std::vector<tensor_list> expected;
  for (int t = 0; t < kThreads; ++t) expected.push_back(small_graph_gradients(t));
  const int64_t iterations = scaled(2000);
  Failures failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int64_t i = 0; i < iterations; ++i) {
          tensor_list grads = small_graph_gradients(t);
          if (!equal(grads[0], expected[t][0]) || !equal(grads[1], expected[t][1]))
            failures.add("thread " + std::to_string(t) + " got different gradients at iteration " + std::to_string(i));
        }
      } catch (const std::exception& error) {
        failures.add(std::string("backward threw: ") + error.what());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  INFO("first failure: " << failures.first());
  CHECK(failures.count() == 0);
}

// Static library blocks (STRATA_LIBRARY*) run at the first lookup or call that sees them
// pending. A block made here at run time stands in for one a .so or a late static initialiser
// adds. Its body is slow, so the threads that find it pending overlap with the one running it:
// each must wait for the block to finish, not find the op missing.
namespace {
void define_pending_op(Library& m) {
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  m.def("answer(Tensor x) -> Tensor", [](const Tensor& x) { return x * 42.0; });
}
void implement_pending_op(Library& m) {
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  m.impl("answer", [](const Tensor& x) { return x * 7.0; });
}

template <class Body>
void race_threads(int threads, Body body, Failures& failures) {
  StartLine start(threads);
  std::vector<std::thread> racing;
  for (int t = 0; t < threads; ++t) {
    racing.emplace_back([&] {
      start.arrive_and_wait();
      try {
        body();
      } catch (const std::exception& error) {
        failures.add(error.what());
      }
    });
  }
  for (auto& thread : racing) thread.join();
}
}  // namespace

TEST_CASE("concurrency: lookups and first calls racing a pending static block wait for it") {
  Failures failures;
  const int64_t rounds = scaled(60);
  Library later_def("conc_pending_impl", Library::DEF);
  later_def.def("answer(Tensor x) -> Tensor");
  const auto answer = find_op("conc_pending_impl::answer").typed<Tensor(const Tensor&)>();
  for (int64_t round = 0; round < rounds; ++round) {
    {
      detail::StaticLibraryBlock block(Library::DEF, "conc_pending_def", std::nullopt, &define_pending_op, __FILE__, __LINE__);
      race_threads(3, [&] {
        float result = find_op("conc_pending_def::answer").typed<Tensor(const Tensor&)>().call(constant(1)).item<float>();
        if (result != 42) failures.add("conc_pending_def::answer gave " + std::to_string(result));
      }, failures);
    }
    {
      detail::StaticLibraryBlock block(Library::IMPL, "conc_pending_impl", DispatchKey::CPU, &implement_pending_op, __FILE__, __LINE__);
      race_threads(3, [&] {
        float result = answer.call(constant(1)).item<float>();
        if (result != 7) failures.add("conc_pending_impl::answer gave " + std::to_string(result));
      }, failures);
    }
  }
  INFO("first failure: " << failures.first());
  CHECK(failures.count() == 0);
  CHECK_FALSE(has_op("conc_pending_def::answer"));
}

TEST_CASE("concurrency: a kernel still running keeps its state alive after its Library is destroyed") {
  Library def("conc_reclaim", Library::DEF);
  def.def("wait(Tensor x) -> Tensor");
  std::atomic<int> phase{0};
  std::atomic<int> seen{0};
  auto token = std::make_shared<int>(7);
  std::weak_ptr<int> watch = token;
  auto library = std::make_unique<Library>("conc_reclaim", Library::IMPL, DispatchKey::CPU);
  library->impl("wait", [token, &phase, &seen](const Tensor& x) {
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
    seen.store(*token);  // the state must still be there
    return x;
  });
  token.reset();
  std::thread caller([&] { call("conc_reclaim::wait", constant(1)); });
  while (phase.load() != 1) std::this_thread::yield();
  library.reset();  // retired, not freed: the caller is inside the kernel
  CHECK_FALSE(watch.expired());
  phase.store(2);
  caller.join();
  CHECK(seen.load() == 7);
  {  // the next reclamation frees it
    Library other("conc_reclaim", Library::IMPL, DispatchKey::CPU);
    other.impl("wait", [](const Tensor& x) { return x; });
  }
  CHECK(watch.expired());
}

// Note [Pooled small objects]: tensors, views, nodes and AutogradMetas come from per-thread
// free lists and may be freed on any thread, including after the thread that made them has
// exited (its lists are gone; the block joins the freeing thread's). Graphs recorded on
// producer threads that exit at once are run backward and dropped by one consumer thread, over
// and over; every gradient must still be right.
TEST_CASE("concurrency: graphs recorded on exiting threads are run backward and freed on another") {
  const int64_t rounds = scaled(200);
  for (int64_t round = 0; round < rounds; ++round) {
    std::vector<Tensor> leaves(4), outputs(4);
    std::vector<std::thread> producers;
    for (size_t t = 0; t < leaves.size(); ++t) {
      producers.emplace_back([t, &leaves, &outputs] {
        Tensor x = full({8}, 0.1 * static_cast<double>(t + 1)).requires_grad_();
        Tensor y = x;
        for (int i = 0; i < 20; ++i) y = tanh(y * 0.5 + 0.1).narrow(0, 0, 8);  // a view on every step
        leaves[t] = x;
        outputs[t] = y.sum();
      });
    }
    for (auto& producer : producers) producer.join();  // their pools are gone; their blocks live on
    for (size_t t = 0; t < leaves.size(); ++t) {
      outputs[t].backward();
      // The same chain on this thread gives the reference gradient.
      Tensor x = full({8}, 0.1 * static_cast<double>(t + 1)).requires_grad_();
      Tensor y = x;
      for (int i = 0; i < 20; ++i) y = tanh(y * 0.5 + 0.1).narrow(0, 0, 8);
      y.sum().backward();
      CHECK(equal(leaves[t].grad(), x.grad()));
    }
  }
}
