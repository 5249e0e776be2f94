// Kernel helpers of ops/elementwise.cpp seen through the ops that use them: partial overlap
// between what an in-place op writes and what it reads. See Note [Overlapping in-place ops].
#include <doctest/doctest.h>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;

namespace {
Tensor square() { return arange(4, kFloat32).view({2, 2}); }
constexpr const char* kOverlap = "some elements of the input tensor and the written-to tensor refer to a single";
}  // namespace

TEST_CASE("overlap: in-place ops whose input partially overlaps self throw") {
  Tensor a = square();
  expect_error<Error>([&] { a.add_(a.t()); }, "[add_]", {kOverlap, "clone()"});
  expect_error<Error>([&] { a.copy_(a.t()); }, "[copy_]", {kOverlap});
  Tensor x = arange(5, kFloat32);
  expect_error<Error>([&] { x.slice(0, 1).mul_(x.slice(0, 0, -1)); }, "[mul_]", {kOverlap});
  expect_error<Error>([&] { a.sub_(a.select(0, 0)); }, "[sub_]", {kOverlap});  // broadcast row of self
  expect_error<Error>([&] { a.div_(a.select(1, 1).unsqueeze(1)); }, "[div_]", {kOverlap});
  CHECK(allclose(a, square()));  // nothing was written
  CHECK(allclose(x, arange(5, kFloat32)));
}

TEST_CASE("overlap: identical geometry and disjoint regions are fine") {
  Tensor a = square();
  a.add_(a);
  CHECK(allclose(a, square() * 2));
  a.mul_(a.view({2, 2}));  // another tensor, same geometry
  CHECK(allclose(a, square() * square() * 4));
  Tensor x = arange(4, kFloat32);
  x.slice(0, 2).copy_(x.slice(0, 0, 2));  // disjoint halves of one storage
  CHECK(allclose(x, tensor({0.0f, 1.0f, 0.0f, 1.0f})));
  Tensor m = empty({2, 2}, TensorOptions().device(kMeta));
  expect_error<Error>([&] { m.add_(m.t()); }, "[add_]", {kOverlap});
}

// Their element ranges intersect, their elements do not (torch_diff's "transpose then in-place
// add_"): LibTorch runs these, and so does strata.
TEST_CASE("overlap: interleaved views that share no element are fine; shared elements are not") {
  Tensor y = arange(24, kFloat32).view({2, 3, 4});
  y.select(1, 1).add_(y.select(1, 0));
  Tensor expected = arange(24, kFloat32).view({2, 3, 4}).clone();
  expected.select(1, 1).add_(expected.select(1, 0).clone());
  CHECK(equal(y, expected));
  Tensor x = arange(8, kFloat32);
  x.slice(0, 0, 8, 2).mul_(x.slice(0, 1, 8, 2));  // even elements times odd ones
  CHECK(equal(x, tensor({0.0f, 1.0f, 6.0f, 3.0f, 20.0f, 5.0f, 42.0f, 7.0f})));
  Tensor z = arange(8, kFloat32);
  expect_error<Error>([&] { z.slice(0, 0, 8, 2).add_(z.slice(0, 3, 7)); }, "[add_]", {kOverlap});  // shares z[4], z[6]
  CHECK(equal(z, arange(8, kFloat32)));
}

// Note [Transposing copies]: 4-byte copies whose source runs across the destination's rows move
// 4 x 4 blocks through registers; every shape (edges that are not multiples of 4 or of the 32
// block, batches of matrices, strided rows) must give the element-by-element result.
TEST_CASE("copies: transposing copies of 4-byte elements equal the element-by-element copy") {
  auto check = [](const Tensor& source) {
    CAPTURE(source.sizes());
    CAPTURE(source.strides());
    const Tensor copied = source.contiguous();
    REQUIRE(copied.is_contiguous());
    // The reference: each element read through its own index.
    const Tensor flat = copied.reshape({-1});
    const int64_t n = source.numel();
    std::vector<int64_t> index(static_cast<size_t>(source.dim()), 0);
    bool same = true;
    for (int64_t i = 0; i < n && same; ++i) {
      Tensor element = source;
      for (int64_t d = source.dim() - 1; d >= 0; --d) element = element.select(d, index[static_cast<size_t>(d)]);
      same = element.item<double>() == flat[i].item<double>();
      for (int64_t d = source.dim() - 1; d >= 0; --d) {
        if (++index[static_cast<size_t>(d)] < source.size(d)) break;
        index[static_cast<size_t>(d)] = 0;
      }
    }
    CHECK(same);
  };
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{8, 8}, {9, 13}, {37, 53}, {64, 33}, {4, 100}}) {
    check(arange(rows * cols, kFloat32).view({rows, cols}).t());
    check(arange(rows * cols, kInt32).view({rows, cols}).t());
  }
  check(arange(3 * 17 * 10, kFloat32).view({3, 17, 10}).transpose(1, 2));          // a batch of matrices
  check(arange(2 * 5 * 9 * 11, kFloat32).view({2, 5, 9, 11}).permute({0, 2, 3, 1}));  // NCHW viewed as NHWC
  check(arange(40 * 30, kFloat32).view({40, 30}).slice(1, 0, 30, 2).t());            // strided source rows
  check(arange(2 * 5 * 9 * 11, kFloat32).view({2, 5, 9, 11}).contiguous(MemoryFormat::ChannelsLast));
}
