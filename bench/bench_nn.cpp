// Neural-network ops: softmax forward, cross_entropy forward+backward and conv2d
// forward+backward (NCHW, and channels last against NCHW), beside LibTorch's figures when
// LibTorch is found.
// Run pinned: OMP_NUM_THREADS=1 taskset -c 0 ./build/bench/bench_nn
#include <strata/strata.h>

#include "bench_util.h"

#ifdef STRATA_BENCH_WITH_TORCH
#include <torch/torch.h>
#endif

namespace {

constexpr int64_t kBatch = 64, kClasses = 1000;
// conv2d: a 3x3, padding 1 layer of a small CNN.
constexpr int64_t kImages = 8, kInChannels = 16, kOutChannels = 32, kSide = 32;

void strata_softmax(benchmark::State& state) {
  strata::manual_seed(0);
  strata::Tensor x = strata::randn({kBatch, kClasses});
  for (auto _ : state) benchmark::DoNotOptimize(strata::softmax(x, 1));
}
BENCHMARK(strata_softmax);

void strata_cross_entropy(benchmark::State& state) {
  strata::manual_seed(0);
  strata::Tensor x = strata::randn({kBatch, kClasses}).requires_grad_();
  strata::Tensor target = strata::randint(0, kClasses, {kBatch});
  for (auto _ : state) {
    x.set_grad(strata::Tensor());
    strata::cross_entropy(x, target).backward();
  }
  benchmark::DoNotOptimize(x.grad().data_ptr());
}
BENCHMARK(strata_cross_entropy);

// channels_last: input and weight laid out channels last (NHWC and OHWI), as after LibTorch's
// model.to(memory_format=channels_last); the result and gradients are channels last too.
void run_strata_conv2d(benchmark::State& state, bool channels_last) {
  strata::manual_seed(0);
  const auto layout = [&](strata::Tensor t) {
    return channels_last ? t.contiguous(strata::MemoryFormat::ChannelsLast) : t;
  };
  strata::Tensor x = layout(strata::randn({kImages, kInChannels, kSide, kSide})).requires_grad_();
  strata::Tensor w = layout(strata::randn({kOutChannels, kInChannels, 3, 3})).requires_grad_();
  strata::Tensor b = strata::randn({kOutChannels}).requires_grad_();
  strata::Tensor seed = strata::ones({kImages, kOutChannels, kSide, kSide});
  for (auto _ : state) {
    for (const strata::Tensor& t : {x, w, b}) t.set_grad(strata::Tensor());
    strata::conv2d(x, w, b, {1, 1}, {1, 1}).backward(seed);
  }
  benchmark::DoNotOptimize(w.grad().data_ptr());
}
void strata_conv2d(benchmark::State& state) { run_strata_conv2d(state, false); }
BENCHMARK(strata_conv2d)->Unit(benchmark::kMillisecond);
void strata_conv2d_channels_last(benchmark::State& state) { run_strata_conv2d(state, true); }
BENCHMARK(strata_conv2d_channels_last)->Unit(benchmark::kMillisecond);

#ifdef STRATA_BENCH_WITH_TORCH
void torch_softmax(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({kBatch, kClasses});
  for (auto _ : state) benchmark::DoNotOptimize(torch::softmax(x, 1));
}
BENCHMARK(torch_softmax);

void torch_cross_entropy(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({kBatch, kClasses}).requires_grad_();
  torch::Tensor target = torch::randint(0, kClasses, {kBatch});
  for (auto _ : state) {
    x.mutable_grad() = torch::Tensor();
    torch::nn::functional::cross_entropy(x, target).backward();
  }
  benchmark::DoNotOptimize(x.grad().data_ptr());
}
BENCHMARK(torch_cross_entropy);

void run_torch_conv2d(benchmark::State& state, bool channels_last) {
  torch::set_num_threads(1);
  torch::manual_seed(0);
  const auto layout = [&](torch::Tensor t) {
    return channels_last ? t.contiguous(torch::MemoryFormat::ChannelsLast) : t;
  };
  torch::Tensor x = layout(torch::randn({kImages, kInChannels, kSide, kSide})).requires_grad_();
  torch::Tensor w = layout(torch::randn({kOutChannels, kInChannels, 3, 3})).requires_grad_();
  torch::Tensor b = torch::randn({kOutChannels}).requires_grad_();
  torch::Tensor seed = torch::ones({kImages, kOutChannels, kSide, kSide});
  for (auto _ : state) {
    for (torch::Tensor* t : {&x, &w, &b}) t->mutable_grad() = torch::Tensor();
    torch::conv2d(x, w, b, {1, 1}, {1, 1}).backward(seed);
  }
  benchmark::DoNotOptimize(w.grad().data_ptr());
}
void torch_conv2d(benchmark::State& state) { run_torch_conv2d(state, false); }
BENCHMARK(torch_conv2d)->Unit(benchmark::kMillisecond);
void torch_conv2d_channels_last(benchmark::State& state) { run_torch_conv2d(state, true); }
BENCHMARK(torch_conv2d_channels_last)->Unit(benchmark::kMillisecond);
#endif

}  // namespace

int main(int argc, char** argv) {
  return strata::bench::run_with_ratios(argc, argv,
                                        {{"strata_softmax", "torch_softmax"},
                                         {"strata_cross_entropy", "torch_cross_entropy"},
                                         {"strata_conv2d", "torch_conv2d"},
                                         {"strata_conv2d_channels_last", "torch_conv2d_channels_last"},
                                         {"strata_conv2d_channels_last", "strata_conv2d"}});
}
