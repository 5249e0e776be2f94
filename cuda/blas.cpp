// cuBLAS for the CUDA backend: per-thread handles, errors, and the GEMM calls that matmul,
// linear and conv2d make. See Note [Row-major GEMM through cuBLAS] in gemm_layout.h.
#include <strata/cuda/blas.h>

#include <array>
#include <atomic>
#include <mutex>
#include <vector>

#include <strata/cuda/runtime.h>
#include <strata/tensor/errors.h>

namespace strata::cuda::detail {
namespace {

// Note [cuBLAS handles]
// A cuBLAS handle must not be used by two threads at once, and creating one is slow, so each
// thread gets its own per device, on first use. When a thread ends, its handles go back to a
// per-device pool that later threads take from, instead of being destroyed: the pool itself
// is never destroyed, because destroying a handle after the CUDA runtime has shut down (at
// process exit) can crash. So there are at most as many handles as threads that used cuBLAS
// at the same time. Handles use cuBLAS's default math mode (no TF32 unless the compute type
// asks for it, see Note [TF32 in matmul]) and do not reduce 16-bit products in reduced
// precision, so float16/bfloat16 GEMMs accumulate in float like the CPU's.
struct HandlePool {
  std::mutex mutex;
  std::array<std::vector<cublasHandle_t>, kMaxDevices> free;
};

HandlePool& handle_pool() {
  static HandlePool* pool = new HandlePool();  // never destroyed; see the Note
  return *pool;
}

struct ThreadHandles {
  std::array<cublasHandle_t, kMaxDevices> handles{};
  ThreadHandles() = default;
  ThreadHandles(const ThreadHandles&) = delete;
  ThreadHandles& operator=(const ThreadHandles&) = delete;
  ~ThreadHandles() {
    HandlePool& pool = handle_pool();
    std::lock_guard lock(pool.mutex);
    for (size_t device = 0; device < handles.size(); ++device)
      if (handles[device]) pool.free[device].push_back(handles[device]);
  }
};

cublasHandle_t take_or_create(int device) {
  HandlePool& pool = handle_pool();
  {
    std::lock_guard lock(pool.mutex);
    std::vector<cublasHandle_t>& free = pool.free[static_cast<size_t>(device)];
    if (!free.empty()) {
      cublasHandle_t handle = free.back();
      free.pop_back();
      return handle;
    }
  }
  cublasHandle_t handle = nullptr;
  check_cublas(cublasCreate(&handle), "cublas");
  const auto mode = static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  check_cublas(cublasSetMathMode(handle, mode), "cublas");
  return handle;
}

cudaDataType_t data_type(ScalarType dtype) {
  switch (dtype) {
    case kFloat32: return CUDA_R_32F;
    case kFloat64: return CUDA_R_64F;
    case kFloat16: return CUDA_R_16F;
    case kBFloat16: return CUDA_R_16BF;
    default: break;
  }
  strata::detail::throw_error<TypeError>("[cublas] no cuBLAS data type for ", dtype);
}

}  // namespace

void throw_cublas_error(cublasStatus_t status, std::string_view op) {
  strata::detail::throw_error<Error>("[", op, "] cuBLAS error ", cublasGetStatusName(status), ": ",
                                     cublasGetStatusString(status));
}

cublasHandle_t cublas_handle(int device) {
  STRATA_CHECK(device >= 0 && device < kMaxDevices, "[cublas] device index ", device, " is out of range");
  thread_local ThreadHandles thread_handles;
  cublasHandle_t& handle = thread_handles.handles[static_cast<size_t>(device)];
  if (!handle) handle = take_or_create(device);
  check_cublas(cublasSetStream(handle, current_native_stream(device)), "cublas");
  return handle;
}

void gemm(const char* op, int device, ScalarType dtype, const GemmCall& call, const void* a, const void* b, void* c,
          const GemmBatch& batch, double beta) {
  STRATA_CHECK_TYPE(blas_supports(dtype), "[", op, "] cuBLAS does not multiply ", dtype, " matrices here");
  if (call.m == 0 || call.n == 0 || batch.count == 0) return;
  cublasHandle_t handle = cublas_handle(device);
  const cudaDataType_t type = data_type(dtype);
  const cublasOperation_t op_a = call.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = call.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  // alpha and beta have the compute type's scalar type: double for float64, else float.
  const double alpha_double = 1.0, beta_double = beta;
  const float alpha_float = 1.0f, beta_float = static_cast<float>(beta);
  const bool is_double = dtype == kFloat64;
  const void* alpha = is_double ? static_cast<const void*>(&alpha_double) : &alpha_float;
  const void* beta_pointer = is_double ? static_cast<const void*>(&beta_double) : &beta_float;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  if (is_double) compute = CUBLAS_COMPUTE_64F;
  else if (dtype == kFloat32 && allow_tf32()) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  if (batch.count == 1) {
    check_cublas(cublasGemmEx_64(handle, op_a, op_b, call.m, call.n, call.k, alpha, a, type, call.lda, b, type,
                                 call.ldb, beta_pointer, c, type, call.ldc, compute, CUBLAS_GEMM_DEFAULT),
                 op);
    return;
  }
  check_cublas(cublasGemmStridedBatchedEx_64(handle, op_a, op_b, call.m, call.n, call.k, alpha, a, type, call.lda,
                                             batch.stride_a, b, type, call.ldb, batch.stride_b, beta_pointer, c, type,
                                             call.ldc, batch.stride_c, batch.count, compute, CUBLAS_GEMM_DEFAULT),
               op);
}

void row_major_gemm(const char* op, int device, ScalarType dtype, int64_t rows, int64_t depth, int64_t cols,
                    const void* a, MatrixStrides a_strides, const void* b, MatrixStrides b_strides, void* c,
                    int64_t ldc, const GemmBatch& batch, double beta) {
  if (depth == 0) {  // an empty sum (conv2d with no input channels): C = beta * C, without cuBLAS
    STRATA_CHECK_VALUE(beta == 0.0 || beta == 1.0, "[", op, "] a product over an empty dimension supports beta 0 or "
                       "1, got ", beta);
    if (beta == 1.0 || rows == 0 || cols == 0) return;
    DeviceScope scope(device);
    const auto item = static_cast<size_t>(element_size(dtype));
    for (int64_t i = 0; i < batch.count; ++i)
      check_cuda(cudaMemset2DAsync(static_cast<char*>(c) + static_cast<size_t>(i * batch.stride_c) * item,
                                   static_cast<size_t>(ldc) * item, 0, static_cast<size_t>(cols) * item,
                                   static_cast<size_t>(rows), current_native_stream(device)),
                 op);
    return;
  }
  STRATA_INTERNAL_ASSERT(matrix_order(rows, depth, a_strides) != MatrixOrder::strided &&
                             matrix_order(depth, cols, b_strides) != MatrixOrder::strided,
                         "row_major_gemm operand layout");
  const GemmCall call = row_major_gemm(rows, depth, cols, a_strides, b_strides, ldc);
  // cuBLAS's A is our B and its B our A (see the Note).
  const GemmBatch swapped{batch.count, batch.stride_b, batch.stride_a, batch.stride_c};
  gemm(op, device, dtype, call, b, a, c, swapped, beta);
}

}  // namespace strata::cuda::detail
