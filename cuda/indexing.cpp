// Building StridedIndexers on the host. See Note [Elementwise launches] in operands.h.
#include <strata/cuda/operands.h>

#include <span>

#include <strata/tensor/dim_order.h>
#include <strata/tensor/errors.h>

namespace strata::cuda::detail {

void build_indexer(const char* op, int operand_count, const Tensor* const* operands, int& ndim, int64_t* sizes,
                   int64_t (*strides)[kMaxDims]) {
  const Tensor& out = *operands[0];
  const int64_t out_dims = out.dim();
  STRATA_CHECK(out_dims <= 64, "[", op, "] CUDA kernels take tensors of at most 64 dimensions, got ", out_dims);
  STRATA_CHECK(operand_count <= 8, "[", op, "] CUDA kernels take at most 8 operands");
  // The dims of size > 1 with each operand's strides along them (0 where it is broadcast),
  // ordered innermost first by those strides as the CPU loops order them (Note [Strides of
  // elementwise results] in tensor/dim_order.h), then merged into the dim inside them when
  // every operand's strides line up.
  DimVector dim_sizes;
  DimVector dim_strides[8];
  for (int64_t dim = 0; dim < out_dims; ++dim) {
    const int64_t size = out.size(dim);
    if (size == 1) continue;
    dim_sizes.push_back(size);
    for (int k = 0; k < operand_count; ++k) {
      const Tensor& operand = *operands[k];
      const int64_t operand_dim = dim - (out_dims - operand.dim());
      const bool broadcast = operand_dim < 0 || operand.size(operand_dim) == 1;
      dim_strides[k].push_back(broadcast ? 0 : operand.stride(operand_dim));
    }
  }
  IntArrayRef views[8];
  for (int k = 0; k < operand_count; ++k) views[k] = dim_strides[k].ref();
  const DimVector order =
      strata::detail::innermost_first(dim_sizes.ref(), std::span<const IntArrayRef>(views, operand_count));
  int64_t kept_sizes[64];
  int64_t kept_strides[8][64];
  int kept = 0;  // kept dimensions so far, innermost first
  for (const int64_t i : order) {
    const auto d = static_cast<size_t>(i);
    bool mergeable = kept > 0;
    for (int k = 0; k < operand_count && mergeable; ++k)
      mergeable = dim_strides[k][d] == kept_strides[k][kept - 1] * kept_sizes[kept - 1];
    if (mergeable) {
      kept_sizes[kept - 1] *= dim_sizes[d];
      continue;
    }
    kept_sizes[kept] = dim_sizes[d];
    for (int k = 0; k < operand_count; ++k) kept_strides[k][kept] = dim_strides[k][d];
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

bool same_dense_layout(const Tensor* const* operands, int operand_count) {
  const Tensor& out = *operands[0];
  if (out.is_contiguous()) {
    for (int k = 1; k < operand_count; ++k) {
      const Tensor& operand = *operands[k];
      if (!operand.is_contiguous() || operand.sizes() != out.sizes()) return false;
    }
    return true;
  }
  if (!out.is_non_overlapping_and_dense()) return false;
  for (int k = 1; k < operand_count; ++k) {
    const Tensor& operand = *operands[k];
    if (operand.sizes() != out.sizes() || operand.strides() != out.strides()) return false;
  }
  return true;
}

}  // namespace strata::cuda::detail
