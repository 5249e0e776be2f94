#pragma once
// Internal to cuda/ (.cu files only): atomic accumulation for the kernels
// that gather and scatter (index_select, index_add, gather, scatter_add, max_pool2d's backward).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include <strata/cuda/elementwise.cuh>
#include <strata/cuda/index_check.cuh>

namespace strata::cuda::detail {

// Integer arithmetic that wraps like the CPU's detail::wrapping_* (no signed overflow), and
// float products that nvcc may not fuse with a later add (the CPU rounds the product first).
template <class C>
__device__ __forceinline__ C device_wrapping_mul(C x, C y) {
  if constexpr (std::is_same_v<C, float>) return __fmul_rn(x, y);
  else if constexpr (std::is_same_v<C, double>) return __dmul_rn(x, y);
  else if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
    return static_cast<C>(static_cast<std::make_unsigned_t<C>>(x) * static_cast<std::make_unsigned_t<C>>(y));
  else return static_cast<C>(x * y);
}

// old + addend in the compute type, rounded to T: the CPU's T(wrapping_add(C(old), addend)).
template <class T>
__device__ __forceinline__ typename DeviceStorage<T>::type accumulated(typename DeviceStorage<T>::type old,
                                                                      compute_type_t<T> addend) {
  using C = compute_type_t<T>;
  if constexpr (std::is_same_v<T, Half>) return __float2half_rn(__fadd_rn(__half2float(old), addend));
  else if constexpr (std::is_same_v<T, BFloat16>) return __float2bfloat16_rn(__fadd_rn(__bfloat162float(old), addend));
  else if constexpr (std::is_same_v<T, float>) return __fadd_rn(old, addend);
  else if constexpr (std::is_same_v<T, double>) return __dadd_rn(old, addend);
  else if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
    return static_cast<T>(static_cast<std::make_unsigned_t<C>>(old) + static_cast<std::make_unsigned_t<C>>(addend));
  else return static_cast<T>(old + addend);
}

// Note [Atomic accumulation]
// Scatters add into memory that several threads may hit (duplicate indices, overlapping pool
// windows). Each add rounds exactly as the CPU's serial loop does (T(C(old) + addend)); only
// the order of the adds differs, so integer and bool results are exact, and floating ones may
// differ from the CPU's in the last bits where one element receives several values.
// float, double, int32 and int64 use the hardware atomicAdd (integers through their unsigned
// twin, which wraps). The other dtypes (the 8- and 16-bit ones, bool: an add is an or) use a
// compare-and-swap loop on the aligned 32-bit word holding the element, replacing only its
// bytes; the word stays inside the allocation because CUDA allocations are aligned to far
// more than 4 bytes. float16 and bfloat16 thus round old + addend once, in float, per add,
// where atomicAdd(__half) would first round the addend to 16 bits.
template <class T>
__device__ void atomic_accumulate(typename DeviceStorage<T>::type* address, compute_type_t<T> addend) {
  using S = typename DeviceStorage<T>::type;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    atomicAdd(address, addend);
  } else if constexpr (std::is_same_v<T, int32_t>) {
    atomicAdd(reinterpret_cast<unsigned int*>(address), static_cast<unsigned int>(addend));
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(address), static_cast<unsigned long long>(addend));
  } else {
    static_assert(sizeof(S) <= 2, "4- and 8-byte dtypes use atomicAdd");
    const auto location = reinterpret_cast<uintptr_t>(address);
    auto* word = reinterpret_cast<unsigned int*>(location & ~uintptr_t{3});
    const unsigned int shift = static_cast<unsigned int>(location & 3) * 8;
    const unsigned int mask = ((1u << (8 * sizeof(S))) - 1u) << shift;
    using Bits = std::conditional_t<sizeof(S) == 1, uint8_t, uint16_t>;
    unsigned int observed = *word, expected = 0;
    do {
      expected = observed;
      const auto old_bits = static_cast<Bits>((expected & mask) >> shift);
      S old;
      memcpy(&old, &old_bits, sizeof(S));
      const S next = accumulated<T>(old, addend);
      Bits next_bits = 0;
      memcpy(&next_bits, &next, sizeof(S));
      const unsigned int replaced = (expected & ~mask) | ((static_cast<unsigned int>(next_bits) << shift) & mask);
      observed = atomicCAS(word, expected, replaced);
    } while (observed != expected);
  }
}

}  // namespace strata::cuda::detail
