// Square GEMM (C = A B, row-major) from three libraries in one process, to choose strata's CPU
// GEMM by measurement (issue 15):
//   eigen     Eigen 3.4 the way ops/linalg.cpp calls it (eigen_block: zeroed C, then +=);
//   openblas  cblas_?gemm of Debian's OpenBLAS (libopenblas.so.0, the OpenMP build);
//   blis      cblas_?gemm of Debian's BLIS (libblis.so.4).
// Sizes: float32 n = 8, 16, 32, 64, 256, 1024; float64 n = 256 (the split rows from n = 64).
// Both BLAS libraries export the same cblas symbols, so each is opened with dlopen(RTLD_LOCAL)
// and its functions taken with dlsym; a library that is not installed leaves its rows out. This program links neither
// strata nor LibTorch (which pulls in OpenBLAS), so no BLAS is in the global symbol scope and
// BLIS's internal calls cannot bind to OpenBLAS's symbols.
//
// Two kinds of row:
//   gemm/<library>/<dtype>/<n>        one call on the calling thread; the library threads as
//                                     its environment says (OpenBLAS's OpenMP build uses
//                                     omp_get_max_threads(), BLIS is set to the same count,
//                                     Eigen is single-threaded as in strata);
//   gemm_split/<library>/<dtype>/<n>  strata's way (Note [Matmul threading]): an OpenMP region
//                                     of omp_get_max_threads() threads, each one single-threaded
//                                     call on a block of rows; registered only with > 1 thread.
// Run pinned:  OMP_NUM_THREADS=1 taskset -c 0 ./build/bench/bench_gemm --benchmark_repetitions=3
//                --benchmark_report_aggregates_only=true
// two threads: OMP_NUM_THREADS=2 ./build/bench/bench_gemm ...
// The ratios at the end are time / Eigen's time for the same row (and BLIS / OpenBLAS).
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Dense>

#include <dlfcn.h>
#include <link.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"

namespace {

// CBLAS enum values (the same in every implementation).
constexpr int kRowMajor = 101, kNoTrans = 111;

using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                         int);
using DgemmFn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double,
                         double*, int);
using SetThreadsFn = void (*)(int);

struct Library {
  std::string name;
  void* handle = nullptr;
  SgemmFn sgemm = nullptr;
  DgemmFn dgemm = nullptr;
  SetThreadsFn set_threads = nullptr;  // BLIS only: OpenBLAS's OpenMP build follows OpenMP's count
};

Library open_library(const std::string& name, const char* soname, const char* set_threads_symbol) {
  Library library{name};
  library.handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!library.handle) {
    std::cerr << "bench_gemm: " << name << " skipped (" << dlerror() << ")\n";
    return library;
  }
  library.sgemm = reinterpret_cast<SgemmFn>(dlsym(library.handle, "cblas_sgemm"));
  library.dgemm = reinterpret_cast<DgemmFn>(dlsym(library.handle, "cblas_dgemm"));
  if (set_threads_symbol) library.set_threads = reinterpret_cast<SetThreadsFn>(dlsym(library.handle, set_threads_symbol));
  link_map* map = nullptr;
  dlinfo(library.handle, RTLD_DI_LINKMAP, &map);
  std::cerr << "bench_gemm: " << name << " from " << (map ? map->l_name : soname) << "\n";
  if (auto corename = reinterpret_cast<char* (*)()>(dlsym(library.handle, "openblas_get_corename")))
    std::cerr << "bench_gemm: OpenBLAS core " << corename() << "\n";
  return library;
}

std::vector<Library>& libraries() {
  static std::vector<Library> all = [] {
    std::vector<Library> list;
    list.push_back(open_library("openblas", "libopenblas.so.0", nullptr));
    list.push_back(open_library("blis", "libblis.so.4", "bli_thread_set_num_threads"));
    return list;
  }();
  return all;
}

// ops/linalg.cpp's eigen_block for row-major A, B and C (see Note [GEMM into zeroed memory]).
template <class T>
void eigen_gemm(T* c, const T* a, const T* b, int rows, int depth, int cols, int lda, int ldb, int ldc) {
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const Matrix, 0, Eigen::OuterStride<>> ma(a, rows, depth, Eigen::OuterStride<>(lda));
  Eigen::Map<const Matrix, 0, Eigen::OuterStride<>> mb(b, depth, cols, Eigen::OuterStride<>(ldb));
  Eigen::Map<Matrix, 0, Eigen::OuterStride<>> mc(c, rows, cols, Eigen::OuterStride<>(ldc));
  if (ldc == cols) std::memset(c, 0, sizeof(T) * rows * cols);
  else for (int r = 0; r < rows; ++r) std::memset(c + r * ldc, 0, sizeof(T) * cols);
  mc.noalias() += ma * mb;
}

template <class T>
void blas_gemm(const Library& library, T* c, const T* a, const T* b, int rows, int depth, int cols, int lda, int ldb,
               int ldc) {
  if constexpr (std::is_same_v<T, float>)
    library.sgemm(kRowMajor, kNoTrans, kNoTrans, rows, cols, depth, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  else library.dgemm(kRowMajor, kNoTrans, kNoTrans, rows, cols, depth, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}

// library == nullptr: Eigen.
template <class T>
void gemm_rows(const Library* library, T* c, const T* a, const T* b, int n, int row_begin, int row_end) {
  const int rows = row_end - row_begin;
  if (rows <= 0) return;
  T* c_block = c + static_cast<size_t>(row_begin) * n;
  const T* a_block = a + static_cast<size_t>(row_begin) * n;
  if (library) blas_gemm<T>(*library, c_block, a_block, b, rows, n, n, n, n, n);
  else eigen_gemm<T>(c_block, a_block, b, rows, n, n, n, n, n);
}

template <class T>
std::vector<T> random_matrix(int n, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<T> uniform(-1, 1);
  std::vector<T> values(static_cast<size_t>(n) * n);
  for (T& value : values) value = uniform(generator);
  return values;
}

template <class T>
void run_gemm(benchmark::State& state, const Library* library, int n, bool split) {
  const int threads = omp_get_max_threads();
  if (library && library->set_threads) library->set_threads(split ? 1 : threads);
  const std::vector<T> a = random_matrix<T>(n, 1), b = random_matrix<T>(n, 2);
  std::vector<T> c(a.size());
  for (auto _ : state) {
    if (split) {
#pragma omp parallel num_threads(threads)
      {
        const int count = omp_get_num_threads(), thread = omp_get_thread_num();
        const int per_thread = (n + count - 1) / count;
        gemm_rows<T>(library, c.data(), a.data(), b.data(), n, thread * per_thread,
                     std::min(n, (thread + 1) * per_thread));
      }
    } else {
      gemm_rows<T>(library, c.data(), a.data(), b.data(), n, 0, n);
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate,
                         benchmark::Counter::kIs1000);
}

// Each library's product against Eigen's, so a wrong binding shows before any timing.
template <class T>
void check_agreement(const Library& library, int n) {
  const std::vector<T> a = random_matrix<T>(n, 1), b = random_matrix<T>(n, 2);
  std::vector<T> expected(a.size()), actual(a.size());
  gemm_rows<T>(nullptr, expected.data(), a.data(), b.data(), n, 0, n);
  gemm_rows<T>(&library, actual.data(), a.data(), b.data(), n, 0, n);
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, std::abs(double(expected[i]) - actual[i]));
  std::cerr << "bench_gemm: " << library.name << " n=" << n << " max |difference from Eigen| = " << worst << "\n";
}

struct Case {
  const char* dtype;
  int n;
};
constexpr Case kCases[] = {{"f32", 8}, {"f32", 16}, {"f32", 32}, {"f32", 64}, {"f32", 256}, {"f32", 1024}, {"f64", 256}};

std::vector<std::pair<std::string, std::string>> register_all() {
  std::vector<const Library*> entries{nullptr};
  for (const Library& library : libraries())
    if (library.sgemm && library.dgemm) entries.push_back(&library);
  for (const Library* library : entries)
    if (library) check_agreement<float>(*library, 256);
  const bool with_split = omp_get_max_threads() > 1;
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const bool split : {false, true}) {
    if (split && !with_split) continue;
    for (const Case& row : kCases) {
      if (split && row.n < 64) continue;  // such products run on one thread in strata
      const std::string prefix = split ? "gemm_split/" : "gemm/";
      std::vector<std::string> names;
      for (const Library* library : entries) {
        const std::string name =
            prefix + (library ? library->name : "eigen") + "/" + row.dtype + "/" + std::to_string(row.n);
        names.push_back(name + "/real_time");  // the name Google Benchmark reports
        const int n = row.n;
        const bool is_float = std::strcmp(row.dtype, "f32") == 0;
        benchmark::RegisterBenchmark(name.c_str(), [library, n, split, is_float](benchmark::State& state) {
          if (is_float) run_gemm<float>(state, library, n, split);
          else run_gemm<double>(state, library, n, split);
        })->Unit(benchmark::kMicrosecond)->UseRealTime();
      }
      // Every BLAS against Eigen (names[0]) and BLIS against OpenBLAS when both are present.
      for (size_t i = 1; i < names.size(); ++i) pairs.emplace_back(names[i], names[0]);
      if (names.size() == 3) pairs.emplace_back(names[2], names[1]);
    }
  }
  return pairs;
}

}  // namespace

int main(int argc, char** argv) {
  std::cerr << "bench_gemm: " << omp_get_max_threads() << " OpenMP thread(s)\n";
  return strata::bench::run_with_ratios(argc, argv, register_all());
}
