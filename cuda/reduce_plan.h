#pragma once
// Internal to cuda/: the index arithmetic of reductions, shared by host and device code so the
// host tests check what the kernels compute. No CUDA header. See Note [Reduction plans].
#include <cstdint>

#include <strata/cuda/indexing.h>
#include <strata/tensor/errors.h>

namespace strata::cuda::detail {

// Note [Reduction plans]
// A reduction folds, for every output element, the input elements that share its kept
// coordinates. The plan splits the input's dims into kept dims (which number the outputs,
// row-major) and reduced dims (which number the positions r = 0 .. reduced_count - 1 folded
// into one output, row-major in the input's dim order, so r is the flat index argmax reports).
// Size-1 dims are dropped and neighbouring dims merged where every stride allows it, so a
// contiguous input usually has one kept and one reduced dim. Every tensor may have any
// strides: a kept dim has an input stride and one stride per output (max.dim writes values and
// indices, which may be laid out differently); reduced dims have only an input stride.
// Kernels (cuda/reduce.cuh) give each output element a group of threads; a thread folds the
// positions lane, lane + group_size, ... and the group combines its threads' partial results.
// Few outputs with long folds are split over more groups (Note [Split reductions]).
inline constexpr int kMaxReduceOutputs = 2;

// One dim of the input, as the host describes it to make_reduce_plan.
struct ReduceDim {
  int64_t size = 1;
  int64_t input_stride = 0;
  bool reduced = false;
  int64_t output_strides[kMaxReduceOutputs] = {};  // unused for reduced dims
};

struct ReducePlan {
  int64_t output_count = 1;   // product of the kept sizes
  int64_t reduced_count = 1;  // product of the reduced sizes (0: every output folds nothing)
  int kept_ndim = 0, reduced_ndim = 0;
  int64_t kept_sizes[kMaxDims] = {};
  int64_t kept_input_strides[kMaxDims] = {};
  int64_t kept_output_strides[kMaxReduceOutputs][kMaxDims] = {};
  int64_t reduced_sizes[kMaxDims] = {};
  int64_t reduced_strides[kMaxDims] = {};

  // The input offset where output `output`'s elements start, and that output's offset in each
  // output tensor.
  STRATA_HOST_DEVICE void locate_output(int64_t output, int64_t& input_base,
                                        int64_t (&output_offsets)[kMaxReduceOutputs]) const {
    input_base = 0;
    for (int k = 0; k < kMaxReduceOutputs; ++k) output_offsets[k] = 0;
    for (int dim = kept_ndim - 1; dim >= 0; --dim) {
      const int64_t index = output % kept_sizes[dim];
      output /= kept_sizes[dim];
      input_base += index * kept_input_strides[dim];
      for (int k = 0; k < kMaxReduceOutputs; ++k) output_offsets[k] += index * kept_output_strides[k][dim];
    }
  }

  // The input offset of position r of the fold, relative to the output's input_base.
  STRATA_HOST_DEVICE int64_t reduced_offset(int64_t position) const {
    if (reduced_ndim == 1) return position * reduced_strides[0];
    int64_t offset = 0;
    for (int dim = reduced_ndim - 1; dim >= 0; --dim) {
      offset += (position % reduced_sizes[dim]) * reduced_strides[dim];
      position /= reduced_sizes[dim];
    }
    return offset;
  }
};

// The plan for `dims` (outermost first, as the input's dims). `op` names the op in errors.
inline ReducePlan make_reduce_plan(const char* op, const ReduceDim* dims, int ndim) {
  constexpr int kKeptStrides = 1 + kMaxReduceOutputs;
  // Built innermost first, then reversed.
  int64_t kept_sizes[64], kept_strides[kKeptStrides][64], reduced_sizes[64], reduced_strides[64];
  STRATA_CHECK(ndim <= 64, "[", op, "] CUDA reductions take tensors of at most 64 dimensions, got ", ndim);
  ReducePlan plan;
  int kept = 0, reduced = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    const ReduceDim& dim = dims[d];
    if (dim.reduced) plan.reduced_count *= dim.size;
    else plan.output_count *= dim.size;
    if (dim.size == 1) continue;
    if (dim.reduced) {
      if (reduced > 0 && dim.input_stride == reduced_strides[reduced - 1] * reduced_sizes[reduced - 1]) {
        reduced_sizes[reduced - 1] *= dim.size;
      } else {
        reduced_sizes[reduced] = dim.size;
        reduced_strides[reduced++] = dim.input_stride;
      }
      continue;
    }
    const int64_t strides[kKeptStrides] = {dim.input_stride, dim.output_strides[0], dim.output_strides[1]};
    bool mergeable = kept > 0;
    for (int k = 0; k < kKeptStrides && mergeable; ++k)
      mergeable = strides[k] == kept_strides[k][kept - 1] * kept_sizes[kept - 1];
    if (mergeable) {
      kept_sizes[kept - 1] *= dim.size;
      continue;
    }
    kept_sizes[kept] = dim.size;
    for (int k = 0; k < kKeptStrides; ++k) kept_strides[k][kept] = strides[k];
    ++kept;
  }
  STRATA_CHECK(kept <= kMaxDims && reduced <= kMaxDims, "[", op, "] CUDA reductions iterate over at most ", kMaxDims,
               " kept and ", kMaxDims, " reduced dimensions that cannot be merged; got ", kept, " and ", reduced);
  plan.kept_ndim = kept;
  plan.reduced_ndim = reduced;
  for (int i = 0; i < kept; ++i) {
    plan.kept_sizes[i] = kept_sizes[kept - 1 - i];
    plan.kept_input_strides[i] = kept_strides[0][kept - 1 - i];
    for (int k = 0; k < kMaxReduceOutputs; ++k) plan.kept_output_strides[k][i] = kept_strides[1 + k][kept - 1 - i];
  }
  for (int i = 0; i < reduced; ++i) {
    plan.reduced_sizes[i] = reduced_sizes[reduced - 1 - i];
    plan.reduced_strides[i] = reduced_strides[reduced - 1 - i];
  }
  return plan;
}

// Fills dims[0 .. ndim) for an input of `ndim` dims (sizes, strides, reduced: 1 per reduced
// dim) and `output_count` outputs of `output_ndim` dims each: the input's kept dims in order,
// with the reduced dims dropped, or kept as size 1 when output_ndim == ndim (keepdim).
inline void describe_reduce_dims(int ndim, const int64_t* sizes, const int64_t* strides, const int64_t* reduced,
                                 int output_count, const int64_t* const* output_strides, int output_ndim,
                                 ReduceDim* dims) {
  const bool keepdim = output_ndim == ndim;
  int output_dim = 0;
  for (int d = 0; d < ndim; ++d) {
    ReduceDim& dim = dims[d];
    dim.size = sizes[d];
    dim.input_stride = strides[d];
    dim.reduced = reduced[d] != 0;
    for (int k = 0; k < kMaxReduceOutputs; ++k) dim.output_strides[k] = 0;
    if (dim.reduced && !keepdim) continue;
    if (!dim.reduced)
      for (int k = 0; k < output_count; ++k) dim.output_strides[k] = output_strides[k][output_dim];
    ++output_dim;
  }
}

// Note [Reduction launch shape]
// A block is group_size x groups threads: `groups` output elements, each folded by a group of
// group_size threads. Tiny folds (at most kSerialFold positions) take one thread per output:
// a warp would sit mostly idle. Larger folds take a power-of-two group of 32 to 512 threads
// (whole warps, so each warp combines with shuffles and the warps of a group through shared
// memory), about kItemsPerThread positions per thread. The group size depends only on the
// fold's length (or, for a split fold, its ranges': Note [Split reductions]). Blocks hold 256
// threads (one group of 512 for the largest folds) and loop over the outputs when there are
// more than kMaxBlocks blocks' worth.
inline constexpr int64_t kSerialFold = 16;
inline constexpr int64_t kItemsPerThread = 8;
inline constexpr int kMaxGroupSize = 512;
inline constexpr int kBlockThreads = 256;

struct ReduceLaunch {
  int group_size = 1;  // threads per output element (blockDim.x)
  int groups = 1;      // output elements per block (blockDim.y)
  int64_t blocks = 1;
};

STRATA_HOST_DEVICE constexpr int reduce_group_size(int64_t reduced_count) {
  if (reduced_count <= kSerialFold) return 1;
  int size = 32;
  while (size < kMaxGroupSize && static_cast<int64_t>(size) * kItemsPerThread < reduced_count) size *= 2;
  return size;
}

STRATA_HOST_DEVICE constexpr ReduceLaunch reduce_launch(int64_t output_count, int64_t reduced_count) {
  ReduceLaunch launch;
  launch.group_size = reduce_group_size(reduced_count);
  launch.groups = launch.group_size >= kBlockThreads ? 1 : kBlockThreads / launch.group_size;
  launch.blocks = ceil_div(output_count, launch.groups);
  if (launch.blocks < 1) launch.blocks = 1;
  if (launch.blocks > kMaxBlocks) launch.blocks = kMaxBlocks;
  return launch;
}

// Note [Split reductions]
// One group per output leaves most of the GPU idle when there are few outputs with long folds:
// a whole-tensor sum is one output, folded by one block of 512 threads on one multiprocessor.
// Then each fold is split into `count` consecutive ranges of `chunk` positions (the last one
// may be shorter, none is empty). A first kernel folds every (output, range) pair, numbered
// piece = output * count + range, into a partial state in a temporary buffer, as if the range
// were a fold of its own; a second gives each output a group that combines its partials, lane
// l taking ranges l, l + group_size, ..., and writes the result. Nothing is atomic, so a result
// is the same in every run; it depends on the shape only, as the split does. Folds shorter than
// kSplitMinFold are not split, nor are folds with kSplitTargetGroups or more outputs (those
// outputs already fill the GPU); ranges hold at least kSplitMinChunk positions, and there are
// at most kSplitTargetGroups pieces in all, so the buffer stays small (kSplitTargetGroups
// states at most).
inline constexpr int64_t kSplitMinFold = 32768;
inline constexpr int64_t kSplitMinChunk = 8192;
inline constexpr int64_t kSplitTargetGroups = 1024;

struct ReduceSplit {
  int64_t count = 1;  // ranges per fold
  int64_t chunk = 0;  // positions per range (the whole fold when count is 1)

  // Piece `piece`'s output and its positions [begin, end).
  STRATA_HOST_DEVICE void locate_piece(int64_t piece, int64_t reduced_count, int64_t& output, int64_t& begin,
                                       int64_t& end) const {
    output = piece / count;
    begin = (piece % count) * chunk;
    end = begin + chunk < reduced_count ? begin + chunk : reduced_count;
  }
};

STRATA_HOST_DEVICE constexpr ReduceSplit reduce_split(int64_t output_count, int64_t reduced_count) {
  ReduceSplit split;
  split.chunk = reduced_count;
  if (output_count < 1 || output_count >= kSplitTargetGroups || reduced_count < kSplitMinFold) return split;
  int64_t count = reduced_count / kSplitMinChunk;  // rounded down: ranges of kSplitMinChunk or more
  const int64_t budget = kSplitTargetGroups / output_count;
  if (count > budget) count = budget;
  if (count <= 1) return split;
  split.chunk = ceil_div(reduced_count, count);
  split.count = ceil_div(reduced_count, split.chunk);  // no empty range at the end
  return split;
}

// Note [Column reductions]
// Reducing over outer dims (a bias gradient: [batch, features].sum(0)) leaves the innermost
// kept dim contiguous and the folds strided: a group folding one output would read one
// element per row, every lane a different memory segment. Such plans (reduce_by_columns) are
// read by columns instead: a block takes a tile of kColumnWidth consecutive outputs, one per
// lane of a warp (x), and kColumnSlices warps (y) share each fold, slice y folding positions
// y, y + kColumnSlices, ... of its range; then slice 0 combines the slices in order. Each
// warp's reads are then consecutive elements. Few tiles with long folds split as groups do
// (Note [Split reductions], with tiles in place of outputs: piece = tile * count + range), and
// the partials have the same layout (output * count + range), so the same second kernel
// combines them.
inline constexpr int kColumnWidth = 32;
inline constexpr int kColumnSlices = 8;

inline bool reduce_by_columns(const ReducePlan& plan) {
  return plan.reduced_count > kSerialFold && plan.kept_ndim > 0 && plan.kept_input_strides[plan.kept_ndim - 1] == 1;
}

STRATA_HOST_DEVICE constexpr int64_t column_tiles(int64_t output_count) { return ceil_div(output_count, kColumnWidth); }

// The block size for kernels that give one block to each row (softmax, layer_norm): a power
// of two from 32 to 512 threads, about kItemsPerThread elements per thread.
STRATA_HOST_DEVICE constexpr int row_block_threads(int64_t row_size) {
  const int size = reduce_group_size(row_size);
  return size < 32 ? 32 : size;
}

}  // namespace strata::cuda::detail
