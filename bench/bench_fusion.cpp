// The fused elementwise executor (jit/fusion.h) against the same ops run eagerly, in the same
// run (see bench_util.h):
//   a * b + c * d - e over 16M floats: fused reads 5 inputs and writes 1 output; eager also
//     writes and rereads 3 full-size temporaries (target: fused <= 0.4x eager); a plain loop
//     computing the expression into a preallocated output is the memory-bound floor;
//   100 x tanh(y * 0.5 + 0.1) on 8 floats (300 steps): per-op overhead, one call against 300
//     dispatched ops.
// Run pinned: OMP_NUM_THREADS=1 taskset -c 0 ./build/bench/bench_fusion --benchmark_min_time=0.3
#include <strata/jit/fusion.h>
#include <strata/strata.h>

#include "bench_util.h"

namespace {

using namespace strata;
using jit::detail::FusedOp;
using jit::detail::FusedProgram;
using jit::detail::run_fused;

constexpr int64_t kElements = int64_t{16} << 20;

tensor_list five_inputs() {
  manual_seed(0);
  tensor_list inputs;
  for (int i = 0; i < 5; ++i) inputs.push_back(rand({kElements}));
  return inputs;
}

void set_bytes(benchmark::State& state) {  // 5 inputs read, 1 output written
  state.SetBytesProcessed(state.iterations() * 6 * kElements * static_cast<int64_t>(sizeof(float)));
}

void multiply_add_fused(benchmark::State& state) {
  const tensor_list in = five_inputs();
  FusedProgram program;
  program.input_count = 5;
  program.register_count = 9;
  program.dtype = kFloat32;
  program.steps = {{FusedOp::Mul, 0, 1, 0, 1, 5},
                   {FusedOp::Mul, 2, 3, 0, 1, 6},
                   {FusedOp::Add, 5, 6, 0, 1, 7},
                   {FusedOp::Sub, 7, 4, 0, 1, 8}};
  program.outputs = {8};
  for (auto _ : state) benchmark::DoNotOptimize(run_fused(program, in));
  set_bytes(state);
}
BENCHMARK(multiply_add_fused)->Unit(benchmark::kMillisecond);

void multiply_add_eager(benchmark::State& state) {
  const tensor_list in = five_inputs();
  for (auto _ : state) benchmark::DoNotOptimize(in[0] * in[1] + in[2] * in[3] - in[4]);
  set_bytes(state);
}
BENCHMARK(multiply_add_eager)->Unit(benchmark::kMillisecond);

void multiply_add_loop_preallocated(benchmark::State& state) {
  const tensor_list in = five_inputs();
  Tensor out = empty({kElements});
  const float *a = in[0].data_ptr<float>(), *b = in[1].data_ptr<float>(), *c = in[2].data_ptr<float>();
  const float *d = in[3].data_ptr<float>(), *e = in[4].data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (auto _ : state) {
    for (int64_t i = 0; i < kElements; ++i) {
      const float ab = a[i] * b[i], cd = c[i] * d[i];  // may be contracted: it only sets the pace
      const float sum = ab + cd;
      o[i] = sum - e[i];
    }
    benchmark::ClobberMemory();
  }
  set_bytes(state);
}
BENCHMARK(multiply_add_loop_preallocated)->Unit(benchmark::kMillisecond);

void tanh_chain_fused(benchmark::State& state) {
  const Tensor x = ones({8});
  FusedProgram program;
  program.input_count = 1;
  program.dtype = kFloat32;
  int y = 0;
  for (int i = 0; i < 100; ++i) {
    const int base = 1 + 3 * i;
    program.steps.push_back({FusedOp::MulScalar, y, -1, 0.5, 1, base});
    program.steps.push_back({FusedOp::AddScalar, base, -1, 0.1, 1, base + 1});
    program.steps.push_back({FusedOp::Tanh, base + 1, -1, 0, 1, base + 2});
    y = base + 2;
  }
  program.register_count = y + 1;
  program.outputs = {y};
  for (auto _ : state) benchmark::DoNotOptimize(run_fused(program, {x}));
}
BENCHMARK(tanh_chain_fused);

void tanh_chain_eager(benchmark::State& state) {
  const Tensor x = ones({8});
  for (auto _ : state) {
    Tensor y = x;
    for (int i = 0; i < 100; ++i) y = strata::tanh(y * 0.5 + 0.1);
    benchmark::DoNotOptimize(y);
  }
}
BENCHMARK(tanh_chain_eager);

}  // namespace

int main(int argc, char** argv) {
  return strata::bench::run_with_ratios(argc, argv,
                                        {{"multiply_add_fused", "multiply_add_eager"},
                                         {"multiply_add_fused", "multiply_add_loop_preallocated"},
                                         {"multiply_add_eager", "multiply_add_loop_preallocated"},
                                         {"tanh_chain_fused", "tanh_chain_eager"}});
}
