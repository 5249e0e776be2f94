#pragma once
// Internal to cuda/: how a row-major strata product reaches column-major cuBLAS, as plain
// arithmetic with no CUDA header, so the host tests check every layout decision.
//
// Note [Row-major GEMM through cuBLAS]
// cuBLAS reads matrices column-major: element (r, c) of an ld-matrix sits at r + c * ld. A
// row-major matrix [rows, cols] with row stride ld is, read that way, its own transpose
// [cols, rows]. So C = A B (row-major) is computed as C^T = B^T A^T (column-major): cuBLAS's
// first operand is our B and its second our A, with m = cols, n = rows, k = depth, and C
// written with ldc = C's row stride. An operand whose matrices are row-major (unit column
// stride) enters untransposed; one whose matrices are column-major (unit row stride: a
// transposed view) enters with op T; neither is copied. Anything else (a broadcast vector, a
// stepped slice of both dims) is made contiguous first, as the CPU kernel does (the orders
// and leading dimensions below are those of ops/linalg.cpp's order_of and leading).
// Batches: cuBLAS's strided-batched call takes one element stride per operand, so the batch
// dims are split into an inner run that collapses to one stride for every operand (one call
// covers it) and outer dims looped over on the host (plan_batches).
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace strata::cuda::detail {

enum class MatrixOrder { row_major, col_major, strided };

// A matrix [rows, cols] seen through element strides.
struct MatrixStrides {
  int64_t row_stride = 0, col_stride = 0;
};

// Row- or column-major with a BLAS leading dimension of at least the inner extent; size-1
// dims put no constraint on their stride. Broadcast (stride 0) and overlapping layouts are
// strided. Row-major wins when both hold.
constexpr MatrixOrder matrix_order(int64_t rows, int64_t cols, MatrixStrides s) {
  if ((s.col_stride == 1 || cols == 1) && (rows == 1 || s.row_stride >= std::max<int64_t>(cols, 1)))
    return MatrixOrder::row_major;
  if ((s.row_stride == 1 || rows == 1) && (cols == 1 || s.col_stride >= std::max<int64_t>(rows, 1)))
    return MatrixOrder::col_major;
  return MatrixOrder::strided;
}

// The leading dimension BLAS sees for a row- or column-major matrix (a valid one, at least the
// inner extent, when the stride is unconstrained because the outer extent is 1).
constexpr int64_t leading_dimension(MatrixOrder order, int64_t rows, int64_t cols, MatrixStrides s) {
  if (order == MatrixOrder::row_major) return rows == 1 ? std::max<int64_t>(cols, 1) : s.row_stride;
  return cols == 1 ? std::max<int64_t>(rows, 1) : s.col_stride;
}

// One cuBLAS GEMM in its own (column-major) terms: C[m, n] = op(A)[m, k] op(B)[k, n].
struct GemmCall {
  bool transpose_a = false, transpose_b = false;
  int64_t m = 0, n = 0, k = 0, lda = 1, ldb = 1, ldc = 1;
};

// C (row-major [rows, cols], row stride ldc, unit column stride) = A [rows, depth] B [depth, cols]
// as one cuBLAS call; see Note [Row-major GEMM through cuBLAS]. Neither operand may be strided.
constexpr GemmCall row_major_gemm(int64_t rows, int64_t depth, int64_t cols, MatrixStrides a, MatrixStrides b,
                                  int64_t ldc) {
  const MatrixOrder order_a = matrix_order(rows, depth, a), order_b = matrix_order(depth, cols, b);
  GemmCall call;
  call.m = cols;
  call.n = rows;
  call.k = depth;
  // cuBLAS's A is our B: row-major B is B^T column-major as it stands; column-major B needs op T.
  call.transpose_a = order_b == MatrixOrder::col_major;
  call.lda = leading_dimension(order_b, depth, cols, b);
  call.transpose_b = order_a == MatrixOrder::col_major;
  call.ldb = leading_dimension(order_a, rows, depth, a);
  call.ldc = rows == 1 ? std::max<int64_t>(cols, 1) : ldc;
  return call;
}

// ---------------------------------------------------------------------------------------
// Batches.

// Three operands (A, B, C) over broadcast batch dims: `inner_count` batches one strided call
// covers, with one element stride each, and the outer dims the host loops over.
struct BatchPlan {
  int64_t inner_count = 1;
  int64_t inner_stride[3] = {0, 0, 0};
  std::vector<int64_t> outer_sizes;
  std::vector<int64_t> outer_strides[3];
  int64_t outer_count() const {
    int64_t count = 1;
    for (int64_t size : outer_sizes) count *= size;
    return count;
  }
  // Element offset of operand `operand` for outer batch number `index` (row-major).
  int64_t outer_offset(int operand, int64_t index) const {
    int64_t offset = 0;
    for (size_t d = outer_sizes.size(); d-- > 0;) {
      offset += (index % outer_sizes[d]) * outer_strides[operand][d];
      index /= outer_sizes[d];
    }
    return offset;
  }
};

// `batch` holds the batch sizes; strides[k] operand k's batch strides (0 where broadcast).
// Walks from the innermost dim, merging a dim into the inner run while every operand's
// stride there equals its inner stride times the run's count; the rest are outer.
inline BatchPlan plan_batches(std::span<const int64_t> batch, const std::span<const int64_t> (&strides)[3]) {
  BatchPlan plan;
  size_t d = batch.size();
  for (; d > 0; --d) {
    const size_t dim = d - 1;
    const int64_t size = batch[dim];
    if (size == 1) continue;
    if (plan.inner_count == 1) {
      for (int k = 0; k < 3; ++k) plan.inner_stride[k] = strides[k][dim];
      plan.inner_count = size;
      continue;
    }
    bool mergeable = true;
    for (int k = 0; k < 3; ++k) mergeable = mergeable && strides[k][dim] == plan.inner_stride[k] * plan.inner_count;
    if (!mergeable) break;
    plan.inner_count *= size;
  }
  for (size_t dim = 0; dim < d; ++dim) {
    plan.outer_sizes.push_back(batch[dim]);
    for (int k = 0; k < 3; ++k) plan.outer_strides[k].push_back(strides[k][dim]);
  }
  return plan;
}

}  // namespace strata::cuda::detail
