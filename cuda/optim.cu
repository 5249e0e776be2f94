// CUDA kernels of ops/optim.cpp: _fused_sgd_ and _fused_adam_, bit-identical to the CPU's for
// float32 and float64 (see Note [Fused optimizer steps on CUDA] in optim_step.h), launched over
// tensor lists (see Note [Multi-tensor launches] there). The ops' schemas take one parameter
// per call, so today each call is a list of one.
#include <array>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include <strata/cuda/copy.h>
#include <strata/cuda/dense.h>
#include <strata/cuda/elementwise.cuh>
#include <strata/cuda/optim_step.h>
#include <strata/cuda/runtime.h>
#include <strata/dispatch/library.h>
#include <strata/ops/shapes/optim.h>
#include <strata/ops/structured.h>

namespace strata {
namespace {

using cuda::detail::DeviceStorage;


// ---------------------------------------------------------------------------------------
// Multi-tensor metadata. See Note [Multi-tensor launches] in optim_step.h.

constexpr int kMaxTensors = 24;
constexpr int kMaxBlocks = 320;
constexpr int64_t kChunk = 65536;
constexpr int kThreads = 512;

// Depth tensors per entry (param, grad, state...); an unused state's address is null.
template <int Depth>
struct TensorListArgs {
  void* addresses[Depth][kMaxTensors];
  int64_t numels[kMaxTensors];
  int32_t block_chunk[kMaxBlocks];
  uint8_t block_slot[kMaxBlocks];
};
static_assert(sizeof(TensorListArgs<5>) + 128 <= 4096, "kernel arguments stay within 4 KB");

// The elements [begin, end) that this block updates, and its tensor slot.
struct BlockRange {
  int slot;
  int64_t begin, end;
};

template <int Depth>
__device__ __forceinline__ BlockRange block_range(const TensorListArgs<Depth>& list) {
  const int slot = list.block_slot[blockIdx.x];
  const int64_t begin = static_cast<int64_t>(list.block_chunk[blockIdx.x]) * kChunk;
  const int64_t end = begin + kChunk < list.numels[slot] ? begin + kChunk : list.numels[slot];
  return {slot, begin, end};
}

// Runs launch(args, blocks) once per launch that the planner makes of `groups` (each group:
// Depth dense tensors of one parameter, undefined for an unused state).
template <int Depth, class Launch>
void for_each_launch(const std::vector<std::array<Tensor, Depth>>& groups, const Launch& launch) {
  std::vector<int64_t> numels;
  for (const auto& group : groups) numels.push_back(group[0].numel());
  for (const auto& planned : cuda::detail::plan_multi_tensor(numels, kChunk, kMaxTensors, kMaxBlocks)) {
    TensorListArgs<Depth> args{};
    for (size_t slot = 0; slot < planned.tensors.size(); ++slot) {
      const auto& group = groups[static_cast<size_t>(planned.tensors[slot])];
      for (int k = 0; k < Depth; ++k) args.addresses[k][slot] = group[k].defined() ? group[k].data_ptr() : nullptr;
      args.numels[slot] = group[0].numel();
    }
    for (size_t block = 0; block < planned.blocks.size(); ++block) {
      STRATA_CHECK(planned.blocks[block].second <= INT32_MAX, "[fused optimizer] tensor too large");
      args.block_slot[block] = static_cast<uint8_t>(planned.blocks[block].first);
      args.block_chunk[block] = static_cast<int32_t>(planned.blocks[block].second);
    }
    launch(args, static_cast<unsigned>(planned.blocks.size()));
  }
}

// Runs fn on dense versions of `tensors` (themselves when already contiguous) and copies the
// written ones back, as ops/optim.cpp's with_contiguous.
template <size_t N, class Fn>
void with_contiguous(const std::array<Tensor, N>& tensors, const Fn& fn) {
  std::array<Tensor, N> dense;
  for (size_t i = 0; i < N; ++i) dense[i] = tensors[i].defined() ? cuda::detail::dense(tensors[i]) : Tensor();
  fn(dense);
  for (size_t i = 0; i < N; ++i)
    if (tensors[i].defined()) cuda::detail::write_back(tensors[i], dense[i]);
}

template <class Fn>
void visit_floating(ScalarType dtype, const Fn& fn) {
  if (dtype == kFloat32) fn.template operator()<float>();
  else if (dtype == kFloat64) fn.template operator()<double>();
  else if (dtype == kFloat16) fn.template operator()<Half>();
  else if (dtype == kBFloat16) fn.template operator()<BFloat16>();
}

// ---------------------------------------------------------------------------------------
// SGD: list entries (param, grad, momentum_buffer).

template <class T, bool Momentum>
__global__ void __launch_bounds__(kThreads) sgd_kernel(TensorListArgs<3> list, cuda::detail::SgdConstants<compute_type_t<T>> k) {
  using C = compute_type_t<T>;
  using S = typename DeviceStorage<T>::type;
  const BlockRange range = block_range(list);
  auto* param = static_cast<S*>(list.addresses[0][range.slot]);
  const auto* grad = static_cast<const S*>(list.addresses[1][range.slot]);
  auto* buffer = static_cast<S*>(list.addresses[2][range.slot]);
  for (int64_t i = range.begin + threadIdx.x; i < range.end; i += blockDim.x) {
    const C b = Momentum ? cuda::detail::load<T>(buffer, i) : C(0);
    const auto e = cuda::detail::sgd_step<C, Momentum>(cuda::detail::load<T>(param, i), cuda::detail::load<T>(grad, i), b, k);
    if constexpr (Momentum) cuda::detail::store<T>(buffer, i, e.buffer);
    cuda::detail::store<T>(param, i, e.param);
  }
}

void fused_sgd_cuda(const Tensor& param, const Tensor& grad, const std::optional<Tensor>& momentum_buffer, double lr,
                    double momentum, double dampening, double weight_decay, bool nesterov, bool maximize,
                    bool is_first_step) {
  const int device = param.device().index();
  cuda::detail::DeviceScope scope(device);
  const cudaStream_t stream = cuda::detail::current_native_stream(device);
  const Tensor buffer = momentum != 0 ? *momentum_buffer : Tensor();
  with_contiguous<3>({param, grad, buffer}, [&](const std::array<Tensor, 3>& dense) {
    visit_floating(param.dtype(), [&]<class T>() {
      using C = compute_type_t<T>;
      const auto constants =
          cuda::detail::sgd_constants<C>(lr, momentum, dampening, weight_decay, nesterov, maximize, is_first_step);
      for_each_launch<3>({dense}, [&](const TensorListArgs<3>& args, unsigned blocks) {
        if (momentum != 0) sgd_kernel<T, true><<<blocks, kThreads, 0, stream>>>(args, constants);
        else sgd_kernel<T, false><<<blocks, kThreads, 0, stream>>>(args, constants);
        cuda::detail::check_cuda(cudaGetLastError(), "_fused_sgd_");
      });
    });
  });
}

// ---------------------------------------------------------------------------------------
// Adam: list entries (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq).

template <class T, bool Amsgrad>
__global__ void __launch_bounds__(kThreads) adam_kernel(TensorListArgs<5> list, cuda::detail::AdamConstants<compute_type_t<T>> k) {
  using C = compute_type_t<T>;
  using S = typename DeviceStorage<T>::type;
  const BlockRange range = block_range(list);
  auto* param = static_cast<S*>(list.addresses[0][range.slot]);
  const auto* grad = static_cast<const S*>(list.addresses[1][range.slot]);
  auto* exp_avg = static_cast<S*>(list.addresses[2][range.slot]);
  auto* exp_avg_sq = static_cast<S*>(list.addresses[3][range.slot]);
  auto* max_exp_avg_sq = static_cast<S*>(list.addresses[4][range.slot]);
  for (int64_t i = range.begin + threadIdx.x; i < range.end; i += blockDim.x) {
    const C max_old = Amsgrad ? cuda::detail::load<T>(max_exp_avg_sq, i) : C(0);
    const auto e = cuda::detail::adam_step<C, Amsgrad>(cuda::detail::load<T>(param, i), cuda::detail::load<T>(grad, i),
                                                        cuda::detail::load<T>(exp_avg, i),
                                                        cuda::detail::load<T>(exp_avg_sq, i), max_old, k);
    cuda::detail::store<T>(exp_avg, i, e.exp_avg);
    cuda::detail::store<T>(exp_avg_sq, i, e.exp_avg_sq);
    if constexpr (Amsgrad) cuda::detail::store<T>(max_exp_avg_sq, i, e.max_exp_avg_sq);
    cuda::detail::store<T>(param, i, e.param);
  }
}

void fused_adam_cuda(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                     const std::optional<Tensor>& max_exp_avg_sq, int64_t step, double lr, double beta1, double beta2,
                     double weight_decay, double eps, bool amsgrad, bool maximize, bool decoupled_weight_decay) {
  const int device = param.device().index();
  cuda::detail::DeviceScope scope(device);
  const cudaStream_t stream = cuda::detail::current_native_stream(device);
  const Tensor max_sq = amsgrad ? *max_exp_avg_sq : Tensor();
  with_contiguous<5>({param, grad, exp_avg, exp_avg_sq, max_sq}, [&](const std::array<Tensor, 5>& dense) {
    visit_floating(param.dtype(), [&]<class T>() {
      using C = compute_type_t<T>;
      const auto constants = cuda::detail::adam_constants<C>(step, lr, beta1, beta2, weight_decay, eps, amsgrad,
                                                             maximize, decoupled_weight_decay);
      for_each_launch<5>({dense}, [&](const TensorListArgs<5>& args, unsigned blocks) {
        if (amsgrad) adam_kernel<T, true><<<blocks, kThreads, 0, stream>>>(args, constants);
        else adam_kernel<T, false><<<blocks, kThreads, 0, stream>>>(args, constants);
        cuda::detail::check_cuda(cudaGetLastError(), "_fused_adam_");
      });
    });
  });
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  m.impl("_fused_sgd_", detail::checked_update<&shapes::_fused_sgd_in_place, &fused_sgd_cuda>());
  m.impl("_fused_adam_", detail::checked_update<&shapes::_fused_adam_in_place, &fused_adam_cuda>());
}

}  // namespace strata
