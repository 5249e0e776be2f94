// CUDA kernels of ops/conv.cpp: conv2d and _conv2d_backward (im2col + cuBLAS GEMM, computing
// in float for float16/bfloat16 as the CPU does), max_pool2d_with_indices and its backward.
// Shape functions are ops/shapes/conv.h's. See Note [CUDA im2col layout] in conv_layout.h.
#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include <strata/cuda/blas.h>
#include <strata/cuda/conv_layout.h>
#include <strata/cuda/copy.h>
#include <strata/cuda/dense.h>
#include <strata/cuda/elementwise.cuh>
#include <strata/cuda/runtime.h>
#include <strata/cuda/scatter.cuh>
#include <strata/dispatch/library.h>
#include <strata/ops/shapes/conv.h>
#include <strata/ops/structured.h>

namespace strata {
namespace {

using ConvShape = shapes::ConvGeometry;
using cuda::detail::ColumnsGeometry;
using cuda::detail::DeviceStorage;


__device__ __forceinline__ int64_t grid_start() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_step() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

cudaStream_t stream_of(const Tensor& t) { return cuda::detail::current_native_stream(t.device().index()); }

// ---------------------------------------------------------------------------------------
// im2col and col2im over a chunk of samples (T is float or double).

// columns(n, row, position) = x[n] at im2col_source (0 in the padding).
template <class T>
__global__ void im2col_kernel(const T* x, T* columns, ColumnsGeometry g, int64_t samples) {
  const int64_t positions = g.positions(), per_sample = g.rows() * positions;
  const int64_t input_plane = g.channels * g.height * g.width;
  for (int64_t e = grid_start(); e < samples * per_sample; e += grid_step()) {
    const int64_t n = e / per_sample, row = e % per_sample / positions, position = e % positions;
    const int64_t source = cuda::detail::im2col_source(g, row, position);
    columns[g.column_offset(n, row, position)] = source >= 0 ? x[n * input_plane + source] : T(0);
  }
}

// x[n][c][h][w] = the sum of the column entries im2col copies from it (a gather, so no atomics;
// the adds run in the CPU's col2im order).
template <class T>
__global__ void col2im_kernel(const T* columns, T* x, ColumnsGeometry g, int64_t samples) {
  const int64_t plane = g.height * g.width, input_plane = g.channels * plane;
  for (int64_t e = grid_start(); e < samples * input_plane; e += grid_step()) {
    const int64_t n = e / input_plane, c = e % input_plane / plane, h = e % plane / g.width, w = e % g.width;
    T sum = 0;
    cuda::detail::for_each_column_of(g, c, h, w, [&](int64_t row, int64_t position) {
      sum += columns[g.column_offset(n, row, position)];
    });
    x[e] = sum;
  }
}

ColumnsGeometry columns_geometry(const ConvShape& s, int64_t row_stride, int64_t sample_stride) {
  ColumnsGeometry g;
  g.channels = s.channels, g.height = s.height, g.width = s.width;
  g.kernel_h = s.kernel_h, g.kernel_w = s.kernel_w, g.out_h = s.out_h, g.out_w = s.out_w;
  g.stride_h = s.stride_h, g.stride_w = s.stride_w, g.pad_h = s.pad_h, g.pad_w = s.pad_w;
  g.dilation_h = s.dilation_h, g.dilation_w = s.dilation_w;
  g.row_stride = row_stride, g.sample_stride = sample_stride;
  return g;
}

template <class T>
void launch_im2col(const Tensor& stream_owner, const T* x, T* columns, const ColumnsGeometry& g, int64_t samples) {
  const auto shape = cuda::detail::launch_shape(samples * g.rows() * g.positions());
  im2col_kernel<T><<<shape.blocks, shape.threads, 0, stream_of(stream_owner)>>>(x, columns, g, samples);
  cuda::detail::check_cuda(cudaGetLastError(), "conv2d");
}

// The columns buffer of one chunk holds at most this many bytes (at least one sample's).
constexpr int64_t kColumnsBudgetBytes = int64_t{256} << 20;

int64_t chunk_samples(const ConvShape& s, int64_t element_size) {
  return cuda::detail::samples_per_chunk(s.batch, s.channels * s.kernel_h * s.kernel_w * s.out_plane(),
                                         kColumnsBudgetBytes / element_size);
}

// ---------------------------------------------------------------------------------------
// conv2d forward: per chunk of samples, im2col in the per-sample layout, then per group one
// GEMM batched over the chunk's samples: y[n, group] = W_group [group_out, patch] @ columns.

bool is_pointwise(const ConvShape& s) {
  return s.kernel_h == 1 && s.kernel_w == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 && s.pad_w == 0;
}

template <class T>
__global__ void add_bias_kernel(T* y, const T* bias, int64_t channels, int64_t plane, int64_t total) {
  for (int64_t e = grid_start(); e < total; e += grid_step()) y[e] = y[e] + bias[e / plane % channels];
}

template <class T>
void conv_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const ConvShape& s) {
  const int device = y.device().index();
  const ScalarType dtype = y.dtype();
  const int64_t plane = s.out_plane(), patch = s.patch(), input_plane = s.channels * s.height * s.width;
  const T* weight = static_cast<const T*>(w.data_ptr());
  T* out = static_cast<T*>(y.data_ptr());
  const int64_t chunk = is_pointwise(s) ? s.batch : chunk_samples(s, sizeof(T));
  const Tensor columns = is_pointwise(s) ? Tensor() : detail::make_empty({chunk * s.channels * s.kernel_h * s.kernel_w * plane}, dtype, y.device());
  for (int64_t first = 0; first < s.batch; first += chunk) {
    const int64_t count = std::min(chunk, s.batch - first);
    const T* input = static_cast<const T*>(x.data_ptr()) + first * input_plane;
    const T* cols = input;  // a pointwise kernel reads the input planes as its columns
    int64_t sample_stride = input_plane;
    if (!is_pointwise(s)) {
      sample_stride = s.channels * s.kernel_h * s.kernel_w * plane;
      launch_im2col<T>(y, input, static_cast<T*>(columns.data_ptr()), columns_geometry(s, plane, sample_stride), count);
      cols = static_cast<const T*>(columns.data_ptr());
    }
    for (int64_t g = 0; g < s.groups; ++g) {
      const cuda::detail::GemmBatch batch{count, 0, sample_stride, s.out_channels * plane};
      cuda::detail::row_major_gemm("conv2d", device, dtype, s.group_out(), patch, plane, weight + g * s.group_out() * patch,
                                   {patch, 1}, cols + g * patch * plane, {plane, 1},
                                   out + (first * s.out_channels + g * s.group_out()) * plane, plane, batch);
    }
  }
  if (b.defined()) {
    const int64_t total = s.batch * s.out_channels * plane;
    const auto shape = cuda::detail::launch_shape(total);
    add_bias_kernel<T><<<shape.blocks, shape.threads, 0, stream_of(y)>>>(out, static_cast<const T*>(b.data_ptr()),
                                                                         s.out_channels, plane, total);
    cuda::detail::check_cuda(cudaGetLastError(), "conv2d");
  }
}

ScalarType compute_dtype(ScalarType dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

template <class Fn>
void visit_float(ScalarType dtype, Fn&& fn) {
  if (dtype == kFloat64) fn.template operator()<double>();
  else fn.template operator()<float>();
}

void conv2d_out_cuda(const Tensor& out, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                     IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  if (out.numel() == 0) return;
  const ConvShape s = shapes::conv2d_geometry(input, weight, bias, stride, padding, dilation, groups);
  const ScalarType compute = compute_dtype(input.dtype());
  cuda::detail::DeviceScope scope(out.device().index());
  const Tensor result = cuda::detail::dense_destination(out, compute);
  const Tensor x = cuda::detail::dense(input, compute), w = cuda::detail::dense(weight, compute);
  const Tensor b = bias && bias->defined() ? cuda::detail::dense(*bias, compute) : Tensor();
  visit_float(compute, [&]<class T>() { conv_forward<T>(x, w, b, result, s); });
  cuda::detail::write_back(out, result);
}

// ---------------------------------------------------------------------------------------
// conv2d backward (see Note [conv2d backward] in ops/conv.cpp). Per chunk of samples, the
// gradient is first permuted to [out_channels, samples, positions], so that with the wide
// column layout each group's products sum over the chunk's samples inside one GEMM (batched
// over groups):
//   columns_g [patch, samples * positions] = W_g^T @ grad_g       then col2im into grad_input;
//   grad_weight_g [group_out, patch]      += grad_g @ columns_g^T  (columns from im2col of x).
// The weight gradient accumulates over chunks through beta = 1 (0 for the first chunk).

struct BackwardBuffers {
  Tensor grad_permuted, columns;
};

template <class T>
void conv_backward_chunk(const Tensor& grad, const Tensor& x, const Tensor& w, const Tensor& grad_input,
                         const Tensor& grad_weight, const ConvShape& s, int64_t first, int64_t count,
                         const BackwardBuffers& buffers) {
  const int device = grad.device().index();
  const ScalarType dtype = grad.dtype();
  const int64_t plane = s.out_plane(), patch = s.patch(), group_out = s.group_out();
  const int64_t input_plane = s.channels * s.height * s.width, wide = count * plane;
  // grad[first : first + count] as [out_channels, count, plane], made dense.
  const Tensor chunk_view = detail::make_view(grad, {s.out_channels, count, plane}, {plane, s.out_channels * plane, 1},
                                              grad.storage_offset() + first * s.out_channels * plane);
  const Tensor permuted = detail::make_view(buffers.grad_permuted, {s.out_channels, count, plane}, {wide, plane, 1}, 0);
  cuda::detail::copy_kernel(permuted, chunk_view);
  const T* g = static_cast<const T*>(permuted.data_ptr());
  T* columns = static_cast<T*>(buffers.columns.data_ptr());
  const ColumnsGeometry layout = columns_geometry(s, wide, plane);
  const cuda::detail::GemmBatch per_group_columns{s.groups, 0, 0, patch * wide};
  if (grad_input.defined()) {
    const cuda::detail::GemmBatch batch{s.groups, group_out * patch, group_out * wide, patch * wide};
    cuda::detail::row_major_gemm("_conv2d_backward", device, dtype, patch, group_out, wide,
                                 static_cast<const T*>(w.data_ptr()), {1, patch}, g, {wide, 1}, columns, wide, batch);
    const auto shape = cuda::detail::launch_shape(count * input_plane);
    col2im_kernel<T><<<shape.blocks, shape.threads, 0, stream_of(grad)>>>(
        columns, static_cast<T*>(grad_input.data_ptr()) + first * input_plane, layout, count);
    cuda::detail::check_cuda(cudaGetLastError(), "_conv2d_backward");
  }
  if (grad_weight.defined()) {
    launch_im2col<T>(grad, static_cast<const T*>(x.data_ptr()) + first * input_plane, columns, layout, count);
    const cuda::detail::GemmBatch batch{s.groups, group_out * wide, per_group_columns.stride_c, group_out * patch};
    cuda::detail::row_major_gemm("_conv2d_backward", device, dtype, group_out, wide, patch, g, {wide, 1}, columns,
                                 {1, wide}, static_cast<T*>(grad_weight.data_ptr()), patch, batch,
                                 first == 0 ? 0.0 : 1.0);
  }
}

// Fills grad_input and grad_weight, each undefined unless asked for.
void conv2d_backward_out_cuda(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad,
                              const Tensor& input, const Tensor& weight, IntArrayRef stride, IntArrayRef padding,
                              IntArrayRef dilation, int64_t groups, bool, bool) {
  const ConvShape s = shapes::conv2d_geometry(input, weight, std::nullopt, stride, padding, dilation, groups);
  const ScalarType compute = compute_dtype(input.dtype());
  const int device = (grad_input.defined() ? grad_input : grad).device().index();
  cuda::detail::DeviceScope scope(device);
  const Tensor input_result = grad_input.defined() ? cuda::detail::dense_destination(grad_input, compute) : Tensor();
  const Tensor weight_result = grad_weight.defined() ? cuda::detail::dense_destination(grad_weight, compute) : Tensor();
  if (grad.numel() == 0 || (!input_result.defined() && !weight_result.defined())) {
    // Nothing to multiply: the gradients asked for are zeros, as the CPU's.
    for (const Tensor& result : {input_result, weight_result})
      if (result.defined() && result.numel() > 0)
        cuda::detail::check_cuda(cudaMemsetAsync(result.data_ptr(), 0, static_cast<size_t>(result.nbytes()),
                                                 stream_of(result)),
                                 "_conv2d_backward");
  } else {
    const Tensor g = cuda::detail::dense(grad, compute), x = cuda::detail::dense(input, compute);
    const Tensor w = cuda::detail::dense(weight, compute);
    const int64_t chunk = chunk_samples(s, element_size(compute));
    const BackwardBuffers buffers{
        detail::make_empty({chunk * s.out_channels * s.out_plane()}, compute, g.device()),
        detail::make_empty({chunk * s.channels * s.kernel_h * s.kernel_w * s.out_plane()}, compute, g.device())};
    visit_float(compute, [&]<class T>() {
      for (int64_t first = 0; first < s.batch; first += chunk)
        conv_backward_chunk<T>(g, x, w, input_result, weight_result, s, first, std::min(chunk, s.batch - first), buffers);
    });
  }
  if (input_result.defined()) cuda::detail::write_back(grad_input, input_result);
  if (weight_result.defined()) cuda::detail::write_back(grad_weight, weight_result);
}

// ---------------------------------------------------------------------------------------
// max_pool2d.

// The scalars of PoolGeometry a kernel needs (its out_sizes stay on the host).
struct PoolWindow {
  int64_t planes, height, width, out_h, out_w;
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
};

PoolWindow pool_window(const shapes::PoolGeometry& s) {
  return {s.planes,   s.height,   s.width,    s.out_h, s.out_w, s.kernel_h,   s.kernel_w,
          s.stride_h, s.stride_w, s.pad_h,    s.pad_w, s.dilation_h, s.dilation_w};
}

// The max of each window (NaN wins; the first of equal maxima) and its flat index in the input
// plane: ops/conv.cpp's max_pool_plane, one output element per thread.
template <class T>
__global__ void max_pool_kernel(const typename DeviceStorage<T>::type* x, typename DeviceStorage<T>::type* y,
                                int64_t* indices, PoolWindow s) {
  using C = compute_type_t<T>;
  const int64_t out_plane = s.out_h * s.out_w, in_plane = s.height * s.width;
  for (int64_t e = grid_start(); e < s.planes * out_plane; e += grid_step()) {
    const int64_t p = e / out_plane, oh = e % out_plane / s.out_w, ow = e % s.out_w;
    int64_t best = -1;
    C best_value{};
    for (int64_t i = 0; i < s.kernel_h; ++i) {
      const int64_t h = oh * s.stride_h - s.pad_h + i * s.dilation_h;
      if (h < 0 || h >= s.height) continue;
      for (int64_t j = 0; j < s.kernel_w; ++j) {
        const int64_t w = ow * s.stride_w - s.pad_w + j * s.dilation_w;
        if (w < 0 || w >= s.width) continue;
        const C value = cuda::detail::load<T>(x, p * in_plane + h * s.width + w);
        if (best < 0 || value > best_value || value != value) {
          best = h * s.width + w;
          best_value = value;
          if (value != value) break;  // as on the CPU: leaves this row only; a later NaN wins
        }
      }
    }
    cuda::detail::store<T>(y, e, best_value);
    indices[e] = best;
  }
}

void max_pool2d_out_cuda(const Tensor& out, const Tensor& indices, const Tensor& self, IntArrayRef kernel_size,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  if (out.numel() == 0) return;
  const PoolWindow s = pool_window(shapes::max_pool2d_geometry(self, kernel_size, stride, padding, dilation, ceil_mode));
  cuda::detail::DeviceScope scope(out.device().index());
  const Tensor x = cuda::detail::dense(self);
  const Tensor result = cuda::detail::dense_destination(out, self.dtype());
  const Tensor result_indices = cuda::detail::dense_destination(indices, kInt64);
  const auto shape = cuda::detail::launch_shape(s.planes * s.out_h * s.out_w);
  visit_dtype(self.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      using S = typename DeviceStorage<T>::type;
      max_pool_kernel<T><<<shape.blocks, shape.threads, 0, stream_of(out)>>>(
          static_cast<const S*>(x.data_ptr()), static_cast<S*>(result.data_ptr()),
          static_cast<int64_t*>(result_indices.data_ptr()), s);
    }
  });
  cuda::detail::check_cuda(cudaGetLastError(), "max_pool2d_with_indices");
  cuda::detail::write_back(out, result);
  cuda::detail::write_back(indices, result_indices);
}

// Each output gradient adds into the input position its window's max came from (atomically:
// overlapping windows may share a max; see Note [Atomic accumulation] in scatter.cuh). The
// indices are values, checked on the device (see Note [CUDA index checks] there).
template <class T>
__global__ void max_pool_backward_kernel(const typename DeviceStorage<T>::type* grad, const int64_t* indices,
                                         typename DeviceStorage<T>::type* grad_input, PoolWindow s) {
  const int64_t out_plane = s.out_h * s.out_w, in_plane = s.height * s.width;
  for (int64_t e = grid_start(); e < s.planes * out_plane; e += grid_step()) {
    const int64_t target = indices[e];
    if (target < 0) continue;  // a window with no input element
    if (target >= in_plane) [[unlikely]] {
      printf("[max_pool2d_with_indices_backward] index %lld is out of range for an input plane of %lldx%lld elements\n",
             static_cast<long long>(target), static_cast<long long>(s.height), static_cast<long long>(s.width));
      __assert_fail("index out of range", __FILE__, __LINE__, "max_pool2d_with_indices_backward");
    }
    cuda::detail::atomic_accumulate<T>(grad_input + e / out_plane * in_plane + target, cuda::detail::load<T>(grad, e));
  }
}

void max_pool2d_backward_out_cuda(const Tensor& grad_input, const Tensor& grad, const Tensor& self,
                                  IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                                  IntArrayRef dilation, bool ceil_mode, const Tensor& indices) {
  const PoolWindow s = pool_window(shapes::max_pool2d_geometry(self, kernel_size, stride, padding, dilation, ceil_mode));
  cuda::detail::DeviceScope scope(grad_input.device().index());
  const Tensor result = cuda::detail::dense_destination(grad_input, grad_input.dtype());
  if (result.numel() > 0)
    cuda::detail::check_cuda(
        cudaMemsetAsync(result.data_ptr(), 0, static_cast<size_t>(result.nbytes()), stream_of(result)),
        "max_pool2d_with_indices_backward");
  if (grad.numel() > 0) {
    const Tensor g = cuda::detail::dense(grad), index = cuda::detail::dense(indices);
    const auto shape = cuda::detail::launch_shape(s.planes * s.out_h * s.out_w);
    visit_dtype(grad.dtype(), [&]<class T>() {
      using S = typename DeviceStorage<T>::type;
      max_pool_backward_kernel<T><<<shape.blocks, shape.threads, 0, stream_of(result)>>>(
          static_cast<const S*>(g.data_ptr()), static_cast<const int64_t*>(index.data_ptr()),
          static_cast<S*>(result.data_ptr()), s);
    });
    cuda::detail::check_cuda(cudaGetLastError(), "max_pool2d_with_indices_backward");
  }
  cuda::detail::write_back(grad_input, result);
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  using detail::structured;
  m.impl("conv2d", structured<&shapes::conv2d, &conv2d_out_cuda>());
  m.impl("_conv2d_backward", detail::optional_outputs<&shapes::_conv2d_backward, &conv2d_backward_out_cuda>());
  m.impl("max_pool2d_with_indices", structured<&shapes::max_pool2d_with_indices, &max_pool2d_out_cuda>());
  m.impl("max_pool2d_with_indices_backward",
         structured<&shapes::max_pool2d_with_indices_backward, &max_pool2d_backward_out_cuda>());
}

}  // namespace strata
