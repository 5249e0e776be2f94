#pragma once
// The library that multiplies CPU float32/float64 matrices for matmul, mm, bmm and linear.
// See Note [CPU GEMM library] in ops/linalg.cpp.

namespace strata::detail {

enum class GemmLibrary { eigen, openblas };

// The library in use: OpenBLAS when this build has it (STRATA_BLAS) and its kernels are at least
// as fast as Eigen's on this CPU, else Eigen. Chosen on first use.
GemmLibrary gemm_library();
// Makes `library` the one in use and returns true, or returns false (and changes nothing) when
// this build lacks it. For tests, which run the products through each library.
bool set_gemm_library(GemmLibrary library);

}  // namespace strata::detail
