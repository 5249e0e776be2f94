// Graph mode against eager strata (and LibTorch eager when found), issue 16's targets:
//   a * b + c * d - e on 16M floats, no grad:          compiled <= 0.4x eager
//   100 x tanh(y * 0.5 + 0.1) on 8 floats, no grad:    compiled <= 0.3x eager
//   MLP 784-256-10 inference, batch 64:                compiled no slower than eager
// and what a compiled function's backward costs against eager's (tanh chain, forward + backward).
// Run pinned: OMP_NUM_THREADS=1 taskset -c 0 ./build/bench/bench_jit
#include <strata/jit/fusion.h>
#include <strata/strata.h>

#include "bench_util.h"

#ifdef STRATA_BENCH_WITH_TORCH
#include <torch/torch.h>
#endif

namespace {

using strata::Tensor;
using strata::tensor_list;

constexpr int64_t kLarge = 16 << 20;

// Note [Warm-up calls]
// The 16M-float rows call their function once before timing. The first call traces (compile),
// compiles its generated kernel unless the disk cache has it (Note [Generated kernels]), and
// faults in the pages of its 64 MiB output, which later calls get back from the CPU
// allocator's cache. On a VM a page fault may cost tens of microseconds, so that first call can
// take most of a second; Google Benchmark then stops after that one iteration and reports it.
// LibTorch allocates fresh pages on every call, so its row includes them, as its users pay them.

tensor_list expression(const tensor_list& in) { return {in[0] * in[1] + in[2] * in[3] - in[4]}; }

tensor_list tanh_chain(const tensor_list& in) {
  Tensor y = in[0];
  for (int i = 0; i < 100; ++i) y = strata::tanh(y * 0.5 + 0.1);
  return {y};
}

tensor_list large_inputs() {
  tensor_list inputs;
  for (int i = 0; i < 5; ++i) inputs.push_back(strata::rand({kLarge}));
  return inputs;
}

void eager_expression_16m(benchmark::State& state) {
  strata::NoGradGuard no_grad;
  tensor_list inputs = large_inputs();
  (void)expression(inputs);  // See Note [Warm-up calls]
  for (auto _ : state) benchmark::DoNotOptimize(expression(inputs)[0].data_ptr());
}
BENCHMARK(eager_expression_16m)->Unit(benchmark::kMillisecond);

void compiled_expression_16m(benchmark::State& state) {
  strata::NoGradGuard no_grad;
  tensor_list inputs = large_inputs();
  auto fast = strata::jit::compile(expression);
  (void)fast(inputs);  // the trace, and the output's first pages: see Note [Warm-up calls]
  for (auto _ : state) benchmark::DoNotOptimize(fast(inputs)[0].data_ptr());
  state.counters["fused_chains"] = static_cast<double>(fast.fused_chains(inputs));
}
BENCHMARK(compiled_expression_16m)->Unit(benchmark::kMillisecond);

// The same without generated kernels: the tree kernel of Note [Tree kernels], what runs where
// no C++ compiler is found or STRATA_JIT_CODEGEN=0.
void compiled_expression_16m_no_codegen(benchmark::State& state) {
  strata::NoGradGuard no_grad;
  const strata::jit::detail::CodegenModeGuard codegen(strata::jit::detail::CodegenMode::off);
  tensor_list inputs = large_inputs();
  auto fast = strata::jit::compile(expression);
  (void)fast(inputs);  // See Note [Warm-up calls]
  for (auto _ : state) benchmark::DoNotOptimize(fast(inputs)[0].data_ptr());
}
BENCHMARK(compiled_expression_16m_no_codegen)->Unit(benchmark::kMillisecond);

// The floor for a fused pass on this machine: one plain loop over the same data into a
// preallocated output (five streams read, one written).
void loop_expression_16m(benchmark::State& state) {
  tensor_list inputs = large_inputs();
  Tensor out = strata::empty({kLarge});
  const float *a = inputs[0].data_ptr<float>(), *b = inputs[1].data_ptr<float>(), *c = inputs[2].data_ptr<float>(),
              *d = inputs[3].data_ptr<float>(), *e = inputs[4].data_ptr<float>();
  float* y = out.data_ptr<float>();
  out.fill_(0);  // its pages faulted in before timing, as the cached blocks of the others
  for (auto _ : state) {
    for (int64_t i = 0; i < kLarge; ++i) y[i] = a[i] * b[i] + c[i] * d[i] - e[i];
    benchmark::ClobberMemory();
  }
}
BENCHMARK(loop_expression_16m)->Unit(benchmark::kMillisecond);

void eager_tanh_chain(benchmark::State& state) {
  strata::NoGradGuard no_grad;
  tensor_list inputs{strata::ones({8})};
  for (auto _ : state) benchmark::DoNotOptimize(tanh_chain(inputs)[0].data_ptr());
}
BENCHMARK(eager_tanh_chain);

void compiled_tanh_chain(benchmark::State& state) {
  strata::NoGradGuard no_grad;
  tensor_list inputs{strata::ones({8})};
  auto fast = strata::jit::compile(tanh_chain);
  for (auto _ : state) benchmark::DoNotOptimize(fast(inputs)[0].data_ptr());
}
BENCHMARK(compiled_tanh_chain);

void replayed_tanh_chain(benchmark::State& state) {  // the traced graph, replayed op by op
  strata::NoGradGuard no_grad;
  tensor_list inputs{strata::ones({8})};
  strata::jit::Graph graph = strata::jit::trace(tanh_chain, inputs);
  for (auto _ : state) benchmark::DoNotOptimize(graph.run(inputs)[0].data_ptr());
}
BENCHMARK(replayed_tanh_chain);

void eager_tanh_chain_backward(benchmark::State& state) {
  Tensor x = strata::ones({8}).requires_grad_();
  for (auto _ : state) tanh_chain({x})[0].sum().backward();
}
BENCHMARK(eager_tanh_chain_backward);

void compiled_tanh_chain_backward(benchmark::State& state) {
  Tensor x = strata::ones({8}).requires_grad_();
  auto fast = strata::jit::compile(tanh_chain);
  for (auto _ : state) fast({x})[0].sum().backward();
}
BENCHMARK(compiled_tanh_chain_backward);

struct Mlp {
  strata::nn::Linear first{784, 256}, second{256, 10};
  tensor_list operator()(const tensor_list& in) { return {second(strata::relu(first(in[0])))}; }
};

void eager_mlp_inference(benchmark::State& state) {
  strata::NoGradGuard no_grad;
  Mlp mlp;
  tensor_list inputs{strata::rand({64, 784})};
  for (auto _ : state) benchmark::DoNotOptimize(mlp(inputs)[0].data_ptr());
}
BENCHMARK(eager_mlp_inference);

void compiled_mlp_inference(benchmark::State& state) {
  strata::NoGradGuard no_grad;
  Mlp mlp;
  tensor_list inputs{strata::rand({64, 784})};
  auto fast = strata::jit::compile([&](const tensor_list& in) { return mlp(in); });
  for (auto _ : state) benchmark::DoNotOptimize(fast(inputs)[0].data_ptr());
}
BENCHMARK(compiled_mlp_inference);

#ifdef STRATA_BENCH_WITH_TORCH
void torch_expression_16m(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> in;
  for (int i = 0; i < 5; ++i) in.push_back(torch::rand({kLarge}));
  for (auto _ : state) benchmark::DoNotOptimize((in[0] * in[1] + in[2] * in[3] - in[4]).data_ptr());
}
BENCHMARK(torch_expression_16m)->Unit(benchmark::kMillisecond);

void torch_tanh_chain(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::ones({8});
  for (auto _ : state) {
    torch::Tensor y = x;
    for (int i = 0; i < 100; ++i) y = torch::tanh(y * 0.5 + 0.1);
    benchmark::DoNotOptimize(y.data_ptr());
  }
}
BENCHMARK(torch_tanh_chain);

void torch_mlp_inference(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::NoGradGuard no_grad;
  torch::nn::Linear first(784, 256), second(256, 10);
  torch::Tensor x = torch::rand({64, 784});
  for (auto _ : state) benchmark::DoNotOptimize(second(torch::relu(first(x))).data_ptr());
}
BENCHMARK(torch_mlp_inference);
#endif

}  // namespace

int main(int argc, char** argv) {
  return strata::bench::run_with_ratios(argc, argv,
                                        {{"compiled_expression_16m", "eager_expression_16m"},
                                         {"compiled_expression_16m", "loop_expression_16m"},
                                         {"compiled_expression_16m_no_codegen", "eager_expression_16m"},
                                         {"loop_expression_16m", "eager_expression_16m"},
                                         {"compiled_tanh_chain", "eager_tanh_chain"},
                                         {"replayed_tanh_chain", "eager_tanh_chain"},
                                         {"compiled_mlp_inference", "eager_mlp_inference"},
                                         {"compiled_tanh_chain_backward", "eager_tanh_chain_backward"},
                                         {"eager_expression_16m", "torch_expression_16m"},
                                         {"compiled_expression_16m", "torch_expression_16m"},
                                         {"eager_tanh_chain", "torch_tanh_chain"},
                                         {"compiled_tanh_chain", "torch_tanh_chain"},
                                         {"compiled_mlp_inference", "torch_mlp_inference"}});
}
