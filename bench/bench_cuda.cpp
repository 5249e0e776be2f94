// CUDA benchmarks (built with the CUDA backend; run on a machine with a GPU, e.g. by
// scripts/gpu_check.sh). Each row has its reference in the same run:
//   matmul float32 / bfloat16, n = 4096 and 8192: strata vs cublasGemmEx on the same buffers
//     (target: cuBLAS time / strata time >= 0.97, i.e. the ratio printed <= 1.03);
//   large add: strata's out-of-place add vs a device-to-device copy moving as many bytes
//     (target: bandwidth >= 0.9 of the copy's, i.e. the ratio printed <= 1.11);
//   tiny op: host time per add of two one-element CUDA tensors (target <= 4 us; PyTorch eager
//     takes ~5-10 us), beside the same add on the CPU and one bare runtime call (a memset
//     enqueued on the stream), with the add into an existing output and the allocation alone.
// GPU times come from CUDA events around each iteration (manual time).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <strata/strata.h>

#include <cstdio>
#include <cstdlib>

#include "bench_util.h"

using namespace strata;

namespace {

void check(cudaError_t status) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "bench_cuda: %s\n", cudaGetErrorString(status));
    std::exit(1);
  }
}

// Times `body` on the GPU with events on the current (default) stream.
template <class Body>
void time_on_gpu(benchmark::State& state, Body&& body) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start));
  check(cudaEventCreate(&stop));
  body();  // warm-up (cuBLAS handles, cached blocks)
  check(cudaDeviceSynchronize());
  for (auto _ : state) {
    check(cudaEventRecord(start, nullptr));
    body();
    check(cudaEventRecord(stop, nullptr));
    check(cudaEventSynchronize(stop));
    float milliseconds = 0;
    check(cudaEventElapsedTime(&milliseconds, start, stop));
    state.SetIterationTime(milliseconds / 1000.0);
  }
  check(cudaEventDestroy(start));
  check(cudaEventDestroy(stop));
}

ScalarType dtype_of(int64_t code) { return code == 0 ? kFloat32 : kBFloat16; }

void BM_matmul_strata(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto options = TensorOptions().device(kCUDA).dtype(dtype_of(state.range(1)));
  const Tensor a = randn({n, n}, options), b = randn({n, n}, options);
  Tensor c = empty({n, n}, options);
  time_on_gpu(state, [&] { matmul_out(c, a, b); });
  state.counters["TFLOP/s"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}

void BM_matmul_cublas(benchmark::State& state) {
  const int64_t n = state.range(0);
  const ScalarType dtype = dtype_of(state.range(1));
  const auto options = TensorOptions().device(kCUDA).dtype(dtype);
  const Tensor a = randn({n, n}, options), b = randn({n, n}, options), c = empty({n, n}, options);
  cublasHandle_t handle;
  cublasCreate(&handle);
  const cudaDataType type = dtype == kFloat32 ? CUDA_R_32F : CUDA_R_16BF;
  const float one = 1, zero = 0;
  const int size = static_cast<int>(n);
  // Row-major C = A B is column-major C^T = B^T A^T: pass B first.
  time_on_gpu(state, [&] {
    cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &one, b.data_ptr(), type, size, a.data_ptr(),
                 type, size, &zero, c.data_ptr(), type, size, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  });
  cublasDestroy(handle);
  state.counters["TFLOP/s"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}

constexpr int64_t kLargeAdd = int64_t{1} << 26;  // 64M floats: 768 MiB moved per add

void BM_add_large_strata(benchmark::State& state) {
  const auto options = TensorOptions().device(kCUDA);
  const Tensor a = ones({kLargeAdd}, options), b = ones({kLargeAdd}, options);
  time_on_gpu(state, [&] { (void)add(a, b); });
  state.SetBytesProcessed(state.iterations() * kLargeAdd * 12);
}

// The reference of the bandwidth rows: a device-to-device copy of `count` floats, counted as
// `bytes` per iteration (what the measured op moves).
void time_device_copy(benchmark::State& state, int64_t count, int64_t bytes) {
  const auto options = TensorOptions().device(kCUDA);
  const Tensor source = ones({count}, options), destination = empty({count}, options);
  time_on_gpu(state, [&] {
    check(cudaMemcpyAsync(destination.data_ptr(), source.data_ptr(), static_cast<size_t>(count) * 4,
                          cudaMemcpyDeviceToDevice, nullptr));
  });
  state.SetBytesProcessed(state.iterations() * bytes);
}

// A copy of 1.5x the floats moves the same bytes as the add (read 2, write 1).
void BM_add_large_copy_reference(benchmark::State& state) { time_device_copy(state, kLargeAdd * 3 / 2, kLargeAdd * 12); }

// A whole-tensor sum of 64M floats reads 256 MiB; split over the GPU's blocks (Note [Split
// reductions] in cuda/reduce_plan.h) it should take about as long as a device-to-device copy
// moving the same bytes (half the floats read, half written).
void BM_sum_large_strata(benchmark::State& state) {
  const Tensor a = ones({kLargeAdd}, TensorOptions().device(kCUDA));
  time_on_gpu(state, [&] { (void)a.sum(); });
  state.SetBytesProcessed(state.iterations() * kLargeAdd * 4);
}

void BM_sum_large_copy_reference(benchmark::State& state) { time_device_copy(state, kLargeAdd / 2, kLargeAdd * 4); }

// Host time per call: the GPU runs behind; every 256 calls a synchronize, not timed, keeps the
// launch queue short (a full queue would make the host wait on the GPU).
template <class Call>
void host_time(benchmark::State& state, Call&& call) {
  int64_t calls = 0;
  for (auto _ : state) {
    call();
    if (++calls % 256 == 0) {
      state.PauseTiming();
      cuda::synchronize();
      state.ResumeTiming();
    }
  }
  cuda::synchronize();
}

void BM_tiny_add_cuda_host_time(benchmark::State& state) {
  const auto options = TensorOptions().device(kCUDA);
  const Tensor a = ones({1}, options), b = ones({1}, options);
  host_time(state, [&] { benchmark::DoNotOptimize(add(a, b)); });
}

// Where the tiny add's host time goes: the same add into an existing tensor (no allocation),
// and the allocation alone.
void BM_tiny_add_out_cuda_host_time(benchmark::State& state) {
  const auto options = TensorOptions().device(kCUDA);
  const Tensor a = ones({1}, options), b = ones({1}, options), c = empty({1}, options);
  host_time(state, [&] { add_out(c, a, b); });
}

void BM_tiny_empty_cuda_host_time(benchmark::State& state) {
  const auto options = TensorOptions().device(kCUDA);
  host_time(state, [&] { benchmark::DoNotOptimize(empty({1}, options)); });
}

// The floor: one asynchronous runtime call that enqueues work (a 4-byte memset) on the stream.
void BM_tiny_runtime_call_reference(benchmark::State& state) {
  void* data = nullptr;
  check(cudaMalloc(&data, 4));
  host_time(state, [&] { check(cudaMemsetAsync(data, 0, 4, nullptr)); });
  check(cudaFree(data));
}

void BM_tiny_add_cpu(benchmark::State& state) {
  const Tensor a = ones({1}), b = ones({1});
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
}

// A launch-bound model (issue 16): 100 x tanh(y * 0.5 + 0.1) on 8 floats, each call waited
// for, eagerly and as one CUDA graph replay.
tensor_list tanh_chain(const tensor_list& in) {
  Tensor y = in[0];
  for (int i = 0; i < 100; ++i) y = tanh(y * 0.5 + 0.1);
  return {y};
}

void BM_tanh_chain_cuda_eager(benchmark::State& state) {
  NoGradGuard no_grad;
  const tensor_list inputs{ones({8}, TensorOptions().device(kCUDA))};
  for (auto _ : state) {
    benchmark::DoNotOptimize(tanh_chain(inputs));
    cuda::synchronize();
  }
}

void BM_tanh_chain_cuda_graph(benchmark::State& state) {
  NoGradGuard no_grad;
  const tensor_list inputs{ones({8}, TensorOptions().device(kCUDA))};
  const jit::CudaGraph captured(jit::trace(tanh_chain, inputs), inputs);
  for (auto _ : state) {
    benchmark::DoNotOptimize(captured.run(inputs));
    cuda::synchronize();
  }
}

}  // namespace

BENCHMARK(BM_matmul_strata)->ArgsProduct({{4096, 8192}, {0, 1}})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matmul_cublas)->ArgsProduct({{4096, 8192}, {0, 1}})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_add_large_strata)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_add_large_copy_reference)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_sum_large_strata)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_sum_large_copy_reference)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_tiny_add_cuda_host_time);
BENCHMARK(BM_tiny_add_out_cuda_host_time);
BENCHMARK(BM_tiny_empty_cuda_host_time);
BENCHMARK(BM_tiny_runtime_call_reference);
BENCHMARK(BM_tiny_add_cpu);
BENCHMARK(BM_tanh_chain_cuda_eager)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_tanh_chain_cuda_graph)->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  if (!cuda::is_available()) {
    std::fprintf(stderr, "bench_cuda: no usable GPU; nothing to measure\n");
    return 0;
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const char* size : {"4096", "8192"})
    for (const char* dtype : {"0", "1"}) {
      const std::string args = std::string("/") + size + "/" + dtype + "/manual_time";
      pairs.emplace_back("BM_matmul_strata" + args, "BM_matmul_cublas" + args);
    }
  pairs.emplace_back("BM_add_large_strata/manual_time", "BM_add_large_copy_reference/manual_time");
  pairs.emplace_back("BM_sum_large_strata/manual_time", "BM_sum_large_copy_reference/manual_time");
  pairs.emplace_back("BM_tiny_add_cuda_host_time", "BM_tiny_add_cpu");
  pairs.emplace_back("BM_tiny_add_cuda_host_time", "BM_tiny_runtime_call_reference");
  pairs.emplace_back("BM_tiny_add_out_cuda_host_time", "BM_tiny_runtime_call_reference");
  pairs.emplace_back("BM_tiny_empty_cuda_host_time", "BM_tiny_runtime_call_reference");
  pairs.emplace_back("BM_tanh_chain_cuda_graph", "BM_tanh_chain_cuda_eager");
  return strata::bench::run_with_ratios(argc, argv, std::move(pairs));
}
