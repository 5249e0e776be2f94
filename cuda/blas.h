#pragma once
// Internal to cuda/: cuBLAS as the backend uses it (handles, errors, GEMM). Includes
// <cublas_v2.h>; compiled by g++ (blas.cpp) and nvcc (the .cu files that multiply).
#include <cublas_v2.h>

#include <cstdint>
#include <string_view>

#include <strata/cuda/gemm_layout.h>
#include <strata/tensor/cuda.h>
#include <strata/tensor/scalar_type.h>


namespace strata::cuda::detail {

// Throws strata::Error "[op] cuBLAS error CUBLAS_STATUS_X: what cuBLAS says".
[[noreturn]] void throw_cublas_error(cublasStatus_t status, std::string_view op);

inline void check_cublas(cublasStatus_t status, std::string_view op) {
  if (status != CUBLAS_STATUS_SUCCESS) [[unlikely]]
    throw_cublas_error(status, op);
}

// The calling thread's cuBLAS handle for `device` (which must be current), created on first
// use and bound to the thread's current stream on that device. See Note [cuBLAS handles].
cublasHandle_t cublas_handle(int device);

// True for the dtypes cuBLAS multiplies here: float32, float64, float16, bfloat16.
constexpr bool blas_supports(ScalarType dtype) {
  return dtype == kFloat32 || dtype == kFloat64 || dtype == kFloat16 || dtype == kBFloat16;
}

// `count` products spaced by element strides (count 1: a single product).
struct GemmBatch {
  int64_t count = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

// C = op(A) op(B) + beta C in cuBLAS's terms (GemmCall), for a blas_supports dtype, on `device`
// (current) and its current stream. Half and bfloat16 accumulate in float; float32 uses TF32
// only when allow_tf32(). `op` names the op in errors.
void gemm(const char* op, int device, ScalarType dtype, const GemmCall& call, const void* a, const void* b, void* c,
          const GemmBatch& batch = {}, double beta = 0.0);

// C (row-major [rows, cols], row stride ldc) = A [rows, depth] B [depth, cols] + beta C for
// row- or column-major A and B, batched by `batch` with the strides of A, B and C in that
// order. See Note [Row-major GEMM through cuBLAS] in gemm_layout.h.
void row_major_gemm(const char* op, int device, ScalarType dtype, int64_t rows, int64_t depth, int64_t cols,
                    const void* a, MatrixStrides a_strides, const void* b, MatrixStrides b_strides, void* c,
                    int64_t ldc, const GemmBatch& batch = {}, double beta = 0.0);

}  // namespace strata::cuda::detail
