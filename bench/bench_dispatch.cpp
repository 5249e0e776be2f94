// The cost of one dispatch: a tiny `add` through the dispatcher next to its CPU kernel
// called directly (same thunk, no key computation or table lookup).
// Run pinned: OMP_NUM_THREADS=1 taskset -c 0 ./build/bench/bench_dispatch
#include <strata/strata.h>
#include <strata/dispatch/operator_entry.h>

#include "bench_util.h"

#ifdef STRATA_BENCH_WITH_TORCH
#include <torch/torch.h>
#endif

using namespace strata;

namespace {

using AddSignature = Tensor (*)(void*, DispatchKeySet, const Tensor&, const Tensor&, const Scalar&);

void add_dispatched(benchmark::State& state) {
  Tensor a = ones({1}), b = ones({1});
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
}
BENCHMARK(add_dispatched);

void add_kernel_direct(benchmark::State& state) {
  Tensor a = ones({1}), b = ones({1});
  OperatorHandle op = find_op("strata::add.Tensor");
  const KernelFunction kernel =
      op.entry()->core.table.load()->kernels[static_cast<int>(DispatchKey::CPU)];
  auto direct = reinterpret_cast<AddSignature>(kernel.unboxed);
  Scalar alpha = 1;
  for (auto _ : state) benchmark::DoNotOptimize(direct(kernel.functor, DispatchKeySet(DispatchKey::CPU), a, b, alpha));
}
BENCHMARK(add_kernel_direct);

// Dispatch alone: an op whose kernel returns its input.
Library& identity_library() {
  static Library def = [] {
    Library library("bench_ops", Library::DEF);
    library.def("identity(Tensor x) -> Tensor", [](const Tensor& x) { return x; });
    return library;
  }();
  return def;
}

void identity_dispatched(benchmark::State& state) {
  identity_library();
  Tensor a = ones({1});
  auto op = find_op("bench_ops::identity").typed<Tensor(const Tensor&)>();
  for (auto _ : state) benchmark::DoNotOptimize(op.call(a));
}
BENCHMARK(identity_dispatched);

void identity_direct(benchmark::State& state) {
  Tensor a = ones({1});
  auto identity = [](const Tensor& x) { return x; };
  for (auto _ : state) benchmark::DoNotOptimize(identity(a));
}
BENCHMARK(identity_direct);

#ifdef STRATA_BENCH_WITH_TORCH
void torch_add(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::Tensor a = torch::ones({1}), b = torch::ones({1});
  for (auto _ : state) benchmark::DoNotOptimize(torch::add(a, b));
}
BENCHMARK(torch_add);
#endif

}  // namespace

int main(int argc, char** argv) {
  return strata::bench::run_with_ratios(
      argc, argv, {{"add_dispatched", "add_kernel_direct"},
                  {"identity_dispatched", "identity_direct"},
                  {"add_dispatched", "torch_add"}});
}
