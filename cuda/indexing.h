#pragma once
// Internal to cuda/: index arithmetic shared by host and device code, so the host tests check
// what the kernels compute. No CUDA header needed: plain C++ on the host.
#include <cstdint>

#if defined(__CUDACC__)
#define STRATA_HOST_DEVICE __host__ __device__
#else
#define STRATA_HOST_DEVICE
#endif

namespace strata::cuda::detail {

// The most dimensions an elementwise kernel iterates over, after coalescing (Note [Elementwise
// launches] in elementwise.cuh); more throws Error on the host before any launch.
inline constexpr int kMaxDims = 16;

// Element offsets of N operands that walk one iteration shape together: operand k's element
// for linear index i (row-major over `sizes`) sits at offset(i)[k] elements from its data.
// Broadcast dimensions have stride 0.
template <int N>
struct StridedIndexer {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};

  STRATA_HOST_DEVICE void offsets(int64_t linear, int64_t (&result)[N]) const {
    for (int operand = 0; operand < N; ++operand) result[operand] = 0;
    for (int dim = ndim - 1; dim >= 0; --dim) {
      const int64_t size = sizes[dim];
      const int64_t index = linear % size;
      linear /= size;
      for (int operand = 0; operand < N; ++operand) result[operand] += index * strides[operand][dim];
    }
  }
};

// How a one-dimensional launch covers `count` items: blocks of `threads`, each thread taking
// `items_per_thread` items, the grid capped so that very large tensors loop (grid stride).
struct LaunchShape {
  int64_t blocks = 0;
  int threads = 0;
};

inline constexpr int64_t kMaxBlocks = int64_t{1} << 20;

STRATA_HOST_DEVICE constexpr LaunchShape launch_shape(int64_t count, int threads = 256, int items_per_thread = 4) {
  const int64_t per_block = static_cast<int64_t>(threads) * items_per_thread;
  int64_t blocks = (count + per_block - 1) / per_block;
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  return LaunchShape{blocks, threads};
}

// Ceiling division, for grids over rows and tiles.
STRATA_HOST_DEVICE constexpr int64_t ceil_div(int64_t count, int64_t per) { return (count + per - 1) / per; }

}  // namespace strata::cuda::detail
