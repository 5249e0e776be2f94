// Tests for LibTorch's tensor-layout arguments: Layout and MemoryFormat (tensor/layout.h), the
// factories' ATen keyword arguments (Note [Factory arguments] in ops/shapes/creation.h),
// empty_strided, channels-last strides through empty/contiguous/clone/to, and the *_like
// functions' Preserve default (Note [Strides of *_like results] in ops/creation.cpp).
#include "op_test_util.h"

#include <strata/autograd/autograd.h>
#include <strata/dispatch/ivalue.h>
#include <strata/dispatch/library.h>
#include <strata/dispatch/schema.h>
#include <strata/tensor/random.h>

#include "../tensor/fake_cuda.h"

using namespace strata;
using strata::testing::check_meta_matches;
using strata::testing::expect_error;
using strata::testing::FakeCudaBackend;
using strata::testing::NoCudaBackend;

namespace {
// [2, 3, 4, 5] values 0..119, contiguous.
Tensor nchw() { return arange(120, kFloat32).reshape({2, 3, 4, 5}); }
// The same values laid out channels last: a permute of an NHWC tensor.
Tensor nhwc() { return nchw().permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}); }

std::vector<int64_t> strides_of(const Tensor& t) { return t.strides().vec(); }
}  // namespace

TEST_CASE("layout: Layout and MemoryFormat print, box as ints and unbox with range checks") {
  std::ostringstream text;
  text << kStrided << " " << kSparse << " " << MemoryFormat::ChannelsLast;
  CHECK(text.str() == "Strided Sparse ChannelsLast");
  CHECK(empty({2}).layout() == kStrided);
  CHECK(TensorOptions().layout() == kStrided);
  CHECK_FALSE(TensorOptions().has_layout());
  CHECK(TensorOptions().layout(kStrided).layout_opt() == kStrided);

  const IValue strided(kStrided), channels_last(MemoryFormat::ChannelsLast);
  CHECK(strided.is_int());
  CHECK(strided.to_int() == 0);
  CHECK(channels_last.to_int() == 2);
  CHECK(strided.to_layout() == kStrided);
  CHECK(channels_last.to_memory_format() == MemoryFormat::ChannelsLast);
  expect_error<ValueError>([] { (void)IValue(int64_t{42}).to_layout(); }, "expected a Layout, got 42");
  expect_error<ValueError>([] { (void)IValue(int64_t{-1}).to_memory_format(); }, "expected a MemoryFormat, got -1");
  expect_error<TypeError>([] { (void)IValue(1.5).to_layout(); }, "", {"Layout"});
}

TEST_CASE("layout: factory schemas are ATen's, so a kernel with ATen's signature replaces a built-in one") {
  CHECK(find_op("strata::zeros").schema() ==
        parse_schema("strata::zeros(int[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
                     "bool? pin_memory=None) -> Tensor"));
  CHECK(find_op("strata::empty.memory_format").schema() ==
        parse_schema("strata::empty.memory_format(int[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
                     "bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor"));
  CHECK(find_op("strata::clone").schema() ==
        parse_schema("strata::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor"));
  CHECK(
      find_op("strata::contiguous").schema() ==
      parse_schema("strata::contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)"));
  CHECK(find_op("strata::_to_copy").schema() ==
        parse_schema("strata::_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
                     "Device? device=None, bool? pin_memory=None, bool non_blocking=False, "
                     "MemoryFormat? memory_format=None) -> Tensor"));

  std::optional<Layout> seen_layout;
  std::optional<bool> seen_pin;
  {
    Library cpu("strata", Library::IMPL, DispatchKey::CPU);
    cpu.impl("zeros", [&](IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Layout> layout,
                          std::optional<Device>, std::optional<bool> pin_memory) {
      seen_layout = layout;
      seen_pin = pin_memory;
      return full(size, 7, TensorOptions().dtype(dtype.value_or(kFloat32)));
    });
    CHECK(equal(zeros({2}, TensorOptions().layout(kStrided).pinned_memory(false)), full({2}, 7.0f)));
    CHECK(seen_layout == kStrided);
    CHECK(seen_pin == false);
    // A boxed call names the layout with its int, as PyTorch boxes it; unset ones are None.
    Stack stack{IValue(std::vector<int64_t>{3}), IValue(kInt64), IValue(kStrided)};
    find_op("strata::zeros").call_boxed(stack);
    CHECK(equal(stack.at(0).to_tensor(), full({3}, 7, kInt64)));
    CHECK(seen_pin == std::nullopt);
  }
  CHECK(equal(zeros({2}), full({2}, 0.0f)));  // the built-in kernel is back
}

TEST_CASE("layout: every factory refuses a layout other than strided, naming itself") {
  const TensorOptions sparse = TensorOptions().layout(kSparse);
  expect_error<ValueError>([&] { (void)zeros({2}, sparse); }, "[zeros] layout Sparse is not supported");
  expect_error<ValueError>([&] { (void)empty({2}, sparse); }, "[empty] layout Sparse");
  expect_error<ValueError>([&] { (void)full({2}, 1, TensorOptions().layout(kSparseCsr)); }, "[full] layout SparseCsr");
  expect_error<ValueError>([&] { (void)arange(3, sparse); }, "[arange] layout Sparse");
  expect_error<ValueError>([&] { (void)eye(3, sparse); }, "[eye] layout Sparse");
  expect_error<ValueError>([&] { (void)randint(5, {2}, sparse); }, "[randint] layout Sparse");
  expect_error<ValueError>([&] { (void)rand({2}, sparse.device(kMeta)); }, "[rand] layout Sparse");
  expect_error<ValueError>([&] { (void)ones({2}).to(sparse); }, "[to] layout Sparse");
}

TEST_CASE("layout: pin_memory=True puts factory results and copies in pinned host memory") {
  SUBCASE("without a CUDA backend the factory says why") {
    NoCudaBackend none;
    expect_error<Error>([] { (void)zeros({2}, TensorOptions().pinned_memory(true)); },
                        "[cuda] no CUDA backend is loaded (zeros needs one)");
    CHECK_FALSE(zeros({2}, TensorOptions().pinned_memory(false)).is_pinned());
  }
  SUBCASE("with a backend") {
    FakeCudaBackend backend;
    const TensorOptions pinned = TensorOptions().pinned_memory(true);
    const Tensor z = zeros({2, 3}, pinned);
    CHECK(z.is_pinned());
    CHECK(equal(z, zeros({2, 3})));
    CHECK(ones({4}, pinned.dtype(kInt64)).is_pinned());
    CHECK(equal(arange(5, pinned), arange(5)));
    CHECK(arange(5, pinned).is_pinned());
    CHECK(empty({2, 3, 4, 5}, pinned.memory_format(MemoryFormat::ChannelsLast)).is_pinned());
    CHECK(empty_strided({2, 3}, {1, 2}, pinned).is_pinned());
    CHECK_FALSE(zeros({2}).is_pinned());
    // to(): a copy when the source is not pinned, itself when it is.
    const Tensor x = arange(6, kFloat32).reshape({2, 3});
    const Tensor moved = x.to(pinned);
    CHECK(moved.is_pinned());
    CHECK(equal(moved, x));
    CHECK(moved.to(pinned).is_same(moved));
    CHECK(x.to(pinned.dtype(kFloat64)).is_pinned());
    expect_error<ValueError>([&] { (void)x.to(pinned.device(Device(kCUDA, 0))); }, "[_to_copy] only CPU tensors");
    expect_error<ValueError>([&] { (void)zeros({2}, pinned.device(kMeta)); }, "[zeros] only CPU tensors");
  }
}

TEST_CASE("layout: empty and empty_strided lay out their results as asked") {
  const Tensor cl = empty({2, 3, 4, 5}, memory_format(MemoryFormat::ChannelsLast));
  CHECK(strides_of(cl) == std::vector<int64_t>{60, 1, 15, 3});
  CHECK(cl.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK_FALSE(cl.is_contiguous());
  CHECK(cl.suggest_memory_format() == MemoryFormat::ChannelsLast);
  CHECK(cl.is_non_overlapping_and_dense());
  const Tensor cl3 = empty({2, 3, 4, 5, 6}, memory_format(MemoryFormat::ChannelsLast3d));
  CHECK(strides_of(cl3) == std::vector<int64_t>{360, 1, 90, 18, 3});
  CHECK(cl3.suggest_memory_format() == MemoryFormat::ChannelsLast3d);
  CHECK(empty({2, 3}, memory_format(MemoryFormat::Contiguous)).is_contiguous());
  check_meta_matches(empty({2, 3, 4, 5}, TensorOptions(kMeta).memory_format(MemoryFormat::ChannelsLast)), cl);
  expect_error<ValueError>(
      [] {
        (void)empty({2, 3, 4}, memory_format(MemoryFormat::ChannelsLast));
      },
      "[empty] memory format ChannelsLast needs a 4-d tensor, got 3 dims");
  expect_error<ValueError>([] { (void)empty({2}, memory_format(MemoryFormat::Preserve)); },
                           "[empty] memory format Preserve");

  const Tensor strided = empty_strided({2, 3}, {1, 2}, kFloat64);
  CHECK(strides_of(strided) == std::vector<int64_t>{1, 2});
  CHECK(strided.dtype() == kFloat64);
  const Tensor overlapping = empty_strided({4, 3}, {0, 1});
  CHECK(strides_of(overlapping) == std::vector<int64_t>{0, 1});
  CHECK_FALSE(overlapping.is_non_overlapping_and_dense());
  CHECK(empty_strided({0, 3}, {1, 7}).numel() == 0);
  check_meta_matches(empty_strided({2, 3}, {1, 2}, kMeta), strided.to(kFloat32));
  expect_error<ValueError>([] { (void)empty_strided({2, 3}, {1}); }, "[empty_strided] got 1 strides for 2 sizes");
  expect_error<ValueError>(
      [] {
        (void)empty_strided({2, 3}, {3, -1});
      },
      "[empty_strided] strides must be non-negative");
  expect_error<ValueError>(
      [] {
        (void)empty_strided({1 << 30, 1 << 30}, {int64_t{1} << 40, 1});
      },
      "[empty_strided]", {"more bytes than int64"});
}

TEST_CASE("layout: is_contiguous and suggest_memory_format read the strides as LibTorch does") {
  const Tensor x = nchw(), y = nhwc();
  CHECK(equal(x, y));
  CHECK(x.is_contiguous(MemoryFormat::Contiguous));
  CHECK_FALSE(x.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(y.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(x.suggest_memory_format() == MemoryFormat::Contiguous);
  CHECK(y.suggest_memory_format() == MemoryFormat::ChannelsLast);
  // Another rank is simply not channels last; Preserve is not a layout.
  CHECK_FALSE(arange(6).reshape({2, 3}).is_contiguous(MemoryFormat::ChannelsLast));
  expect_error<ValueError>([&] { (void)x.is_contiguous(MemoryFormat::Preserve); }, "[is_contiguous]");
  // One channel, or 1x1 images: both layouts at once; N x 1 x 1 x 1 reads as contiguous.
  const Tensor one_channel = empty({2, 1, 4, 5});
  CHECK(one_channel.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(one_channel.suggest_memory_format() == MemoryFormat::Contiguous);
  CHECK(empty({4, 1, 1, 1}).suggest_memory_format() == MemoryFormat::Contiguous);
  CHECK(empty({4, 3, 1, 1}).is_contiguous(MemoryFormat::ChannelsLast));
  // A slice of a channels-last tensor is not dense but still channels-last ordered.
  const Tensor sliced = y.narrow(3, 0, 2);
  CHECK_FALSE(sliced.is_non_overlapping_and_dense());
  CHECK(sliced.suggest_memory_format() == MemoryFormat::ChannelsLast);
}

TEST_CASE("layout: contiguous(memory_format) converts, and returns a tensor already in the format") {
  const Tensor x = nchw();
  const Tensor cl = x.contiguous(MemoryFormat::ChannelsLast);
  CHECK(equal(cl, x));
  CHECK(strides_of(cl) == std::vector<int64_t>{60, 1, 15, 3});
  CHECK(cl.contiguous(MemoryFormat::ChannelsLast).is_same(cl));
  CHECK(x.contiguous().is_same(x));
  const Tensor back = contiguous(cl);
  CHECK(back.is_contiguous());
  CHECK(equal(back, x));
  expect_error<ValueError>(
      [&] {
        (void)x.reshape({8, 15}).contiguous(MemoryFormat::ChannelsLast);
      },
      "[contiguous] memory format ChannelsLast needs a 4-d tensor, got 2 dims");
  expect_error<ValueError>([&] { (void)x.contiguous(MemoryFormat::Preserve); }, "[contiguous] memory format Preserve");
  check_meta_matches(x.to(kMeta).contiguous(MemoryFormat::ChannelsLast), cl);

  // The gradient flows back in the input's values whatever the strides.
  const Tensor leaf = x.detach().requires_grad_();
  const Tensor weight = arange(120, kFloat32).reshape({2, 3, 4, 5}) * -0.5 + 7.0;
  (leaf.contiguous(MemoryFormat::ChannelsLast) * weight).sum().backward();
  CHECK(equal(leaf.grad(), weight));
}

TEST_CASE("layout: clone keeps dense strides by default (Preserve) and lays out a named format") {
  const Tensor x = arange(12, kFloat32).reshape({3, 4});
  const Tensor transposed = x.t();
  const Tensor kept = transposed.clone();
  CHECK(strides_of(kept) == strides_of(transposed));
  CHECK_FALSE(kept.impl()->storage().get() == transposed.impl()->storage().get());
  CHECK(equal(kept, transposed));
  const Tensor dense = transposed.clone(MemoryFormat::Contiguous);
  CHECK(dense.is_contiguous());
  CHECK(equal(dense, transposed));
  // Not dense: a slice is copied contiguous, a slice of a channels-last tensor channels last.
  CHECK(x.narrow(1, 1, 2).clone().is_contiguous());
  CHECK(x.expand({2, 3, 4}).clone().is_contiguous());
  const Tensor sliced = nhwc().narrow(3, 1, 3);
  const Tensor sliced_copy = sliced.clone();
  CHECK(sliced_copy.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(equal(sliced_copy, sliced));
  CHECK(nchw().clone(MemoryFormat::ChannelsLast).is_contiguous(MemoryFormat::ChannelsLast));
  check_meta_matches(transposed.to(kMeta).clone(), kept);
  expect_error<ValueError>([&] { (void)x.clone(MemoryFormat::ChannelsLast3d); },
                           "[clone] memory format ChannelsLast3d");

  const Tensor leaf = x.detach().requires_grad_();
  (leaf.t().clone() * 3.0).sum().backward();
  CHECK(equal(leaf.grad(), full({3, 4}, 3.0f)));
}

TEST_CASE("layout: to() preserves dense strides, as LibTorch's does, and takes a memory format") {
  const Tensor transposed = arange(12, kFloat32).reshape({3, 4}).t();
  const Tensor wider = transposed.to(kFloat64);
  CHECK(strides_of(wider) == strides_of(transposed));
  CHECK(equal(wider, transposed.to(kFloat64, false, false, MemoryFormat::Contiguous)));
  CHECK(transposed.to(kFloat64, false, false, MemoryFormat::Contiguous).is_contiguous());
  // Nothing to change: the tensor itself, unless the named format differs.
  CHECK(transposed.to(kFloat32).is_same(transposed));
  CHECK(transposed.to(TensorOptions(kFloat32), false, false, MemoryFormat::Preserve).is_same(transposed));
  const Tensor x = nchw();
  const Tensor cl = x.to(TensorOptions().memory_format(MemoryFormat::ChannelsLast));
  CHECK(cl.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(equal(cl, x));
  CHECK(cl.to(TensorOptions().memory_format(MemoryFormat::ChannelsLast)).is_same(cl));
  expect_error<ValueError>(
      [&] {
        (void)x.to(TensorOptions().memory_format(MemoryFormat::ChannelsLast), false, false, MemoryFormat::Contiguous);
      },
      "[to] memory_format is set both in the options and as an argument");
  expect_error<ValueError>([&] { (void)x.to(kFloat64, false, false, MemoryFormat::ChannelsLast3d); },
                           "[_to_copy] memory format ChannelsLast3d needs a 5-d tensor");

  SUBCASE("across devices the strides are kept too") {
    FakeCudaBackend backend;
    const Tensor on_device = transposed.to(Device(kCUDA, 0));
    CHECK(strides_of(on_device) == strides_of(transposed));
    // Laid out alike on both sides: the block's bytes move once, with no staging copy.
    REQUIRE(backend.hooks.copies.size() == 1);
    CHECK(backend.hooks.copies[0].nbytes == 12 * sizeof(float));
    const Tensor back = on_device.cpu();
    CHECK(backend.hooks.copies.size() == 2);
    CHECK(backend.hooks.memory_stats(0).peak_allocated_bytes == 12 * sizeof(float));  // no device temporary
    CHECK(equal(back, transposed));
    CHECK(strides_of(back) == strides_of(transposed));
    // Into a destination laid out otherwise, the values still land in place.
    const Tensor dense_dst = zeros({4, 3});
    dense_dst.copy_(on_device);
    CHECK(equal(dense_dst, transposed));
    const Tensor channels_last = x.contiguous(MemoryFormat::ChannelsLast).to(Device(kCUDA, 1));
    CHECK(channels_last.is_contiguous(MemoryFormat::ChannelsLast));
    CHECK(equal(channels_last.to(kCPU, kFloat64), x.to(kFloat64)));
  }
}

TEST_CASE("layout: the *_like functions keep dense strides unless told otherwise") {
  const Tensor transposed = arange(12, kFloat32).reshape({3, 4}).t();
  CHECK(strides_of(empty_like(transposed)) == strides_of(transposed));
  const Tensor z = zeros_like(transposed);
  CHECK(strides_of(z) == strides_of(transposed));
  CHECK(equal(z, zeros({4, 3})));
  const Tensor o = ones_like(transposed, kInt64);
  CHECK(strides_of(o) == strides_of(transposed));
  CHECK(equal(o, ones({4, 3}, kInt64)));
  const Tensor f = full_like(transposed, 2.5);
  CHECK(strides_of(f) == strides_of(transposed));
  CHECK(equal(f, full({4, 3}, 2.5f)));
  expect_error<ValueError>([&] { (void)full_like(transposed, 300, kInt8); }, "[full]", {"Int8"});
  // A seed draws the same values in either layout, in the elements' logical order.
  manual_seed(11);
  const Tensor r = rand_like(transposed);
  manual_seed(11);
  const Tensor r_dense = rand_like(transposed, {}, MemoryFormat::Contiguous);
  CHECK(strides_of(r) == strides_of(transposed));
  CHECK(r_dense.is_contiguous());
  CHECK(equal(r, r_dense));
  manual_seed(12);
  const Tensor n = randn_like(nhwc());
  manual_seed(12);
  CHECK(equal(n, randn({2, 3, 4, 5})));
  CHECK(n.is_contiguous(MemoryFormat::ChannelsLast));

  CHECK(zeros_like(transposed, {}, MemoryFormat::Contiguous).is_contiguous());
  CHECK(empty_like(nchw(), memory_format(MemoryFormat::ChannelsLast)).is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(zeros_like(transposed.narrow(0, 0, 2)).is_contiguous());  // not dense: contiguous
  const Tensor grad_leaf = zeros_like(transposed, requires_grad());
  CHECK(grad_leaf.requires_grad());
  CHECK(grad_leaf.is_leaf());
  CHECK(strides_of(grad_leaf) == strides_of(transposed));
  expect_error<ValueError>(
      [&] { (void)empty_like(transposed, memory_format(MemoryFormat::Contiguous), MemoryFormat::Contiguous); },
      "[empty_like] memory_format is set both in the options and as an argument");
  expect_error<ValueError>([&] { (void)zeros_like(transposed, {}, MemoryFormat::ChannelsLast); },
                           "[zeros_like] memory format ChannelsLast needs a 4-d tensor");
}

TEST_CASE("layout: ops give the same values on channels-last inputs, forward and backward") {
  manual_seed(3);
  const Tensor x = randn({2, 3, 6, 6});
  const Tensor w = randn({4, 3, 3, 3});
  const Tensor b = randn({4});
  const Tensor x_cl = x.contiguous(MemoryFormat::ChannelsLast);
  CHECK(allclose(conv2d(x_cl, w, b, {1, 1}, {1, 1}), conv2d(x, w, b, {1, 1}, {1, 1}), 1e-5, 1e-5));
  CHECK(allclose(relu(x_cl) + x_cl * 2.0, relu(x) + x * 2.0));
  CHECK(allclose(x_cl.sum({1}), x.sum({1})));
  CHECK(allclose(max_pool2d(x_cl, {2, 2}), max_pool2d(x, {2, 2})));

  const Tensor leaf = x_cl.detach().requires_grad_();
  const Tensor plain = x.detach().requires_grad_();
  conv2d(leaf, w, b, {1, 1}, {1, 1}).pow(2).sum().backward();
  conv2d(plain, w, b, {1, 1}, {1, 1}).pow(2).sum().backward();
  CHECK(allclose(leaf.grad(), plain.grad(), 1e-4, 1e-4));
}
