// CUDA kernels of ops/linalg.cpp: matmul (torch.matmul semantics: 1-d operands, broadcast
// batch dims), mm, bmm, linear, and the out= forms of the first three. The shape functions are
// ops/shapes/linalg.h's. Floating dtypes multiply through cuBLAS (see Note [Row-major GEMM
// through cuBLAS] in gemm_layout.h); integers through a small tiled kernel that accumulates in
// uint64 and wraps, as the CPU's loop does.
#include <cuda_runtime.h>

#include <type_traits>

#include <strata/cuda/blas.h>
#include <strata/cuda/copy.h>
#include <strata/cuda/dense.h>
#include <strata/cuda/elementwise.cuh>
#include <strata/cuda/gemm_layout.h>
#include <strata/cuda/runtime.h>
#include <strata/dispatch/library.h>
#include <strata/ops/shapes/linalg.h>
#include <strata/ops/structured.h>

namespace strata {
namespace {

using cuda::detail::BatchPlan;
using cuda::detail::MatrixOrder;
using cuda::detail::MatrixStrides;
using shapes::MatmulShape;

// ---------------------------------------------------------------------------------------
// Operands: one input seen as batch x [rows, cols] through element strides (as the CPU's).

struct Operand {
  const char* data;
  DimVector batch_strides;  // aligned with MatmulShape::batch; 0 where broadcast
  MatrixStrides strides;
};

Operand make_operand(const Tensor& t, bool left, const MatmulShape& shape) {
  Operand operand{static_cast<const char*>(t.data_ptr()), DimVector(shape.batch.size(), 0), {}};
  const int64_t ndim = t.dim();
  if (ndim == 1) {  // a row [1, k] on the left, a column [k, 1] on the right
    (left ? operand.strides.col_stride : operand.strides.row_stride) = t.strides()[0];
    return operand;
  }
  operand.strides = {t.strides()[ndim - 2], t.strides()[ndim - 1]};
  const int64_t batch_dims = ndim - 2, offset = static_cast<int64_t>(shape.batch.size()) - batch_dims;
  for (int64_t d = 0; d < batch_dims; ++d)
    operand.batch_strides[offset + d] = t.sizes()[d] == 1 ? 0 : t.strides()[d];
  return operand;
}

// t itself when its matrices are row- or column-major (or it is a usable vector), else a
// contiguous copy, as the CPU kernel decides.
Tensor usable_layout(const Tensor& t) {
  bool usable = true;
  if (t.dim() == 1) {
    usable = t.strides()[0] != 0 || t.sizes()[0] <= 1;
  } else {
    const int64_t rows = t.sizes()[t.dim() - 2], cols = t.sizes()[t.dim() - 1];
    usable = cuda::detail::matrix_order(rows, cols, {t.strides()[t.dim() - 2], t.strides()[t.dim() - 1]}) !=
             MatrixOrder::strided;
  }
  return usable ? t : cuda::detail::dense(t);
}

// ---------------------------------------------------------------------------------------
// Integer products. Note [Integer matmul on CUDA]
// cuBLAS has no wrapping integer GEMM, so integers use a plain shared-memory tiled kernel:
// each block computes a kTile x kTile tile of C for one batch, accumulating in uint64 (products
// and sums wrap modulo 2^64, like the CPU's loop_product), then truncates to the dtype. It
// reads operands through their strides, so any layout works. Correct, not fast: integer
// products are rare (the CPU's is a plain loop too).

constexpr int kTile = 16;

struct IntegerProduct {
  int64_t rows, depth, cols;
  MatrixStrides a, b;
  int64_t ldc;
  int64_t batches, batch_stride_a, batch_stride_b, batch_stride_c;
};

template <class T>
__global__ void integer_matmul_kernel(const T* a, const T* b, T* c, IntegerProduct p) {
  __shared__ uint64_t a_tile[kTile][kTile];
  __shared__ uint64_t b_tile[kTile][kTile];
  const int64_t row_tiles = (p.rows + kTile - 1) / kTile, col_tiles = (p.cols + kTile - 1) / kTile;
  const int ty = static_cast<int>(threadIdx.y), tx = static_cast<int>(threadIdx.x);
  // Grid-stride over (batch, row tile, col tile); the loop bounds are uniform over the block.
  for (int64_t batch = blockIdx.z; batch < p.batches; batch += gridDim.z) {
    const T* a_batch = a + batch * p.batch_stride_a;
    const T* b_batch = b + batch * p.batch_stride_b;
    for (int64_t row_tile = blockIdx.y; row_tile < row_tiles; row_tile += gridDim.y) {
      for (int64_t col_tile = blockIdx.x; col_tile < col_tiles; col_tile += gridDim.x) {
        const int64_t row = row_tile * kTile + ty, col = col_tile * kTile + tx;
        uint64_t sum = 0;
        for (int64_t k0 = 0; k0 < p.depth; k0 += kTile) {
          const int64_t a_col = k0 + tx, b_row = k0 + ty;
          a_tile[ty][tx] = row < p.rows && a_col < p.depth
                               ? static_cast<uint64_t>(a_batch[row * p.a.row_stride + a_col * p.a.col_stride])
                               : 0;
          b_tile[ty][tx] = b_row < p.depth && col < p.cols
                               ? static_cast<uint64_t>(b_batch[b_row * p.b.row_stride + col * p.b.col_stride])
                               : 0;
          __syncthreads();
          for (int k = 0; k < kTile; ++k) sum += a_tile[ty][k] * b_tile[k][tx];
          __syncthreads();
        }
        if (row < p.rows && col < p.cols)
          c[batch * p.batch_stride_c + row * p.ldc + col] = static_cast<T>(static_cast<int64_t>(sum));
      }
    }
  }
}

template <class T>
void launch_integer_matmul(int device, const T* a, const T* b, T* c, const IntegerProduct& p) {
  const dim3 threads(kTile, kTile);
  const auto capped = [](int64_t count, int64_t limit) { return static_cast<unsigned>(std::min(count, limit)); };
  const dim3 blocks(capped(cuda::detail::ceil_div(p.cols, kTile), 1 << 20),
                    capped(cuda::detail::ceil_div(p.rows, kTile), 65535), capped(p.batches, 65535));
  integer_matmul_kernel<T><<<blocks, threads, 0, cuda::detail::current_native_stream(device)>>>(a, b, c, p);
  cuda::detail::check_cuda(cudaGetLastError(), "matmul");
}

// ---------------------------------------------------------------------------------------
// out (contiguous, shape.out_sizes, no operand reads it) = self @ other.

void multiply_into(const Tensor& out, const Tensor& self, const Tensor& other, const MatmulShape& shape) {
  if (out.numel() == 0) return;
  const int device = out.device().index();
  cuda::detail::DeviceScope scope(device);
  if (shape.depth == 0) {
    cuda::detail::check_cuda(cudaMemsetAsync(out.data_ptr(), 0, static_cast<size_t>(out.nbytes()),
                                             cuda::detail::current_native_stream(device)),
                             "matmul");
    return;
  }
  const Tensor a = usable_layout(self), b = usable_layout(other);
  const Operand left = make_operand(a, true, shape), right = make_operand(b, false, shape);
  DimVector c_strides(shape.batch.size(), 0);  // out is contiguous: batches of rows x cols
  int64_t step = shape.rows * shape.cols;
  for (size_t d = shape.batch.size(); d-- > 0;) {
    c_strides[d] = shape.batch[d] == 1 ? 0 : step;
    step *= shape.batch[d];
  }
  const BatchPlan plan =
      cuda::detail::plan_batches(shape.batch.ref(), {left.batch_strides.ref(), right.batch_strides.ref(), c_strides.ref()});
  const int64_t element = out.element_size();
  char* c = static_cast<char*>(out.data_ptr());
  for (int64_t outer = 0; outer < plan.outer_count(); ++outer) {
    const char* a_data = left.data + plan.outer_offset(0, outer) * element;
    const char* b_data = right.data + plan.outer_offset(1, outer) * element;
    char* c_data = c + plan.outer_offset(2, outer) * element;
    if (cuda::detail::blas_supports(out.dtype())) {
      const cuda::detail::GemmBatch batch{plan.inner_count, plan.inner_stride[0], plan.inner_stride[1],
                                          plan.inner_stride[2]};
      cuda::detail::row_major_gemm("matmul", device, out.dtype(), shape.rows, shape.depth, shape.cols, a_data,
                                   left.strides, b_data, right.strides, c_data, shape.cols, batch);
      continue;
    }
    const IntegerProduct product{shape.rows, shape.depth, shape.cols, left.strides, right.strides, shape.cols,
                                 plan.inner_count, plan.inner_stride[0], plan.inner_stride[1], plan.inner_stride[2]};
    visit_dtype(out.dtype(), [&]<class T>() {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
        launch_integer_matmul<T>(device, reinterpret_cast<const T*>(a_data), reinterpret_cast<const T*>(b_data),
                                 reinterpret_cast<T*>(c_data), product);
    });
  }
}

// ---------------------------------------------------------------------------------------
// CUDA compute (Note [Structured ops]). multiply_into needs a contiguous destination that no
// operand reads: any other `out` (a strided or aliasing out= tensor) is filled through a
// contiguous temporary, as on the CPU.

template <class Fill>
void fill_output(const Tensor& out, const Tensor& self, const Tensor& other, const Fill& fill) {
  using cuda::detail::shares_storage;
  if (out.is_contiguous() && !shares_storage(out, self) && !shares_storage(out, other)) return fill(out);
  const Tensor target = detail::make_empty(out.sizes(), out.dtype(), out.device());
  fill(target);
  cuda::detail::copy_kernel(out, target);
}

void matmul_out_cuda(const Tensor& out, const Tensor& self, const Tensor& other) {
  fill_output(out, self, other, [&](const Tensor& target) {
    multiply_into(target, self, other, shapes::matmul_shape(self, other));
  });
}
void mm_out_cuda(const Tensor& out, const Tensor& self, const Tensor& mat2) {
  fill_output(out, self, mat2, [&](const Tensor& target) { multiply_into(target, self, mat2, shapes::mm_shape(self, mat2)); });
}
void bmm_out_cuda(const Tensor& out, const Tensor& self, const Tensor& mat2) {
  fill_output(out, self, mat2, [&](const Tensor& target) { multiply_into(target, self, mat2, shapes::bmm_shape(self, mat2)); });
}

// ---------------------------------------------------------------------------------------
// linear: one GEMM of input as [rows, in] by weight^T (a view), then the bias added to each
// row in a second pass, as on the CPU (see Note [linear as one GEMM] in ops/linalg.cpp).

struct WrappingAdd {
  template <class C>
  __device__ C operator()(C x, C y) const {
    if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
      return static_cast<C>(static_cast<std::make_unsigned_t<C>>(x) + static_cast<std::make_unsigned_t<C>>(y));
    else return static_cast<C>(x + y);
  }
};

Tensor input_matrix(const Tensor& input, int64_t rows) {
  if (input.dim() == 2) return input;
  const Tensor contiguous = cuda::detail::dense(input);
  return detail::make_view(contiguous, {rows, input.size(-1)}, {input.size(-1), 1}, contiguous.storage_offset());
}

void linear_out_cuda(const Tensor& out, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  if (out.numel() == 0) return;
  const shapes::LinearShape shape = shapes::linear_shape(input, weight, bias);
  const Tensor weight_t = detail::make_view(weight, {weight.size(1), weight.size(0)},
                                            {weight.stride(1), weight.stride(0)}, weight.storage_offset());
  const Tensor matrix = input_matrix(input, shape.product.rows);
  fill_output(out, input, weight, [&](const Tensor& target) { multiply_into(target, matrix, weight_t, shape.product); });
  if (bias && bias->defined()) {
    visit_dtype(out.dtype(), [&]<class T>() {
      if constexpr (!std::is_same_v<T, bool>)
        cuda::detail::launch_elementwise<T, T, T>("linear", WrappingAdd{}, out, out, *bias);
    });
  }
}

}  // namespace

STRATA_LIBRARY_IMPL(strata, CUDA, m) {
  using detail::structured, detail::structured_out;
  constexpr auto copy = &cuda::detail::copy_kernel;
  m.impl("matmul", structured<&shapes::matmul, &matmul_out_cuda>());
  m.impl("mm", structured<&shapes::mm, &mm_out_cuda>());
  m.impl("bmm", structured<&shapes::bmm, &bmm_out_cuda>());
  m.impl("linear", structured<&shapes::linear, &linear_out_cuda>());
  m.impl("matmul.out", structured_out<&shapes::matmul, &matmul_out_cuda, "matmul.out", copy>());
  m.impl("mm.out", structured_out<&shapes::mm, &mm_out_cuda, "mm.out", copy>());
  m.impl("bmm.out", structured_out<&shapes::bmm, &bmm_out_cuda, "bmm.out", copy>());
}

}  // namespace strata
