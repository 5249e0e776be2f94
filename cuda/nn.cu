// CUDA kernels of ops/nn.cpp: softmax and log_softmax with their fused backward kernels,
// native_dropout, native_layer_norm and embedding. Shape functions are ops/shapes/nn.h's.
// The row kernels give one block to each row and combine with cuda/reduce.cuh's
// block_all_reduce (warp shuffles, then shared memory), so results are deterministic.
#include <strata/cuda/copy.h>
#include <strata/cuda/index_check.cuh>
#include <strata/cuda/philox.h>
#include <strata/cuda/reduce.cuh>
#include <strata/dispatch/library.h>
#include <strata/ops/op_helpers.h>
#include <strata/ops/shapes/nn.h>
#include <strata/ops/structured.h>
#include <strata/tensor/generator.h>

#include <mutex>

namespace strata {
namespace {

using cuda::detail::block_all_reduce;
using cuda::detail::dense_as;
using cuda::detail::dense_destination;
using cuda::detail::load;
using cuda::detail::store;
using cuda::detail::write_back;

// The combines of the row kernels.
template <class C>
struct SumOp {
  __device__ C identity() const { return C(0); }
  __device__ C combine(C a, C b) const { return a + b; }
};

// A running (maximum, sum of exp(x - maximum)) pair (reduce_math.h; Note [Stable logsumexp] in
// ops/reduce_stats.cpp).
template <class C>
struct LogSumExpOp {
  __device__ cuda::detail::LogSumExp<C> identity() const { return {-static_cast<C>(INFINITY), C(0)}; }
  __device__ cuda::detail::LogSumExp<C> combine(const cuda::detail::LogSumExp<C>& a,
                                                const cuda::detail::LogSumExp<C>& b) const {
    return cuda::detail::log_sum_exp_combine(a, b);
  }
};

// Blocks for `rows` rows of `row_size` elements: one block per row, looping when there are
// more rows than kMaxBlocks.
struct RowLaunch {
  unsigned blocks, threads;
};
RowLaunch row_launch(int64_t rows, int64_t row_size) {
  return {static_cast<unsigned>(std::min(rows, cuda::detail::kMaxBlocks)),
          static_cast<unsigned>(cuda::detail::row_block_threads(row_size))};
}

// The compute dtype of the float kernels, as the CPU's: float64 stays, the rest run in float32.
ScalarType float_compute_type(ScalarType dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

// ---------------------------------------------------------------------------------------
// softmax and log_softmax. See Note [Stable softmax] in ops/nn.cpp: each slice along dim is
// shifted by its maximum. A row is one slice of a contiguous [outer, size, inner] block: its
// elements lie `inner` apart. The maximum and the sum of exp(x - maximum) come from one pass
// (a running maximum that rescales the sum when it grows, as in logsumexp), so a row is read
// twice, not three times; -inf, +inf and NaN give what the two-pass form gives.

template <class In, class Out, bool Log>
__global__ void __launch_bounds__(cuda::detail::kMaxGroupSize)
    softmax_kernel(const void* input, void* output, int64_t rows, int64_t size, int64_t inner) {
  using C = compute_type_t<Out>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row / inner * size * inner + row % inner;
    cuda::detail::LogSumExp<C> state = LogSumExpOp<C>{}.identity();
    for (int64_t k = threadIdx.x; k < size; k += blockDim.x)
      state = cuda::detail::log_sum_exp_fold(state, static_cast<C>(load<In>(input, base + k * inner)));
    state = block_all_reduce(LogSumExpOp<C>{}, state);
    const C max = state.max, sum = state.sum;
    const C log_sum = cuda::detail::log_of(sum);
    for (int64_t k = threadIdx.x; k < size; k += blockDim.x) {
      const C shifted = static_cast<C>(load<In>(input, base + k * inner)) - max;
      store<Out>(output, base + k * inner, Log ? shifted - log_sum : cuda::detail::exp_of(shifted) / sum);
    }
  }
}

// The input is read in out's dtype, or in the compute dtype when the dtypes differ (the CPU
// converts it to the compute dtype first).
template <bool Log>
void softmax_out_cuda(const Tensor& out, const Tensor& self, int64_t dim, std::optional<ScalarType>) {
  if (out.numel() == 0) return;
  const char* op = Log ? "log_softmax" : "softmax";
  const ScalarType compute = float_compute_type(out.dtype());
  const Tensor input = dense_as(self, self.dtype() == out.dtype() ? out.dtype() : compute);
  const Tensor result = dense_destination(out, out.dtype());
  const detail::DimLayout layout = detail::layout_around(self.sizes(), wrap_dim(dim, self.dim(), op));
  const int64_t rows = layout.outer * layout.inner;
  const RowLaunch launch = row_launch(rows, layout.size);
  const int device = out.device().index();
  cuda::detail::DeviceScope scope(device);
  visit_dtype(out.dtype(), [&]<class Out>() {
    using C = compute_type_t<Out>;
    if constexpr (std::is_floating_point_v<C>) {
      const cudaStream_t stream = cuda::detail::current_native_stream(device);
      if (input.dtype() == out.dtype())
        softmax_kernel<Out, Out, Log><<<launch.blocks, launch.threads, 0, stream>>>(input.data_ptr(), result.data_ptr(),
                                                                                    rows, layout.size, layout.inner);
      else
        softmax_kernel<C, Out, Log><<<launch.blocks, launch.threads, 0, stream>>>(input.data_ptr(), result.data_ptr(),
                                                                                  rows, layout.size, layout.inner);
    }
  });
  cuda::detail::check_cuda(cudaGetLastError(), op);
  write_back(out, result);
}

// grad_input from grad and the forward output y, per row:
//   softmax:     y * (g - sum(g * y))        log_softmax: g - exp(y) * sum(g)
template <class C, class Out, bool Log>
__global__ void __launch_bounds__(cuda::detail::kMaxGroupSize)
    softmax_backward_kernel(const C* grad, const C* output, void* grad_input, int64_t rows, int64_t size,
                            int64_t inner) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row / inner * size * inner + row % inner;
    C total = 0;
    for (int64_t k = threadIdx.x; k < size; k += blockDim.x) {
      const int64_t at = base + k * inner;
      total += Log ? grad[at] : grad[at] * output[at];
    }
    total = block_all_reduce(SumOp<C>{}, total);
    for (int64_t k = threadIdx.x; k < size; k += blockDim.x) {
      const int64_t at = base + k * inner;
      store<Out>(grad_input, at,
                 Log ? grad[at] - cuda::detail::exp_of(output[at]) * total : output[at] * (grad[at] - total));
    }
  }
}

template <bool Log>
void softmax_backward_out_cuda(const Tensor& grad_input, const Tensor& grad, const Tensor& output, int64_t dim,
                               ScalarType input_dtype) {
  if (grad_input.numel() == 0) return;
  const char* op = Log ? "_log_softmax_backward_data" : "_softmax_backward_data";
  const ScalarType compute = float_compute_type(promote_types(output.dtype(), input_dtype));
  const Tensor g = dense_as(grad, compute), y = dense_as(output, compute);
  const Tensor result = dense_destination(grad_input, grad_input.dtype());
  const detail::DimLayout layout = detail::layout_around(output.sizes(), wrap_dim(dim, output.dim(), op));
  const int64_t rows = layout.outer * layout.inner;
  const RowLaunch launch = row_launch(rows, layout.size);
  const int device = grad_input.device().index();
  cuda::detail::DeviceScope scope(device);
  const cudaStream_t stream = cuda::detail::current_native_stream(device);
  visit_dtype(compute, [&]<class C>() {
    visit_dtype(grad_input.dtype(), [&]<class Out>() {
      // A float computation never writes float64 (float64 anywhere makes the compute float64).
      if constexpr ((std::is_same_v<C, double> ||
                     std::is_same_v<C, float>)&&std::is_floating_point_v<compute_type_t<Out>> &&
                    !(std::is_same_v<C, float> && std::is_same_v<Out, double>))
        softmax_backward_kernel<C, Out, Log><<<launch.blocks, launch.threads, 0, stream>>>(
            g.data_ptr<C>(), y.data_ptr<C>(), result.data_ptr(), rows, layout.size, layout.inner);
    });
  });
  cuda::detail::check_cuda(cudaGetLastError(), op);
  write_back(grad_input, result);
}

// ---------------------------------------------------------------------------------------
// dropout. See Note [Dropout] in ops/nn.cpp. Element e (row-major) draws Philox number e of
// the reserved stream (Note [Philox offsets] in tensor/generator.h): kept when its uniform
// float in [0, 1) is at least p. The mask does not depend on the launch shape, but it is not
// the CPU's mask (the CPU draws from its own generator).

template <class T>
__global__ void dropout_kernel(int64_t count, const void* input, void* output, bool* mask, uint64_t seed,
                               uint64_t offset, double p, compute_type_t<T> scale) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += step) {
    const float uniform =
        cuda::detail::uniform_float(cuda::detail::philox_number(seed, offset, static_cast<uint64_t>(e)));
    const bool keep = static_cast<double>(uniform) >= p;
    mask[e] = keep;
    store<T>(output, e, keep ? load<T>(input, e) * scale : compute_type_t<T>(0));
  }
}

struct FillTrue {
  __device__ bool operator()() const { return true; }
};

void native_dropout_out_cuda(const Tensor& output, const Tensor& mask, const Tensor& input, double p,
                             std::optional<bool> train) {
  if (train.has_value() && !*train) {
    cuda::detail::launch_elementwise<bool>("native_dropout", FillTrue{}, mask);
    cuda::detail::copy_kernel(output, input);
    return;
  }
  const int64_t count = input.numel();
  if (count == 0) return;
  const Tensor keep_mask = dense_destination(mask, kBool), result = dense_destination(output, input.dtype());
  const Tensor x = dense_as(input, input.dtype());
  cuda::detail::check_not_capturing_random(output.device().index(), "native_dropout");
  auto& generator = static_cast<PhiloxGenerator&>(default_generator(output.device()));
  std::pair<uint64_t, uint64_t> seed_offset;
  {
    std::lock_guard lock(generator.mutex);
    seed_offset = generator.reserve_offset(static_cast<uint64_t>(count));
  }
  const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  const int device = output.device().index();
  cuda::detail::DeviceScope scope(device);
  const cuda::detail::LaunchShape shape = cuda::detail::launch_shape(count);
  visit_dtype(input.dtype(), [&]<class T>() {
    using C = compute_type_t<T>;
    if constexpr (std::is_floating_point_v<C>)
      dropout_kernel<T>
          <<<static_cast<unsigned>(shape.blocks), shape.threads, 0, cuda::detail::current_native_stream(device)>>>(
              count, x.data_ptr(), result.data_ptr(), keep_mask.data_ptr<bool>(), seed_offset.first, seed_offset.second,
              p, static_cast<C>(scale));
  });
  cuda::detail::check_cuda(cudaGetLastError(), "native_dropout");
  write_back(mask, keep_mask);
  write_back(output, result);
}

// ---------------------------------------------------------------------------------------
// layer_norm. See Note [Layer norm statistics] in ops/nn.cpp: per row, the mean and then the
// mean of squared deviations, both accumulated in double; rstd = 1 / sqrt(var + eps).

template <class T>
__global__ void __launch_bounds__(cuda::detail::kMaxGroupSize)
    layer_norm_kernel(const void* input, const compute_type_t<T>* weight, const compute_type_t<T>* bias, void* output,
                      void* means, void* rstds, int64_t rows, int64_t row_size, double eps) {
  using C = compute_type_t<T>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row * row_size;
    double sum = 0;
    for (int64_t i = threadIdx.x; i < row_size; i += blockDim.x) sum += static_cast<double>(load<T>(input, base + i));
    sum = block_all_reduce(SumOp<double>{}, sum);
    const double mean = row_size > 0 ? sum / static_cast<double>(row_size) : 0.0;
    double squares = 0;
    for (int64_t i = threadIdx.x; i < row_size; i += blockDim.x) {
      const double deviation = static_cast<double>(load<T>(input, base + i)) - mean;
      squares += deviation * deviation;
    }
    squares = block_all_reduce(SumOp<double>{}, squares);
    const double variance = row_size > 0 ? squares / static_cast<double>(row_size) : 0.0;
    const C mean_c = static_cast<C>(mean), rstd_c = static_cast<C>(1.0 / ::sqrt(variance + eps));
    for (int64_t i = threadIdx.x; i < row_size; i += blockDim.x) {
      C value = (static_cast<C>(load<T>(input, base + i)) - mean_c) * rstd_c;
      if (weight) value *= weight[i];
      if (bias) value += bias[i];
      store<T>(output, base + i, value);
    }
    if (threadIdx.x == 0) {
      store<T>(means, row, mean_c);
      store<T>(rstds, row, rstd_c);
    }
  }
}

void native_layer_norm_out_cuda(const Tensor& output, const Tensor& mean, const Tensor& rstd, const Tensor& input,
                                IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                                const std::optional<Tensor>& bias, double eps) {
  const shapes::LayerNormGeometry shape = shapes::layer_norm_geometry(input, normalized_shape, weight, bias);
  if (shape.rows == 0) return;
  const ScalarType dtype = input.dtype(), compute = float_compute_type(dtype);
  const Tensor x = dense_as(input, dtype);
  const Tensor w = weight && weight->defined() ? dense_as(*weight, compute) : Tensor();
  const Tensor b = bias && bias->defined() ? dense_as(*bias, compute) : Tensor();
  const Tensor y = dense_destination(output, dtype), means = dense_destination(mean, dtype),
               rstds = dense_destination(rstd, dtype);
  const RowLaunch launch = row_launch(shape.rows, shape.row_size);
  const int device = input.device().index();
  cuda::detail::DeviceScope scope(device);
  visit_dtype(dtype, [&]<class T>() {
    using C = compute_type_t<T>;
    if constexpr (std::is_floating_point_v<C>)
      layer_norm_kernel<T><<<launch.blocks, launch.threads, 0, cuda::detail::current_native_stream(device)>>>(
          shape.row_size > 0 ? x.data_ptr() : nullptr, w.defined() && w.numel() > 0 ? w.data_ptr<C>() : nullptr,
          b.defined() && b.numel() > 0 ? b.data_ptr<C>() : nullptr, shape.row_size > 0 ? y.data_ptr() : nullptr,
          means.data_ptr(), rstds.data_ptr(), shape.rows, shape.row_size, eps);
  });
  cuda::detail::check_cuda(cudaGetLastError(), "native_layer_norm");
  write_back(output, y);
  write_back(mean, means);
  write_back(rstd, rstds);
}

// ---------------------------------------------------------------------------------------
// embedding. Indices are checked on the device (Note [CUDA index checks] in index_check.cuh).

// Copies whole elements as Word (an unsigned integer of the element's size): dtype-blind.
template <class Word, class Index>
__global__ void embedding_kernel(int64_t count, int64_t dim, const Index* indices, const Word* table, int64_t rows,
                                 int64_t row_stride, int64_t column_stride, Word* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += step) {
    const int64_t row = static_cast<int64_t>(indices[e / dim]);
    cuda::detail::check_index("embedding", row, 0, rows);
    out[e] = table[row * row_stride + e % dim * column_stride];
  }
}

template <class Word>
void launch_embedding(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  const int64_t count = out.numel(), dim = weight.sizes()[1];
  const cuda::detail::LaunchShape shape = cuda::detail::launch_shape(count);
  const cudaStream_t stream = cuda::detail::current_native_stream(out.device().index());
  const auto* table = static_cast<const Word*>(weight.data_ptr());
  auto* result = static_cast<Word*>(out.data_ptr());
  visit_dtype(indices.dtype(), [&]<class Index>() {
    if constexpr (std::is_same_v<Index, int32_t> || std::is_same_v<Index, int64_t>)
      embedding_kernel<Word, Index><<<static_cast<unsigned>(shape.blocks), shape.threads, 0, stream>>>(
          count, dim, indices.data_ptr<Index>(), table, weight.sizes()[0], weight.stride(0), weight.stride(1), result);
  });
}

void embedding_out_cuda(const Tensor& out, const Tensor& weight, const Tensor& indices, int64_t, bool, bool) {
  if (out.numel() == 0) return;
  const Tensor dest = dense_destination(out, out.dtype());
  const Tensor rows = dense_as(indices, indices.dtype());
  const int device = out.device().index();
  cuda::detail::DeviceScope scope(device);
  switch (weight.element_size()) {
    case 1: launch_embedding<uint8_t>(dest, weight, rows); break;
    case 2: launch_embedding<uint16_t>(dest, weight, rows); break;
    case 4: launch_embedding<uint32_t>(dest, weight, rows); break;
    default: launch_embedding<uint64_t>(dest, weight, rows); break;
  }
  cuda::detail::check_cuda(cudaGetLastError(), "embedding");
  write_back(out, dest);
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  using detail::structured;
  m.impl("softmax.int", structured<&shapes::softmax_int, &softmax_out_cuda<false>>());
  m.impl("log_softmax.int", structured<&shapes::log_softmax_int, &softmax_out_cuda<true>>());
  m.impl("_softmax_backward_data", structured<&shapes::_softmax_backward_data, &softmax_backward_out_cuda<false>>());
  m.impl("_log_softmax_backward_data",
         structured<&shapes::_log_softmax_backward_data, &softmax_backward_out_cuda<true>>());
  m.impl("native_dropout", structured<&shapes::native_dropout, &native_dropout_out_cuda>());
  m.impl("native_layer_norm", structured<&shapes::native_layer_norm, &native_layer_norm_out_cuda>());
  m.impl("embedding", structured<&shapes::embedding, &embedding_out_cuda>());
}

}  // namespace strata
