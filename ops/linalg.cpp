// Linear algebra: matmul with torch.matmul semantics (dot, mv, mm, batched with broadcast),
// the strict mm and bmm (with matmul/mm/bmm out= forms), t(), and linear (x @ w^T + b as one
// GEMM on a view of w plus a bias pass). float32/float64 multiply through OpenBLAS or Eigen
// (Note [CPU GEMM library]); other dtypes through a plain loop. The shape functions are in
// shapes/linalg.h and the Meta kernels derive from them.

// Note [Matmul threading]
// The GEMM libraries' own threading is turned off and strata splits the work itself: products
// below kSerialWork multiply-adds run on the calling thread (forking threads costs more than
// it saves there); larger ones are cut into tasks, each one output block of one batch (rows or
// columns, whichever is longer), that parallel_for spreads over threads. Every task is an
// independent single-threaded product, so batched and broadcast matmuls parallelise the same
// way as one large one, and strata's thread count (set_num_threads) is the only one that
// counts. Eigen is compiled here with EIGEN_DONT_PARALLELIZE (another translation unit that
// includes Eigen without it would compute the same results). OpenBLAS's OpenMP build runs one
// thread inside an OpenMP parallel region, but outside one (the serial path, or a caller's own
// std::thread) it would start omp_get_max_threads() threads of its own on top of strata's; so
// the first use sets OpenBLAS to one thread, process-wide (prepare_openblas; this also holds
// for another OpenBLAS user in the process, such as LibTorch). On the 2-core machine of
// Note [CPU GEMM library], one single-threaded call per thread on half the rows beat
// OpenBLAS's own two threads on the whole float32 product: 5.97 against 6.63 ms at n = 1024,
// 108 against 136 us at n = 256 (AVX-512 kernels); and with the second core busy with other
// work, OpenBLAS's own threads suffered most (0.6 to 7 ms at n = 256).

// Note [CPU GEMM library]
// bench/bench_gemm.cpp measured, on one core of a 2-core AMD EPYC (Zen 4, AVX-512), GFLOP/s
// of square float32 products at n = 64 / 256 / 1024 (medians of 3, one process):
//   Eigen 3.4, -march=native (AVX-512)             131 / 149 / 139
//   Eigen 3.4, AVX2 + FMA                           92 /  97 / 101
//   Eigen 3.4, no -march (SSE2)                     39 /  17 /  40
//   OpenBLAS 0.3.21, the kernels it picks (Haswell) 97 / 106 / 103
//   OpenBLAS 0.3.21, OPENBLAS_CORETYPE=SkylakeX    218 / 198 / 195
//   BLIS 0.9, the kernels it picks ('generic')      25 /  35 /  35
//   BLIS 0.9, forced to its 'zen3' kernels          74 / 109 / 105
// So OpenBLAS wins whenever its kernels use vectors as wide as Eigen's (by 1.3-1.7x with
// AVX-512 on both sides, 2.5x and more against a build without -march=native), ties with
// AVX2 on both sides, and loses by 25-30% when Eigen has AVX-512 and OpenBLAS does not:
// Debian 12's OpenBLAS 0.3.21 does not know Zen 4 and runs its AVX2 kernels there (later
// releases pick the AVX-512 ones; OPENBLAS_CORETYPE=SkylakeX in the environment does it now).
// Small products keep that order (n = 16 and 32; at n = 8 OpenBLAS leads either way, by about
// 20 ns), so there is no size threshold; so do two threads splitting the product as strata
// does (n = 1024: Eigen 8.35 ms, OpenBLAS 10.6 ms with Haswell kernels, 5.97 with SkylakeX). Hence,
// with OpenBLAS in the build (STRATA_BLAS, cmake/StrataBlas.cmake), float32/float64 blocks
// whose operands are row- or column-major go to cblas_?gemm unless Eigen was compiled for
// AVX-512 and OpenBLAS's kernels are not AVX-512 ones (openblas_is_faster); Eigen does the
// rest. Results agree to rounding, not bit for bit, between the two libraries.
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Dense>

#ifdef STRATA_WITH_OPENBLAS
#include <cblas.h>
#include <omp.h>
#endif

#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/ops/elementwise.h>
#include <strata/ops/gemm.h>
#include <strata/ops/shapes/linalg.h>
#include <strata/ops/structured.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace strata {
namespace {

constexpr int64_t kSerialWork = 64 * 64 * 64;

using shapes::MatmulShape;
using shapes::matmul_shape;

// ---------------------------------------------------------------------------------------
// Operands: one input seen as batch x [rows, cols] through element strides.

struct Operand {
  const char* data;
  DimVector batch_strides;  // aligned with MatmulShape::batch; 0 where broadcast
  int64_t row_stride, col_stride;
};

Operand make_operand(const Tensor& t, bool left, const MatmulShape& shape) {
  Operand operand{static_cast<const char*>(t.impl()->data()), DimVector(shape.batch.size(), 0), 0, 0};
  const int64_t ndim = t.dim();
  if (ndim == 1) {
    (left ? operand.col_stride : operand.row_stride) = t.strides()[0];
    return operand;
  }
  operand.row_stride = t.strides()[ndim - 2];
  operand.col_stride = t.strides()[ndim - 1];
  const int64_t batch_dims = ndim - 2, offset = static_cast<int64_t>(shape.batch.size()) - batch_dims;
  for (int64_t d = 0; d < batch_dims; ++d)
    operand.batch_strides[offset + d] = t.sizes()[d] == 1 ? 0 : t.strides()[d];
  return operand;
}

// Element offset of batch number `index` (row-major over shape.batch).
int64_t batch_offset(const Operand& operand, const MatmulShape& shape, int64_t index) {
  int64_t offset = 0;
  for (size_t d = shape.batch.size(); d-- > 0;) {
    offset += (index % shape.batch[d]) * operand.batch_strides[d];
    index /= shape.batch[d];
  }
  return offset;
}

// One task: rows [row_begin, row_end) and columns [col_begin, col_end) of one batch's output.
struct Block {
  int64_t batch, row_begin, row_end, col_begin, col_end;
};

// ---------------------------------------------------------------------------------------
// Block products.

enum class Order { row_major, col_major, strided };

// Row- or column-major with a BLAS-style leading dimension (at least the inner extent);
// broadcast (stride 0) and other overlapping layouts are strided.
Order order_of(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  if ((col_stride == 1 || cols == 1) && (rows == 1 || row_stride >= std::max<int64_t>(cols, 1))) return Order::row_major;
  if ((row_stride == 1 || rows == 1) && (cols == 1 || col_stride >= std::max<int64_t>(rows, 1))) return Order::col_major;
  return Order::strided;
}

// Note [GEMM into zeroed memory]
// `mc.noalias() = ma * mb` makes Eigen zero the strided destination row by row (one memset
// call per row, ~5% of a 64x64 product) before accumulating into it. Zeroing it here in one
// call when its rows are contiguous, then accumulating with +=, does the same work faster.
template <class T, int OrderA, int OrderB>
void eigen_block(T* c, const T* a, const T* b, int64_t rows, int64_t depth, int64_t cols, int64_t lda, int64_t ldb,
                 int64_t ldc) {
  using MatrixA = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, OrderA>;
  using MatrixB = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, OrderB>;
  using MatrixC = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const MatrixA, 0, Eigen::OuterStride<>> ma(a, rows, depth, Eigen::OuterStride<>(lda));
  Eigen::Map<const MatrixB, 0, Eigen::OuterStride<>> mb(b, depth, cols, Eigen::OuterStride<>(ldb));
  Eigen::Map<MatrixC, 0, Eigen::OuterStride<>> mc(c, rows, cols, Eigen::OuterStride<>(ldc));
  // See Note [GEMM into zeroed memory].
  if (ldc == cols) std::memset(c, 0, static_cast<size_t>(rows * cols) * sizeof(T));
  else for (int64_t r = 0; r < rows; ++r) std::memset(c + r * ldc, 0, static_cast<size_t>(cols) * sizeof(T));
  mc.noalias() += ma * mb;
}

// The leading dimension Eigen sees for a matrix of `order` (any value >= 1 when unused).
int64_t leading(Order order, int64_t row_stride, int64_t col_stride, int64_t rows, int64_t cols) {
  if (order == Order::row_major) return rows == 1 ? std::max<int64_t>(cols, 1) : row_stride;
  return cols == 1 ? std::max<int64_t>(rows, 1) : col_stride;
}

// One block's matrices: sizes, and A and B as row- or column-major with leading dimensions;
// C is row-major with leading dimension ldc.
struct Gemm {
  int64_t rows, depth, cols;
  Order order_a, order_b;
  int64_t lda, ldb, ldc;
};

template <class T>
void eigen_product(T* c, const T* a, const T* b, const Gemm& g) {
  constexpr int row = Eigen::RowMajor, col = Eigen::ColMajor;
  if (g.order_a == Order::row_major && g.order_b == Order::row_major)
    eigen_block<T, row, row>(c, a, b, g.rows, g.depth, g.cols, g.lda, g.ldb, g.ldc);
  else if (g.order_a == Order::row_major) eigen_block<T, row, col>(c, a, b, g.rows, g.depth, g.cols, g.lda, g.ldb, g.ldc);
  else if (g.order_b == Order::row_major) eigen_block<T, col, row>(c, a, b, g.rows, g.depth, g.cols, g.lda, g.ldb, g.ldc);
  else eigen_block<T, col, col>(c, a, b, g.rows, g.depth, g.cols, g.lda, g.ldb, g.ldc);
}

// ---------------------------------------------------------------------------------------
// The GEMM library (Note [CPU GEMM library]).

// Holds a detail::GemmLibrary; kUnchosen until the first product or set_gemm_library.
constexpr int kUnchosen = -1;
std::atomic<int> chosen_library{kUnchosen};

#ifdef STRATA_WITH_OPENBLAS
// One OpenBLAS thread per call; see Note [Matmul threading]. OpenBLAS 0.3.21's OpenMP build
// also sets the calling thread's OpenMP thread count, which strata's own regions read, so it is
// put back.
void prepare_openblas() {
  static const bool prepared = [] {
    const int threads = omp_get_max_threads();
    openblas_set_num_threads(1);
    omp_set_num_threads(threads);
    return true;
  }();
  (void)prepared;
}

// False when Eigen was compiled for AVX-512 and OpenBLAS runs kernels without it.
bool openblas_is_faster() {
#ifdef EIGEN_VECTORIZE_AVX512
  std::string core = openblas_get_corename();
  std::transform(core.begin(), core.end(), core.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return core == "skylakex" || core == "cooperlake" || core == "sapphirerapids";
#else
  return true;
#endif
}

// C = A B through cblas_?gemm with C row-major; a column-major A or B is the transpose of a
// row-major one. False when a size does not fit BLAS's int.
template <class T>
bool openblas_product(T* c, const T* a, const T* b, const Gemm& g) {
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (std::max({g.rows, g.depth, g.cols, g.lda, g.ldb, g.ldc}) > kIntMax) return false;
  const CBLAS_TRANSPOSE trans_a = g.order_a == Order::row_major ? CblasNoTrans : CblasTrans;
  const CBLAS_TRANSPOSE trans_b = g.order_b == Order::row_major ? CblasNoTrans : CblasTrans;
  const int m = static_cast<int>(g.rows), n = static_cast<int>(g.cols), k = static_cast<int>(g.depth);
  const int lda = static_cast<int>(g.lda), ldb = static_cast<int>(g.ldb), ldc = static_cast<int>(g.ldc);
  // beta = 0: C is written without being read, so its old contents (even NaN) do not matter.
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, trans_a, trans_b, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  else cblas_dgemm(CblasRowMajor, trans_a, trans_b, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
  return true;
}
#endif

detail::GemmLibrary library_in_use() {
  int library = chosen_library.load(std::memory_order_acquire);
  if (library != kUnchosen) return static_cast<detail::GemmLibrary>(library);
  detail::GemmLibrary automatic = detail::GemmLibrary::eigen;
#ifdef STRATA_WITH_OPENBLAS
  if (openblas_is_faster()) {
    prepare_openblas();
    automatic = detail::GemmLibrary::openblas;
  }
#endif
  // A concurrent set_gemm_library wins over the automatic choice.
  chosen_library.compare_exchange_strong(library, static_cast<int>(automatic), std::memory_order_acq_rel);
  return static_cast<detail::GemmLibrary>(chosen_library.load(std::memory_order_acquire));
}

template <class T>
void float_product(T* c, const T* a, const T* b, int64_t rows, int64_t depth, int64_t cols, const Operand& left,
                   const Operand& right, int64_t ldc) {
  const Order order_a = order_of(rows, depth, left.row_stride, left.col_stride);
  const Order order_b = order_of(depth, cols, right.row_stride, right.col_stride);
  STRATA_INTERNAL_ASSERT(order_a != Order::strided && order_b != Order::strided, "matmul operand layout");
  const Gemm gemm{rows, depth, cols, order_a, order_b, leading(order_a, left.row_stride, left.col_stride, rows, depth),
                  leading(order_b, right.row_stride, right.col_stride, depth, cols), ldc};
#ifdef STRATA_WITH_OPENBLAS
  if (library_in_use() == detail::GemmLibrary::openblas && openblas_product<T>(c, a, b, gemm)) return;
#endif
  eigen_product<T>(c, a, b, gemm);
}

// Integers accumulate in uint64 (wrapping like PyTorch), the 16-bit floats in float.
template <class T>
void loop_product(T* c, const T* a, const T* b, int64_t rows, int64_t depth, int64_t cols, const Operand& left,
                  const Operand& right, int64_t ldc) {
  using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, compute_type_t<T>>;
  std::vector<Acc> accumulator(static_cast<size_t>(cols));
  for (int64_t i = 0; i < rows; ++i) {
    std::fill(accumulator.begin(), accumulator.end(), Acc(0));
    for (int64_t k = 0; k < depth; ++k) {
      const Acc scale = static_cast<Acc>(static_cast<compute_type_t<T>>(a[i * left.row_stride + k * left.col_stride]));
      const T* b_row = b + k * right.row_stride;
      for (int64_t j = 0; j < cols; ++j)
        accumulator[j] += scale * static_cast<Acc>(static_cast<compute_type_t<T>>(b_row[j * right.col_stride]));
    }
    for (int64_t j = 0; j < cols; ++j) {
      if constexpr (std::is_integral_v<T>) c[i * ldc + j] = static_cast<T>(static_cast<int64_t>(accumulator[j]));
      else c[i * ldc + j] = static_cast<T>(accumulator[j]);
    }
  }
}

template <class T>
void multiply_block(T* out, const Operand& left, const Operand& right, const MatmulShape& shape, const Block& block) {
  const T* a = reinterpret_cast<const T*>(left.data) + batch_offset(left, shape, block.batch) +
               block.row_begin * left.row_stride;
  const T* b = reinterpret_cast<const T*>(right.data) + batch_offset(right, shape, block.batch) +
               block.col_begin * right.col_stride;
  T* c = out + block.batch * shape.rows * shape.cols + block.row_begin * shape.cols + block.col_begin;
  const int64_t rows = block.row_end - block.row_begin, cols = block.col_end - block.col_begin;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
    float_product<T>(c, a, b, rows, shape.depth, cols, left, right, shape.cols);
  else loop_product<T>(c, a, b, rows, shape.depth, cols, left, right, shape.cols);
}

// Runs multiply_block over every batch, serially for small products, else in tasks.
// See Note [Matmul threading].
template <class T>
void run_blocks(T* out, const Operand& left, const Operand& right, const MatmulShape& shape) {
  int64_t batches = 1;
  for (int64_t size : shape.batch) batches *= size;
  const int64_t work = batches * shape.rows * shape.depth * shape.cols;
  if (work <= kSerialWork || get_num_threads() == 1) {
    for (int64_t batch = 0; batch < batches; ++batch)
      multiply_block<T>(out, left, right, shape, {batch, 0, shape.rows, 0, shape.cols});
    return;
  }
  const bool split_rows = shape.rows >= shape.cols;
  const int64_t extent = split_rows ? shape.rows : shape.cols;
  const int64_t unit_work = shape.depth * (split_rows ? shape.cols : shape.rows);
  const int64_t wanted_blocks = std::max<int64_t>(1, (get_num_threads() + batches - 1) / batches);
  int64_t units = std::max((extent + wanted_blocks - 1) / wanted_blocks, (kSerialWork + unit_work - 1) / unit_work);
  units = std::clamp<int64_t>(units, 1, extent);
  const int64_t blocks = (extent + units - 1) / units;
  parallel_for(0, batches * blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t batch = task / blocks, first = (task % blocks) * units, last = std::min(first + units, extent);
      const Block block = split_rows ? Block{batch, first, last, 0, shape.cols} : Block{batch, 0, shape.rows, first, last};
      multiply_block<T>(out, left, right, shape, block);
    }
  });
}

// An operand whose matrices are neither row- nor column-major (or a broadcast vector) is
// copied once; the copy is contiguous.
// Returns t itself, or a contiguous copy kept in `copy`.
const Tensor& usable_layout(const Tensor& t, Tensor& copy) {
  bool usable = true;
  if (t.dim() == 1) {
    usable = t.strides()[0] != 0 || t.sizes()[0] <= 1;
  } else {
    const int64_t rows = t.sizes()[t.dim() - 2], cols = t.sizes()[t.dim() - 1];
    usable = order_of(rows, cols, t.strides()[t.dim() - 2], t.strides()[t.dim() - 1]) != Order::strided;
  }
  if (usable) return t;
  copy = detail::cast_to(t, t.dtype());
  return copy;
}

// ---------------------------------------------------------------------------------------
// Kernels.

// out (contiguous, shape.out_sizes) = self @ other.
void multiply_into(const Tensor& out, const Tensor& self, const Tensor& other, const MatmulShape& shape) {
  if (out.numel() == 0) return;
  if (shape.depth == 0) {
    std::memset(out.impl()->data(), 0, static_cast<size_t>(out.nbytes()));
    return;
  }
  Tensor a_copy, b_copy;
  const Tensor& a = usable_layout(self, a_copy);
  const Tensor& b = usable_layout(other, b_copy);
  const Operand left = make_operand(a, true, shape), right = make_operand(b, false, shape);
  visit_dtype(out.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) run_blocks<T>(detail::data_of<T>(out), left, right, shape);
  });
}

// ---------------------------------------------------------------------------------------
// CPU compute (Note [Structured ops]). multiply_into needs a contiguous destination that no
// operand reads: any other `out` (a strided or aliasing out= tensor) is filled through a
// contiguous temporary.

template <class Fill>
void fill_output(const Tensor& out, const Tensor& self, const Tensor& other, const Fill& fill) {
  const bool direct = out.is_contiguous() && out.impl()->storage() != self.impl()->storage() &&
                      out.impl()->storage() != other.impl()->storage();
  if (direct) return fill(out);
  const Tensor target = detail::make_empty(out.sizes(), out.dtype(), out.device());
  fill(target);
  detail::copy_kernel(out, target);
}

void matmul_out_cpu(const Tensor& out, const Tensor& self, const Tensor& other) {
  fill_output(out, self, other, [&](const Tensor& target) { multiply_into(target, self, other, matmul_shape(self, other)); });
}
void mm_out_cpu(const Tensor& out, const Tensor& self, const Tensor& mat2) {
  fill_output(out, self, mat2, [&](const Tensor& target) { multiply_into(target, self, mat2, shapes::mm_shape(self, mat2)); });
}
void bmm_out_cpu(const Tensor& out, const Tensor& self, const Tensor& mat2) {
  fill_output(out, self, mat2, [&](const Tensor& target) { multiply_into(target, self, mat2, shapes::bmm_shape(self, mat2)); });
}

// 0-d and 1-d tensors are their own transpose (a view); matrices swap their dims.
Tensor t_composite(const Tensor& self) {
  STRATA_CHECK_VALUE(self.dim() <= 2, "[t] expects a tensor with at most 2 dimensions, got shape ", self.sizes(),
                     "; use transpose(dim0, dim1) or permute");
  return self.dim() < 2 ? transpose(self, 0, 0) : transpose(self, 0, 1);
}

// ---------------------------------------------------------------------------------------
// linear. Note [linear as one GEMM]
// input [*, in] is seen as a [rows, in] matrix (a view when its leading dims are contiguous,
// else one copy) and weight [out, in] as its transpose [in, out] through strides alone, so
// the product is one GEMM with no copy of the weight; the bias is then added to each row.

// input as [rows, in]: itself when 2-d, a view when contiguous, else a contiguous copy.
Tensor input_matrix(const Tensor& input, int64_t rows) {
  const int64_t in = input.size(-1);
  if (input.dim() == 2) return input;
  const Tensor contiguous = detail::as_contiguous(input);
  return detail::make_view(contiguous, {rows, in}, {in, 1}, contiguous.storage_offset());
}

void linear_out_cpu(const Tensor& out, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  if (out.numel() == 0) return;
  const shapes::LinearShape shape = shapes::linear_shape(input, weight, bias);
  const Tensor weight_t = detail::make_view(weight, {weight.size(1), weight.size(0)},
                                            {weight.stride(1), weight.stride(0)}, weight.storage_offset());
  const Tensor matrix = input_matrix(input, shape.product.rows);
  fill_output(out, input, weight, [&](const Tensor& target) { multiply_into(target, matrix, weight_t, shape.product); });
  if (bias && bias->defined()) {
    visit_dtype(out.dtype(), [&]<class T>() {
      detail::binary_kernel<T>(out, out, *bias, [](compute_type_t<T> x, compute_type_t<T> b) { return x + b; });
    });
  }
}

}  // namespace

namespace detail {
GemmLibrary gemm_library() { return library_in_use(); }

bool set_gemm_library(GemmLibrary library) {
#ifdef STRATA_WITH_OPENBLAS
  if (library == GemmLibrary::openblas) prepare_openblas();
#else
  if (library == GemmLibrary::openblas) return false;
#endif
  chosen_library.store(static_cast<int>(library), std::memory_order_release);
  return true;
}
}  // namespace detail

STRATA_LIBRARY_FRAGMENT(strata, m) {
  using detail::def_structured, detail::def_structured_out;
  def_structured<&shapes::matmul>(m, "matmul(Tensor self, Tensor other) -> Tensor");
  def_structured<&shapes::mm>(m, "mm(Tensor self, Tensor mat2) -> Tensor");
  def_structured<&shapes::bmm>(m, "bmm(Tensor self, Tensor mat2) -> Tensor");
  m.def("t(Tensor(a) self) -> Tensor(a)", &t_composite);
  def_structured<&shapes::linear>(m, "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor");
  def_structured_out<&shapes::matmul, "matmul.out">(m, "matmul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::mm, "mm.out">(m, "mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)");
  def_structured_out<&shapes::bmm, "bmm.out">(m, "bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)");
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  using detail::structured, detail::structured_out;
  m.impl("matmul", structured<&shapes::matmul, &matmul_out_cpu>());
  m.impl("mm", structured<&shapes::mm, &mm_out_cpu>());
  m.impl("bmm", structured<&shapes::bmm, &bmm_out_cpu>());
  m.impl("linear", structured<&shapes::linear, &linear_out_cpu>());
  m.impl("matmul.out", structured_out<&shapes::matmul, &matmul_out_cpu, "matmul.out">());
  m.impl("mm.out", structured_out<&shapes::mm, &mm_out_cpu, "mm.out">());
  m.impl("bmm.out", structured_out<&shapes::bmm, &bmm_out_cpu, "bmm.out">());
}

// ---------------------------------------------------------------------------------------
// Derivative. Note [Matmul gradient]
// A 1-d left operand is a row [1, k], a 1-d right operand a column [k, 1]; with those, the
// output gradient G (reshaped to the batched [.., m, n] product) gives dA = G @ B^T and
// dB = A^T @ G, each summed over broadcast batch dims back to its operand's shape.

namespace {
using autograd::AutogradContext;

struct MatmulFunction : autograd::Function<MatmulFunction> {
  static constexpr std::string_view name() { return "MatmulBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& other) {
    ctx->save_for_backward({self, other});
    return matmul(self, other);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto saved = autograd::detail::saved_tensors(*ctx);
    const Tensor& a = saved[0];
    const Tensor& b = saved[1];
    const bool a_vector = a.dim() == 1, b_vector = b.dim() == 1;
    Tensor left = a_vector ? a.reshape({1, a.size(0)}) : a;
    Tensor right = b_vector ? b.reshape({b.size(0), 1}) : b;
    DimVector full(grads[0].sizes());
    if (a_vector) full.insert(full.size() - (b_vector ? 0 : 1), 1);
    if (b_vector) full.push_back(1);
    Tensor g = grads[0].reshape(full.ref());
    Tensor grad_a, grad_b;
    if (ctx->needs_input_grad(0)) {
      grad_a = sum_to(matmul(g, right.transpose(-1, -2)), left.sizes());
      if (a_vector) grad_a = grad_a.reshape(a.sizes());
    }
    if (ctx->needs_input_grad(1)) {
      grad_b = sum_to(matmul(left.transpose(-1, -2), g), right.sizes());
      if (b_vector) grad_b = grad_b.reshape(b.sizes());
    }
    return autograd::detail::gradients_in(std::move(grads), grad_a, grad_b);
  }
};

// mm: dA = G B^T, dB = A^T G. bmm: the same per batch.
template <bool batched>
struct StrictProductFunction : autograd::Function<StrictProductFunction<batched>> {
  static constexpr std::string_view name() { return batched ? "BmmBackward" : "MmBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, const Tensor& mat2) {
    ctx->save_for_backward({ctx->needs_input_grad(1) ? self : Tensor(), ctx->needs_input_grad(0) ? mat2 : Tensor()});
    return batched ? bmm(self, mat2) : mm(self, mat2);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = autograd::detail::saved_tensors(*ctx);
    const Tensor& g = grads[0];
    Tensor grad_self, grad_mat2;
    if (batched) {
      if (ctx->needs_input_grad(0)) grad_self = bmm(g, saved[1].transpose(1, 2));
      if (ctx->needs_input_grad(1)) grad_mat2 = bmm(saved[0].transpose(1, 2), g);
    } else {
      if (ctx->needs_input_grad(0)) grad_self = mm(g, saved[1].t());
      if (ctx->needs_input_grad(1)) grad_mat2 = mm(saved[0].t(), g);
    }
    return autograd::detail::gradients_in(std::move(grads), grad_self, grad_mat2);
  }
};

// linear: d input = G W, d weight = G^T X (over the flattened leading dims), d bias = G
// summed to the bias's shape by the Function machinery. The bias arrives as a plain Tensor
// (undefined for None) so that it gets a gradient edge; see linear_autograd below.
struct LinearFunction : autograd::Function<LinearFunction> {
  static constexpr std::string_view name() { return "LinearBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& input, const Tensor& weight, const Tensor& bias) {
    ctx->save_for_backward({ctx->needs_input_grad(1) ? input : Tensor(), ctx->needs_input_grad(0) ? weight : Tensor()});
    return linear(input, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = autograd::detail::saved_tensors(*ctx);
    const Tensor& g = grads[0];
    Tensor grad_input, grad_weight;
    if (ctx->needs_input_grad(0)) grad_input = matmul(g, saved[1]);
    if (ctx->needs_input_grad(1)) {
      const Tensor& input = saved[0];
      int64_t rows = 1;
      for (int64_t d = 0; d + 1 < input.dim(); ++d) rows *= input.size(d);
      grad_weight = mm(g.reshape({rows, g.size(-1)}).t(), input.reshape({rows, input.size(-1)}));
    }
    return autograd::detail::gradients_in(std::move(grads), grad_input, grad_weight,
                                          ctx->needs_input_grad(2) ? g : Tensor());
  }
};

Tensor linear_autograd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  return LinearFunction::apply_op(input, weight, bias ? *bias : Tensor());
}

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("matmul", autograd::kernel<MatmulFunction>());
  m.impl("mm", autograd::kernel<StrictProductFunction<false>>());
  m.impl("bmm", autograd::kernel<StrictProductFunction<true>>());
  m.impl("linear", &linear_autograd);
}
}  // namespace

Tensor matmul(const Tensor& self, const Tensor& other) {
  static const auto op = find_op("strata::matmul").typed<Tensor(const Tensor&, const Tensor&)>();
  return op.call(self, other);
}
Tensor mm(const Tensor& self, const Tensor& mat2) {
  static const auto op = find_op("strata::mm").typed<Tensor(const Tensor&, const Tensor&)>();
  return op.call(self, mat2);
}
Tensor bmm(const Tensor& self, const Tensor& mat2) {
  static const auto op = find_op("strata::bmm").typed<Tensor(const Tensor&, const Tensor&)>();
  return op.call(self, mat2);
}
Tensor t(const Tensor& self) {
  static const auto op = find_op("strata::t").typed<Tensor(const Tensor&)>();
  return op.call(self);
}
Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  static const auto op =
      find_op("strata::linear").typed<Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&)>();
  return op.call(input, weight, bias);
}

// out= variants (LibTorch's at::mm_out order: out first).
const Tensor& matmul_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  static const auto op = find_op("strata::matmul.out").typed<Tensor(const Tensor&, const Tensor&, const Tensor&)>();
  op.call(self, other, out);
  return out;
}
const Tensor& mm_out(const Tensor& out, const Tensor& self, const Tensor& mat2) {
  static const auto op = find_op("strata::mm.out").typed<Tensor(const Tensor&, const Tensor&, const Tensor&)>();
  op.call(self, mat2, out);
  return out;
}
const Tensor& bmm_out(const Tensor& out, const Tensor& self, const Tensor& mat2) {
  static const auto op = find_op("strata::bmm.out").typed<Tensor(const Tensor&, const Tensor&, const Tensor&)>();
  op.call(self, mat2, out);
  return out;
}

}  // namespace strata
