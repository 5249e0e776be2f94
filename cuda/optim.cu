// CUDA kernels of ops/optim.cpp: _fused_sgd_ and _fused_adam_, bit-identical to the CPU's for
// float32 and float64 (see Note [Fused optimizer steps on CUDA] in optim_step.h), launched over
// tensor lists (see Note [Multi-tensor launches] there): the `.list` overloads launch over a
// whole list per dtype (Note [Multi-tensor optimizer steps] in ops/optim.cpp), and the
// per-tensor ops are lists of one.
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

// Runs launch(args, blocks, tensors) once per launch that the planner makes of `groups` (each
// group: Depth dense tensors of one parameter, undefined for an unused state); `tensors` are
// the indices into `groups` of the launch's slots.
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
    launch(args, static_cast<unsigned>(planned.blocks.size()), planned.tensors);
  }
}

// Runs fn on dense versions of each entry's tensors (themselves when already contiguous) and
// copies the written ones back, as ops/optim.cpp's with_contiguous.
template <size_t N, class Fn>
void with_contiguous(const std::vector<std::array<Tensor, N>>& entries, const Fn& fn) {
  std::vector<std::array<Tensor, N>> dense(entries.size());
  for (size_t e = 0; e < entries.size(); ++e)
    for (size_t i = 0; i < N; ++i)
      dense[e][i] = entries[e][i].defined() ? cuda::detail::dense(entries[e][i]) : Tensor();
  fn(dense);
  for (size_t e = 0; e < entries.size(); ++e)
    for (size_t i = 0; i < N; ++i)
      if (entries[e][i].defined()) cuda::detail::write_back(entries[e][i], dense[e][i]);
}

template <class Fn>
void visit_floating(ScalarType dtype, const Fn& fn) {
  if (dtype == kFloat32) fn.template operator()<float>();
  else if (dtype == kFloat64) fn.template operator()<double>();
  else if (dtype == kFloat16) fn.template operator()<Half>();
  else if (dtype == kBFloat16) fn.template operator()<BFloat16>();
}

// Calls fn.template operator()<T>(of_dtype, indices) once per floating dtype among the entries
// (by the params' dtype), with the entries of that dtype in order and their indices in
// `entries`: a launch serves one dtype.
template <size_t N, class Fn>
void for_each_dtype(const std::vector<std::array<Tensor, N>>& entries, const Fn& fn) {
  for (const ScalarType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    std::vector<std::array<Tensor, N>> of_dtype;
    std::vector<size_t> indices;
    for (size_t i = 0; i < entries.size(); ++i)
      if (entries[i][0].dtype() == dtype) of_dtype.push_back(entries[i]), indices.push_back(i);
    if (of_dtype.empty()) continue;
    visit_floating(dtype, [&]<class T>() { fn.template operator()<T>(of_dtype, indices); });
  }
}

// The params' device, current for the launches; nullopt for an empty list.
std::optional<int> device_of(const tensor_list& params) {
  if (params.empty()) return std::nullopt;
  return params[0].device().index();
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

// See Note [Multi-tensor optimizer steps] in ops/optim.cpp.
void fused_sgd_list_cuda(const tensor_list& params, const tensor_list& grads, const tensor_list& momentum_buffers,
                         double lr, double momentum, double dampening, double weight_decay, bool nesterov,
                         bool maximize, bool is_first_step) {
  const std::optional<int> device = device_of(params);
  if (!device) return;
  cuda::detail::DeviceScope scope(*device);
  const cudaStream_t stream = cuda::detail::current_native_stream(*device);
  std::vector<std::array<Tensor, 3>> entries;
  for (size_t i = 0; i < params.size(); ++i)
    entries.push_back({params[i], grads[i], momentum != 0 ? momentum_buffers[i] : Tensor()});
  with_contiguous<3>(entries, [&](const std::vector<std::array<Tensor, 3>>& dense) {
    for_each_dtype<3>(dense, [&]<class T>(const std::vector<std::array<Tensor, 3>>& of_dtype,
                                          const std::vector<size_t>&) {
      using C = compute_type_t<T>;
      const auto constants =
          cuda::detail::sgd_constants<C>(lr, momentum, dampening, weight_decay, nesterov, maximize, is_first_step);
      for_each_launch<3>(of_dtype, [&](const TensorListArgs<3>& args, unsigned blocks, const std::vector<int64_t>&) {
        if (momentum != 0) sgd_kernel<T, true><<<blocks, kThreads, 0, stream>>>(args, constants);
        else sgd_kernel<T, false><<<blocks, kThreads, 0, stream>>>(args, constants);
        cuda::detail::check_cuda(cudaGetLastError(), "_fused_sgd_");
      });
    });
  });
}

void fused_sgd_cuda(const Tensor& param, const Tensor& grad, const std::optional<Tensor>& momentum_buffer, double lr,
                    double momentum, double dampening, double weight_decay, bool nesterov, bool maximize,
                    bool is_first_step) {
  const tensor_list buffers = momentum != 0 ? tensor_list{*momentum_buffer} : tensor_list{};
  fused_sgd_list_cuda({param}, {grad}, buffers, lr, momentum, dampening, weight_decay, nesterov, maximize,
                      is_first_step);
}

// ---------------------------------------------------------------------------------------
// Adam: list entries (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq). The scalars that
// depend on the step come per slot, since entries may be at different steps.

template <class C>
struct AdamStepScalars {
  C step_size[kMaxTensors];
  C bias_correction2_sqrt[kMaxTensors];
};
static_assert(sizeof(TensorListArgs<5>) + sizeof(cuda::detail::AdamConstants<double>) +
                      sizeof(AdamStepScalars<double>) + 128 <= 4096,
              "kernel arguments stay within 4 KB");

template <class T, bool Amsgrad>
__global__ void __launch_bounds__(kThreads)
    adam_kernel(TensorListArgs<5> list, cuda::detail::AdamConstants<compute_type_t<T>> shared,
                AdamStepScalars<compute_type_t<T>> steps) {
  using C = compute_type_t<T>;
  using S = typename DeviceStorage<T>::type;
  const BlockRange range = block_range(list);
  cuda::detail::AdamConstants<C> k = shared;
  k.step_size = steps.step_size[range.slot];
  k.bias_correction2_sqrt = steps.bias_correction2_sqrt[range.slot];
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

// See Note [Multi-tensor optimizer steps] in ops/optim.cpp.
void fused_adam_list_cuda(const tensor_list& params, const tensor_list& grads, const tensor_list& exp_avgs,
                          const tensor_list& exp_avg_sqs, const tensor_list& max_exp_avg_sqs, IntArrayRef steps,
                          double lr, double beta1, double beta2, double weight_decay, double eps, bool amsgrad,
                          bool maximize, bool decoupled_weight_decay) {
  const std::optional<int> device = device_of(params);
  if (!device) return;
  cuda::detail::DeviceScope scope(*device);
  const cudaStream_t stream = cuda::detail::current_native_stream(*device);
  std::vector<std::array<Tensor, 5>> entries;
  for (size_t i = 0; i < params.size(); ++i)
    entries.push_back({params[i], grads[i], exp_avgs[i], exp_avg_sqs[i], amsgrad ? max_exp_avg_sqs[i] : Tensor()});
  with_contiguous<5>(entries, [&](const std::vector<std::array<Tensor, 5>>& dense) {
    for_each_dtype<5>(dense, [&]<class T>(const std::vector<std::array<Tensor, 5>>& of_dtype,
                                          const std::vector<size_t>& indices) {
      using C = compute_type_t<T>;
      const auto constants = cuda::detail::adam_constants<C>(1, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
                                                             decoupled_weight_decay);
      for_each_launch<5>(of_dtype, [&](const TensorListArgs<5>& args, unsigned blocks,
                                       const std::vector<int64_t>& slot_entries) {
        AdamStepScalars<C> scalars{};
        for (size_t slot = 0; slot < slot_entries.size(); ++slot) {
          const int64_t step = steps[indices[static_cast<size_t>(slot_entries[slot])]];
          const auto at_step = cuda::detail::adam_constants<C>(step, lr, beta1, beta2, weight_decay, eps, amsgrad,
                                                               maximize, decoupled_weight_decay);
          scalars.step_size[slot] = at_step.step_size;
          scalars.bias_correction2_sqrt[slot] = at_step.bias_correction2_sqrt;
        }
        if (amsgrad) adam_kernel<T, true><<<blocks, kThreads, 0, stream>>>(args, constants, scalars);
        else adam_kernel<T, false><<<blocks, kThreads, 0, stream>>>(args, constants, scalars);
        cuda::detail::check_cuda(cudaGetLastError(), "_fused_adam_");
      });
    });
  });
}

void fused_adam_cuda(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                     const std::optional<Tensor>& max_exp_avg_sq, int64_t step, double lr, double beta1, double beta2,
                     double weight_decay, double eps, bool amsgrad, bool maximize, bool decoupled_weight_decay) {
  const tensor_list max_sqs = amsgrad ? tensor_list{*max_exp_avg_sq} : tensor_list{};
  fused_adam_list_cuda({param}, {grad}, {exp_avg}, {exp_avg_sq}, max_sqs, IntArrayRef(step), lr, beta1, beta2, weight_decay, eps,
                       amsgrad, maximize, decoupled_weight_decay);
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  m.impl("_fused_sgd_", detail::checked_update<&shapes::_fused_sgd_in_place, &fused_sgd_cuda>());
  m.impl("_fused_adam_", detail::checked_update<&shapes::_fused_adam_in_place, &fused_adam_cuda>());
  m.impl("_fused_sgd_.list", detail::checked_update<&shapes::_fused_sgd_list_in_place, &fused_sgd_list_cuda>());
  m.impl("_fused_adam_.list", detail::checked_update<&shapes::_fused_adam_list_in_place, &fused_adam_list_cuda>());
}

}  // namespace strata
