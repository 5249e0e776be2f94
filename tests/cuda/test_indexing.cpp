// Tests for cuda/indexing.cpp and cuda/indexing.h on the host: the offsets elementwise CUDA
// kernels compute for every operand, and their launch shapes.
#include <doctest/doctest.h>

#include <strata/cuda/operands.h>
#include <strata/strata.h>

#include <vector>

using namespace strata;
using namespace strata::cuda::detail;

namespace {

// The element offset of operand `t`, broadcast to `sizes`, at row-major position `linear`.
int64_t reference_offset(const Tensor& t, IntArrayRef sizes, int64_t linear) {
  int64_t offset = 0;
  for (int64_t dim = static_cast<int64_t>(sizes.size()) - 1; dim >= 0; --dim) {
    const int64_t size = sizes[static_cast<size_t>(dim)];
    const int64_t index = linear % size;
    linear /= size;
    const int64_t operand_dim = dim - (static_cast<int64_t>(sizes.size()) - t.dim());
    if (operand_dim >= 0 && t.size(operand_dim) != 1) offset += index * t.stride(operand_dim);
  }
  return offset;
}

template <int N>
void check_offsets(const std::array<const Tensor*, N>& operands) {
  const StridedIndexer<N> indexer = make_indexer<N>("test", operands);
  const Tensor& out = *operands[0];
  for (int64_t linear = 0; linear < out.numel(); ++linear) {
    int64_t offsets[N];
    indexer.offsets(linear, offsets);
    for (int k = 0; k < N; ++k) {
      INFO("operand " << k << " at " << linear);
      CHECK(offsets[k] == reference_offset(*operands[static_cast<size_t>(k)], out.sizes(), linear));
    }
  }
}

}  // namespace

TEST_CASE("indexing: contiguous operands merge into one dimension") {
  const Tensor out = empty({2, 3, 4}), a = empty({2, 3, 4});
  const StridedIndexer<2> indexer = make_indexer<2>("test", {&out, &a});
  CHECK(indexer.ndim == 1);
  CHECK(indexer.sizes[0] == 24);
  const std::array<const Tensor*, 2> operands{&out, &a};
  CHECK(all_contiguous(operands.data(), 2));
}

TEST_CASE("indexing: transposed, sliced and broadcast operands get the offsets their strides say") {
  const Tensor out = empty({4, 3, 5});
  const Tensor transposed = empty({5, 3, 4}).permute({2, 1, 0});
  const Tensor sliced = empty({4, 6, 5}).slice(1, 0, 6, 2);
  const Tensor row = empty({5});           // broadcast over the first two dims
  const Tensor column = empty({4, 1, 1});  // broadcast over the last two
  check_offsets<5>({&out, &transposed, &sliced, &row, &column});
  const std::array<const Tensor*, 2> operands{&out, &transposed};
  CHECK_FALSE(all_contiguous(operands.data(), 2));
  // Size-1 dims are dropped and the broadcast row keeps stride 0 where it repeats.
  const StridedIndexer<2> indexer = make_indexer<2>("test", {&out, &row});
  CHECK(indexer.ndim == 2);
  CHECK(indexer.strides[1][0] == 0);
  CHECK(indexer.strides[1][1] == 1);
}

TEST_CASE("indexing: 0-d and expanded scalars, and a strided out") {
  const Tensor scalar_out = empty({}), scalar = empty({});
  check_offsets<2>({&scalar_out, &scalar});
  const Tensor out = empty({6, 8}).slice(1, 1, 8, 3);  // a strided out: offsets follow its strides too
  const Tensor expanded = empty({1}).expand({6, 3});
  check_offsets<2>({&out, &expanded});
}

TEST_CASE("indexing: more dimensions than kernels iterate over is an Error naming the op") {
  std::vector<int64_t> sizes(kMaxDims + 1, 2);
  const Tensor out = strata::empty(sizes);
  std::vector<int64_t> dims(sizes.size());
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<int64_t>(dims.size() - 1 - i);
  const Tensor reversed = strata::empty(sizes).permute(dims);  // no two dims merge
  CHECK_THROWS_WITH_AS(make_indexer<2>("my_op", {&out, &reversed}),
                       doctest::Contains("[my_op] CUDA kernels iterate over at most 16 dimensions"), Error);
}

TEST_CASE("indexing: launch shapes cover the work and cap the grid") {
  CHECK(launch_shape(1).blocks == 1);
  CHECK(launch_shape(1024).blocks == 1);  // 256 threads x 4 items
  CHECK(launch_shape(1025).blocks == 2);
  CHECK(launch_shape(int64_t{1} << 40).blocks == kMaxBlocks);
  CHECK(launch_shape(0).blocks == 1);
  CHECK(ceil_div(10, 3) == 4);
}
