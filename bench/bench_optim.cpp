// Optimizer steps on 4M float32 parameters (see Note [Fused optimizer steps] in ops/optim.cpp):
//   optim::Adam / optim::SGD (momentum) steps against a plain loop that moves the same bytes
//     (reads param, grad and the state, writes param and the state), which bounds any step
//     from below; target: Adam within 1.5x of its loop;
//   with LibTorch, Adam against torch.optim's single-tensor algorithm written with LibTorch ops
//     (what Python's torch.optim.Adam runs on the CPU) and against torch::optim::Adam.
// Run pinned: OMP_NUM_THREADS=1 taskset -c 0 ./build/bench/bench_optim
#include <strata/nn/optim.h>
#include <strata/strata.h>

#include <cmath>
#include <vector>

#include "bench_util.h"

#ifdef STRATA_BENCH_WITH_TORCH
#include <torch/torch.h>
#endif

using namespace strata;

namespace {

constexpr int64_t kParams = int64_t{1} << 22;

Tensor parameter_with_grad() {
  Tensor p = randn({kParams});
  p.requires_grad_();
  p.set_grad(randn({kParams}) * 1e-2);
  return p;
}

void strata_adam_step(benchmark::State& state) {
  const Tensor p = parameter_with_grad();
  optim::Adam adam({p}, optim::AdamOptions(1e-3));
  for (auto _ : state) adam.step();
  state.SetBytesProcessed(state.iterations() * kParams * 7 * 4);
}
BENCHMARK(strata_adam_step)->Unit(benchmark::kMillisecond);

void strata_sgd_momentum_step(benchmark::State& state) {
  const Tensor p = parameter_with_grad();
  optim::SGD sgd({p}, optim::SGDOptions(1e-3).momentum(0.9));
  for (auto _ : state) sgd.step();
  state.SetBytesProcessed(state.iterations() * kParams * 5 * 4);
}
BENCHMARK(strata_sgd_momentum_step)->Unit(benchmark::kMillisecond);

// The reference: Adam's memory traffic (4 reads, 3 writes per element) with trivial arithmetic,
// split over the threads as the fused kernel splits it.
void adam_traffic_loop(benchmark::State& state) {
  std::vector<float> p(kParams, 1), g(kParams, 1e-2f), m(kParams, 0), v(kParams, 0);
  for (auto _ : state) {
    parallel_for(0, kParams, kDefaultGrainSize, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        m[i] = 0.9f * m[i] + g[i];
        v[i] = 0.999f * v[i] + g[i];
        p[i] -= 1e-3f * m[i];
      }
    });
    benchmark::DoNotOptimize(p.data());
  }
  state.SetBytesProcessed(state.iterations() * kParams * 7 * 4);
}
BENCHMARK(adam_traffic_loop)->Unit(benchmark::kMillisecond);

// SGD with momentum: 3 reads, 2 writes.
void sgd_traffic_loop(benchmark::State& state) {
  std::vector<float> p(kParams, 1), g(kParams, 1e-2f), buffer(kParams, 0);
  for (auto _ : state) {
    parallel_for(0, kParams, kDefaultGrainSize, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        buffer[i] = 0.9f * buffer[i] + g[i];
        p[i] -= 1e-3f * buffer[i];
      }
    });
    benchmark::DoNotOptimize(p.data());
  }
  state.SetBytesProcessed(state.iterations() * kParams * 5 * 4);
}
BENCHMARK(sgd_traffic_loop)->Unit(benchmark::kMillisecond);

#ifdef STRATA_BENCH_WITH_TORCH
// torch.optim.Adam's _single_tensor_adam, line by line, with LibTorch ops.
void torch_adam_ops_step(benchmark::State& state) {
  torch::NoGradGuard no_grad;
  torch::Tensor p = torch::randn({kParams}), g = torch::randn({kParams}) * 1e-2;
  torch::Tensor m = torch::zeros_like(p), v = torch::zeros_like(p);
  const double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  int64_t step = 0;
  for (auto _ : state) {
    ++step;
    m.lerp_(g, 1 - beta1);
    v.mul_(beta2).addcmul_(g, g, 1 - beta2);
    const double bias_correction1 = 1 - std::pow(beta1, step), bias_correction2 = 1 - std::pow(beta2, step);
    torch::Tensor denom = (v.sqrt() / std::sqrt(bias_correction2)).add_(eps);
    p.addcdiv_(m, denom, -lr / bias_correction1);
  }
  state.SetBytesProcessed(state.iterations() * kParams * 7 * 4);
}
BENCHMARK(torch_adam_ops_step)->Unit(benchmark::kMillisecond);

void torch_optim_adam_step(benchmark::State& state) {
  torch::Tensor p = torch::randn({kParams}).requires_grad_();
  p.mutable_grad() = torch::randn({kParams}) * 1e-2;
  torch::optim::Adam adam({p}, torch::optim::AdamOptions(1e-3));
  for (auto _ : state) adam.step();
  state.SetBytesProcessed(state.iterations() * kParams * 7 * 4);
}
BENCHMARK(torch_optim_adam_step)->Unit(benchmark::kMillisecond);
#endif

}  // namespace

int main(int argc, char** argv) {
  return strata::bench::run_with_ratios(argc, argv,
                                        {{"strata_adam_step", "adam_traffic_loop"},
                                         {"strata_sgd_momentum_step", "sgd_traffic_loop"},
                                         {"strata_adam_step", "torch_adam_ops_step"},
                                         {"strata_adam_step", "torch_optim_adam_step"}});
}
