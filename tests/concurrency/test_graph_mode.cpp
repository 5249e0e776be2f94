// Graph mode on several threads: threads running one const Graph, whose first run prepares it
// (Note [Prepared replay] in jit/graph.cpp), and threads calling one compiled function, whose
// first large call of a signature compiles its generated kernel once (Notes [Generated
// kernels] and [Kernel cache] in jit/). Every thread gets eager's results.
#include <doctest/doctest.h>


#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <strata/jit/fusion.h>
#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;

TEST_CASE("concurrency: threads replaying one graph from its first run get eager's results") {
  auto fn = [](const tensor_list& in) -> tensor_list { return {tanh(in[0] * 0.5 + 0.1) - in[1]}; };
  const tensor_list inputs{randn({64}), randn({64})};
  const jit::Graph graph = jit::trace(fn, inputs);
  const Tensor expected = fn(inputs)[0];
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int run = 0; run < 50; ++run)
        if (!equal(graph.run(inputs)[0], expected)) ++mismatches;
    });
  for (std::thread& thread : threads) thread.join();
  CHECK(mismatches.load() == 0);
}

TEST_CASE("concurrency: threads making a compiled function's first large calls share one generated kernel") {
  const testing::TemporaryKernelCache cache;
  const jit::detail::CodegenModeGuard codegen(jit::detail::CodegenMode::large);
  NoGradGuard no_grad;
  auto fast = jit::compile([](const tensor_list& in) -> tensor_list { return {relu(in[0] * in[1] - in[2] / 3.0)}; });
  tensor_list inputs;
  for (int i = 0; i < 3; ++i) inputs.push_back(randn({(int64_t{1} << 18) + 5}));  // 1 MiB + 20 bytes each
  const Tensor expected = relu(inputs[0] * inputs[1] - inputs[2] / 3.0);
  std::mutex mutex;
  int mismatches = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      NoGradGuard thread_no_grad;  // grad mode is per thread
      for (int call = 0; call < 3; ++call) {
        const bool same = equal(fast(inputs)[0], expected);
        std::lock_guard<std::mutex> lock(mutex);
        mismatches += same ? 0 : 1;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(mismatches == 0);
  CHECK(fast.cache_size() == 1);
  CHECK(cache.files().size() == 2);  // one kernel: its .cpp and .so
}
