// Tests for cuda/gemm_layout.h on the host: the cuBLAS calls that row-major products become,
// checked by running them through a host model of cuBLAS's column-major GEMM.
#include <doctest/doctest.h>

#include <strata/cuda/gemm_layout.h>

#include <cstdint>
#include <vector>

using namespace strata::cuda::detail;

namespace {

// cuBLAS's GEMM as its documentation defines it (column-major, op N/T, leading dims), on
// doubles holding small integers so every sum is exact; also checks the leading-dim rules.
void column_major_gemm(const GemmCall& call, const std::vector<double>& a, int64_t a_offset,
                       const std::vector<double>& b, int64_t b_offset, std::vector<double>& c, int64_t c_offset) {
  REQUIRE(call.lda >= std::max<int64_t>(1, call.transpose_a ? call.k : call.m));
  REQUIRE(call.ldb >= std::max<int64_t>(1, call.transpose_b ? call.n : call.k));
  REQUIRE(call.ldc >= std::max<int64_t>(1, call.m));
  for (int64_t i = 0; i < call.m; ++i)
    for (int64_t j = 0; j < call.n; ++j) {
      double sum = 0;
      for (int64_t l = 0; l < call.k; ++l) {
        const double x = call.transpose_a ? a[a_offset + l + i * call.lda] : a[a_offset + i + l * call.lda];
        const double y = call.transpose_b ? b[b_offset + j + l * call.ldb] : b[b_offset + l + j * call.ldb];
        sum += x * y;
      }
      c[c_offset + i + j * call.ldc] = sum;
    }
}

struct Matrix {
  int64_t rows, cols;
  MatrixStrides strides;
  std::vector<double> data;
  double at(int64_t r, int64_t c) const { return data[r * strides.row_stride + c * strides.col_stride]; }
};

// A [rows, cols] matrix with the given strides over enough storage, filled with small values.
Matrix make_matrix(int64_t rows, int64_t cols, MatrixStrides strides) {
  const int64_t extent = (rows - 1) * strides.row_stride + (cols - 1) * strides.col_stride + 1;
  Matrix m{rows, cols, strides, std::vector<double>(static_cast<size_t>(extent), -99.0)};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) m.data[r * strides.row_stride + c * strides.col_stride] = double((r * 7 + c * 3) % 11) - 5;
  return m;
}

// Runs the planned call and compares C with the product computed directly.
void check_product(const Matrix& a, const Matrix& b, int64_t ldc) {
  const int64_t rows = a.rows, depth = a.cols, cols = b.cols;
  const GemmCall call = row_major_gemm(rows, depth, cols, a.strides, b.strides, ldc);
  CHECK(call.m == cols);
  CHECK(call.n == rows);
  CHECK(call.k == depth);
  std::vector<double> c(static_cast<size_t>(std::max<int64_t>(rows * ldc, ldc)), 0.0);
  column_major_gemm(call, b.data, 0, a.data, 0, c, 0);  // cuBLAS's A is our B
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      double expected = 0;
      for (int64_t k = 0; k < depth; ++k) expected += a.at(r, k) * b.at(k, j);
      CHECK(c[r * ldc + j] == expected);
    }
}

}  // namespace

TEST_CASE("gemm_layout: matrix_order tells row-major, column-major and strided matrices apart") {
  CHECK(matrix_order(3, 4, {4, 1}) == MatrixOrder::row_major);
  CHECK(matrix_order(3, 4, {6, 1}) == MatrixOrder::row_major);   // a slice of wider rows
  CHECK(matrix_order(3, 4, {1, 3}) == MatrixOrder::col_major);   // a transposed view
  CHECK(matrix_order(3, 4, {1, 5}) == MatrixOrder::col_major);
  CHECK(matrix_order(3, 4, {8, 2}) == MatrixOrder::strided);     // stepped columns
  CHECK(matrix_order(3, 4, {0, 1}) == MatrixOrder::strided);     // rows broadcast
  CHECK(matrix_order(3, 4, {2, 1}) == MatrixOrder::strided);     // overlapping rows
  CHECK(matrix_order(1, 4, {0, 1}) == MatrixOrder::row_major);   // one row: any row stride
  CHECK(matrix_order(1, 4, {0, 3}) == MatrixOrder::col_major);   // a stepped vector as a row
  CHECK(matrix_order(4, 1, {5, 0}) == MatrixOrder::row_major);   // one column
  CHECK(matrix_order(1, 4, {0, 0}) == MatrixOrder::strided);     // a broadcast vector
}

TEST_CASE("gemm_layout: leading dimensions are at least the inner extent when a stride is free") {
  CHECK(leading_dimension(MatrixOrder::row_major, 3, 4, {6, 1}) == 6);
  CHECK(leading_dimension(MatrixOrder::row_major, 1, 4, {0, 1}) == 4);
  CHECK(leading_dimension(MatrixOrder::col_major, 3, 4, {1, 5}) == 5);
  CHECK(leading_dimension(MatrixOrder::col_major, 3, 1, {1, 0}) == 3);
  CHECK(leading_dimension(MatrixOrder::col_major, 1, 4, {0, 3}) == 3);
}

TEST_CASE("gemm_layout: row-major products run through column-major cuBLAS without copies") {
  SUBCASE("contiguous operands") { check_product(make_matrix(3, 5, {5, 1}), make_matrix(5, 4, {4, 1}), 4); }
  SUBCASE("a transposed left operand (op T)") { check_product(make_matrix(3, 5, {1, 3}), make_matrix(5, 4, {4, 1}), 4); }
  SUBCASE("a transposed right operand") { check_product(make_matrix(3, 5, {5, 1}), make_matrix(5, 4, {1, 5}), 4); }
  SUBCASE("both transposed") { check_product(make_matrix(3, 5, {1, 3}), make_matrix(5, 4, {1, 5}), 4); }
  SUBCASE("sliced rows (leading dims above the width)") {
    check_product(make_matrix(3, 5, {9, 1}), make_matrix(5, 4, {7, 1}), 6);
  }
  SUBCASE("a row vector times a matrix, and a matrix times a column") {
    check_product(make_matrix(1, 5, {0, 1}), make_matrix(5, 4, {4, 1}), 4);
    check_product(make_matrix(1, 5, {0, 2}), make_matrix(5, 4, {4, 1}), 4);  // a stepped vector
    check_product(make_matrix(3, 5, {5, 1}), make_matrix(5, 1, {1, 0}), 1);
    check_product(make_matrix(3, 5, {5, 1}), make_matrix(5, 1, {3, 0}), 1);
  }
  SUBCASE("dot product and outer product") {
    check_product(make_matrix(1, 6, {0, 1}), make_matrix(6, 1, {1, 0}), 1);
    check_product(make_matrix(4, 1, {1, 0}), make_matrix(1, 3, {0, 1}), 3);
    check_product(make_matrix(4, 1, {2, 0}), make_matrix(1, 3, {0, 2}), 3);
  }
}

TEST_CASE("gemm_layout: batch dims collapse into one strided call where every operand allows") {
  SUBCASE("contiguous batches merge") {
    const std::vector<int64_t> batch{2, 3}, a{36, 12}, b{60, 20}, c{30, 10};
    const BatchPlan plan = plan_batches(batch, {a, b, c});
    CHECK(plan.inner_count == 6);
    CHECK(plan.inner_stride[0] == 12);
    CHECK(plan.inner_stride[1] == 20);
    CHECK(plan.inner_stride[2] == 10);
    CHECK(plan.outer_count() == 1);
  }
  SUBCASE("a fully broadcast operand merges with stride 0") {
    const std::vector<int64_t> batch{2, 3}, a{0, 0}, b{60, 20}, c{30, 10};
    const BatchPlan plan = plan_batches(batch, {a, b, c});
    CHECK(plan.inner_count == 6);
    CHECK(plan.inner_stride[0] == 0);
    CHECK(plan.outer_count() == 1);
  }
  SUBCASE("broadcasting in different dims leaves an outer loop") {
    // a: [2, 1, m, k] broadcast over dim 1; b: [3, k, n] broadcast over dim 0.
    const std::vector<int64_t> batch{2, 3}, a{12, 0}, b{0, 20}, c{30, 10};
    const BatchPlan plan = plan_batches(batch, {a, b, c});
    CHECK(plan.inner_count == 3);
    CHECK(plan.inner_stride[0] == 0);
    CHECK(plan.inner_stride[1] == 20);
    CHECK(plan.inner_stride[2] == 10);
    REQUIRE(plan.outer_count() == 2);
    CHECK(plan.outer_offset(0, 1) == 12);
    CHECK(plan.outer_offset(1, 1) == 0);
    CHECK(plan.outer_offset(2, 1) == 30);
  }
  SUBCASE("size-1 dims are skipped, and every batch is reached exactly once") {
    const std::vector<int64_t> batch{2, 1, 3, 2}, a{100, 7, 0, 10}, b{0, 5, 40, 20}, c{6, 6, 2, 1};
    const BatchPlan plan = plan_batches(batch, {a, b, c});
    CHECK(plan.inner_count == 2);
    std::vector<int> seen(12, 0);
    for (int64_t outer = 0; outer < plan.outer_count(); ++outer)
      for (int64_t inner = 0; inner < plan.inner_count; ++inner) {
        const int64_t c_offset = plan.outer_offset(2, outer) + inner * plan.inner_stride[2];
        REQUIRE(c_offset >= 0);
        REQUIRE(c_offset < 12);
        ++seen[static_cast<size_t>(c_offset)];
        // The batch's coordinates recovered from C's offset give A's and B's offsets.
        const int64_t i0 = c_offset / 6, i2 = c_offset % 6 / 2, i3 = c_offset % 2;
        CHECK(plan.outer_offset(0, outer) + inner * plan.inner_stride[0] == i0 * 100 + i2 * 0 + i3 * 10);
        CHECK(plan.outer_offset(1, outer) + inner * plan.inner_stride[1] == i0 * 0 + i2 * 40 + i3 * 20);
      }
    for (int count : seen) CHECK(count == 1);
  }
  SUBCASE("no batch dims") {
    const std::vector<int64_t> none;
    const BatchPlan plan = plan_batches(none, {none, none, none});
    CHECK(plan.inner_count == 1);
    CHECK(plan.outer_count() == 1);
  }
}
