// Tests for ops/pointwise.cpp (add, sub, mul, div and their in-place forms), the
// broadcasting and promotion helpers in ops/elementwise.cpp, and the arithmetic operators.
#include <cstring>

#include "op_test_util.h"

using namespace strata;
using strata::testing::check_meta_matches;
using strata::testing::check_values;
using strata::testing::expect_error;
using strata::testing::values_of;

TEST_CASE("add: same shapes, values and dtype") {
  Tensor a = tensor({1.0f, 2.0f, 3.0f});
  Tensor b = tensor({10.0f, 20.0f, 30.0f});
  check_values(add(a, b), {3}, kFloat32, {11, 22, 33});
  check_values(a + b, {3}, kFloat32, {11, 22, 33});
  check_values(a.add(b, 2), {3}, kFloat32, {21, 42, 63});
  check_values(tensor({1, 2}) + tensor({3, 4}), {2}, kInt64, {4, 6});
}

TEST_CASE("add: broadcasts [2,1] with [3]") {
  Tensor a = tensor(std::vector<double>{1, 2}, {2, 1}, kFloat64);
  Tensor b = tensor({10.0, 20.0, 30.0}, kFloat64);
  check_values(a + b, {2, 3}, kFloat64, {11, 21, 31, 12, 22, 32});
  check_values(b + a, {2, 3}, kFloat64, {11, 21, 31, 12, 22, 32});
  check_meta_matches(add(a.to(kMeta), b.to(kMeta)), a + b);
}

TEST_CASE("add: scalar operand and alpha") {
  Tensor a = tensor({1, 2, 3}, kInt32);
  check_values(a + 5, {3}, kInt32, {6, 7, 8});
  check_values(5 + a, {3}, kInt32, {6, 7, 8});
  check_values(add(a, 2, 3), {3}, kInt32, {7, 8, 9});
  check_values(add(a, a, -1), {3}, kInt32, {0, 0, 0});
  check_values(tensor({1.5f}) + 1, {1}, kFloat32, {2.5});
}

TEST_CASE("add: type promotion follows torch.result_type") {
  Tensor i32 = tensor({1, 2}, kInt32);
  Tensor i64 = tensor({1, 2});
  Tensor f32 = tensor({1.0f, 2.0f});
  Tensor f16 = tensor({1.0f, 2.0f}, kFloat16);
  Tensor b = tensor({true, false});
  Tensor u8 = tensor({1, 2}, kUInt8);
  CHECK((i32 + i64).dtype() == kInt64);
  CHECK((i32 + f32).dtype() == kFloat32);
  CHECK((u8 + i32).dtype() == kInt32);
  CHECK((f16 + f32).dtype() == kFloat32);
  check_values(i32 + 2.5, {2}, kFloat32, {3.5, 4.5});
  check_values(f16 + 2.5, {2}, kFloat16, {3.5, 4.5});
  check_values(b + 1, {2}, kInt64, {2, 1});
  check_values(b + b, {2}, kBool, {1, 0});
  check_values(u8 + 1, {2}, kUInt8, {2, 3});
  // Zero-dim tensors act like scalars next to dimensioned tensors of the same category.
  check_values(i32 + full({}, 5, kInt64), {2}, kInt32, {6, 7});
  check_values(i32 + full({}, 0.5, kFloat64), {2}, kFloat64, {1.5, 2.5});
  CHECK((f32 + full({}, 1.0, kFloat64)).dtype() == kFloat32);
  CHECK((full({}, 1, kInt32) + full({}, 1, kInt64)).dtype() == kInt64);
  CHECK(result_type(i32, Scalar(2.5)) == kFloat32);
  CHECK(result_type(f16, Scalar(2)) == kFloat16);
  CHECK(result_type(b, Scalar(true)) == kBool);
  CHECK(result_type(full({}, 1, kInt32), Scalar(2.5)) == kFloat32);
}

TEST_CASE("add: mixed dtypes convert exactly") {
  Tensor big = tensor({int64_t{1} << 40});
  check_values(big + tensor({1}, kInt32), {1}, kInt64, {static_cast<double>((int64_t{1} << 40) + 1)});
  check_values(tensor({0.5}, kFloat64) + tensor({1}, kInt32), {1}, kFloat64, {1.5});
  check_values(tensor({255}, kUInt8) + tensor({1}, kUInt8), {1}, kUInt8, {0});  // wraps
}

TEST_CASE("add: non-contiguous and broadcast inputs") {
  Tensor a = arange(6, kFloat32).view({2, 3});
  Tensor t = a.transpose(0, 1);  // [3, 2], strides [1, 3]
  check_values(t + t, {3, 2}, kFloat32, {0, 6, 2, 8, 4, 10});
  Tensor row = tensor({1.0f, 2.0f}).expand({3, 2});
  check_values(t + row, {3, 2}, kFloat32, {1, 5, 2, 6, 3, 7});
  check_values(t + full({}, 1.0f), {3, 2}, kFloat32, {1, 4, 2, 5, 3, 6});
  check_values(full({}, 1.0f) - t, {3, 2}, kFloat32, {1, -2, 0, -3, -1, -4});
}

TEST_CASE("add: large tensors take the parallel paths") {
  const int64_t n = 3 * kDefaultGrainSize + 7;
  Tensor a = arange(n, kFloat64);
  Tensor doubled = a + a;
  CHECK(doubled.data_ptr<double>()[n - 1] == 2.0 * static_cast<double>(n - 1));
  Tensor grid = arange(400 * 300, kInt64).view({400, 300});
  // A contiguous first input orders the result; the transposed second is read strided.
  Tensor transposed = grid.transpose(0, 1).contiguous() + grid.transpose(0, 1);
  CHECK(transposed.sizes() == IntArrayRef{300, 400});
  REQUIRE(transposed.is_contiguous());
  const int64_t* data = transposed.data_ptr<int64_t>();
  CHECK(data[1] == 2 * 300);         // element [0, 1] is grid[1, 0] * 2
  CHECK(data[401] == 2 * (300 + 1));  // element [1, 1] is grid[1, 1] * 2
  // Both transposed: the result is too (as in LibTorch), one contiguous block in memory.
  const Tensor both = grid.transpose(0, 1) + grid.transpose(0, 1);
  CHECK(both.strides() == IntArrayRef{1, 300});
  CHECK(both.data_ptr<int64_t>()[1] == 2 * 1);  // memory order is grid's: element [1, 0] is grid[0, 1] * 2
  CHECK(equal(both, transposed));
}

TEST_CASE("add: a short row broadcast over many rows (Note [Short broadcast rows])") {
  const int64_t rows = kDefaultGrainSize + 5;  // large enough for the parallel chunks
  Tensor a = arange(rows * 3, kInt64).view({rows, 3});
  Tensor row = tensor({10, 20, 30});
  const std::vector<double> sum_values = values_of(a + row), swapped = values_of(row - a);
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{3}, rows * 3 - 1, rows * 3 / 2 + 1}) {
    INFO("element ", i);
    CHECK(sum_values[i] == static_cast<double>(i + 10 * (i % 3 + 1)));
    CHECK(swapped[i] == static_cast<double>(10 * (i % 3 + 1) - i));
  }
  Tensor batched = arange(2 * 5 * 3, kFloat64).view({2, 5, 3});  // leading dims merge into the rows
  const std::vector<double> differences = values_of(sub(batched, tensor({1.0, 2.0, 3.0}, kFloat64)));
  CHECK(differences[4] == 4.0 - 2.0);
  CHECK(differences[29] == 29.0 - 3.0);
  check_values(tensor(std::vector<float>{1, 2, 3, 4}, {2, 2}) + tensor({0.5f, 0.25f}), {2, 2}, kFloat32,
               {1.5, 2.25, 3.5, 4.25});
  check_values(tensor({1.0f}).expand({2}) + ones({3, 2}), {3, 2}, kFloat32, {2, 2, 2, 2, 2, 2});
}

TEST_CASE("add: zero-size and zero-dim tensors") {
  Tensor empty_rows = zeros({0, 3});
  check_values(empty_rows + tensor({1.0f, 2.0f, 3.0f}), {0, 3}, kFloat32, {});
  check_values(full({}, 2.0f) + full({}, 3.0f), {}, kFloat32, {5});
  check_values(full({}, 2.0f) + tensor({1.0f, 2.0f}), {2}, kFloat32, {3, 4});
  check_meta_matches(add(zeros({0, 3}, kMeta), zeros({3}, kMeta)), empty_rows + zeros({3}));
}

TEST_CASE("add: errors") {
  expect_error<ValueError>([] { (void)add(zeros({2, 3}), zeros({4})); },
                           "[add] shapes [2, 3] and [4] cannot be broadcast (dimension 1: 3 vs 4)");
  expect_error<Error>([] { (void)add(zeros({2}), zeros({2}, kMeta)); },
                      "[add] expected all tensors on the same device, got cpu and meta");
  expect_error<Error>([] { (void)add(tensor({1, 2}), tensor({1, 2}), 2.5); }, "[add] for integral input tensors",
                      {"alpha"});
  expect_error<ValueError>([] { (void)add(tensor({1}, kUInt8), 300); },
                           "[add] value 300 cannot be converted to type UInt8 without overflow");
  expect_error<ValueError>([] { (void)add(zeros({2, 3}, kMeta), zeros({4}, kMeta)); }, "[add] shapes");
}

TEST_CASE("add_: in place, with broadcasting of other and version bumps") {
  Tensor a = tensor(std::vector<float>{1, 2, 3, 4}, {2, 2});
  const uint32_t version = a.version();
  const Tensor& result = a.add_(tensor({10.0f, 20.0f}));
  CHECK(&result == &a);
  check_values(a, {2, 2}, kFloat32, {11, 22, 13, 24});
  CHECK(a.version() == version + 1);
  add_(a, 1, 2);
  check_values(a, {2, 2}, kFloat32, {13, 24, 15, 26});
  Tensor view = a.view({4});
  view.add_(1);
  check_values(a, {2, 2}, kFloat32, {14, 25, 16, 27});  // views share storage and version
  CHECK(a.version() == view.version());
}

TEST_CASE("add_: result dtype must cast to self's dtype") {
  Tensor f = tensor({1.0f, 2.0f});
  f.add_(tensor({1, 2}));  // int into float is fine
  check_values(f, {2}, kFloat32, {2, 4});
  f.add_(tensor({0.25}, kFloat64));  // computed in float64, stored as float32
  check_values(f, {2}, kFloat32, {2.25, 4.25});
  Tensor i = tensor({1, 2});
  expect_error<Error>([&] { i.add_(tensor({1.0f, 2.0f})); },
                      "[add_] result type Float32 can't be cast to the desired output type Int64");
  expect_error<Error>([&] { i.add_(2.5); }, "[add_] result type Float32 can't be cast");
  expect_error<ValueError>([&] { i.add_(tensor(std::vector<int64_t>{1, 2, 3, 4}, {2, 2})); },
                           "[add_] output with shape [2] doesn't match the broadcast shape [2, 2]");
  expect_error<Error>([] { tensor({1.0f}).expand({3}).add_(1); }, "[add_] unsupported operation");
  Tensor meta = zeros({2}, kMeta);
  const uint32_t version = meta.version();
  CHECK(meta.add_(zeros({2}, kMeta)).is_meta());
  CHECK(meta.version() == version + 1);
  expect_error<ValueError>([&] { meta.add_(zeros({3}, kMeta)); }, "[add_] shapes");
}

TEST_CASE("sub: values, scalars and bool refusal") {
  Tensor a = tensor({5, 7, 9});
  check_values(a - tensor({1, 2, 3}), {3}, kInt64, {4, 5, 6});
  check_values(sub(a, tensor({1, 2, 3}), 2), {3}, kInt64, {3, 3, 3});
  check_values(a - 1, {3}, kInt64, {4, 6, 8});
  check_values(10 - a, {3}, kInt64, {5, 3, 1});
  check_values(2.5 - a, {3}, kFloat32, {-2.5, -4.5, -6.5});
  check_values(sub(a, 1, 2), {3}, kInt64, {3, 5, 7});
  a.sub_(tensor({1, 1, 1}));
  check_values(a, {3}, kInt64, {4, 6, 8});
  a.sub_(4);
  check_values(a, {3}, kInt64, {0, 2, 4});
  Tensor mask = tensor({true, false});
  expect_error<TypeError>([&] { (void)(mask - mask); }, "[sub] subtraction with a bool tensor is not supported");
  expect_error<TypeError>([&] { (void)(tensor({1, 2}) - true); }, "[sub]");
  expect_error<TypeError>([&] { (void)(1 - mask); }, "[sub]");
  check_meta_matches(sub(zeros({2, 1}, kMeta), zeros({3}, TensorOptions(kInt32).device(kMeta))), zeros({2, 1}) - zeros({3}, kInt32));
}

TEST_CASE("mul: values, promotion and wrapping") {
  check_values(tensor({1.0f, 2.0f}) * tensor({3.0f, 4.0f}), {2}, kFloat32, {3, 8});
  check_values(tensor({200}, kUInt8) * 2, {1}, kUInt8, {144});
  check_values(2 * tensor({1, 2}), {2}, kInt64, {2, 4});
  check_values(tensor({true, true}) * tensor({true, false}), {2}, kBool, {1, 0});
  check_values(tensor({3}, kInt32) * 0.5, {1}, kFloat32, {1.5});
  check_values(tensor({1.5f}, kBFloat16) * tensor({2.0f}, kBFloat16), {1}, kBFloat16, {3});
  Tensor a = tensor({1.0, 2.0}, kFloat64);
  a.mul_(tensor({3.0, 4.0}, kFloat64));
  check_values(a, {2}, kFloat64, {3, 8});
  a.mul_(-1);
  check_values(a, {2}, kFloat64, {-3, -8});
  check_meta_matches(mul(zeros({4, 1}, kMeta), 2.0), zeros({4, 1}) * 2.0);
  expect_error<ValueError>([] { (void)mul(zeros({2}), zeros({3})); }, "[mul] shapes [2] and [3]");
}

// -g a / b^2 as -g ((a / b) / b): b * b underflows at b = 1e-30 in float32 (torch_diff's
// "jit (x*0)/x f32 with grad"); LibTorch computes it this way too.
TEST_CASE("div: the divisor's gradient survives divisors whose square underflows or overflows") {
  Tensor a = tensor({0.0f, 2e-30f, 3e30f}).requires_grad_();
  Tensor b = tensor({1e-30f, 1e-30f, 1e30f}).requires_grad_();
  div(a, b).sum().backward();
  CHECK(b.grad()[0].item<float>() == 0.0f);
  CHECK(b.grad()[1].item<double>() == doctest::Approx(-2e30).epsilon(1e-5));
  CHECK(b.grad()[2].item<double>() == doctest::Approx(-3e-30).epsilon(1e-5));
  Tensor c = tensor({0.0f, 2e-30f}).requires_grad_();
  Tensor d = tensor({1e-30f, 1e-30f}).requires_grad_();
  Tensor e = c * 1;
  e.div_(d);
  e.sum().backward();
  CHECK(d.grad()[0].item<float>() == 0.0f);
  CHECK(d.grad()[1].item<double>() == doctest::Approx(-2e30).epsilon(1e-5));
}

TEST_CASE("div: true division, integer inputs give float32") {
  check_values(tensor({7, -7}) / tensor({2, 2}), {2}, kFloat32, {3.5, -3.5});
  check_values(tensor({7, 8}) / 2, {2}, kFloat32, {3.5, 4});
  check_values(tensor({1.0f, -1.0f, 0.0f}) / 0, {3}, kFloat32,
               {INFINITY, -INFINITY, NAN});
  check_values(2 / tensor({1.0f, 2.0f, 4.0f}), {3}, kFloat32, {2, 1, 0.5});
  check_values(2 / tensor({1, 4}), {2}, kFloat32, {2, 0.5});
  check_values(tensor({true}) / tensor({true}), {1}, kFloat32, {1});
  check_values(tensor({3.0}, kFloat64) / tensor({2.0f}), {1}, kFloat64, {1.5});
  check_values(tensor({1.0f}, kFloat16) / 4, {1}, kFloat16, {0.25});
  Tensor f = tensor({3.0f, 6.0f});
  f.div_(3);
  check_values(f, {2}, kFloat32, {1, 2});
  f.div_(tensor({2.0f}));
  check_values(f, {2}, kFloat32, {0.5, 1});
  expect_error<Error>([] { tensor({4, 6}).div_(2); },
                      "[div_] result type Float32 can't be cast to the desired output type Int64");
  expect_error<Error>([] { tensor({4, 6}).div_(tensor({2, 2})); }, "[div_] result type Float32");
  check_meta_matches(div(zeros({2}, TensorOptions(kInt32).device(kMeta)), zeros({2}, TensorOptions(kInt32).device(kMeta))), tensor({1, 2}, kInt32) / 1);
}

TEST_CASE("neg: the unary minus operator") {
  check_values(-tensor({1.0f, -2.0f}), {2}, kFloat32, {-1, 2});
  check_values(-tensor({1, -2}, kInt32), {2}, kInt32, {-1, 2});
  check_values(-tensor({1}, kUInt8), {1}, kUInt8, {255});
  expect_error<TypeError>([] { (void)-tensor({true}); }, "[neg]");
}

TEST_CASE("broadcast_shapes: rules and message") {
  CHECK(broadcast_shapes({2, 1}, {3}, "op").vec() == std::vector<int64_t>{2, 3});
  CHECK(broadcast_shapes({}, {4, 5}, "op").vec() == std::vector<int64_t>{4, 5});
  CHECK(broadcast_shapes({0, 1}, {1, 3}, "op").vec() == std::vector<int64_t>{0, 3});
  CHECK(broadcast_shapes({1}, {0}, "op").vec() == std::vector<int64_t>{0});
  expect_error<ValueError>([] { (void)broadcast_shapes({2, 3}, {3, 3}, "op"); },
                           "[op] shapes [2, 3] and [3, 3] cannot be broadcast (dimension 0: 2 vs 3)");
}

TEST_CASE("pointwise: int8 and int16 arithmetic wraps and promotes like PyTorch") {
  using strata::testing::check_values;
  Tensor i8 = tensor({int8_t{127}, int8_t{-128}, int8_t{5}});
  Tensor i16 = tensor({int16_t{1000}, int16_t{-1000}, int16_t{2}});
  check_values(i8 + tensor({int8_t{1}, int8_t{-1}, int8_t{1}}), {3}, kInt8, {-128, 127, 6});  // wraps
  check_values(i8 + i16, {3}, kInt16, {1127, -1128, 7});
  check_values(i8 * tensor({uint8_t{2}, uint8_t{1}, uint8_t{3}}), {3}, kInt16, {254, -128, 15});  // uint8 with int8
  check_values(i16 - 1, {3}, kInt16, {999, -1001, 1});  // an integer Scalar keeps the tensor's dtype
  check_values(i8 * 0.5, {3}, kFloat32, {63.5, -64, 2.5});
  check_values(div(i16, tensor({int16_t{8}, int16_t{8}, int16_t{8}})), {3}, kFloat32, {125, -125, 0.25});
  check_values(i16 + arange(3, kInt32), {3}, kInt32, {1000, -999, 4});
  Tensor inplace = i16.clone();
  inplace.add_(i8);
  check_values(inplace, {3}, kInt16, {1127, -1128, 7});
  Tensor narrowed = i8.clone();
  narrowed.add_(i16);  // int16 may be cast into int8 in place (same category), wrapping, as in PyTorch
  check_values(narrowed, {3}, kInt8, {1127 - 1024, -1128 + 1024, 7});
}

// Note [Small same-shape float ops]: the short path and the generic kernel (reached through
// the out= form) agree bit for bit, special values included, on both sides of the size limit.
TEST_CASE("pointwise: small same-shape float32 add/sub/mul/div equal the generic kernel's bits") {
  manual_seed(11);
  const float specials[] = {0.0f, -0.0f, 1e-40f, -1e-40f, INFINITY, -INFINITY, NAN, 3.4e38f, -1.5f, 7.0f};
  for (int64_t n : {int64_t{1}, int64_t{10}, int64_t{4096}, int64_t{4097}}) {
    Tensor a = randn({n}) * 100, b = randn({n});
    float* pa = a.data_ptr<float>();
    float* pb = b.data_ptr<float>();
    for (int64_t i = 0; i < std::min<int64_t>(n, 10); ++i) pa[i] = specials[i], pb[i] = specials[9 - i];
    auto same_bits = [](const Tensor& x, const Tensor& y) {
      return x.sizes() == y.sizes() && x.dtype() == y.dtype() &&
             std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.numel()) * sizeof(float)) == 0;
    };
    Tensor out = empty({0});
    CHECK(same_bits(add(a, b), add_out(out, a, b)));
    CHECK(same_bits(sub(a, b), sub_out(out, a, b)));
    CHECK(same_bits(mul(a, b), mul_out(out, a, b)));
    CHECK(same_bits(div(a, b), div_out(out, a, b)));
    CHECK(same_bits(add(a, b, 0.5), add_out(out, a, b, 0.5)));  // alpha is not 1: the generic kernel
    Tensor view = a.view({n, 1}).expand({n, 2}).select(1, 0);     // not the same shape kind of input
    CHECK(same_bits(add(a, view), add_out(out, a, view)));
  }
  Tensor m = randn({3, 4});
  Tensor mt = randn({4, 3}).t();  // same sizes, not contiguous: the generic kernel
  Tensor out = empty({0});
  CHECK(equal(m + mt, add_out(out, m, mt)));
  CHECK((m + mt).is_contiguous());
  check_values(tensor({1.0f, 2.0f}) / tensor({4.0f, -0.0f}), {2}, kFloat32, {0.25, -INFINITY});
}
