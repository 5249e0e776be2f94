// Optimizer steps on 4M float32 parameters (see Note [Fused optimizer steps] in ops/optim.cpp):
//   optim::Adam / optim::SGD (momentum) steps against a plain loop that moves the same bytes
//     (reads param, grad and the state, writes param and the state), which bounds any step
//     from below; target: Adam within 1.5x of its loop;
//   optim::Adam / optim::SGD steps over 256 small parameters (one list call), and one
//     _fused_adam_.list call, against the per-tensor fused op called once per parameter;
//   with LibTorch, Adam against torch.optim's single-tensor algorithm written with LibTorch ops
//     (what Python's torch.optim.Adam runs on the CPU) and against torch::optim::Adam.
// Run pinned: OMP_NUM_THREADS=1 taskset -c 0 ./build/bench/bench_optim
#include <strata/nn/optim.h>
#include <strata/ops/optim.h>
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

// Many small parameters (a deep net's biases and norms): 256 of 1024 floats. optim::Adam makes
// one _fused_adam_.list call for them (Note [Multi-tensor optimizer steps]); the reference runs
// the per-tensor _fused_adam_ once per parameter, as the step did before the list overload.
constexpr int kSmallParams = 256;
constexpr int64_t kSmallSize = 1024;

struct SmallParams {
  tensor_list params, grads, exp_avgs, exp_avg_sqs;
  SmallParams() {
    for (int i = 0; i < kSmallParams; ++i) {
      Tensor p = randn({kSmallSize});
      p.requires_grad_();
      p.set_grad(randn({kSmallSize}) * 1e-2);
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(zeros({kSmallSize}));
      exp_avg_sqs.push_back(zeros({kSmallSize}));
    }
  }
};

void strata_adam_step_small_params(benchmark::State& state) {
  SmallParams small;
  optim::Adam adam(small.params, optim::AdamOptions(1e-3));
  for (auto _ : state) adam.step();
  state.SetItemsProcessed(state.iterations() * kSmallParams);
}
BENCHMARK(strata_adam_step_small_params)->Unit(benchmark::kMicrosecond);

void per_tensor_adam_small_params(benchmark::State& state) {
  SmallParams small;
  NoGradGuard no_grad;
  int64_t step = 0;
  for (auto _ : state) {
    ++step;
    for (int i = 0; i < kSmallParams; ++i)
      _fused_adam_(small.params[i], small.grads[i], small.exp_avgs[i], small.exp_avg_sqs[i], std::nullopt, step, 1e-3,
                   0.9, 0.999, 0, 1e-8, false, false, false);
  }
  state.SetItemsProcessed(state.iterations() * kSmallParams);
}
BENCHMARK(per_tensor_adam_small_params)->Unit(benchmark::kMicrosecond);

void list_adam_small_params(benchmark::State& state) {
  SmallParams small;
  NoGradGuard no_grad;
  std::vector<int64_t> steps(kSmallParams, 0);
  for (auto _ : state) {
    for (int64_t& step : steps) ++step;
    _fused_adam_(small.params, small.grads, small.exp_avgs, small.exp_avg_sqs, tensor_list{}, steps, 1e-3, 0.9, 0.999,
                 0, 1e-8, false, false, false);
  }
  state.SetItemsProcessed(state.iterations() * kSmallParams);
}
BENCHMARK(list_adam_small_params)->Unit(benchmark::kMicrosecond);

void strata_sgd_momentum_step_small_params(benchmark::State& state) {
  SmallParams small;
  optim::SGD sgd(small.params, optim::SGDOptions(1e-3).momentum(0.9));
  for (auto _ : state) sgd.step();
  state.SetItemsProcessed(state.iterations() * kSmallParams);
}
BENCHMARK(strata_sgd_momentum_step_small_params)->Unit(benchmark::kMicrosecond);

void per_tensor_sgd_momentum_small_params(benchmark::State& state) {
  SmallParams small;
  NoGradGuard no_grad;
  bool first = true;
  for (auto _ : state) {
    for (int i = 0; i < kSmallParams; ++i)
      _fused_sgd_(small.params[i], small.grads[i], small.exp_avgs[i], 1e-3, 0.9, 0, 0, false, false, first);
    first = false;
  }
  state.SetItemsProcessed(state.iterations() * kSmallParams);
}
BENCHMARK(per_tensor_sgd_momentum_small_params)->Unit(benchmark::kMicrosecond);

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
                                         {"strata_adam_step_small_params", "per_tensor_adam_small_params"},
                                         {"list_adam_small_params", "per_tensor_adam_small_params"},
                                         {"strata_sgd_momentum_step_small_params",
                                          "per_tensor_sgd_momentum_small_params"},
                                         {"strata_sgd_momentum_step", "sgd_traffic_loop"},
                                         {"strata_adam_step", "torch_adam_ops_step"},
                                         {"strata_adam_step", "torch_optim_adam_step"}});
}
