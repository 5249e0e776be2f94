// Building StridedIndexers on the host. See Note [Elementwise launches] in operands.h.
#include <strata/cuda/operands.h>

#include <strata/tensor/errors.h>

namespace strata::cuda::detail {

void build_indexer(const char* op, int operand_count, const Tensor* const* operands, int& ndim, int64_t* sizes,
                   int64_t (*strides)[kMaxDims]) {
  const Tensor& out = *operands[0];
  const int64_t out_dims = out.dim();
  // Walk out's dimensions from the innermost, keeping those of size > 1 and merging a kept
  // dimension into the one inside it when every operand's strides line up.
  int64_t kept_sizes[64];
  int64_t kept_strides[8][64];
  STRATA_CHECK(out_dims <= 64, "[", op, "] CUDA kernels take tensors of at most 64 dimensions, got ", out_dims);
  STRATA_CHECK(operand_count <= 8, "[", op, "] CUDA kernels take at most 8 operands");
  int kept = 0;  // kept dimensions so far, innermost first
  for (int64_t dim = out_dims - 1; dim >= 0; --dim) {
    const int64_t size = out.size(dim);
    if (size == 1) continue;
    int64_t dim_strides[8];
    for (int k = 0; k < operand_count; ++k) {
      const Tensor& operand = *operands[k];
      const int64_t operand_dim = dim - (out_dims - operand.dim());
      const bool broadcast = operand_dim < 0 || operand.size(operand_dim) == 1;
      dim_strides[k] = broadcast ? 0 : operand.stride(operand_dim);
    }
    bool mergeable = kept > 0;
    for (int k = 0; k < operand_count && mergeable; ++k)
      mergeable = dim_strides[k] == kept_strides[k][kept - 1] * kept_sizes[kept - 1];
    if (mergeable) {
      kept_sizes[kept - 1] *= size;
      continue;
    }
    kept_sizes[kept] = size;
    for (int k = 0; k < operand_count; ++k) kept_strides[k][kept] = dim_strides[k];
    ++kept;
  }
  STRATA_CHECK(kept <= kMaxDims, "[", op, "] CUDA kernels iterate over at most ", kMaxDims,
               " dimensions that cannot be merged; got ", kept);
  ndim = kept;
  for (int dim = 0; dim < kept; ++dim) {  // back to outermost first
    sizes[dim] = kept_sizes[kept - 1 - dim];
    for (int k = 0; k < operand_count; ++k) strides[k][dim] = kept_strides[k][kept - 1 - dim];
  }
}

bool all_contiguous(const Tensor* const* operands, int operand_count) {
  const Tensor& out = *operands[0];
  for (int k = 0; k < operand_count; ++k) {
    const Tensor& operand = *operands[k];
    if (!operand.is_contiguous() || (k > 0 && operand.sizes() != out.sizes())) return false;
  }
  return true;
}

}  // namespace strata::cuda::detail
