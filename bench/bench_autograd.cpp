// Autograd overhead: a tiny add forward+backward, a chain of 300 small ops forward+backward, and
// issue 15's row "100 x tanh(y * 0.5 + 0.1) on 8 floats, forward + backward", beside LibTorch's
// figures when LibTorch is found.
// Run pinned: OMP_NUM_THREADS=1 taskset -c 0 ./build/bench/bench_autograd
#include <strata/strata.h>

#include "bench_util.h"

#ifdef STRATA_BENCH_WITH_TORCH
#include <torch/torch.h>
#endif

namespace {

void strata_add_forward_backward(benchmark::State& state) {
  strata::Tensor a = strata::ones({1}).requires_grad_();
  strata::Tensor b = strata::ones({1}).requires_grad_();
  for (auto _ : state) {
    strata::Tensor y = a + b;
    y.backward();
  }
  benchmark::DoNotOptimize(a.grad().item<float>());
}
BENCHMARK(strata_add_forward_backward);

void strata_chain_300(benchmark::State& state) {
  strata::Tensor x = strata::ones({4}).requires_grad_();
  for (auto _ : state) {
    strata::Tensor y = x;
    for (int i = 0; i < 100; ++i) y = (y * 1.001 + 0.5) - 0.5;
    y.sum().backward();
  }
}
BENCHMARK(strata_chain_300);

void strata_tanh_chain_100(benchmark::State& state) {
  strata::Tensor x = strata::ones({8}).requires_grad_();
  for (auto _ : state) {
    strata::Tensor y = x;
    for (int i = 0; i < 100; ++i) y = strata::tanh(y * 0.5 + 0.1);
    y.sum().backward();
  }
}
BENCHMARK(strata_tanh_chain_100);

#ifdef STRATA_BENCH_WITH_TORCH
void torch_add_forward_backward(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::Tensor a = torch::ones({1}).requires_grad_();
  torch::Tensor b = torch::ones({1}).requires_grad_();
  for (auto _ : state) {
    torch::Tensor y = a + b;
    y.backward();
  }
  benchmark::DoNotOptimize(a.grad().item<float>());
}
BENCHMARK(torch_add_forward_backward);

void torch_chain_300(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::Tensor x = torch::ones({4}).requires_grad_();
  for (auto _ : state) {
    torch::Tensor y = x;
    for (int i = 0; i < 100; ++i) y = (y * 1.001 + 0.5) - 0.5;
    y.sum().backward();
  }
}
BENCHMARK(torch_chain_300);

void torch_tanh_chain_100(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::Tensor x = torch::ones({8}).requires_grad_();
  for (auto _ : state) {
    torch::Tensor y = x;
    for (int i = 0; i < 100; ++i) y = torch::tanh(y * 0.5 + 0.1);
    y.sum().backward();
  }
}
BENCHMARK(torch_tanh_chain_100);
#endif

}  // namespace

int main(int argc, char** argv) {
  return strata::bench::run_with_ratios(argc, argv,
                                        {{"strata_add_forward_backward", "torch_add_forward_backward"},
                                         {"strata_chain_300", "torch_chain_300"},
                                         {"strata_tanh_chain_100", "torch_tanh_chain_100"}});
}
