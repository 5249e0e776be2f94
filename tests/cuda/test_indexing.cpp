// Tests for cuda/indexing.cpp and cuda/indexing.h on the host: the offsets elementwise CUDA
// kernels compute for every operand, and their launch shapes.
#include <doctest/doctest.h>

#include <strata/cuda/operands.h>
#include <strata/strata.h>

#include <set>
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

// The indexer may walk the elements in another order than out's row-major one (dims are
// ordered by stride): every element must still be visited once, each operand at the offset
// of that same element.
template <int N>
void check_offsets_any_order(const std::array<const Tensor*, N>& operands) {
  const StridedIndexer<N> indexer = make_indexer<N>("test", operands);
  const Tensor& out = *operands[0];
  std::multiset<std::vector<int64_t>> expected, visited;
  for (int64_t linear = 0; linear < out.numel(); ++linear) {
    std::vector<int64_t> reference(N), walked(N);
    int64_t offsets[N];
    indexer.offsets(linear, offsets);
    for (int k = 0; k < N; ++k) {
      reference[static_cast<size_t>(k)] = reference_offset(*operands[static_cast<size_t>(k)], out.sizes(), linear);
      walked[static_cast<size_t>(k)] = offsets[k];
    }
    expected.insert(reference);
    visited.insert(walked);
  }
  CHECK(visited == expected);
}

}  // namespace

TEST_CASE("indexing: contiguous operands merge into one dimension") {
  const Tensor out = empty({2, 3, 4}), a = empty({2, 3, 4});
  const StridedIndexer<2> indexer = make_indexer<2>("test", {&out, &a});
  CHECK(indexer.ndim == 1);
  CHECK(indexer.sizes[0] == 24);
  const std::array<const Tensor*, 2> operands{&out, &a};
  CHECK(same_dense_layout(operands.data(), 2));
}

TEST_CASE("indexing: transposed, sliced and broadcast operands get the offsets their strides say") {
  const Tensor out = empty({4, 3, 5});
  const Tensor transposed = empty({5, 3, 4}).permute({2, 1, 0});
  const Tensor sliced = empty({4, 6, 5}).slice(1, 0, 6, 2);
  const Tensor row = empty({5});           // broadcast over the first two dims
  const Tensor column = empty({4, 1, 1});  // broadcast over the last two
  check_offsets<5>({&out, &transposed, &sliced, &row, &column});
  const std::array<const Tensor*, 2> operands{&out, &transposed};
  CHECK_FALSE(same_dense_layout(operands.data(), 2));
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

TEST_CASE("indexing: operands sharing a permuted dense layout run as one block, ordered by out") {
  // Channels last everywhere: the linear kernel applies (one dense block in one order).
  const Tensor out = empty({2, 3, 4, 5}, {}, MemoryFormat::ChannelsLast);
  const Tensor a = empty({2, 3, 4, 5}, {}, MemoryFormat::ChannelsLast);
  const std::array<const Tensor*, 2> same{&out, &a};
  CHECK(same_dense_layout(same.data(), 2));
  CHECK(make_indexer<2>("test", same).ndim == 1);
  // Mixed layouts and broadcasts do not; their offsets follow out's order of dims.
  const Tensor plain = empty({2, 3, 4, 5});
  const Tensor bias = empty({3, 1, 1});
  const std::array<const Tensor*, 2> mixed{&out, &plain};
  CHECK_FALSE(same_dense_layout(mixed.data(), 2));
  const StridedIndexer<2> by_out = make_indexer<2>("test", mixed);
  CHECK(by_out.ndim == 3);  // N, then H and W merged, then C innermost
  CHECK(by_out.strides[0][by_out.ndim - 1] == 1);  // out walks its channels innermost
  check_offsets_any_order<3>({&out, &plain, &bias});
  const Tensor transposed = empty({5, 4}).t();
  const Tensor matrix = empty({4, 5});
  check_offsets_any_order<2>({&transposed, &matrix});
  const std::array<const Tensor*, 2> pair{&transposed, &matrix};
  CHECK_FALSE(same_dense_layout(pair.data(), 2));
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
