#pragma once
// Internal to cuda/: how kernels see their tensors. See Note [Elementwise launches].
#include <array>
#include <cstdint>

#include <strata/cuda/indexing.h>
#include <strata/tensor/tensor.h>

namespace strata::cuda::detail {

// Note [Elementwise launches]
// An elementwise kernel writes out[i] = f(inputs[i]...) for every element of `out`, the inputs
// broadcast to out's sizes. When every operand is contiguous with out's sizes the kernel indexes
// all of them by the linear index (and may use vector loads); otherwise the host builds a
// StridedIndexer first: dimensions of size 1 are dropped, neighbouring dimensions merged where
// every operand's strides allow it (so a transposed or sliced tensor usually keeps two or three
// dimensions), broadcast dimensions get stride 0. Dtypes are the caller's business: kernels take
// operands already converted to the dtypes they compute in.

// Sizes and strides, out first, over out's sizes (see the Note). `op` names the op in errors.
void build_indexer(const char* op, int operand_count, const Tensor* const* operands, int& ndim, int64_t* sizes,
                   int64_t (*strides)[kMaxDims]);

template <int N>
StridedIndexer<N> make_indexer(const char* op, const std::array<const Tensor*, N>& operands) {
  StridedIndexer<N> indexer;
  build_indexer(op, N, operands.data(), indexer.ndim, indexer.sizes, indexer.strides);
  return indexer;
}

// True when every operand is contiguous and has out's (the first operand's) sizes.
bool all_contiguous(const Tensor* const* operands, int operand_count);

}  // namespace strata::cuda::detail
