// Tests for tensor/layout.cpp: the stride arithmetic of memory formats, on plain size and
// stride lists (the ops built on it are tested in tests/ops/test_memory_format.cpp).
#include <doctest/doctest.h>

#include <sstream>
#include <vector>

#include <strata/tensor/errors.h>
#include <strata/tensor/layout.h>

using namespace strata;
using detail::is_contiguous_as;
using detail::is_non_overlapping_and_dense;
using detail::strides_for;
using detail::strides_for_copy;
using detail::suggest_memory_format;

namespace {
std::vector<int64_t> vec(const DimVector& v) { return v.vec(); }
using V = std::vector<int64_t>;
}  // namespace

TEST_CASE("layout: names print as LibTorch prints them") {
  std::ostringstream text;
  text << kStrided << " " << kMkldnn << " " << kJagged << " " << MemoryFormat::Contiguous << " "
       << MemoryFormat::Preserve << " " << MemoryFormat::ChannelsLast3d;
  CHECK(text.str() == "Strided Mkldnn Jagged Contiguous Preserve ChannelsLast3d");
  CHECK(layout_name(static_cast<Layout>(40)) == "UnknownLayout");
}

TEST_CASE("layout: strides_for lays dims out in the format's order") {
  CHECK(vec(strides_for({2, 3, 4, 5}, MemoryFormat::Contiguous)) == V{60, 20, 5, 1});
  CHECK(vec(strides_for({2, 3, 4, 5}, MemoryFormat::ChannelsLast)) == V{60, 1, 15, 3});
  CHECK(vec(strides_for({2, 3, 4, 5, 6}, MemoryFormat::ChannelsLast3d)) == V{360, 1, 90, 18, 3});
  // Size-0 and size-1 dims do not scale the strides after them, as for contiguous tensors.
  CHECK(vec(strides_for({2, 0, 4, 5}, MemoryFormat::ChannelsLast)) == V{20, 1, 5, 1});
  CHECK(vec(strides_for({}, MemoryFormat::Contiguous)).empty());
}

TEST_CASE("layout: is_contiguous_as ignores size-1 dims and needs the format's rank") {
  CHECK(is_contiguous_as({2, 3, 4, 5}, {60, 1, 15, 3}, MemoryFormat::ChannelsLast));
  CHECK_FALSE(is_contiguous_as({2, 3, 4, 5}, {60, 20, 5, 1}, MemoryFormat::ChannelsLast));
  CHECK(is_contiguous_as({2, 3, 4, 5}, {60, 20, 5, 1}, MemoryFormat::Contiguous));
  CHECK(is_contiguous_as({2, 3, 1, 1}, {3, 1, 99, 7}, MemoryFormat::ChannelsLast));  // 1x1 images
  CHECK(is_contiguous_as({2, 3, 1, 1}, {3, 1, 99, 7}, MemoryFormat::Contiguous));
  CHECK_FALSE(is_contiguous_as({3, 4}, {4, 1}, MemoryFormat::ChannelsLast));
  CHECK(is_contiguous_as({2, 0, 4, 5}, {1, 1, 1, 1}, MemoryFormat::ChannelsLast));  // no elements
}

TEST_CASE("layout: is_non_overlapping_and_dense accepts any order of dense dims") {
  CHECK(is_non_overlapping_and_dense({3, 4}, {4, 1}));
  CHECK(is_non_overlapping_and_dense({4, 3}, {1, 4}));          // a transpose
  CHECK(is_non_overlapping_and_dense({2, 3, 4, 5}, {60, 1, 15, 3}));
  CHECK(is_non_overlapping_and_dense({3, 1, 4}, {4, 100, 1}));  // size-1 strides are free
  CHECK_FALSE(is_non_overlapping_and_dense({3, 2}, {4, 1}));   // a slice: gaps
  CHECK_FALSE(is_non_overlapping_and_dense({3, 4}, {0, 1}));   // an expand: shared locations
  CHECK_FALSE(is_non_overlapping_and_dense({2, 2}, {1, 1}));   // overlapping windows
  CHECK(is_non_overlapping_and_dense({}, {}));
  CHECK(is_non_overlapping_and_dense({0, 3}, {0, 0}));
}

TEST_CASE("layout: suggest_memory_format and strides_for_copy") {
  CHECK(suggest_memory_format({2, 3, 4, 5}, {60, 1, 15, 3}) == MemoryFormat::ChannelsLast);
  CHECK(suggest_memory_format({2, 3, 4, 5}, {60, 20, 5, 1}) == MemoryFormat::Contiguous);
  CHECK(suggest_memory_format({2, 3, 4, 5, 6}, {360, 1, 90, 18, 3}) == MemoryFormat::ChannelsLast3d);
  CHECK(suggest_memory_format({4, 1, 1, 1}, {1, 1, 1, 1}) == MemoryFormat::Contiguous);  // ambiguous
  CHECK(suggest_memory_format({2, 3, 4, 5}, {60, 0, 15, 3}) == MemoryFormat::Contiguous);  // expanded channels
  CHECK(suggest_memory_format({3, 4}, {1, 3}) == MemoryFormat::Contiguous);
  // A channels-last slice (every other column) is not dense but keeps the channels-last order.
  CHECK(suggest_memory_format({2, 3, 4, 2}, {60, 1, 15, 6}) == MemoryFormat::ChannelsLast);

  CHECK(vec(strides_for_copy({4, 3}, {1, 4}, MemoryFormat::Preserve)) == V{1, 4});
  CHECK(vec(strides_for_copy({4, 3}, {1, 4}, MemoryFormat::Contiguous)) == V{3, 1});
  CHECK(vec(strides_for_copy({3, 2}, {4, 1}, MemoryFormat::Preserve)) == V{2, 1});
  CHECK(vec(strides_for_copy({2, 3, 4, 2}, {60, 1, 15, 6}, MemoryFormat::Preserve)) == V{24, 1, 6, 3});
}

TEST_CASE("layout: formats are checked with the op's name") {
  CHECK_NOTHROW(detail::check_memory_format(MemoryFormat::ChannelsLast, 4, "op"));
  CHECK_THROWS_WITH_AS(detail::check_memory_format(MemoryFormat::ChannelsLast, 3, "op"),
                       "[op] memory format ChannelsLast needs a 4-d tensor, got 3 dims", ValueError);
  CHECK_THROWS_AS(detail::check_memory_format(MemoryFormat::Preserve, 4, "op"), ValueError);
  CHECK_THROWS_AS(detail::check_memory_format(static_cast<MemoryFormat>(9), 4, "op"), ValueError);
  CHECK_NOTHROW(detail::check_strided(kStrided, "op"));
  CHECK_THROWS_WITH_AS(detail::check_strided(kMkldnn, "op"),
                       "[op] layout Mkldnn is not supported: strata tensors are strided (kStrided)", ValueError);
}
