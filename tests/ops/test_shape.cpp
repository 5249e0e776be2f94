// Tests for ops/shape.cpp: views (view, reshape, flatten, transpose, permute, expand, squeeze,
// unsqueeze, split_with_sizes, split, chunk), cat, stack, contiguous, clone, copy_, to, and
// Tensor::detach.
#include "op_test_util.h"
#include "../tensor/fake_cuda.h"

#include <sstream>

using namespace strata;
using strata::testing::check_gradcheck;
using strata::testing::check_meta_matches;
using strata::testing::check_values;
using strata::testing::expect_error;
using strata::testing::grad_input;
using strata::testing::values_of;

TEST_CASE("view: new sizes over the same storage, -1 inferred") {
  Tensor a = arange(6, kFloat32);
  Tensor v = a.view({2, 3});
  check_values(v, {2, 3}, kFloat32, {0, 1, 2, 3, 4, 5});
  CHECK(v.strides() == IntArrayRef{3, 1});
  CHECK(v.data_ptr() == a.data_ptr());
  CHECK(view(a, {3, -1}).sizes() == IntArrayRef{3, 2});
  CHECK(view(a, {-1}).sizes() == IntArrayRef{6});
  CHECK(full({}, 1.0f).view({1, 1}).sizes() == IntArrayRef{1, 1});
  v.add_(1);  // views share storage and the version counter
  check_values(a, {6}, kFloat32, {1, 2, 3, 4, 5, 6});
  CHECK(a.version() == v.version());
  CHECK(zeros({0, 4}).view({2, 0, 2}).sizes() == IntArrayRef{2, 0, 2});
  check_meta_matches(view(zeros({2, 3}, kMeta), {3, 2}), view(zeros({2, 3}), {3, 2}));
}

TEST_CASE("view: non-contiguous inputs follow PyTorch's stride rule") {
  Tensor t = arange(24, kInt64).view({2, 3, 4}).transpose(0, 1);  // [3, 2, 4], strides [4, 12, 1]
  Tensor split = t.view({3, 2, 2, 2});                          // splits the contiguous last dim
  CHECK(split.strides() == IntArrayRef{4, 12, 2, 1});
  check_values(split.view({3, 2, 4}), {3, 2, 4}, kInt64, values_of(t));
  expect_error<Error>([&] { (void)t.view({6, 4}); }, "[view] view size [6, 4] is not compatible", {"use reshape"});
  expect_error<ValueError>([] { (void)arange(6).view({4, 4}); }, "[view] shape [4, 4] is invalid for input of size 6");
  expect_error<ValueError>([] { (void)arange(6).view({-1, -1}); }, "[view] only one dimension can be inferred");
  expect_error<ValueError>([] { (void)arange(6).view({-2, 3}); }, "[view] invalid shape dimension -2");
  expect_error<ValueError>([] { (void)zeros({0}).view({0, -1}); }, "[view] cannot infer the -1 dimension");
}

TEST_CASE("reshape: a view when possible, else a copy") {
  Tensor a = arange(6, kFloat32);
  Tensor r = reshape(a, {3, 2});
  CHECK(r.data_ptr() == a.data_ptr());
  Tensor t = a.view({2, 3}).transpose(0, 1);
  Tensor copied = t.reshape({6});
  CHECK(copied.data_ptr() != a.data_ptr());
  check_values(copied, {6}, kFloat32, {0, 3, 1, 4, 2, 5});
  CHECK(t.reshape({-1, 2}).sizes() == IntArrayRef{3, 2});
  check_meta_matches(reshape(t.to(kMeta), {6}), copied);
  expect_error<ValueError>([&] { (void)t.reshape({4}); }, "[reshape] shape [4] is invalid for input of size 6");
}

TEST_CASE("transpose and permute: views with swapped geometry") {
  Tensor a = arange(6, kInt32).view({2, 3});
  Tensor t = transpose(a, 0, 1);
  CHECK(t.sizes() == IntArrayRef{3, 2});
  CHECK(t.strides() == IntArrayRef{1, 3});
  check_values(t, {3, 2}, kInt32, {0, 3, 1, 4, 2, 5});
  CHECK(a.transpose(-1, -2).strides() == IntArrayRef{1, 3});
  CHECK(full({}, 1).transpose(0, -1).dim() == 0);
  Tensor b = arange(24, kInt64).view({2, 3, 4});
  Tensor p = permute(b, {2, 0, 1});
  CHECK(p.sizes() == IntArrayRef{4, 2, 3});
  CHECK(p.strides() == IntArrayRef{1, 12, 4});
  CHECK(b.permute({-1, 0, 1}).strides() == IntArrayRef{1, 12, 4});
  CHECK(p.data_ptr() == b.data_ptr());
  check_meta_matches(permute(b.to(kMeta), {2, 0, 1}), p);
  expect_error<IndexError>([&] { (void)a.transpose(0, 2); }, "[transpose]");
  expect_error<ValueError>([&] { (void)b.permute({0, 1}); }, "[permute] number of dims don't match");
  expect_error<ValueError>([&] { (void)b.permute({0, 1, 1}); }, "[permute] dim 1 appears more than once");
  expect_error<IndexError>([&] { (void)b.permute({0, 1, 3}); }, "[permute]");
}

TEST_CASE("expand: size-1 and new leading dims get stride 0") {
  Tensor a = tensor(std::vector<float>{1, 2, 3}, {3, 1});
  Tensor e = a.expand({3, 4});
  CHECK(e.strides() == IntArrayRef{1, 0});
  check_values(e, {3, 4}, kFloat32, {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
  Tensor lead = expand(a, {2, -1, 2});
  CHECK(lead.sizes() == IntArrayRef{2, 3, 2});
  CHECK(lead.strides() == IntArrayRef{0, 1, 0});
  CHECK(full({}, 5.0f).expand({2, 2}).strides() == IntArrayRef{0, 0});
  CHECK(a.expand({0, 3, 1}).numel() == 0);
  check_meta_matches(a.to(kMeta).expand({3, 4}), e);
  expect_error<ValueError>([&] { (void)a.expand({2, 4}); },
                           "[expand] the expanded size of the tensor (2) must match the existing size (3)");
  expect_error<ValueError>([&] { (void)a.expand({4}); }, "[expand] the number of sizes provided (1)");
  expect_error<ValueError>([&] { (void)a.expand({-1, 3, 1}); }, "[expand] the expanded size -1 is not allowed");
}

TEST_CASE("contiguous and clone") {
  Tensor a = arange(6, kFloat64).view({2, 3});
  CHECK(a.contiguous().is_same(a));
  Tensor t = a.transpose(0, 1);
  Tensor c = t.contiguous();
  CHECK(c.is_contiguous());
  check_values(c, {3, 2}, kFloat64, {0, 3, 1, 4, 2, 5});
  Tensor copy = clone(a);
  CHECK(copy.data_ptr() != a.data_ptr());
  copy.add_(1);
  check_values(a, {2, 3}, kFloat64, {0, 1, 2, 3, 4, 5});
  check_values(t.clone(), {3, 2}, kFloat64, {0, 3, 1, 4, 2, 5});
  check_meta_matches(clone(a.to(kMeta)), copy);
  check_meta_matches(t.to(kMeta).contiguous(), c);
  Tensor big = arange(300 * 200, kInt32).view({300, 200}).transpose(0, 1).contiguous();  // parallel strided copy
  CHECK(big.data_ptr<int32_t>()[1] == 200);
  CHECK(big.data_ptr<int32_t>()[300 * 200 - 1] == 300 * 200 - 1);
}

TEST_CASE("copy_: broadcasting, dtype conversion and version bumps") {
  Tensor dst = zeros({2, 3}, kInt32);
  const uint32_t version = dst.version();
  dst.copy_(tensor({1.9f, -2.9f, 3.0f}));  // float -> int truncates toward zero
  check_values(dst, {2, 3}, kInt32, {1, -2, 3, 1, -2, 3});
  CHECK(dst.version() == version + 1);
  Tensor flags = zeros({3}, kBool);
  copy_(flags, tensor({0.0, 0.5, -2.0}, kFloat64));
  check_values(flags, {3}, kBool, {0, 1, 1});
  Tensor half = zeros({2}, kFloat16);
  half.copy_(tensor({65504.0, 1.0 / 3}, kFloat64));
  check_values(half, {2}, kFloat16, {65504, 0.333251953125});
  Tensor base = zeros({2, 3});
  base.transpose(0, 1).copy_(arange(6, kFloat32).view({3, 2}));  // strided destination
  check_values(base, {2, 3}, kFloat32, {0, 2, 4, 1, 3, 5});
  Tensor scalar = full({}, 7.0f);
  scalar.copy_(full({}, 1));
  check_values(scalar, {}, kFloat32, {1});
}

TEST_CASE("copy_: meta tensors and errors") {
  Tensor meta = zeros({2, 3}, kMeta);
  const uint32_t version = meta.version();
  CHECK(meta.copy_(ones({3})).is_meta());  // shape check only
  CHECK(meta.version() == version + 1);
  expect_error<Error>([&] { zeros({2, 3}).copy_(meta); }, "[copy_] cannot copy from a meta tensor to cpu");
  expect_error<ValueError>([] { zeros({2, 3}).copy_(zeros({2})); }, "[copy_] shapes [2, 3] and [2]");
  expect_error<ValueError>([] { zeros({3}).copy_(zeros({2, 3})); }, "[copy_] src of shape [2, 3] cannot be broadcast");
  expect_error<ValueError>([&] { meta.copy_(zeros({4}, kMeta)); }, "[copy_]");
  expect_error<Error>([] { zeros({1}).expand({4}).copy_(ones({4})); }, "[copy_] unsupported operation");
}

TEST_CASE("to: dtype and device conversion, self when nothing changes") {
  Tensor a = tensor({1.5f, -2.5f});
  CHECK(a.to(kFloat32).is_same(a));
  CHECK(a.to(a.options()).is_same(a));
  CHECK(a.cpu().is_same(a));
  Tensor copied = a.to(kFloat32, /*non_blocking=*/false, /*copy=*/true);
  CHECK_FALSE(copied.is_same(a));
  CHECK(copied.data_ptr() != a.data_ptr());
  check_values(a.to(kInt64), {2}, kInt64, {1, -2});
  check_values(a.to(kFloat64), {2}, kFloat64, {1.5, -2.5});
  check_values(a.view({2, 1}).expand({2, 2}).to(kFloat64), {2, 2}, kFloat64, {1.5, 1.5, -2.5, -2.5});
  Tensor meta = a.to(kMeta);
  CHECK(meta.is_meta());
  CHECK(meta.dtype() == kFloat32);
  CHECK(meta.to(kFloat16).dtype() == kFloat16);
  CHECK(to(a, TensorOptions(kInt32).device(kMeta)).dtype() == kInt32);
  expect_error<Error>([&] { (void)meta.to(kCPU); }, "[_to_copy] cannot copy from a meta tensor to cpu");
  expect_error<Error>([&] { (void)meta.cpu(); }, "[_to_copy]");
  {
    strata::testing::NoCudaBackend no_backend;  // as in a build without CUDA
    CHECK_THROWS_AS((void)a.cuda(), Error);
  }
  expect_error<Error>([&] { (void)a.to(TensorOptions(kFloat64).requires_grad(true)); },
                      "[to] to(options) doesn't support converting to a different requires_grad");
}

TEST_CASE("to: another tensor's dtype and device, or a device and a dtype") {
  Tensor a = arange(3, kInt32);
  Tensor other = zeros({1}, kFloat64);
  check_values(a.to(other), {3}, kFloat64, {0, 1, 2});
  CHECK(a.to(a).is_same(a));  // nothing to change: the same tensor
  CHECK_FALSE(a.to(a, /*non_blocking=*/false, /*copy=*/true).is_same(a));
  check_values(a.to(kCPU, kInt16), {3}, kInt16, {0, 1, 2});
  Tensor meta = a.to(Device(kMeta), kFloat16);
  CHECK(meta.is_meta());
  CHECK(meta.dtype() == kFloat16);
  CHECK(a.to(zeros({1}, kMeta)).is_meta());
}

TEST_CASE("to: floating values outside a narrow integer type wrap through int64, as in PyTorch") {
  const Tensor x = tensor({-1.0, 300.0, -129.0, 2.9, -2.9});
  check_values(x.to(kUInt8), {5}, kUInt8, {255, 44, 127, 2, 254});
  check_values(x.to(kInt8), {5}, kInt8, {-1, 44, 127, 2, -2});
  check_values(tensor({70000.5f, -32769.0f}).to(kInt16), {2}, kInt16, {4464, 32767});
  check_values(linspace(-1, 1, 1, TensorOptions(kUInt8)), {1}, kUInt8, {255});
}

TEST_CASE("detach: shares storage and the version counter") {
  Tensor a = arange(4, kFloat32).view({2, 2}).transpose(0, 1);
  Tensor d = a.detach();
  CHECK_FALSE(d.is_same(a));
  CHECK(d.data_ptr() == a.data_ptr());
  CHECK(d.strides() == a.strides());
  d.mul_(2);
  check_values(a, {2, 2}, kFloat32, {0, 4, 2, 6});
  CHECK(a.version() == d.version());
}

TEST_CASE("contiguous: transposed batches are copied in tiles") {
  // 3 x 45 x 70 transposed in its last two dims: tiles of 32 with partial edges, and an
  // outer dim the tiles must step over.
  Tensor source = arange(3 * 45 * 70, kInt64).view({3, 45, 70});
  Tensor t = source.transpose(1, 2).contiguous();
  REQUIRE(t.sizes() == IntArrayRef{3, 70, 45});
  const int64_t* data = t.data_ptr<int64_t>();
  bool all_match = true;
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t i = 0; i < 70; ++i)
      for (int64_t j = 0; j < 45; ++j) all_match = all_match && data[(b * 70 + i) * 45 + j] == (b * 45 + j) * 70 + i;
  CHECK(all_match);
  Tensor sums = source.transpose(1, 2) + source.transpose(1, 2);
  CHECK(sums.data_ptr<int64_t>()[(2 * 70 + 69) * 45 + 44] == 2 * ((2 * 45 + 44) * 70 + 69));
}

TEST_CASE("flatten: merges a range of dims, a view when possible") {
  Tensor a = arange(24, kInt32).view({2, 3, 4});
  Tensor f = a.flatten();
  check_values(f, {24}, kInt32, values_of(a));
  CHECK(f.data_ptr() == a.data_ptr());
  CHECK(flatten(a, 1).sizes() == IntArrayRef{2, 12});
  CHECK(a.flatten(0, 1).sizes() == IntArrayRef{6, 4});
  CHECK(a.flatten(-2, -1).sizes() == IntArrayRef{2, 12});
  CHECK(a.flatten(1, 1).is_same(a));  // start_dim == end_dim returns self, like PyTorch
  CHECK(full({}, 3.0f).flatten().sizes() == IntArrayRef{1});
  CHECK(zeros({2, 0, 3}).flatten(1).sizes() == IntArrayRef{2, 0});
  Tensor t = a.transpose(0, 2);  // [4, 3, 2]: not viewable, so copied
  Tensor copied = t.flatten();
  CHECK(copied.data_ptr() != a.data_ptr());
  check_values(copied.slice(0, 0, 4), {4}, kInt32, {0, 12, 4, 16});
  check_meta_matches(flatten(a.to(kMeta), 1), flatten(a, 1));
  expect_error<ValueError>([&] { (void)a.flatten(2, 1); }, "[flatten] start_dim 2 cannot come after end_dim 1",
                           {"[2, 3, 4]"});
  expect_error<IndexError>([&] { (void)a.flatten(3); }, "[flatten] dimension 3 out of range");
}

TEST_CASE("squeeze and unsqueeze: views that drop or add size-1 dims") {
  Tensor a = arange(6, kFloat32).view({1, 2, 1, 3});
  Tensor s = a.squeeze();
  CHECK(s.sizes() == IntArrayRef{2, 3});
  CHECK(s.data_ptr() == a.data_ptr());
  CHECK(squeeze(a, 0).sizes() == IntArrayRef{2, 1, 3});
  CHECK(a.squeeze(-2).sizes() == IntArrayRef{1, 2, 3});
  CHECK(a.squeeze(1).sizes() == IntArrayRef{1, 2, 1, 3});  // size 2: unchanged
  CHECK(full({}, 1.0f).squeeze().dim() == 0);
  CHECK(full({}, 1.0f).squeeze(0).dim() == 0);
  CHECK(zeros({1, 0}).squeeze().sizes() == IntArrayRef{0});
  Tensor b = arange(6, kInt64).view({2, 3});
  CHECK(unsqueeze(b, 0).sizes() == IntArrayRef{1, 2, 3});
  CHECK(b.unsqueeze(1).sizes() == IntArrayRef{2, 1, 3});
  CHECK(b.unsqueeze(1).strides() == IntArrayRef{3, 3, 1});
  CHECK(b.unsqueeze(-1).sizes() == IntArrayRef{2, 3, 1});
  CHECK(b.unsqueeze(-1).strides() == IntArrayRef{3, 1, 1});
  CHECK(full({}, 2).unsqueeze(0).sizes() == IntArrayRef{1});
  Tensor u = b.transpose(0, 1).unsqueeze(1);  // non-contiguous input keeps its strides
  check_values(u, {3, 1, 2}, kInt64, {0, 3, 1, 4, 2, 5});
  s.mul_(2);  // shares storage and the version counter
  check_values(a.view({6}), {6}, kFloat32, {0, 2, 4, 6, 8, 10});
  CHECK(a.version() == s.version());
  check_meta_matches(a.to(kMeta).squeeze(), s);
  check_meta_matches(b.to(kMeta).unsqueeze(1), b.unsqueeze(1));
  expect_error<IndexError>([&] { (void)b.unsqueeze(3); }, "[unsqueeze] dimension 3 out of range");
  expect_error<IndexError>([&] { (void)b.squeeze(2); }, "[squeeze] dimension 2 out of range");
}

TEST_CASE("squeeze and unsqueeze: gradients") {
  Tensor x = grad_input({3, 1, 2}, 1, /*transposed=*/true);
  check_gradcheck([](const tensor_list& in) { return tensor_list{in[0].squeeze() * 2.0}; }, {x});
  check_gradcheck([](const tensor_list& in) { return tensor_list{in[0].squeeze(1)}; }, {x});
  check_gradcheck([](const tensor_list& in) { return tensor_list{in[0].unsqueeze(0).unsqueeze(-1)}; }, {x});
  check_gradcheck([](const tensor_list& in) { return tensor_list{in[0].flatten(1)}; }, {x});
}

TEST_CASE("split, split_with_sizes and chunk: views along a dim") {
  Tensor a = arange(10, kFloat32).view({5, 2});
  tensor_list pieces = a.split(2);
  REQUIRE(pieces.size() == 3);
  check_values(pieces[0], {2, 2}, kFloat32, {0, 1, 2, 3});
  check_values(pieces[2], {1, 2}, kFloat32, {8, 9});
  CHECK(pieces[1].data_ptr<float>() == a.data_ptr<float>() + 4);
  tensor_list columns = split(a, 1, 1);
  REQUIRE(columns.size() == 2);
  check_values(columns[1], {5, 1}, kFloat32, {1, 3, 5, 7, 9});
  tensor_list sized = a.split_with_sizes({1, 0, 4});
  REQUIRE(sized.size() == 3);
  CHECK(sized[1].sizes() == IntArrayRef{0, 2});
  check_values(sized[2], {4, 2}, kFloat32, {2, 3, 4, 5, 6, 7, 8, 9});
  tensor_list chunks = chunk(arange(5, kInt64), 3);  // ceil(5 / 3) = 2 per chunk
  REQUIRE(chunks.size() == 3);
  check_values(chunks[2], {1}, kInt64, {4});
  CHECK(arange(6).chunk(4).size() == 3);  // like PyTorch: chunks of 2, only 3 of them
  CHECK(zeros({0, 3}).chunk(2).size() == 2);
  CHECK(arange(10).chunk(std::numeric_limits<int64_t>::max()).size() == 10);  // no overflow in ceil
  CHECK(zeros({0}).split(2).size() == 1);
  pieces[0].add_(100);
  CHECK(a.data_ptr<float>()[0] == 100);
  CHECK(a.version() == pieces[2].version());
  tensor_list meta = a.to(kMeta).split(2);
  REQUIRE(meta.size() == 3);
  check_meta_matches(meta[2], pieces[2]);
  expect_error<ValueError>([&] { (void)a.split_with_sizes({1, 1}); },
                           "[split_with_sizes] split_sizes [1, 1] must sum exactly to the size of dimension 0",
                           {"[5, 2]", "sum to 2"});
  expect_error<ValueError>([&] { (void)a.split(0); }, "[split] split_size can only be 0");
  expect_error<ValueError>([&] { (void)a.split(-1); }, "[split] split_size must be non-negative");
  expect_error<ValueError>([&] { (void)a.chunk(0); }, "[chunk] expected `chunks` to be greater than 0, got 0");
  expect_error<ValueError>([] { (void)full({}, 1.0f).split(1); }, "[split] expected a tensor with at least 1 dim");
}

TEST_CASE("split and chunk: gradients, unused pieces count as zeros") {
  Tensor x = grad_input({5, 3}, 2, /*transposed=*/true);
  check_gradcheck([](const tensor_list& in) { return in[0].split(2); }, {x});
  check_gradcheck([](const tensor_list& in) { return tensor_list{in[0].chunk(3, 1)[1] * 3.0}; }, {x});
  Tensor y = grad_input({4}, 3);
  split(y, 3)[1].sum().backward();
  check_values(y.grad(), {4}, kFloat64, {0, 0, 0, 1});
}

TEST_CASE("cat: values, dims, promotion and legacy empty tensors") {
  Tensor a = arange(4, kInt32).view({2, 2});
  Tensor b = tensor(std::vector<double>{10, 11}, {1, 2}, kFloat64);
  Tensor c = cat({a, b});
  check_values(c, {3, 2}, kFloat64, {0, 1, 2, 3, 10, 11});
  check_values(cat({a, a.transpose(0, 1)}, 1), {2, 4}, kInt32, {0, 1, 0, 2, 2, 3, 1, 3});
  check_values(cat({a, a}, -2), {4, 2}, kInt32, {0, 1, 2, 3, 0, 1, 2, 3});
  check_values(cat({zeros({0}, kFloat32), a}), {2, 2}, kFloat32, {0, 1, 2, 3});  // skipped, still promotes
  check_values(cat({zeros({0}), zeros({0}, kInt64)}), {0}, kFloat32, {});
  check_values(cat({zeros({2, 0}), ones({2, 1})}, 1), {2, 1}, kFloat32, {1, 1});
  check_values(cat({tensor({true, false})}), {2}, kBool, {1, 0});
  check_meta_matches(cat({a.to(kMeta), b.to(kMeta)}), c);
  expect_error<ValueError>([] { (void)cat({}); }, "[cat] expected a non-empty list of tensors");
  expect_error<ValueError>([&] { (void)cat({a, full({}, 1)}); }, "[cat] zero-dimensional tensor (at position 1)");
  expect_error<ValueError>([&] { (void)cat({a, ones({2, 3})}); },
                           "[cat] sizes of tensors must match except in dimension 0", {"[2, 3]", "tensor 1"});
  expect_error<ValueError>([&] { (void)cat({a, ones({2})}); }, "[cat] tensors must have the same number of dim",
                           {"[2, 2] and [2]"});
  expect_error<IndexError>([&] { (void)cat({a, a}, 2); }, "[cat] dimension 2 out of range");
  expect_error<Error>([&] { (void)cat({a, a.to(kMeta)}); }, "[cat] expected all tensors on the same device");
}

TEST_CASE("cat and stack: gradients reach every input") {
  Tensor x = grad_input({2, 3}, 4, /*transposed=*/true);
  Tensor y = grad_input({1, 3}, 5);
  Tensor z = grad_input({2, 2}, 6);
  check_gradcheck([](const tensor_list& in) { return tensor_list{cat({in[0], in[1], in[0]})}; }, {x, y});
  check_gradcheck([](const tensor_list& in) { return tensor_list{cat({in[0], in[1]}, 1)}; }, {x, z});
  check_gradcheck([](const tensor_list& in) { return tensor_list{stack({in[0], in[1] * 2.0}, 1)}; }, {x, x.detach().clone().requires_grad_()});
  Tensor skipped = zeros({0}, kFloat64).requires_grad_();
  Tensor plain = ones({2}, kFloat64);  // no grad needed
  cat({skipped, x.flatten(), plain}).sum().backward();
  check_values(x.grad(), {2, 3}, kFloat64, {1, 1, 1, 1, 1, 1});
  CHECK_FALSE(skipped.grad().defined());
}

TEST_CASE("stack: inserts a new dim") {
  Tensor a = tensor({1.0f, 2.0f}), b = tensor({3.0f, 4.0f});
  check_values(stack({a, b}), {2, 2}, kFloat32, {1, 2, 3, 4});
  check_values(stack({a, b}, 1), {2, 2}, kFloat32, {1, 3, 2, 4});
  check_values(stack({a, b}, -1), {2, 2}, kFloat32, {1, 3, 2, 4});
  check_values(stack({full({}, 1), full({}, 2.5)}), {2}, kFloat32, {1, 2.5});
  check_meta_matches(stack({a.to(kMeta), b.to(kMeta)}, 1), stack({a, b}, 1));
  expect_error<ValueError>([&] { (void)stack({a, ones({3})}); }, "[stack] expected each tensor to be equal size",
                           {"[2] at entry 0 and [3] at entry 1"});
  expect_error<IndexError>([&] { (void)stack({a, b}, 2); }, "[stack] dimension 2 out of range");
}

TEST_CASE("shape: cat promotes int8 with int16; conversions to and from int8 and int16") {
  Tensor i8 = tensor({int8_t{-1}, int8_t{2}});
  Tensor i16 = tensor({int16_t{-300}});
  check_values(cat({i8, i16}), {3}, kInt16, {-1, 2, -300});
  check_values(stack({i8, i8}), {2, 2}, kInt8, {-1, 2, -1, 2});
  check_values(i16.to(kFloat64), {1}, kFloat64, {-300});
  check_values(tensor({-3.7, 4.2}).to(kInt8), {2}, kInt8, {-3, 4});
  check_values(i8.view({2, 1}).expand({2, 2}).contiguous(), {2, 2}, kInt8, {-1, -1, 2, 2});
  std::ostringstream printed;
  printed << i16;
  CHECK(printed.str() == "tensor([-300], dtype=int16)");
}

TEST_CASE("cat_out: an empty out is resized; strided and offset outs are filled in place") {
  Tensor a = arange(4, kInt32).view({2, 2});
  Tensor out = empty({0}, kInt32);
  const Tensor& result = cat_out(out, {a, a}, 1);
  CHECK(result.is_same(out));
  check_values(out, {2, 4}, kInt32, {0, 1, 0, 1, 2, 3, 2, 3});
  // A view at a storage offset, strided: columns 1..2 of a [4, 3] matrix, and a cast to float32.
  Tensor big = zeros({4, 3});
  const uint32_t version = big.version();
  cat_out(big.slice(1, 1, 3), {a, a + 4});
  check_values(big, {4, 3}, kFloat32, {0, 0, 1, 0, 2, 3, 0, 4, 5, 0, 6, 7});
  CHECK(big.version() > version);
  Tensor doubles = empty({3}, kFloat64);
  cat_out(doubles, {tensor({1, 2}), zeros({0}, kInt8), tensor({3.5f})});  // promotes to float32, stored as float64
  check_values(doubles, {3}, kFloat64, {1, 2, 3.5});
  Tensor meta = empty({0}, kMeta);
  cat_out(meta, {a.to(kMeta), a.to(kMeta)}, -1);
  CHECK(meta.sizes() == IntArrayRef{2, 4});
  CHECK(meta.is_meta());
}

TEST_CASE("cat_out: shape, dtype, device and autograd errors") {
  Tensor a = arange(4, kFloat32).view({2, 2});
  expect_error<ValueError>([&] { cat_out(zeros({3, 2}), {a, a}); },
                           "[cat.out] out has shape [3, 2] but the result has shape [4, 2]");
  expect_error<Error>([&] { cat_out(zeros({4, 2}, kInt64), {a, a}); }, "[cat.out] result type Float32 can't be cast");
  expect_error<Error>([&] { cat_out(empty({4, 2}, kMeta), {a, a}); }, "[cat.out] expected out on cpu");
  expect_error<ValueError>([&] { cat_out(empty({0}), {a, ones({2, 3})}); }, "[cat] sizes of tensors must match");
  Tensor x = zeros({4});
  expect_error<Error>([&] { cat_out(x.slice(0, 0, 2), {x.slice(0, 1, 2), ones({1})}); }, "[cat.out] unsupported");
  Tensor w = ones({2}).requires_grad_();
  expect_error<Error>([&] { cat_out(empty({0}), {w, w}); }, "[strata::cat.out]", {"out=", "requires grad"});
  NoGradGuard no_grad;
  Tensor out = empty({0});
  cat_out(out, {w, w});
  check_values(out, {4}, kFloat32, {1, 1, 1, 1});
}

TEST_CASE("Tensor methods: t[i] selects along dim 0 and as_strided views, as in LibTorch") {
  Tensor x = arange(6, kFloat32).view({2, 3}).requires_grad_();
  Tensor row = x[1];
  CHECK(row.sizes() == IntArrayRef{3});
  CHECK(equal(row, tensor({3.0f, 4.0f, 5.0f})));
  CHECK(x[-2][2].item<float>() == 2.0f);
  CHECK(row.data_ptr<float>() == x.data_ptr<float>() + 3);  // a view
  expect_error<IndexError>([&] { (void)x[2]; }, "[select]", {"out of range"});
  Tensor diagonal = x.as_strided({2}, {4});
  CHECK(equal(diagonal, tensor({0.0f, 4.0f})));
  diagonal.sum().backward();
  CHECK(equal(x.grad(), tensor({1.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0.0f}).view({2, 3})));
}
