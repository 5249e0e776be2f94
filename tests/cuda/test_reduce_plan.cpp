// Tests for cuda/reduce_plan.h and cuda/reduce_math.h on the host: the offsets CUDA reduction
// kernels read and write, their launch shapes, and how their partial states combine.
#include <doctest/doctest.h>

#include <strata/cuda/reduce_math.h>
#include <strata/cuda/reduce_plan.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using namespace strata::cuda::detail;

namespace {

struct Layout {
  std::vector<int64_t> sizes, strides, reduced;
  std::vector<int64_t> output_strides[kMaxReduceOutputs];  // over the output's dims
  bool keepdim = false;
};

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * sizes[d];
  return strides;
}

// The output's sizes: the input's, reduced dims dropped (or 1 with keepdim).
std::vector<int64_t> output_sizes(const Layout& layout) {
  std::vector<int64_t> sizes;
  for (size_t d = 0; d < layout.sizes.size(); ++d) {
    if (!layout.reduced[d]) sizes.push_back(layout.sizes[d]);
    else if (layout.keepdim) sizes.push_back(1);
  }
  return sizes;
}

ReducePlan plan_of(const Layout& layout) {
  const int ndim = static_cast<int>(layout.sizes.size());
  std::vector<ReduceDim> dims(layout.sizes.size() + 1);
  const int64_t* output_strides[kMaxReduceOutputs] = {layout.output_strides[0].data(), layout.output_strides[1].data()};
  describe_reduce_dims(ndim, layout.sizes.data(), layout.strides.data(), layout.reduced.data(), kMaxReduceOutputs,
                       output_strides, static_cast<int>(output_sizes(layout).size()), dims.data());
  return make_reduce_plan("test", dims.data(), ndim);
}

// Walks every input element in row-major order and checks that the plan sends it where the
// definition says: output = row-major index over the kept dims, r = row-major index over the
// reduced dims, offsets = the dot products of the indices with the strides.
void check_plan_against_definition(const Layout& layout) {
  const ReducePlan plan = plan_of(layout);
  const size_t ndim = layout.sizes.size();
  int64_t total = 1, outputs = 1, positions = 1;
  for (size_t d = 0; d < ndim; ++d) {
    total *= layout.sizes[d];
    (layout.reduced[d] ? positions : outputs) *= layout.sizes[d];
  }
  CHECK(plan.output_count == outputs);
  CHECK(plan.reduced_count == positions);
  std::vector<int64_t> index(ndim, 0);
  for (int64_t linear = 0; linear < total; ++linear) {
    int64_t rest = linear;
    for (size_t d = ndim; d-- > 0;) {
      index[d] = rest % layout.sizes[d];
      rest /= layout.sizes[d];
    }
    int64_t output = 0, r = 0, input_offset = 0, output_offset[kMaxReduceOutputs] = {0, 0};
    size_t output_dim = 0;
    for (size_t d = 0; d < ndim; ++d) {
      input_offset += index[d] * layout.strides[d];
      if (layout.reduced[d]) {
        r = r * layout.sizes[d] + index[d];
        if (layout.keepdim) ++output_dim;
        continue;
      }
      output = output * layout.sizes[d] + index[d];
      for (int k = 0; k < kMaxReduceOutputs; ++k) output_offset[k] += index[d] * layout.output_strides[k][output_dim];
      ++output_dim;
    }
    int64_t base = -1, offsets[kMaxReduceOutputs] = {-1, -1};
    plan.locate_output(output, base, offsets);
    CHECK(base + plan.reduced_offset(r) == input_offset);
    CHECK(offsets[0] == output_offset[0]);
    CHECK(offsets[1] == output_offset[1]);
  }
}

Layout contiguous_layout(std::vector<int64_t> sizes, std::vector<int64_t> reduced, bool keepdim = false) {
  Layout layout;
  layout.sizes = std::move(sizes);
  layout.strides = contiguous_strides(layout.sizes);
  layout.reduced = std::move(reduced);
  layout.keepdim = keepdim;
  layout.output_strides[0] = contiguous_strides(output_sizes(layout));
  layout.output_strides[1] = layout.output_strides[0];
  return layout;
}

}  // namespace

TEST_CASE("reduce_plan: contiguous inputs merge into one kept and one reduced dim") {
  const ReducePlan last = plan_of(contiguous_layout({4, 5, 6}, {0, 1, 1}));
  CHECK(last.kept_ndim == 1);
  CHECK(last.reduced_ndim == 1);
  CHECK(last.reduced_strides[0] == 1);
  CHECK(last.reduced_count == 30);
  const ReducePlan all = plan_of(contiguous_layout({4, 5, 6}, {1, 1, 1}));
  CHECK(all.kept_ndim == 0);
  CHECK(all.reduced_ndim == 1);
  CHECK(all.output_count == 1);
  const ReducePlan middle = plan_of(contiguous_layout({4, 5, 6}, {0, 1, 0}, true));
  CHECK(middle.kept_ndim == 2);
  CHECK(middle.reduced_ndim == 1);
  CHECK(middle.reduced_strides[0] == 6);
  // Size-1 dims vanish, so a reduced dim of size 1 between kept dims lets them merge.
  const ReducePlan ones = plan_of(contiguous_layout({4, 1, 6}, {0, 1, 0}));
  CHECK(ones.kept_ndim == 1);
  CHECK(ones.reduced_ndim == 0);
  CHECK(ones.reduced_count == 1);
}

TEST_CASE("reduce_plan: offsets follow the definition for any strides and dims") {
  check_plan_against_definition(contiguous_layout({3, 4, 5}, {0, 1, 0}));
  check_plan_against_definition(contiguous_layout({3, 4, 5}, {1, 0, 1}));
  check_plan_against_definition(contiguous_layout({3, 4, 5}, {1, 0, 1}, true));
  check_plan_against_definition(contiguous_layout({2, 3, 4, 5}, {0, 1, 0, 1}));
  check_plan_against_definition(contiguous_layout({2, 1, 3, 1}, {1, 1, 0, 0}, true));
  check_plan_against_definition(contiguous_layout({7}, {1}));
  check_plan_against_definition(contiguous_layout({7}, {0}));
  SUBCASE("a transposed input: r stays row-major over the logical dims") {
    Layout layout = contiguous_layout({4, 3, 5}, {1, 0, 1});
    layout.strides = {1, 20, 4};  // a permuted [3, 5, 4] tensor
    check_plan_against_definition(layout);
  }
  SUBCASE("a sliced input and strided outputs that differ") {
    Layout layout = contiguous_layout({3, 4, 6}, {0, 0, 1});
    layout.strides = {48, 12, 2};  // every other element of a [3, 4, 12] tensor
    layout.output_strides[0] = {1, 3};  // a transposed values tensor
    layout.output_strides[1] = {8, 2};  // a strided indices tensor
    check_plan_against_definition(layout);
  }
  SUBCASE("broadcast (zero-stride) input dims") {
    Layout layout = contiguous_layout({3, 4, 5}, {0, 1, 0});
    layout.strides = {5, 0, 1};
    check_plan_against_definition(layout);
  }
}

TEST_CASE("reduce_plan: 0-d and empty tensors") {
  const ReducePlan scalar = plan_of(contiguous_layout({}, {}));
  CHECK(scalar.output_count == 1);
  CHECK(scalar.reduced_count == 1);
  CHECK(scalar.kept_ndim == 0);
  CHECK(scalar.reduced_ndim == 0);
  int64_t base = -1, offsets[kMaxReduceOutputs] = {-1, -1};
  scalar.locate_output(0, base, offsets);
  CHECK(base == 0);
  CHECK(offsets[0] == 0);
  CHECK(scalar.reduced_offset(0) == 0);
  // An empty reduced dim: every output folds nothing.
  const ReducePlan empty = plan_of(contiguous_layout({3, 0}, {0, 1}));
  CHECK(empty.output_count == 3);
  CHECK(empty.reduced_count == 0);
  // An empty kept dim: no outputs.
  CHECK(plan_of(contiguous_layout({0, 4}, {0, 1})).output_count == 0);
}

TEST_CASE("reduce_plan: more unmergeable dims than kernels take throw, naming the op") {
  Layout layout;
  for (int d = 0; d < 17; ++d) {
    layout.sizes.push_back(2);
    layout.strides.push_back(int64_t{3} << (2 * d));  // never mergeable
    layout.reduced.push_back(0);
  }
  layout.output_strides[0] = layout.output_strides[1] = contiguous_strides(layout.sizes);
  CHECK_THROWS_WITH(plan_of(layout), doctest::Contains("[test] CUDA reductions iterate over at most 16"));
}

TEST_CASE("reduce_plan: launch shapes") {
  CHECK(reduce_group_size(0) == 1);
  CHECK(reduce_group_size(16) == 1);
  CHECK(reduce_group_size(17) == 32);
  CHECK(reduce_group_size(256) == 32);
  CHECK(reduce_group_size(257) == 64);
  CHECK(reduce_group_size(4096) == 512);
  CHECK(reduce_group_size(int64_t{1} << 40) == 512);
  const ReduceLaunch tiny = reduce_launch(1000, 4);
  CHECK(tiny.group_size == 1);
  CHECK(tiny.groups == 256);
  CHECK(tiny.blocks == 4);
  const ReduceLaunch wide = reduce_launch(10, 1 << 20);
  CHECK(wide.group_size == 512);
  CHECK(wide.groups == 1);
  CHECK(wide.blocks == 10);
  const ReduceLaunch warps = reduce_launch(1000, 100);
  CHECK(warps.group_size * warps.groups == kBlockThreads);
  CHECK(warps.blocks == ceil_div(1000, warps.groups));
  CHECK(reduce_launch(int64_t{1} << 40, 1).blocks == kMaxBlocks);
  CHECK(reduce_launch(0, 5).blocks == 1);
  CHECK(row_block_threads(1) == 32);
  CHECK(row_block_threads(1 << 20) == 512);
}

// ---------------------------------------------------------------------------------------
// The combines, run the way a group of the kernel runs them: lane l folds positions l,
// l + group, ...; then each warp combines by shuffles (lane l takes lane l + delta, for
// delta 16 .. 1; lanes past the end keep their own value) and the warps' results the same way.

namespace {

// A group folding the positions [begin, end).
template <class Acc, class Fold, class Combine>
Acc simulate_range(int group_size, int64_t begin, int64_t end, Acc identity, const Fold& fold,
                   const Combine& combine) {
  std::vector<Acc> lanes(static_cast<size_t>(group_size), identity);
  for (int lane = 0; lane < group_size; ++lane)
    for (int64_t r = begin + lane; r < end; r += group_size) lanes[lane] = fold(lanes[lane], r);
  if (group_size == 1) return lanes[0];
  auto warp_reduce = [&](std::vector<Acc>& values, size_t first) {
    for (int delta = 16; delta > 0; delta /= 2) {
      std::vector<Acc> shifted(values.begin() + first, values.begin() + first + 32);
      for (int lane = 0; lane < 32; ++lane)
        if (lane + delta < 32) values[first + lane] = combine(shifted[lane], shifted[lane + delta]);
    }
    return values[first];
  };
  std::vector<Acc> warps(32, identity);
  for (int warp = 0; warp < group_size / 32; ++warp) warps[warp] = warp_reduce(lanes, static_cast<size_t>(warp) * 32);
  return group_size == 32 ? warps[0] : warp_reduce(warps, 0);
}

template <class Acc, class Fold, class Combine>
Acc simulate_group(int group_size, int64_t count, Acc identity, const Fold& fold, const Combine& combine) {
  return simulate_range(group_size, 0, count, identity, fold, combine);
}

// One output of a reduction of `count` positions among `outputs`, as launch_reduce runs it:
// one group, or the two kernels of a split fold (Note [Split reductions]).
template <class Acc, class Fold, class Combine>
Acc simulate_reduction(int64_t outputs, int64_t count, Acc identity, const Fold& fold, const Combine& combine) {
  const ReduceSplit split = reduce_split(outputs, count);
  if (split.count == 1) return simulate_group(reduce_group_size(count), count, identity, fold, combine);
  std::vector<Acc> partials;
  for (int64_t piece = 0; piece < split.count; ++piece) {  // output 0's pieces
    int64_t output = -1, begin = -1, end = -1;
    split.locate_piece(piece, count, output, begin, end);
    partials.push_back(simulate_range(reduce_group_size(split.chunk), begin, end, identity, fold, combine));
  }
  return simulate_group(
      reduce_group_size(split.count), split.count, identity,
      [&](const Acc& acc, int64_t range) { return combine(acc, partials[static_cast<size_t>(range)]); }, combine);
}

std::vector<double> test_values(int64_t count, double offset) {
  std::vector<double> values;
  for (int64_t i = 0; i < count; ++i) values.push_back(offset + std::sin(0.7 * static_cast<double>(i)) * 3.0);
  return values;
}

}  // namespace

TEST_CASE("reduce_plan: split folds cover every position once, in ranges of their own") {
  // Unsplit: short folds, and outputs enough to fill the GPU.
  CHECK(reduce_split(1, kSplitMinFold - 1).count == 1);
  CHECK(reduce_split(1, kSplitMinFold - 1).chunk == kSplitMinFold - 1);
  CHECK(reduce_split(kSplitTargetGroups, int64_t{1} << 30).count == 1);
  CHECK(reduce_split(0, int64_t{1} << 30).count == 1);
  CHECK(reduce_split(1, 0).count == 1);
  // A whole-tensor sum of 64M elements: kSplitTargetGroups ranges of 64K positions.
  const ReduceSplit whole = reduce_split(1, int64_t{1} << 26);
  CHECK(whole.count == kSplitTargetGroups);
  CHECK(whole.chunk == 65536);
  CHECK(reduce_launch(whole.count, whole.chunk).blocks == kSplitTargetGroups);
  for (int64_t outputs : {1, 2, 3, 7, 100, 511, 1023}) {
    for (int64_t count : {kSplitMinFold, kSplitMinFold + 1, int64_t{100003}, int64_t{1} << 20, int64_t{123456789},
                          int64_t{1} << 40}) {
      CAPTURE(outputs);
      CAPTURE(count);
      const ReduceSplit split = reduce_split(outputs, count);
      CHECK(split.count * outputs <= kSplitTargetGroups);
      if (split.count == 1) {
        CHECK(split.chunk == count);
        CHECK(outputs * 2 > kSplitTargetGroups);  // only when no second range fits the budget
        continue;
      }
      CHECK(split.chunk >= kSplitMinChunk);
      // Pieces in order: output by output, consecutive non-empty ranges ending at count.
      for (int64_t piece = 0; piece < outputs * split.count; piece += std::max<int64_t>(1, outputs / 3)) {
        int64_t output = -1, begin = -1, end = -1;
        split.locate_piece(piece, count, output, begin, end);
        const int64_t range = piece % split.count;
        CHECK(output == piece / split.count);
        CHECK(begin == range * split.chunk);
        CHECK(begin < end);
        CHECK(end == (range == split.count - 1 ? count : begin + split.chunk));
      }
    }
  }
}

TEST_CASE("reduce_math: split folds give the results of one group's fold") {
  constexpr int64_t count = 3 * kSplitMinFold + 17;
  REQUIRE(reduce_split(1, count).count > 1);
  REQUIRE(reduce_split(5, count).count > 1);
  const std::vector<double> values = test_values(count, 1e3);
  for (int64_t outputs : {1, 5}) {
    CAPTURE(outputs);
    const auto fold_sum = [&](double acc, int64_t r) { return acc + values[static_cast<size_t>(r)]; };
    const auto add = [](double a, double b) { return a + b; };
    CHECK(simulate_reduction(outputs, count, 0.0, fold_sum, add) ==
          doctest::Approx(simulate_group(512, count, 0.0, fold_sum, add)).epsilon(1e-13));
    const auto fold_welford = [&](Welford acc, int64_t r) { return welford_fold(acc, values[static_cast<size_t>(r)]); };
    const Welford split = simulate_reduction(outputs, count, Welford{0, 0.0, 0.0}, fold_welford, welford_combine);
    const Welford whole = simulate_group(512, count, Welford{0, 0.0, 0.0}, fold_welford, welford_combine);
    CHECK(split.count == count);
    CHECK(split.mean == doctest::Approx(whole.mean).epsilon(1e-13));
    CHECK(split.squares == doctest::Approx(whole.squares).epsilon(1e-10));
    // argmax with ties across ranges and a NaN in a later range: the sequential fold's position.
    std::vector<float> ties;
    for (int64_t i = 0; i < count; ++i) ties.push_back(static_cast<float>((i * 37) % 11));
    for (bool with_nan : {false, true}) {
      if (with_nan) ties[static_cast<size_t>(count - 5)] = ties[static_cast<size_t>(count - 3)] = NAN;
      const Extremum<float> best = simulate_reduction(
          outputs, count, Extremum<float>{0.f, -1},
          [&](const Extremum<float>& acc, int64_t r) {
            return combine_extremum<true>(acc, Extremum<float>{ties[static_cast<size_t>(r)], r});
          },
          combine_extremum<true, float>);
      CHECK(best.index == (with_nan ? count - 5 : int64_t{8}));  // (8 * 37) % 11 == 10, the first maximum
    }
  }
}

TEST_CASE("reduce_plan: reductions over outer dims are read by columns") {
  CHECK(reduce_by_columns(plan_of(contiguous_layout({1000, 40}, {1, 0}))));
  CHECK(reduce_by_columns(plan_of(contiguous_layout({17, 3}, {1, 0}))));
  CHECK(reduce_by_columns(plan_of(contiguous_layout({30, 5, 7}, {1, 0, 0}, true))));
  CHECK_FALSE(reduce_by_columns(plan_of(contiguous_layout({16, 40}, {1, 0}))));   // short folds: a thread each
  CHECK_FALSE(reduce_by_columns(plan_of(contiguous_layout({1000, 40}, {0, 1}))));  // contiguous folds
  CHECK_FALSE(reduce_by_columns(plan_of(contiguous_layout({1000}, {1}))));         // no kept dim
  CHECK_FALSE(reduce_by_columns(plan_of(contiguous_layout({8, 3, 30}, {1, 0, 1}))));  // kept dim strided
  CHECK(column_tiles(1) == 1);
  CHECK(column_tiles(kColumnWidth) == 1);
  CHECK(column_tiles(kColumnWidth + 1) == 2);
}

TEST_CASE("reduce_math: column reductions give every output its sequential fold") {
  // [rows, columns].sum(0) and .argmax(0), run as reduce_columns_kernel and then
  // reduce_partials_kernel run them, with the plan's own offsets.
  for (int64_t rows : {int64_t{100}, 5 * kSplitMinFold + 3}) {
    constexpr int64_t columns = 40;
    CAPTURE(rows);
    const ReducePlan plan = plan_of(contiguous_layout({rows, columns}, {1, 0}));
    REQUIRE(reduce_by_columns(plan));
    const ReduceSplit split = reduce_split(column_tiles(plan.output_count), plan.reduced_count);
    CHECK((split.count > 1) == (rows > kSplitMinFold));
    std::vector<double> values(static_cast<size_t>(rows * columns));
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>((i * 7919) % 1009);  // many ties
    std::vector<double> sums(static_cast<size_t>(plan.output_count * split.count));
    std::vector<Extremum<double>> best(sums.size());
    for (int64_t piece = 0; piece < column_tiles(plan.output_count) * split.count; ++piece) {
      int64_t tile = 0, begin = 0, end = 0;
      split.locate_piece(piece, plan.reduced_count, tile, begin, end);
      for (int x = 0; x < kColumnWidth; ++x) {
        const int64_t output = tile * kColumnWidth + x;
        if (output >= plan.output_count) continue;
        int64_t base = 0, offsets[kMaxReduceOutputs];
        plan.locate_output(output, base, offsets);
        double sum = 0;
        Extremum<double> top{0.0, -1};
        for (int y = 0; y < kColumnSlices; ++y) {  // the slices, combined in order
          double slice_sum = 0;
          Extremum<double> slice_top{0.0, -1};
          for (int64_t r = begin + y; r < end; r += kColumnSlices) {
            const double v = values[static_cast<size_t>(base + plan.reduced_offset(r))];
            slice_sum += v;
            slice_top = combine_extremum<true>(slice_top, Extremum<double>{v, r});
          }
          sum += slice_sum;
          top = combine_extremum<true>(top, slice_top);
        }
        const size_t slot = static_cast<size_t>(output * split.count + piece % split.count);
        sums[slot] = sum;
        best[slot] = top;
      }
    }
    for (int64_t column = 0; column < columns; ++column) {
      const auto partial = [&](int64_t range) { return static_cast<size_t>(column * split.count + range); };
      const double total = simulate_group(
          reduce_group_size(split.count), split.count, 0.0,
          [&](double acc, int64_t range) { return acc + sums[partial(range)]; }, [](double a, double b) { return a + b; });
      const Extremum<double> top = simulate_group(
          reduce_group_size(split.count), split.count, Extremum<double>{0.0, -1},
          [&](const Extremum<double>& acc, int64_t range) { return combine_extremum<true>(acc, best[partial(range)]); },
          combine_extremum<true, double>);
      double expected_sum = 0;
      int64_t expected_index = 0;
      for (int64_t row = 0; row < rows; ++row) {
        const double v = values[static_cast<size_t>(row * columns + column)];
        expected_sum += v;
        if (v > values[static_cast<size_t>(expected_index * columns + column)]) expected_index = row;
      }
      CAPTURE(column);
      CHECK(total == expected_sum);  // integers: exact in any order
      CHECK(top.index == expected_index);
    }
  }
}

TEST_CASE("reduce_math: Welford's parallel combine matches the two-pass variance") {
  for (int64_t count : {1, 2, 31, 100, 1000, 5000}) {
    const std::vector<double> values = test_values(count, 1e6);  // a large offset
    double mean = 0;
    for (double v : values) mean += v;
    mean /= static_cast<double>(count);
    double squares = 0;
    for (double v : values) squares += (v - mean) * (v - mean);
    for (int group_size : {1, 32, 64, 512}) {
      const Welford result = simulate_group<Welford>(
          group_size, count, Welford{0, 0.0, 0.0},
          [&](Welford acc, int64_t r) { return welford_fold(acc, values[static_cast<size_t>(r)]); }, welford_combine);
      CAPTURE(count);
      CAPTURE(group_size);
      CHECK(result.count == count);
      CHECK(result.mean == doctest::Approx(mean).epsilon(1e-14));
      CHECK(result.squares == doctest::Approx(squares).epsilon(1e-9));
    }
  }
}

TEST_CASE("reduce_math: Welford's combine treats an empty state as the identity") {
  const Welford empty{0, 0.0, 0.0};
  const Welford two = welford_fold(welford_fold(empty, 1.0), 3.0);
  CHECK(two.count == 2);
  CHECK(two.mean == 2.0);
  CHECK(two.squares == 2.0);
  const Welford left = welford_combine(empty, two), right = welford_combine(two, empty);
  CHECK(left.count == 2);
  CHECK(left.mean == 2.0);
  CHECK(left.squares == 2.0);
  CHECK(right.squares == 2.0);
  CHECK(welford_combine(empty, empty).count == 0);
  // {1, 3} and {5}: mean 3, squares 4 + 0 + 4.
  const Welford all = welford_combine(two, welford_fold(empty, 5.0));
  CHECK(all.count == 3);
  CHECK(all.mean == doctest::Approx(3.0));
  CHECK(all.squares == doctest::Approx(8.0));
}

TEST_CASE("reduce_math: extremum combines pick NaN first, then the lowest position among ties") {
  using E = Extremum<float>;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(combine_extremum<true>(E{1.f, 3}, E{2.f, 5}).index == 5);
  CHECK(combine_extremum<false>(E{1.f, 3}, E{2.f, 5}).index == 3);
  CHECK(combine_extremum<true>(E{2.f, 5}, E{2.f, 3}).index == 3);  // ties: lowest position, either order
  CHECK(combine_extremum<true>(E{2.f, 3}, E{2.f, 5}).index == 3);
  CHECK(combine_extremum<true>(E{nan, 7}, E{2.f, 3}).index == 7);
  CHECK(combine_extremum<false>(E{2.f, 3}, E{nan, 7}).index == 7);
  CHECK(combine_extremum<true>(E{nan, 7}, E{nan, 4}).index == 4);
  CHECK(combine_extremum<true>(E{0.f, -1}, E{-5.f, 9}).index == 9);  // an empty state is the identity
  CHECK(combine_extremum<true>(E{-5.f, 9}, E{0.f, -1}).index == 9);
  // -0 and +0 are equal: the first one is kept, sign included (as the CPU's fold).
  const E zero = combine_extremum<true>(E{0.f, 2}, E{-0.f, 1});
  CHECK(zero.index == 1);
  CHECK(std::signbit(zero.value));
  CHECK(combine_extremum<true>(Extremum<bool>{true, 4}, Extremum<bool>{true, 2}).index == 2);
  CHECK(combine_extremum<false>(Extremum<int64_t>{-3, 4}, Extremum<int64_t>{7, 2}).index == 4);
}

TEST_CASE("reduce_math: a group's argmax is the sequential fold's, ties and NaNs included") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t count : {5, 40, 300, 3000}) {
    for (int variant = 0; variant < 3; ++variant) {
      std::vector<float> values;
      for (int64_t i = 0; i < count; ++i) values.push_back(static_cast<float>((i * 37) % 11));  // many ties
      if (variant == 1) values[static_cast<size_t>(count * 2 / 3)] = nan;
      if (variant == 2) values[static_cast<size_t>(count / 2)] = values[static_cast<size_t>(count - 1)] = nan;
      for (bool is_max : {true, false}) {
        // The CPU's fold: strictly better replaces, NaN beats numbers, the first NaN stays.
        int64_t expected = 0;
        for (int64_t i = 1; i < count; ++i) {
          const float v = values[static_cast<size_t>(i)], best = values[static_cast<size_t>(expected)];
          if (std::isnan(best)) continue;
          if (std::isnan(v) || (is_max ? v > best : v < best)) expected = i;
        }
        auto combine = [is_max](const Extremum<float>& a, const Extremum<float>& b) {
          return is_max ? combine_extremum<true>(a, b) : combine_extremum<false>(a, b);
        };
        for (int group_size : {1, 32, 128, 512}) {
          const Extremum<float> result = simulate_group<Extremum<float>>(
              group_size, count, Extremum<float>{0.f, -1},
              [&](const Extremum<float>& acc, int64_t r) {
                return combine(acc, Extremum<float>{values[static_cast<size_t>(r)], r});
              },
              combine);
          CAPTURE(count);
          CAPTURE(variant);
          CAPTURE(group_size);
          CHECK(result.index == expected);
        }
      }
    }
  }
}

TEST_CASE("reduce_math: logsumexp states combine like one sequential fold") {
  for (int64_t count : {1, 50, 2000}) {
    const std::vector<double> values = test_values(count, 500.0);  // exp would overflow float
    double max = -INFINITY;
    for (double v : values) max = std::max(max, v);
    double sum = 0;
    for (double v : values) sum += std::exp(v - max);
    for (int group_size : {1, 32, 256}) {
      const LogSumExp<double> state = simulate_group<LogSumExp<double>>(
          group_size, count, LogSumExp<double>{-INFINITY, 0.0},
          [&](LogSumExp<double> acc, int64_t r) { return log_sum_exp_fold(acc, values[static_cast<size_t>(r)]); },
          log_sum_exp_combine<double>);
      CHECK(log_sum_exp_result(state) == doctest::Approx(max + std::log(sum)).epsilon(1e-13));
    }
  }
}

TEST_CASE("reduce_math: logsumexp's infinities, NaN and empty states") {
  using L = LogSumExp<float>;
  const float inf = INFINITY;
  const L empty{-inf, 0.f};
  CHECK(log_sum_exp_result(empty) == -inf);
  const L minus_inf = log_sum_exp_fold(log_sum_exp_fold(empty, -inf), -inf);
  CHECK(log_sum_exp_result(log_sum_exp_combine(minus_inf, empty)) == -inf);
  CHECK(log_sum_exp_result(log_sum_exp_combine(empty, minus_inf)) == -inf);
  const L plus_inf = log_sum_exp_fold(empty, inf);
  const L finite = log_sum_exp_fold(empty, 3.f);
  CHECK(log_sum_exp_result(log_sum_exp_combine(finite, plus_inf)) == inf);
  CHECK(log_sum_exp_result(log_sum_exp_combine(plus_inf, finite)) == inf);
  CHECK(log_sum_exp_result(log_sum_exp_combine(plus_inf, plus_inf)) == inf);
  const L with_nan = log_sum_exp_fold(finite, std::numeric_limits<float>::quiet_NaN());
  CHECK(std::isnan(log_sum_exp_result(log_sum_exp_combine(with_nan, finite))));
  CHECK(std::isnan(log_sum_exp_result(log_sum_exp_combine(finite, with_nan))));
  // log(e^0 + e^0) = log 2, whichever side holds which.
  CHECK(log_sum_exp_result(log_sum_exp_combine(log_sum_exp_fold(empty, 0.f), log_sum_exp_fold(empty, 0.f))) ==
        doctest::Approx(std::log(2.0)));
}

TEST_CASE("reduce_math: norms fold and combine like the CPU's, NaN propagating through max and min") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double two = norm_identity(NormKind::two);
  for (double v : {3.0, -4.0}) two = norm_fold(NormKind::two, 2.0, two, v);
  CHECK(norm_result(NormKind::two, 2.0, two) == doctest::Approx(5.0));
  double zero = norm_identity(NormKind::zero);
  for (double v : {0.0, -1.0, 2.0, 0.0}) zero = norm_fold(NormKind::zero, 0.0, zero, v);
  CHECK(norm_result(NormKind::zero, 0.0, zero) == 2.0);
  const double one = norm_fold(NormKind::general, 1.0, norm_fold(NormKind::general, 1.0, 0.0, -2.0), 3.0);
  CHECK(norm_result(NormKind::general, 1.0, one) == doctest::Approx(5.0));
  CHECK(norm_combine(NormKind::infinity, 2.0, 5.0) == 5.0);
  CHECK(std::isnan(norm_combine(NormKind::infinity, nan, 5.0)));
  CHECK(std::isnan(norm_combine(NormKind::infinity, 5.0, nan)));
  CHECK(norm_combine(NormKind::negative_infinity, norm_identity(NormKind::negative_infinity), 2.0) == 2.0);
  CHECK(std::isnan(norm_combine(NormKind::negative_infinity, 2.0, nan)));
  CHECK(norm_fold(NormKind::negative_infinity, -INFINITY, 7.0, -3.0) == 3.0);
}
