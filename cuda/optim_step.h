#pragma once
// Internal to cuda/: one element of the fused SGD and Adam steps (ops/optim.cpp), written once
// for the host and the device, and the multi-tensor chunking of cuda/optim.cu. No CUDA header:
// the host tests run these against the CPU kernels bit for bit.
//
// Note [Fused optimizer steps on CUDA]
// The CUDA steps must round exactly as the CPU's (Note [Fused optimizer steps] in
// ops/optim.cpp): the same operations in the same order, a fused multiply-add exactly where the
// CPU calls std::fma, and no other fusion. nvcc fuses a * b + c by default (--fmad=true), so
// every operation here goes through the `rn` helpers, which on the device are the intrinsics
// that nvcc never contracts (__fmul_rn, __fadd_rn, __fdiv_rn, __fsqrt_rn, __fmaf_rn and the
// double ones) and on the host the plain operators (this header turns GCC's contraction off
// for itself where nvcc does not read it; its users on the host must too, as
// tests/cuda/test_optim_step.cpp does). The constants are computed on the host in double
// exactly as the CPU computes them (the one product among them is kept apart from its
// subtraction by a volatile, since nvcc's host compiler may contract it). So for
// float32 and float64 a CUDA step is bit-identical to the CPU's; float16 and bfloat16 compute
// in float and round once per stored value, as the CPU does.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <strata/cuda/indexing.h>

#if !defined(__CUDACC__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

namespace strata::cuda::detail {

namespace rn {  // correctly rounded single operations that the compiler may not fuse
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ float sqrt(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ float fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double div(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ double sqrt(double a) { return __dsqrt_rn(a); }
__device__ __forceinline__ double fma(double a, double b, double c) { return __fma_rn(a, b, c); }
#else
template <class C> inline C mul(C a, C b) { return a * b; }
template <class C> inline C add(C a, C b) { return a + b; }
template <class C> inline C sub(C a, C b) { return a - b; }
template <class C> inline C div(C a, C b) { return a / b; }
template <class C> inline C sqrt(C a) { return std::sqrt(a); }
template <class C> inline C fma(C a, C b, C c) { return std::fma(a, b, c); }
#endif
}  // namespace rn

// ---------------------------------------------------------------------------------------
// SGD: ops/optim.cpp's SgdConstants and sgd_range, one element.

template <class C>
struct SgdConstants {
  C lr, momentum, keep, weight_decay, grad_sign;
  bool use_weight_decay, nesterov, is_first_step;
};

template <class C>
SgdConstants<C> sgd_constants(double lr, double momentum, double dampening, double weight_decay, bool nesterov,
                              bool maximize, bool is_first_step) {
  return {static_cast<C>(lr),
          static_cast<C>(momentum),
          static_cast<C>(1 - dampening),
          static_cast<C>(weight_decay),
          maximize ? C(-1) : C(1),
          weight_decay != 0,
          nesterov,
          is_first_step};
}

template <class C>
struct SgdElement {
  C param, buffer;  // buffer: written only with momentum
};

template <class C, bool Momentum>
STRATA_HOST_DEVICE inline SgdElement<C> sgd_step(C p, C grad, C buffer, const SgdConstants<C>& k) {
  const C g = rn::mul(grad, k.grad_sign);
  const C g_decayed = rn::fma(k.weight_decay, p, g);  // grad.add(param, alpha=weight_decay)
  C d = k.use_weight_decay ? g_decayed : g;
  C b = buffer;
  if constexpr (Momentum) {
    // The first buffer is d itself; then buf.mul_(momentum).add_(d, alpha=1 - dampening).
    const C b_next = rn::fma(k.keep, d, rn::mul(buffer, k.momentum));
    b = k.is_first_step ? d : b_next;
    const C d_nesterov = rn::fma(k.momentum, b, d);  // d.add(buf, alpha=momentum)
    d = k.nesterov ? d_nesterov : b;
  }
  return {rn::fma(-k.lr, d, p), b};  // param.add_(d, alpha=-lr)
}

// ---------------------------------------------------------------------------------------
// Adam: ops/optim.cpp's adam_scalars, adam_loop's constants and adam_range, one element.

template <class C>
struct AdamConstants {
  C lerp_coeff, beta2, one_minus_beta2, weight_decay, eps, step_size, bias_correction2_sqrt, param_scale, grad_sign;
  bool small_weight, l2_weight_decay, amsgrad;
};

template <class C>
AdamConstants<C> adam_constants(int64_t step, double lr, double beta1, double beta2, double weight_decay, double eps,
                                 bool amsgrad, bool maximize, bool decoupled_weight_decay) {
  const double steps = static_cast<double>(step);
  const double bias_correction1 = 1 - std::pow(beta1, steps);
  const double bias_correction2 = 1 - std::pow(beta2, steps);
  const volatile double decay = lr * weight_decay;  // rounded on its own, as the CPU's -ffp-contract=off
  const double step_size = lr / bias_correction1, param_scale = 1 - decay;
  const C weight = static_cast<C>(1 - beta1);
  const bool small_weight = std::abs(weight) < C(0.5);  // PyTorch's two-sided lerp
  return {small_weight ? weight : weight - 1,
          static_cast<C>(beta2),
          static_cast<C>(1 - beta2),
          static_cast<C>(weight_decay),
          static_cast<C>(eps),
          static_cast<C>(step_size),
          static_cast<C>(std::sqrt(bias_correction2)),
          decoupled_weight_decay ? static_cast<C>(param_scale) : C(1),
          maximize ? C(-1) : C(1),
          small_weight,
          weight_decay != 0 && !decoupled_weight_decay,
          amsgrad};
}

template <class C>
struct AdamElement {
  C param, exp_avg, exp_avg_sq, max_exp_avg_sq;  // max_exp_avg_sq: written only with amsgrad
};

template <class C, bool Amsgrad>
STRATA_HOST_DEVICE inline AdamElement<C> adam_step(C p_old, C g_raw, C m_old, C v_old, C max_old,
                                                   const AdamConstants<C>& k) {
  const C g_signed = rn::mul(g_raw, k.grad_sign);  // -1 when maximizing: exact
  const C p = rn::mul(p_old, k.param_scale);       // 1 unless AdamW's decay: exact
  const C g_decayed = rn::fma(k.weight_decay, p, g_signed);
  const C g = k.l2_weight_decay ? g_decayed : g_signed;
  const C m = rn::fma(k.lerp_coeff, rn::sub(g, m_old), k.small_weight ? m_old : g);  // ATen's lerp
  // exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
  const C v_new = rn::fma(rn::mul(k.one_minus_beta2, g), g, rn::mul(v_old, k.beta2));
  C v = v_new;
  if constexpr (Amsgrad) v = max_old < v_new ? v_new : max_old;  // std::max(max_old, v_new)
  const C denom = rn::add(rn::div(rn::sqrt(v), k.bias_correction2_sqrt), k.eps);
  const C param = rn::add(p, rn::div(rn::mul(-k.step_size, m), denom));  // addcdiv_(m, denom, -step_size)
  return {param, m, v_new, v};
}

// ---------------------------------------------------------------------------------------
// Note [Multi-tensor launches]
// One kernel launch updates many tensors: each block takes one chunk of kChunk elements of
// one tensor, and the launch's metadata (the tensors' addresses and sizes, and which tensor
// and chunk each block takes) travels in the kernel's arguments, as in PyTorch's
// multi_tensor_apply, so no host-to-device copy is needed and nothing outlives the launch.
// Arguments are limited (4 KB here), so a launch holds at most kMaxTensors tensors and
// kMaxBlocks blocks; plan_multi_tensor splits a list into as many launches as that takes,
// a tensor's chunks continuing in the next launch when one fills.

struct MultiTensorLaunch {
  std::vector<int64_t> tensors;                   // indices into the list, one per slot
  std::vector<std::pair<int, int64_t>> blocks;    // (slot, chunk) per block
};

inline std::vector<MultiTensorLaunch> plan_multi_tensor(std::span<const int64_t> numels, int64_t chunk_size,
                                                        int max_tensors, int max_blocks) {
  std::vector<MultiTensorLaunch> launches(1);
  for (size_t tensor = 0; tensor < numels.size(); ++tensor) {
    if (numels[tensor] == 0) continue;
    const int64_t chunks = (numels[tensor] + chunk_size - 1) / chunk_size;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      MultiTensorLaunch* launch = &launches.back();
      const bool new_slot = chunk == 0 || launch->tensors.empty();
      const bool full = static_cast<int>(launch->blocks.size()) == max_blocks ||
                        (new_slot && static_cast<int>(launch->tensors.size()) == max_tensors);
      if (full) launch = &launches.emplace_back();
      if (chunk == 0 || launch->tensors.empty()) launch->tensors.push_back(static_cast<int64_t>(tensor));
      launch->blocks.push_back({static_cast<int>(launch->tensors.size()) - 1, chunk});
    }
  }
  if (launches.back().blocks.empty()) launches.pop_back();
  return launches;
}

}  // namespace strata::cuda::detail

#if !defined(__CUDACC__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
