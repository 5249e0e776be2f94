#pragma once
// Internal to cuda/: how kernels see their tensors. See Note [Elementwise launches].
#include <array>
#include <cstdint>

#include <strata/cuda/indexing.h>
#include <strata/tensor/tensor.h>

namespace strata::cuda::detail {

// Note [Elementwise launches]
// An elementwise kernel writes out[i] = f(inputs[i]...) for every element of `out`, the inputs
// broadcast to out's sizes. When every operand has out's sizes and one dense layout shared by all
// (contiguous, transposed, channels last) the kernel indexes all of them by the linear index
// (and may use vector loads); otherwise the host builds a StridedIndexer first: dimensions of
// size 1 are dropped, the others ordered by stride as the CPU loops order them, neighbouring
// dimensions merged where every operand's strides allow it (so a transposed or sliced tensor usually keeps two or three
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

// True when every operand has out's (the first operand's) sizes and all lay them out as one
// dense block in the same order (all contiguous, or all with out's permuted dense strides):
// then element i of each operand's block is the same logical element, and kernels index
// every operand by the linear index from its data pointer.
bool same_dense_layout(const Tensor* const* operands, int operand_count);

}  // namespace strata::cuda::detail
