// One training step of a 784-256-10 MLP (batch 64, cross-entropy, SGD with momentum):
// forward, backward, optimizer step; beside LibTorch's when LibTorch is found.
// Run pinned: OMP_NUM_THREADS=1 taskset -c 0 ./build/bench/bench_train
#include <strata/strata.h>

#include "bench_util.h"

#ifdef STRATA_BENCH_WITH_TORCH
#include <torch/torch.h>
#endif

namespace {

constexpr int64_t kBatch = 64, kInputs = 784, kHidden = 256, kClasses = 10;

void strata_mlp_step(benchmark::State& state) {
  strata::manual_seed(0);
  auto net = strata::nn::Sequential(strata::nn::Linear(kInputs, kHidden), strata::nn::ReLU(),
                                    strata::nn::Linear(kHidden, kClasses));
  strata::optim::SGD sgd(net.parameters(), strata::optim::SGDOptions(0.01).momentum(0.9));
  strata::Tensor x = strata::rand({kBatch, kInputs});
  strata::Tensor y = strata::randint(0, kClasses, {kBatch});
  for (auto _ : state) {
    sgd.zero_grad();
    strata::Tensor loss = strata::cross_entropy(net.forward(x), y);
    loss.backward();
    sgd.step();
  }
  benchmark::DoNotOptimize(net.parameters()[0].data_ptr());
}
BENCHMARK(strata_mlp_step);

#ifdef STRATA_BENCH_WITH_TORCH
void torch_mlp_step(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(kInputs, kHidden), torch::nn::ReLU(),
                            torch::nn::Linear(kHidden, kClasses));
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  torch::Tensor x = torch::rand({kBatch, kInputs});
  torch::Tensor y = torch::randint(0, kClasses, {kBatch});
  for (auto _ : state) {
    sgd.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    loss.backward();
    sgd.step();
  }
  benchmark::DoNotOptimize(net->parameters()[0].data_ptr());
}
BENCHMARK(torch_mlp_step);
#endif

}  // namespace

int main(int argc, char** argv) {
  return strata::bench::run_with_ratios(argc, argv, {{"strata_mlp_step", "torch_mlp_step"}});
}
