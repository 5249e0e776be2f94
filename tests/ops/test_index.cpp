// Tests for ops/index.cpp: slice, select, narrow, index_select, index_add, gather,
// scatter_add, masked_fill.
#include "op_test_util.h"

#include <limits>

using namespace strata;
using strata::testing::check_gradcheck;
using strata::testing::check_meta_matches;
using strata::testing::check_values;
using strata::testing::expect_error;
using strata::testing::grad_input;
using strata::testing::values_of;

TEST_CASE("slice: Python bounds, clamping and steps, as a view") {
  Tensor a = arange(10, kInt64);
  check_values(slice(a, 0, 2, 5), {3}, kInt64, {2, 3, 4});
  check_values(a.slice(0, std::nullopt, std::nullopt, 3), {4}, kInt64, {0, 3, 6, 9});
  check_values(a.slice(0, -3), {3}, kInt64, {7, 8, 9});
  check_values(a.slice(0, 1, -7), {2}, kInt64, {1, 2});
  check_values(a.slice(0, -100, 100, 4), {3}, kInt64, {0, 4, 8});
  CHECK(a.slice(0, 7, 3).sizes() == IntArrayRef{0});    // end before start: empty
  CHECK(a.slice(0, 20, 30).sizes() == IntArrayRef{0});  // start past the end: empty
  check_values(a.slice(0, 1, 10, std::numeric_limits<int64_t>::max()), {1}, kInt64, {1});  // no overflow
  Tensor m = arange(12, kFloat32).view({3, 4});
  Tensor s = m.slice(1, 1, 4, 2);
  check_values(s, {3, 2}, kFloat32, {1, 3, 5, 7, 9, 11});
  CHECK(s.strides() == IntArrayRef{4, 2});
  CHECK(s.storage_offset() == 1);
  check_values(m.transpose(0, 1).slice(0, 2), {2, 3}, kFloat32, {2, 6, 10, 3, 7, 11});
  s.mul_(-1);  // shares storage and the version counter
  check_values(m.select(0, 0), {4}, kFloat32, {0, -1, 2, -3});
  CHECK(m.version() == s.version());
  CHECK(zeros({0, 2}).slice(0, 0, 5).sizes() == IntArrayRef{0, 2});
  check_meta_matches(m.to(kMeta).slice(1, 1, 4, 2), s);
  expect_error<ValueError>([&] { (void)a.slice(0, 0, 5, 0); }, "[slice] step must be positive, got step=0");
  expect_error<IndexError>([] { (void)full({}, 1).slice(0); }, "[slice] cannot be applied to a 0-dim tensor");
  expect_error<IndexError>([&] { (void)m.slice(2); }, "[slice] dimension 2 out of range");
}

TEST_CASE("select and narrow: views") {
  Tensor m = arange(12, kInt32).view({3, 4});
  check_values(select(m, 1, 2), {3}, kInt32, {2, 6, 10});
  check_values(m.select(0, -1), {4}, kInt32, {8, 9, 10, 11});
  check_values(m.select(0, 1).select(0, 3), {}, kInt32, {7});
  CHECK(m.select(1, 1).data_ptr<int32_t>() == m.data_ptr<int32_t>() + 1);
  check_values(narrow(m, 1, 1, 2), {3, 2}, kInt32, {1, 2, 5, 6, 9, 10});
  check_values(m.narrow(0, -1, 1), {1, 4}, kInt32, {8, 9, 10, 11});
  CHECK(m.narrow(0, 3, 0).sizes() == IntArrayRef{0, 4});
  Tensor n = m.narrow(1, 0, 1);
  n.add_(100);
  CHECK(m.data_ptr<int32_t>()[4] == 104);
  check_meta_matches(m.to(kMeta).select(1, 2), select(m, 1, 2));
  check_meta_matches(m.to(kMeta).narrow(1, 1, 2), narrow(m, 1, 1, 2));
  expect_error<IndexError>([&] { (void)m.select(1, 4); }, "[select] index 4 out of range for tensor of shape [3, 4]",
                           {"dimension 1"});
  expect_error<IndexError>([] { (void)full({}, 1).select(0, 0); }, "[select] cannot be applied to a 0-dim tensor");
  expect_error<ValueError>([&] { (void)m.narrow(1, 2, 3); }, "[narrow] start (2) + length (3) exceeds the size (4)",
                           {"[3, 4]"});
  expect_error<IndexError>([&] { (void)m.narrow(1, 5, 0); }, "[narrow] start 5 out of range");
  expect_error<ValueError>([&] { (void)m.narrow(1, 0, -1); }, "[narrow] length must be non-negative");
}

TEST_CASE("slice, select, narrow: gradients, first and second order") {
  Tensor x = grad_input({4, 5}, 11, /*transposed=*/true);
  check_gradcheck([](const tensor_list& in) { return tensor_list{in[0].slice(1, 1, std::nullopt, 2)}; }, {x});
  check_gradcheck([](const tensor_list& in) { return tensor_list{in[0].select(0, -2) * 2.0}; }, {x});
  check_gradcheck([](const tensor_list& in) { return tensor_list{in[0].narrow(0, 1, 2)}; }, {x});
  // slice_backward and select_backward differentiate too (double backward of slice/select).
  Tensor g = grad_input({4, 2}, 12);
  check_gradcheck([](const tensor_list& in) { return tensor_list{slice_backward(in[0], {4, 5}, 1, 1, 5, 2)}; }, {g});
  Tensor h = grad_input({5}, 13);
  check_gradcheck([](const tensor_list& in) { return tensor_list{select_backward(in[0], {4, 5}, 0, 3)}; }, {h});
  check_values(slice_backward(ones({2}), {5}, 0, 1, 4, 2), {5}, kFloat32, {0, 1, 0, 1, 0});
}

TEST_CASE("index_select: rows of any dtype, repeated indices") {
  Tensor m = arange(12, kInt64).view({3, 4});
  Tensor rows = tensor({2, 0, 2});
  check_values(index_select(m, 0, rows), {3, 4}, kInt64, {8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11});
  check_values(m.index_select(1, tensor({3, 1}).to(kInt32)), {3, 2}, kInt64, {3, 1, 7, 5, 11, 9});
  check_values(m.transpose(0, 1).index_select(0, tensor({1})), {1, 3}, kInt64, {1, 5, 9});
  check_values(m.to(kFloat16).index_select(0, full({}, 1)), {1, 4}, kFloat16, {4, 5, 6, 7});
  check_values(full({}, 2.5).index_select(0, tensor({0})), {}, kFloat32, {2.5});
  CHECK(m.index_select(0, zeros({0}, kInt64)).sizes() == IntArrayRef{0, 4});
  check_meta_matches(m.to(kMeta).index_select(0, rows.to(kMeta)), index_select(m, 0, rows));
  expect_error<IndexError>([&] { (void)m.index_select(0, tensor({3})); },
                           "[index_select] index 3 is out of bounds for dimension 0 with size 3");
  expect_error<IndexError>([&] { (void)m.index_select(0, tensor({-1})); }, "[index_select] index -1 is out of bounds");
  expect_error<TypeError>([&] { (void)m.index_select(0, tensor({1.0f})); },
                          "[index_select] index must be an int64 or int32 tensor, got Float32");
  expect_error<ValueError>([&] { (void)m.index_select(0, zeros({1, 1}, kInt64)); },
                           "[index_select] index must be 0-d or 1-d, got index of shape [1, 1]");
}

TEST_CASE("index_select_out: resized, strided, aliasing and meta outs; index values still checked") {
  Tensor m = arange(12, kInt64).view({3, 4});
  Tensor rows = tensor({2, 0});
  Tensor out = empty({0}, kInt64);
  const Tensor& result = index_select_out(out, m, 0, rows);
  CHECK(result.is_same(out));
  check_values(out, {2, 4}, kInt64, {8, 9, 10, 11, 0, 1, 2, 3});
  // A transposed (non-contiguous) float32 out.
  Tensor strided = zeros({4, 2}).t();
  index_select_out(strided, m, 0, rows);
  check_values(strided, {2, 4}, kFloat32, {8, 9, 10, 11, 0, 1, 2, 3});
  // out may be self itself (the same geometry): the rows are read before any is written.
  Tensor x = arange(4, kFloat32);
  index_select_out(x, x, 0, tensor({3, 2, 1, 0}));
  check_values(x, {4}, kFloat32, {3, 2, 1, 0});
  Tensor meta = empty({0}, kMeta);
  index_select_out(meta, m.to(kMeta), 1, rows.to(kMeta));
  CHECK(meta.sizes() == IntArrayRef{3, 2});
  expect_error<IndexError>([&] { index_select_out(empty({0}, kInt64), m, 0, tensor({3})); },
                           "[index_select] index 3 is out of bounds for dimension 0 with size 3");
  expect_error<ValueError>([&] { index_select_out(zeros({3}, kInt64), m, 0, rows); },
                           "[index_select.out] out has shape [3] but the result has shape [2, 4]");
  expect_error<Error>([&] { index_select_out(zeros({2, 4}, kInt32).to(kBool), m.to(kFloat32), 0, rows); },
                      "[index_select.out] result type Float32 can't be cast");
  Tensor w = ones({3}).requires_grad_();
  expect_error<Error>([&] { index_select_out(empty({0}), w, 0, rows); }, "[strata::index_select.out]",
                      {"out=", "requires grad"});
}

TEST_CASE("index_add: duplicates accumulate, alpha scales") {
  Tensor base = zeros({3, 2});
  Tensor source = tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2});
  check_values(index_add(base, 0, tensor({0, 2, 0}), source), {3, 2}, kFloat32, {6, 8, 0, 0, 3, 4});
  check_values(base.index_add(1, tensor({1}), ones({3, 1}), 2), {3, 2}, kFloat32, {0, 2, 0, 2, 0, 2});
  check_values(zeros({2}, kInt32).index_add(0, tensor({1, 1}), full({2}, 3, kInt32)), {2}, kInt32, {0, 6});
  check_meta_matches(index_add(base.to(kMeta), 0, tensor({0, 2, 0}).to(kMeta), source.to(kMeta)),
                     index_add(base, 0, tensor({0, 2, 0}), source));
  expect_error<ValueError>([&] { (void)base.index_add(0, tensor({0}), source); },
                           "[index_add] source of shape [3, 2] does not match self of shape [3, 2]", {"[1, 2]"});
  expect_error<TypeError>([&] { (void)base.index_add(0, tensor({0}), ones({1, 2}, kFloat64)); },
                          "[index_add] self (Float32) and source (Float64) must have the same dtype");
}

TEST_CASE("index_select and index_add: gradients") {
  Tensor x = grad_input({4, 3}, 14, /*transposed=*/true);
  const Tensor index = tensor({3, 0, 3});
  check_gradcheck([index](const tensor_list& in) { return tensor_list{in[0].index_select(0, index)}; }, {x});
  check_gradcheck([index](const tensor_list& in) { return tensor_list{in[0].index_select(1, tensor({2, 2}))}; }, {x});
  Tensor source = grad_input({3, 3}, 15);
  check_gradcheck([index](const tensor_list& in) { return tensor_list{in[0].index_add(0, index, in[1], 0.5)}; },
                  {x, source});
}

TEST_CASE("gather and scatter_add: values along a dim") {
  Tensor m = tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor index = tensor(std::vector<int64_t>{2, 0, 1, 1}, {2, 2});
  check_values(gather(m, 1, index), {2, 2}, kFloat32, {3, 1, 5, 5});
  check_values(m.gather(0, tensor(std::vector<int64_t>{1, 0, 1}, {1, 3})), {1, 3}, kFloat32, {4, 2, 6});
  check_values(m.transpose(0, 1).gather(0, tensor(std::vector<int64_t>{2, 0}, {1, 2})), {1, 2}, kFloat32, {3, 4});
  check_values(full({}, 7).gather(0, full({}, 0)), {}, kInt64, {7});
  CHECK(m.gather(1, zeros({2, 0}, kInt64)).sizes() == IntArrayRef{2, 0});
  Tensor added = zeros({2, 3}).scatter_add(1, index, ones({2, 2}));
  check_values(added, {2, 3}, kFloat32, {1, 0, 1, 0, 2, 0});
  check_values(scatter_add(zeros({3}, kInt64), 0, tensor({0, 0, 2}), tensor({1, 2, 3, 4})), {3}, kInt64, {3, 0, 3});
  check_meta_matches(gather(m.to(kMeta), 1, index.to(kMeta)), gather(m, 1, index));
  check_meta_matches(scatter_add(m.to(kMeta), 1, index.to(kMeta), m.to(kMeta)), added);
  // src on another device than self: refused before the kernel reads it (it used to be read as
  // host memory on the CPU, and as device memory on CUDA).
  expect_error<Error>([&] { (void)zeros({2, 3}).scatter_add(1, index, ones({2, 2}).to(kMeta)); },
                      "[scatter_add] expected all tensors on the same device, got cpu and meta");
  expect_error<IndexError>([&] { (void)m.gather(1, tensor(std::vector<int64_t>{3}, {1, 1})); },
                           "[gather] index 3 is out of bounds for dimension 1 with size 3");
  expect_error<TypeError>([&] { (void)m.gather(1, index.to(kInt32)); }, "[gather] expected an int64 index, got Int32");
  expect_error<ValueError>([&] { (void)m.gather(1, tensor({0})); },
                           "[gather] index of shape [1] must have the same number of dimensions as self of shape [2, 3]");
  expect_error<ValueError>([&] { (void)m.gather(1, zeros({3, 1}, kInt64)); },
                           "[gather] index of shape [3, 1] is larger than self of shape [2, 3] in dimension 0");
  expect_error<ValueError>([&] { (void)m.scatter_add(1, index, ones({2, 1})); },
                           "[scatter_add] index of shape [2, 2] is larger than src of shape [2, 1] in dimension 1");
}

TEST_CASE("gather and scatter_add: gradients") {
  Tensor x = grad_input({3, 4}, 16, /*transposed=*/true);
  const Tensor index = tensor(std::vector<int64_t>{3, 3, 0, 1, 2, 2}, {3, 2});
  check_gradcheck([index](const tensor_list& in) { return tensor_list{in[0].gather(1, index)}; }, {x});
  Tensor src = grad_input({3, 3}, 17);  // larger than index in dim 1: the extra column gets zero
  check_gradcheck([index](const tensor_list& in) { return tensor_list{in[0].scatter_add(1, index, in[1])}; },
                  {x, src});
}

TEST_CASE("masked_fill: scalar and 0-d tensor values, broadcasting") {
  Tensor a = arange(6, kFloat32).view({2, 3});
  Tensor mask = tensor({true, false, true});
  check_values(masked_fill(a, mask, -1.5), {2, 3}, kFloat32, {-1.5, 1, -1.5, -1.5, 4, -1.5});
  check_values(a.masked_fill(tensor(std::vector<bool>{false, true}, {2, 1}), full({}, 9.0)), {2, 3}, kFloat32,
               {0, 1, 2, 9, 9, 9});
  check_values(full({3}, 1).masked_fill(tensor(std::vector<bool>{true, false}, {2, 1}), 0), {2, 3}, kInt64,
               {0, 0, 0, 1, 1, 1});  // self broadcasts to the mask's shape
  check_values(a.transpose(0, 1).masked_fill(tensor({false, true}), 7), {3, 2}, kFloat32, {0, 7, 1, 7, 2, 7});
  check_values(zeros({2}, kBool).masked_fill(tensor({true, false}), true), {2}, kBool, {1, 0});
  check_meta_matches(a.to(kMeta).masked_fill(mask.to(kMeta), 1), a.masked_fill(mask, 1));
  expect_error<TypeError>([&] { (void)a.masked_fill(ones({3}, kInt64), 0); },
                          "[masked_fill] expected a bool mask, got a Int64 mask of shape [3]");
  expect_error<ValueError>([&] { (void)a.masked_fill(mask, ones({1})); },
                           "[masked_fill] only supports a 0-dimensional value tensor, got value of shape [1]");
  expect_error<ValueError>([&] { (void)a.masked_fill(tensor({true, false}), 0); },
                           "[masked_fill] shapes [2, 3] and [2] cannot be broadcast");
  expect_error<Error>([&] { (void)zeros({2}, kUInt8).masked_fill(tensor({true, false}), 300); }, "[masked_fill]");
}

TEST_CASE("masked_fill: gradients for self and the value") {
  Tensor x = grad_input({2, 3}, 18, /*transposed=*/true);
  Tensor value = grad_input({}, 19);
  const Tensor mask = tensor(std::vector<bool>{true, false, false, true, true, false}, {2, 3});
  check_gradcheck([mask](const tensor_list& in) { return tensor_list{in[0].masked_fill(mask, 2.0)}; }, {x});
  check_gradcheck([mask](const tensor_list& in) { return tensor_list{in[0].masked_fill(mask, in[1])}; }, {x, value});
  Tensor row = grad_input({3}, 20);  // broadcast self: its gradient sums over the new dim
  masked_fill(row, mask, 0.0).sum().backward();
  check_values(row.grad(), {3}, kFloat64, {0, 1, 2});
}

TEST_CASE("index: int8 and int16 values through index_select, gather and masked_fill") {
  Tensor i8 = tensor({{int8_t{1}, int8_t{-2}}, {int8_t{3}, int8_t{-4}}});
  check_values(i8.index_select(0, tensor({1, 0})), {2, 2}, kInt8, {3, -4, 1, -2});
  check_values(i8.to(kInt16).gather(1, tensor({{1}, {0}})), {2, 1}, kInt16, {-2, 3});
  check_values(i8.masked_fill(lt(i8, 0), 9), {2, 2}, kInt8, {1, 9, 3, 9});
  expect_error<ValueError>([&] { (void)i8.masked_fill(lt(i8, 0), 300); }, "[masked_fill]", {"Int8"});
}
