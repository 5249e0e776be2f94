#pragma once
// Internal to cuda/ (.cu files only): reductions over any set of dims of a strided tensor, one
// group of threads per output element (or per range of a long fold; or a warp's lanes over
// consecutive outputs, when the folds are strided), combined with warp shuffles and shared
// memory. No atomics, so every result is deterministic. See Notes [Reduction plans],
// [Reduction launch shape], [Split reductions] and [Column reductions] in reduce_plan.h, and
// Note [Reduction ops] below.
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include <strata/cuda/copy.h>
#include <strata/cuda/elementwise.cuh>
#include <strata/cuda/reduce_math.h>
#include <strata/cuda/reduce_plan.h>
#include <strata/ops/shapes/reduce.h>

namespace strata::cuda::detail {

// Note [Reduction ops]
// A reduction kernel is parameterised by an Ops struct (a plain value passed to the kernel):
//   using In = ...;  using Acc = ...;          input element type, running state (an aggregate)
//   __device__ Acc identity() const;
//   __device__ Acc fold(Acc acc, compute_type_t<In> value, int64_t r) const;  r: position
//   __device__ Acc combine(const Acc& a, const Acc& b) const;
//   __device__ void write(const int64_t (&offsets)[kMaxReduceOutputs], const Acc& acc) const;
// write stores the finished result at the output offsets (the Ops hold the output pointers).

inline constexpr int kMaxWarpsPerBlock = kMaxGroupSize / 32;
inline constexpr unsigned kFullWarp = 0xffffffffu;

// __shfl_down_sync for any trivially copyable value, 32 bits at a time.
template <class T>
__device__ __forceinline__ T shuffle_down(const T& value, int delta) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  uint32_t words[kWords] = {};
  memcpy(words, &value, sizeof(T));
  for (int w = 0; w < kWords; ++w) words[w] = __shfl_down_sync(kFullWarp, words[w], delta);
  T result;
  memcpy(&result, words, sizeof(T));
  return result;
}

// Combines the states of one group (threadIdx.x = lane, blockDim.x = group size, 1 or a
// multiple of 32); the result is valid in lane 0. Every thread of the block must call it.
template <class Ops, class Acc>
__device__ Acc group_reduce(const Ops& ops, Acc acc, Acc* partials) {
  const int group_size = blockDim.x;
  if (group_size == 1) return acc;
  for (int delta = 16; delta > 0; delta /= 2) acc = ops.combine(acc, shuffle_down(acc, delta));
  const int warps = group_size / 32;
  if (warps == 1) return acc;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  Acc* group_partials = partials + threadIdx.y * warps;
  if (lane == 0) group_partials[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = lane < warps ? group_partials[lane] : ops.identity();
    for (int delta = 16; delta > 0; delta /= 2) acc = ops.combine(acc, shuffle_down(acc, delta));
  }
  __syncthreads();  // the partials are reused by the caller's next round
  return acc;
}

// group_reduce for a block that is one group, with the result handed to every thread.
template <class Ops, class Acc>
__device__ Acc block_all_reduce(const Ops& ops, Acc acc) {
  __shared__ Acc partials[kMaxWarpsPerBlock];
  __shared__ Acc result;
  acc = group_reduce(ops, acc, partials);
  if (threadIdx.x == 0) result = acc;
  __syncthreads();
  acc = result;
  __syncthreads();
  return acc;
}

// Folds the pieces of a reduction (Note [Split reductions]; an unsplit fold is one piece per
// output): with `partials` null each group writes its output's result, else piece p's partial
// state goes to partials[p].
template <class Ops>
__global__ void __launch_bounds__(kMaxGroupSize)
    reduce_kernel(ReducePlan plan, ReduceSplit split, const void* input, Ops ops, typename Ops::Acc* partials) {
  using Acc = typename Ops::Acc;
  __shared__ Acc shared[kMaxWarpsPerBlock];
  const int lane = threadIdx.x, group_size = blockDim.x;
  const int64_t pieces = plan.output_count * split.count;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.y;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.y; first < pieces; first += step) {
    const int64_t piece = first + threadIdx.y;
    const bool active = piece < pieces;
    int64_t input_base = 0;
    int64_t output_offsets[kMaxReduceOutputs];
    Acc acc = ops.identity();
    if (active) {
      int64_t output = 0, begin = 0, end = 0;
      split.locate_piece(piece, plan.reduced_count, output, begin, end);
      plan.locate_output(output, input_base, output_offsets);
      for (int64_t r = begin + lane; r < end; r += group_size)
        acc = ops.fold(acc, load<typename Ops::In>(input, input_base + plan.reduced_offset(r)), r);
    }
    acc = group_reduce(ops, acc, shared);
    if (active && lane == 0) {
      if (partials != nullptr) partials[piece] = acc;
      else ops.write(output_offsets, acc);
    }
  }
}

// The second kernel of a split reduction: each output's `count` partial states, combined in
// order of their ranges, give its result.
template <class Ops>
__global__ void __launch_bounds__(kMaxGroupSize)
    reduce_partials_kernel(ReducePlan plan, int64_t count, const typename Ops::Acc* partials, Ops ops) {
  using Acc = typename Ops::Acc;
  __shared__ Acc shared[kMaxWarpsPerBlock];
  const int lane = threadIdx.x, group_size = blockDim.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.y;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.y; first < plan.output_count; first += step) {
    const int64_t output = first + threadIdx.y;
    const bool active = output < plan.output_count;
    Acc acc = ops.identity();
    if (active)
      for (int64_t range = lane; range < count; range += group_size)
        acc = ops.combine(acc, partials[output * count + range]);
    acc = group_reduce(ops, acc, shared);
    if (active && lane == 0) {
      int64_t input_base = 0;
      int64_t output_offsets[kMaxReduceOutputs];
      plan.locate_output(output, input_base, output_offsets);
      ops.write(output_offsets, acc);
    }
  }
}

// Folds the pieces of a reduction read by columns (Note [Column reductions]): thread (x, y)
// of piece p = tile * count + range folds output tile * kColumnWidth + x over the positions
// begin + y, begin + y + kColumnSlices, ... of the range; the slices combine in order of y.
template <class Ops>
__global__ void __launch_bounds__(kColumnWidth* kColumnSlices)
    reduce_columns_kernel(ReducePlan plan, ReduceSplit split, const void* input, Ops ops,
                          typename Ops::Acc* partials) {
  using Acc = typename Ops::Acc;
  __shared__ Acc slices[kColumnSlices][kColumnWidth];
  const int x = threadIdx.x, y = threadIdx.y;
  const int64_t pieces = column_tiles(plan.output_count) * split.count;
  for (int64_t piece = blockIdx.x; piece < pieces; piece += gridDim.x) {
    int64_t tile = 0, begin = 0, end = 0;
    split.locate_piece(piece, plan.reduced_count, tile, begin, end);
    const int64_t output = tile * kColumnWidth + x;
    const bool active = output < plan.output_count;
    int64_t input_base = 0;
    int64_t output_offsets[kMaxReduceOutputs];
    Acc acc = ops.identity();
    if (active) {
      plan.locate_output(output, input_base, output_offsets);
      for (int64_t r = begin + y; r < end; r += kColumnSlices)
        acc = ops.fold(acc, load<typename Ops::In>(input, input_base + plan.reduced_offset(r)), r);
    }
    slices[y][x] = acc;
    __syncthreads();
    if (y == 0 && active) {
      for (int slice = 1; slice < kColumnSlices; ++slice) acc = ops.combine(acc, slices[slice][x]);
      if (partials != nullptr) partials[output * split.count + piece % split.count] = acc;
      else ops.write(output_offsets, acc);
    }
    __syncthreads();  // the slices are reused by the next piece
  }
}

template <class Kernel, class... Args>
void launch_reduce_kernel(const char* op, Kernel kernel, const ReduceLaunch& launch, cudaStream_t stream,
                          Args... args) {
  const dim3 block(static_cast<unsigned>(launch.group_size), static_cast<unsigned>(launch.groups));
  kernel<<<static_cast<unsigned>(launch.blocks), block, 0, stream>>>(args...);
  check_cuda(cudaGetLastError(), op);
}

// Runs `ops` over `plan` reading `input` (the tensor the plan's input strides describe), on
// the current stream of `device`: in one kernel, or two for a split fold.
template <class Ops>
void launch_reduce(const char* op, const ReducePlan& plan, const Tensor& input, const Ops& ops, int device) {
  using Acc = typename Ops::Acc;
  static_assert(std::is_trivially_copyable_v<Acc>, "partial states are copied through memory");
  if (plan.output_count == 0) return;
  DeviceScope scope(device);
  const cudaStream_t stream = current_native_stream(device);
  const void* data = input.numel() > 0 ? input.data_ptr() : nullptr;
  const bool by_columns = reduce_by_columns(plan);
  const int64_t groups = by_columns ? column_tiles(plan.output_count) : plan.output_count;
  const ReduceSplit split = reduce_split(groups, plan.reduced_count);
  // Fills `partials` (or, null, writes the results) from the input.
  const auto fold_pieces = [&](Acc* partials) {
    if (by_columns) {
      ReduceLaunch launch;
      launch.group_size = kColumnWidth;
      launch.groups = kColumnSlices;
      const int64_t pieces = groups * split.count;
      launch.blocks = pieces < kMaxBlocks ? pieces : kMaxBlocks;
      launch_reduce_kernel(op, reduce_columns_kernel<Ops>, launch, stream, plan, split, data, ops, partials);
    } else {
      launch_reduce_kernel(op, reduce_kernel<Ops>, reduce_launch(groups * split.count, split.chunk), stream, plan,
                           split, data, ops, partials);
    }
  };
  if (split.count == 1) {
    fold_pieces(nullptr);
    return;
  }
  // The partial states live in a temporary from the caching allocator, freed to this stream
  // once both kernels are queued.
  const int64_t states = plan.output_count * split.count;
  const Tensor buffer = strata::detail::make_empty({states * static_cast<int64_t>(sizeof(Acc))}, kUInt8,
                                                   Device(kCUDA, device));
  Acc* partials = static_cast<Acc*>(buffer.data_ptr());
  fold_pieces(partials);
  launch_reduce_kernel(op, reduce_partials_kernel<Ops>, reduce_launch(plan.output_count, split.count), stream, plan,
                       split.count, static_cast<const Acc*>(partials), ops);
}

// The plan reducing `input` over the dims `shape.reduced` marks into `outputs` (one or two,
// each of the shape function's sizes, any strides). See Note [Reduction plans].
inline ReducePlan plan_reduction(const char* op, const Tensor& input, const shapes::ReduceShape& shape,
                                 std::initializer_list<const Tensor*> outputs) {
  const int ndim = static_cast<int>(input.dim());
  STRATA_CHECK(ndim <= 64, "[", op, "] CUDA reductions take tensors of at most 64 dimensions, got ", ndim);
  const int64_t* output_strides[kMaxReduceOutputs] = {};
  int output_ndim = 0, count = 0;
  for (const Tensor* output : outputs) {
    output_strides[count++] = output->strides().data();
    output_ndim = static_cast<int>(output->dim());
  }
  ReduceDim dims[64];
  describe_reduce_dims(ndim, input.sizes().data(), input.strides().data(), shape.reduced.data(), count, output_strides,
                       output_ndim, dims);
  return make_reduce_plan(op, dims, ndim);
}

// t converted to `dtype` and contiguous: t itself when it already is.
inline Tensor dense_as(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype && t.is_contiguous()) return t;
  Tensor result = strata::detail::make_empty(t.sizes(), dtype, t.device());
  copy_kernel(result, t);
  return result;
}

// Where a kernel writing dense `dtype` memory puts the values of `out`: out itself when it is
// contiguous of that dtype, else a temporary that write_back copies into out.
inline Tensor dense_destination(const Tensor& out, ScalarType dtype) {
  return out.dtype() == dtype && out.is_contiguous() ? out
                                                     : strata::detail::make_empty(out.sizes(), dtype, out.device());
}
inline void write_back(const Tensor& out, const Tensor& dense) {
  if (!dense.is_same(out)) copy_kernel(out, dense);
}

// ---------------------------------------------------------------------------------------
// Sums and products, shared by reduce.cu and loss.cu. Integers accumulate in uint64 (wrapping,
// as the CPU's int64 sum), floats in Acc; a floating result is divided by `divisor` (1 for a
// sum, the count for a mean), in Acc.

template <class InT, class Out, class AccT, bool multiply>
struct ArithmeticOps {
  using In = InT;
  using Acc = AccT;
  void* out;
  Acc divisor;

  __device__ Acc identity() const { return Acc(multiply ? 1 : 0); }
  __device__ Acc fold(Acc acc, compute_type_t<In> value, int64_t) const {
    return combine(acc, static_cast<Acc>(value));
  }
  __device__ Acc combine(const Acc& a, const Acc& b) const { return multiply ? a * b : a + b; }
  __device__ void write(const int64_t (&offsets)[kMaxReduceOutputs], const Acc& acc) const {
    if constexpr (std::is_same_v<Acc, uint64_t>) store<Out>(out, offsets[0], static_cast<int64_t>(acc));
    else store<Out>(out, offsets[0], acc / divisor);
  }
};

// The accumulation type of a sum or product of T: uint64 for integers and bool, double for
// double, float otherwise.
template <class T>
using sum_acc_t =
    std::conditional_t<std::is_integral_v<T>, uint64_t, std::conditional_t<std::is_same_v<T, double>, double, float>>;

}  // namespace strata::cuda::detail
