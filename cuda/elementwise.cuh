#pragma once
// Internal to cuda/ (.cu files only): elementwise kernels over any strides and broadcasting,
// for every dtype. See Note [Elementwise launches] in operands.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <strata/cuda/indexing.h>
#include <strata/cuda/operands.h>
#include <strata/cuda/runtime.h>
#include <strata/tensor/scalar_type.h>
#include <strata/tensor/tensor.h>

namespace strata::cuda::detail {

// strata's 16-bit floats are bit-compatible with CUDA's; kernels compute them in float.
template <class T>
struct DeviceStorage {
  using type = T;
};
template <>
struct DeviceStorage<Half> {
  using type = __half;
};
template <>
struct DeviceStorage<BFloat16> {
  using type = __nv_bfloat16;
};

template <class T>
__device__ __forceinline__ compute_type_t<T> load(const void* base, int64_t offset) {
  const auto value = static_cast<const typename DeviceStorage<T>::type*>(base)[offset];
  if constexpr (std::is_same_v<T, Half>) return __half2float(value);
  else if constexpr (std::is_same_v<T, BFloat16>) return __bfloat162float(value);
  else return value;
}

template <class T, class V>
__device__ __forceinline__ void store(void* base, int64_t offset, V value) {
  auto* data = static_cast<typename DeviceStorage<T>::type*>(base);
  if constexpr (std::is_same_v<T, Half>) data[offset] = __float2half_rn(static_cast<float>(value));
  else if constexpr (std::is_same_v<T, BFloat16>) data[offset] = __float2bfloat16_rn(static_cast<float>(value));
  else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> && sizeof(T) < 8 && std::is_floating_point_v<V>)
    data[offset] = static_cast<T>(static_cast<int64_t>(value));  // Note [Floating to narrow integer] (ops/elementwise.h)
  else data[offset] = static_cast<T>(value);
}

template <int N>
struct Pointers {
  void* data[N];
};

template <class F, class Out, class... In, size_t... K>
__device__ __forceinline__ void apply_at_impl(const F& f, const Pointers<1 + sizeof...(In)>& pointers,
                                         const int64_t* offsets, std::index_sequence<K...>) {
  store<Out>(pointers.data[0], offsets[0], f(load<In>(pointers.data[K + 1], offsets[K + 1])...));
}

template <class F, class Out, class... In>
__global__ void contiguous_kernel(int64_t count, Pointers<1 + sizeof...(In)> pointers, F f) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t index = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < count; index += step) {
    int64_t offsets[1 + sizeof...(In)];
    for (auto& offset : offsets) offset = index;
    apply_at_impl<F, Out, In...>(f, pointers, offsets, std::index_sequence_for<In...>());
  }
}

// Note [Vectorised elementwise loads]
// When every operand is one dense block in a shared layout (Note [Elementwise launches] in
// operands.h) and each one's data is aligned to kVector of its elements,
// a thread moves kVector consecutive elements of each operand with one wide access (a
// VectorOf, up to 32 bytes, which the compiler splits into 16-byte loads at most) and applies
// f lane by lane; the last count % kVector elements go through contiguous_kernel. Views whose
// offset breaks the alignment take the scalar path.
inline constexpr int kVector = 4;

template <class T>
struct alignas(sizeof(typename DeviceStorage<T>::type) * kVector) VectorOf {
  typename DeviceStorage<T>::type value[kVector];
};

template <class F, class Out, class... In>
__device__ __forceinline__ void apply_lanes(const F& f, void* out, int64_t vector, VectorOf<In>... inputs) {
  VectorOf<Out> result;
#pragma unroll
  for (int lane = 0; lane < kVector; ++lane) store<Out>(result.value, lane, f(load<In>(inputs.value, lane)...));
  static_cast<VectorOf<Out>*>(out)[vector] = result;
}

template <class F, class Out, class... In, size_t... K>
__device__ __forceinline__ void apply_vector(const F& f, const Pointers<1 + sizeof...(In)>& pointers, int64_t vector,
                                             std::index_sequence<K...>) {
  apply_lanes<F, Out, In...>(f, pointers.data[0], vector,
                             static_cast<const VectorOf<In>*>(pointers.data[K + 1])[vector]...);
}

template <class F, class Out, class... In>
__global__ void vectorized_kernel(int64_t vectors, Pointers<1 + sizeof...(In)> pointers, F f) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t vector = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; vector < vectors;
       vector += step)
    apply_vector<F, Out, In...>(f, pointers, vector, std::index_sequence_for<In...>());
}

template <class T>
bool vector_aligned(const void* data) {
  return reinterpret_cast<uintptr_t>(data) % alignof(VectorOf<T>) == 0;
}

// The same pointers moved `elements` elements on, each by its own element size.
template <class Out, class... In>
Pointers<1 + sizeof...(In)> advanced(const Pointers<1 + sizeof...(In)>& pointers, int64_t elements) {
  constexpr size_t sizes[] = {sizeof(typename DeviceStorage<Out>::type), sizeof(typename DeviceStorage<In>::type)...};
  Pointers<1 + sizeof...(In)> result = pointers;
  for (size_t k = 0; k < 1 + sizeof...(In); ++k)
    result.data[k] = static_cast<char*>(pointers.data[k]) + static_cast<int64_t>(sizes[k]) * elements;
  return result;
}

// Contiguous operands: vectorised where the data allows (Note [Vectorised elementwise loads]).
template <class F, class Out, class... In>
void launch_contiguous(int64_t count, const Pointers<1 + sizeof...(In)>& pointers, const F& f, cudaStream_t stream) {
  const bool aligned = [&]<size_t... K>(std::index_sequence<K...>) {
    return vector_aligned<Out>(pointers.data[0]) && (vector_aligned<In>(pointers.data[K + 1]) && ...);
  }(std::index_sequence_for<In...>());
  int64_t done = 0;
  if (aligned && count >= kVector) {
    const int64_t vectors = count / kVector;
    const LaunchShape shape = launch_shape(vectors, 256, 1);
    vectorized_kernel<F, Out, In...><<<shape.blocks, shape.threads, 0, stream>>>(vectors, pointers, f);
    done = vectors * kVector;
  }
  if (done == count) return;
  const LaunchShape shape = launch_shape(count - done);
  contiguous_kernel<F, Out, In...><<<shape.blocks, shape.threads, 0, stream>>>(
      count - done, advanced<Out, In...>(pointers, done), f);
}

template <class F, class Out, class... In>
__global__ void strided_kernel(int64_t count, StridedIndexer<1 + sizeof...(In)> indexer,
                               Pointers<1 + sizeof...(In)> pointers, F f) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t index = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < count; index += step) {
    int64_t offsets[1 + sizeof...(In)];
    indexer.offsets(index, offsets);
    apply_at_impl<F, Out, In...>(f, pointers, offsets, std::index_sequence_for<In...>());
  }
}

// out[i] = f(inputs[i]...) with out of dtype Out and the inputs of dtypes In... (broadcast to
// out's sizes), on out's device and that thread's current stream. f takes and returns compute
// types (float for the 16-bit floats); its result is converted to Out.
template <class Out, class... In, class F, class... Inputs>
void launch_elementwise(const char* op, const F& f, const Tensor& out, const Inputs&... inputs) {
  static_assert(sizeof...(In) == sizeof...(Inputs), "one dtype per input");
  constexpr int kOperands = 1 + sizeof...(In);
  const int64_t count = out.numel();
  if (count == 0) return;
  const int device = out.device().index();
  DeviceScope scope(device);
  const cudaStream_t stream = current_native_stream(device);
  const std::array<const Tensor*, kOperands> operands{&out, &inputs...};
  const Pointers<kOperands> pointers{{out.data_ptr(), inputs.data_ptr()...}};
  if (same_dense_layout(operands.data(), kOperands)) {
    launch_contiguous<F, Out, In...>(count, pointers, f, stream);
  } else {
    const LaunchShape shape = launch_shape(count);
    const StridedIndexer<kOperands> indexer = make_indexer<kOperands>(op, operands);
    strided_kernel<F, Out, In...><<<shape.blocks, shape.threads, 0, stream>>>(count, indexer, pointers, f);
  }
  check_cuda(cudaGetLastError(), op);
}

}  // namespace strata::cuda::detail
