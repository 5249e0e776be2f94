// Op throughput next to references measured in the same run (see bench_util.h):
//   matmul, float32 n x n (n = 64, 256, 1024), against Eigen's GEMM called directly on
//     preallocated matrices (and LibTorch when available); target: time ratio <= 1/0.95;
//   add of two 16M-float tensors against a plain loop (target: bandwidth >= 0.85x the
//     loop's): the kernel's bandwidth is add_ in place against the same loop in place (and
//     against the loop into a preallocated buffer); the out-of-place add, which writes a
//     fresh 64 MiB tensor each time, is compared with the loop writing a fresh buffer (which
//     pays first-touch page faults) and with add_ in place: the CPU allocator's large-block
//     cache (Note [CPU large-block cache] in tensor/storage.cpp) hands the freed result back,
//     so it should run near in-place speed (see the note at add_strata);
//   Add --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true on a busy
//   machine: the ratios then use the medians.
//   broadcast add [N, 2] + [2] against the contiguous add [N, 2] + [N, 2], per element, for
//     outputs of 512 KiB and 4 MiB (the allocator's largest cached block); target: <= 3x.
//   neg, add and the global average pool on channels-last activations against contiguous
//     ones; target: <= 1.1x (see neg_layout below).
// Run pinned: OMP_NUM_THREADS=1 taskset -c 0 ./build/bench/bench_ops
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Dense>

#include <strata/strata.h>

#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"

#ifdef STRATA_BENCH_WITH_TORCH
#include <torch/torch.h>
#endif

using namespace strata;

namespace {

// ---------------------------------------------------------------------------------------
// matmul.

void matmul_strata(benchmark::State& state) {
  const int64_t n = state.range(0);
  manual_seed(0);
  Tensor a = rand({n, n}), b = rand({n, n});
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b));
  state.SetItemsProcessed(state.iterations() * 2 * n * n * n);  // flops
}
BENCHMARK(matmul_strata)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

void matmul_eigen(benchmark::State& state) {
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Index n = state.range(0);
  Matrix a = Matrix::Random(n, n), b = Matrix::Random(n, n), c(n, n);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * 2 * n * n * n);
}
BENCHMARK(matmul_eigen)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------------------
// add: 16M floats, memory-bound.

constexpr int64_t kAddElements = int64_t{16} << 20;

void set_add_bytes(benchmark::State& state, int64_t elements) {
  state.SetBytesProcessed(state.iterations() * 3 * elements * static_cast<int64_t>(sizeof(float)));
}

// The 64 MiB result of one iteration is freed into the CPU allocator's large-block cache and
// reused by the next, whose pages are already in; without that cache each add wrote 64 MiB of
// fresh pages and the page faults, not the kernel, set its time (about 80% of it).
void add_strata(benchmark::State& state) {
  manual_seed(0);
  Tensor a = rand({kAddElements}), b = rand({kAddElements});
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
  set_add_bytes(state, kAddElements);
}
BENCHMARK(add_strata)->Unit(benchmark::kMillisecond);

void add_inplace_strata(benchmark::State& state) {
  manual_seed(0);
  Tensor a = rand({kAddElements}), b = rand({kAddElements});
  for (auto _ : state) {
    a.add_(b);
    benchmark::ClobberMemory();
  }
  set_add_bytes(state, kAddElements);
}
BENCHMARK(add_inplace_strata)->Unit(benchmark::kMillisecond);

void add_loop_preallocated(benchmark::State& state) {
  std::vector<float> a(kAddElements, 1.0f), b(kAddElements, 2.0f), c(kAddElements);
  for (auto _ : state) {
    const float* __restrict x = a.data();
    const float* __restrict y = b.data();
    float* __restrict z = c.data();
    for (int64_t i = 0; i < kAddElements; ++i) z[i] = x[i] + y[i];
    benchmark::DoNotOptimize(z);
    benchmark::ClobberMemory();
  }
  set_add_bytes(state, kAddElements);
}
BENCHMARK(add_loop_preallocated)->Unit(benchmark::kMillisecond);

void add_loop_inplace(benchmark::State& state) {
  std::vector<float> a(kAddElements, 1.0f), b(kAddElements, 2.0f);
  for (auto _ : state) {
    float* __restrict x = a.data();
    const float* __restrict y = b.data();
    for (int64_t i = 0; i < kAddElements; ++i) x[i] += y[i];
    benchmark::DoNotOptimize(x);
    benchmark::ClobberMemory();
  }
  set_add_bytes(state, kAddElements);
}
BENCHMARK(add_loop_inplace)->Unit(benchmark::kMillisecond);

void add_loop_fresh(benchmark::State& state) {
  std::vector<float> a(kAddElements, 1.0f), b(kAddElements, 2.0f);
  for (auto _ : state) {
    std::unique_ptr<float[]> c(new float[kAddElements]);
    const float* __restrict x = a.data();
    const float* __restrict y = b.data();
    float* __restrict z = c.get();
    for (int64_t i = 0; i < kAddElements; ++i) z[i] = x[i] + y[i];
    benchmark::DoNotOptimize(z);
    benchmark::ClobberMemory();
  }
  set_add_bytes(state, kAddElements);
}
BENCHMARK(add_loop_fresh)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------
// Broadcasting: [N, 2] + [2] against [N, 2] + [N, 2], per element.

void add_broadcast_rows(benchmark::State& state) {
  const int64_t rows = state.range(0);
  manual_seed(0);
  Tensor a = rand({rows, 2}), b = rand({2});
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
  state.SetItemsProcessed(state.iterations() * rows * 2);
}
BENCHMARK(add_broadcast_rows)->Arg(1 << 16)->Arg(1 << 19)->Unit(benchmark::kMicrosecond);

void add_contiguous_rows(benchmark::State& state) {
  const int64_t rows = state.range(0);
  manual_seed(0);
  Tensor a = rand({rows, 2}), b = rand({rows, 2});
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
  state.SetItemsProcessed(state.iterations() * rows * 2);
}
BENCHMARK(add_contiguous_rows)->Arg(1 << 16)->Arg(1 << 19)->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------------------
// Layouts (Note [Strides of elementwise results], tensor/dim_order.h): neg and add of a
// [16, 64, 28, 28] activation (3.1 MiB) laid out channels last against the same ops on a
// contiguous one. The channels-last results are channels last, one dense block walked like a
// contiguous one (target: ratio <= 1.1). The _into_contiguous forms write a contiguous out
// from the channels-last input: the work every such op did when results were always
// contiguous.
Tensor activation(bool channels_last) {
  manual_seed(0);
  Tensor x = randn({16, 64, 28, 28});
  return channels_last ? x.contiguous(MemoryFormat::ChannelsLast) : x;
}

void neg_layout(benchmark::State& state) {
  const Tensor x = activation(state.range(0) != 0);
  for (auto _ : state) benchmark::DoNotOptimize(neg(x));
  state.SetItemsProcessed(state.iterations() * x.numel());
}
BENCHMARK(neg_layout)->ArgName("channels_last")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void neg_into_contiguous(benchmark::State& state) {
  const Tensor x = activation(true), out = empty(x.sizes());
  for (auto _ : state) benchmark::DoNotOptimize(neg_out(out, x));
  state.SetItemsProcessed(state.iterations() * x.numel());
}
BENCHMARK(neg_into_contiguous)->Unit(benchmark::kMicrosecond);

// Arg 2 mixes the layouts: a channels-last x plus a contiguous y (a result in x's layout).
void add_layout(benchmark::State& state) {
  const Tensor x = activation(state.range(0) != 0), y = state.range(0) == 2 ? x.contiguous() : x.clone();
  for (auto _ : state) benchmark::DoNotOptimize(add(x, y));
  state.SetItemsProcessed(state.iterations() * x.numel());
}
BENCHMARK(add_layout)->ArgName("channels_last")->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

void add_into_contiguous(benchmark::State& state) {
  const Tensor x = activation(true), y = x.clone(), out = empty(x.sizes());
  for (auto _ : state) benchmark::DoNotOptimize(add_out(out, x, y));
  state.SetItemsProcessed(state.iterations() * x.numel());
}
BENCHMARK(add_into_contiguous)->Unit(benchmark::kMicrosecond);

// The global average pool of the same activation, mean over H and W: a channels-last input is
// folded in memory order in place (ops/reduce.h reduce_input), not copied first.
void mean_hw_layout(benchmark::State& state) {
  const Tensor x = activation(state.range(0) != 0);
  for (auto _ : state) benchmark::DoNotOptimize(mean(x, {2, 3}, /*keepdim=*/true));
  state.SetItemsProcessed(state.iterations() * x.numel());
}
BENCHMARK(mean_hw_layout)->ArgName("channels_last")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// Medium elementwise ops, 16K floats (a 64 x 256 activation): one serial chunk each, the size
// at which the loops first ran scalar (Note [Loops kept out of line], ops/elementwise.h).
constexpr int64_t kMediumElements = int64_t{1} << 14;

void add_medium(benchmark::State& state) {
  manual_seed(0);
  Tensor a = rand({kMediumElements}), b = rand({kMediumElements});
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
  set_add_bytes(state, kMediumElements);
}
BENCHMARK(add_medium);

// relu's backward: where(result > 0, grad, 0).
void where_scalar_other(benchmark::State& state) {
  manual_seed(0);
  Tensor condition = gt(randn({kMediumElements}), 0), x = rand({kMediumElements}), zero = zeros({});
  for (auto _ : state) benchmark::DoNotOptimize(where(condition, x, zero));
  state.SetItemsProcessed(state.iterations() * kMediumElements);
}
BENCHMARK(where_scalar_other);

// A full float sum (Note [Pairwise summation], ops/reduce.cpp).
void sum_medium(benchmark::State& state) {
  manual_seed(0);
  Tensor x = rand({kMediumElements});
  for (auto _ : state) benchmark::DoNotOptimize(x.sum());
  state.SetItemsProcessed(state.iterations() * kMediumElements);
}
BENCHMARK(sum_medium);

// max with indices along a dim of a [64, 256] float tensor: dim 1 reduces contiguous rows,
// dim 0 columns (Note [Extremum lanes], ops/reduce_minmax.cpp).
void max_dim(benchmark::State& state) {
  manual_seed(0);
  Tensor x = randn({64, kMediumElements / 64});
  const int64_t dim = state.range(0);
  for (auto _ : state) benchmark::DoNotOptimize(x.max(dim));
  state.SetItemsProcessed(state.iterations() * kMediumElements);
}
BENCHMARK(max_dim)->Arg(0)->Arg(1);

#ifdef STRATA_BENCH_WITH_TORCH
void torch_matmul(benchmark::State& state) {
  torch::set_num_threads(1);
  const int64_t n = state.range(0);
  torch::Tensor a = torch::rand({n, n}), b = torch::rand({n, n});
  for (auto _ : state) benchmark::DoNotOptimize(torch::matmul(a, b));
  state.SetItemsProcessed(state.iterations() * 2 * n * n * n);
}
BENCHMARK(torch_matmul)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

void torch_add_16m(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::Tensor a = torch::rand({kAddElements}), b = torch::rand({kAddElements});
  for (auto _ : state) benchmark::DoNotOptimize(torch::add(a, b));
  set_add_bytes(state, kAddElements);
}
BENCHMARK(torch_add_16m)->Unit(benchmark::kMillisecond);

void torch_add_medium(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::Tensor a = torch::rand({kMediumElements}), b = torch::rand({kMediumElements});
  for (auto _ : state) benchmark::DoNotOptimize(torch::add(a, b));
  set_add_bytes(state, kMediumElements);
}
BENCHMARK(torch_add_medium);

torch::Tensor torch_activation(bool channels_last) {
  torch::set_num_threads(1);
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({16, 64, 28, 28});
  return channels_last ? x.contiguous(torch::MemoryFormat::ChannelsLast) : x;
}

void torch_neg_layout(benchmark::State& state) {
  const torch::Tensor x = torch_activation(state.range(0) != 0);
  for (auto _ : state) benchmark::DoNotOptimize(torch::neg(x));
  state.SetItemsProcessed(state.iterations() * x.numel());
}
BENCHMARK(torch_neg_layout)->ArgName("channels_last")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void torch_add_layout(benchmark::State& state) {
  const torch::Tensor x = torch_activation(state.range(0) != 0), y = state.range(0) == 2 ? x.contiguous() : x.clone();
  for (auto _ : state) benchmark::DoNotOptimize(torch::add(x, y));
  state.SetItemsProcessed(state.iterations() * x.numel());
}
BENCHMARK(torch_add_layout)->ArgName("channels_last")->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

void torch_mean_hw_layout(benchmark::State& state) {
  const torch::Tensor x = torch_activation(state.range(0) != 0);
  for (auto _ : state) benchmark::DoNotOptimize(torch::mean(x, {2, 3}, /*keepdim=*/true));
  state.SetItemsProcessed(state.iterations() * x.numel());
}
BENCHMARK(torch_mean_hw_layout)->ArgName("channels_last")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void torch_where_scalar_other(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::Tensor condition = torch::randn({kMediumElements}).gt(0), x = torch::rand({kMediumElements});
  torch::Tensor zero = torch::zeros({});
  for (auto _ : state) benchmark::DoNotOptimize(torch::where(condition, x, zero));
  state.SetItemsProcessed(state.iterations() * kMediumElements);
}
BENCHMARK(torch_where_scalar_other);

void torch_sum_medium(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::Tensor x = torch::rand({kMediumElements});
  for (auto _ : state) benchmark::DoNotOptimize(x.sum());
  state.SetItemsProcessed(state.iterations() * kMediumElements);
}
BENCHMARK(torch_sum_medium);

void torch_max_dim(benchmark::State& state) {
  torch::set_num_threads(1);
  torch::Tensor x = torch::randn({64, kMediumElements / 64});
  const int64_t dim = state.range(0);
  for (auto _ : state) benchmark::DoNotOptimize(x.max(dim));
  state.SetItemsProcessed(state.iterations() * kMediumElements);
}
BENCHMARK(torch_max_dim)->Arg(0)->Arg(1);

void torch_add_broadcast_rows(benchmark::State& state) {
  torch::set_num_threads(1);
  const int64_t rows = state.range(0);
  torch::Tensor a = torch::rand({rows, 2}), b = torch::rand({2});
  for (auto _ : state) benchmark::DoNotOptimize(torch::add(a, b));
  state.SetItemsProcessed(state.iterations() * rows * 2);
}
BENCHMARK(torch_add_broadcast_rows)->Arg(1 << 16)->Arg(1 << 19)->Unit(benchmark::kMicrosecond);
#endif

std::vector<std::pair<std::string, std::string>> ratio_pairs() {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const char* n : {"64", "256", "1024"}) {
    pairs.emplace_back(std::string("matmul_strata/") + n, std::string("matmul_eigen/") + n);
    pairs.emplace_back(std::string("matmul_strata/") + n, std::string("torch_matmul/") + n);
  }
  pairs.emplace_back("add_inplace_strata", "add_loop_inplace");
  pairs.emplace_back("add_inplace_strata", "add_loop_preallocated");
  pairs.emplace_back("add_strata", "add_loop_fresh");
  pairs.emplace_back("add_strata", "add_inplace_strata");
  pairs.emplace_back("add_strata", "torch_add_16m");
  pairs.emplace_back("add_medium", "torch_add_medium");
  pairs.emplace_back("where_scalar_other", "torch_where_scalar_other");
  pairs.emplace_back("sum_medium", "torch_sum_medium");
  pairs.emplace_back("max_dim/0", "torch_max_dim/0");
  pairs.emplace_back("max_dim/1", "torch_max_dim/1");
  for (const char* rows : {"65536", "524288"}) {
    pairs.emplace_back(std::string("add_broadcast_rows/") + rows, std::string("add_contiguous_rows/") + rows);
    pairs.emplace_back(std::string("add_broadcast_rows/") + rows, std::string("torch_add_broadcast_rows/") + rows);
  }
  return pairs;
}

}  // namespace

int main(int argc, char** argv) { return strata::bench::run_with_ratios(argc, argv, ratio_pairs()); }
