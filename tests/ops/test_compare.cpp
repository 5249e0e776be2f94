// Tests for ops/compare.cpp: equal and allclose.
#include "op_test_util.h"

using namespace strata;
using strata::testing::expect_error;

TEST_CASE("equal: same shape and values, any dtypes and strides") {
  Tensor a = arange(6, kFloat32).view({2, 3});
  CHECK(equal(a, a.clone()));
  CHECK(equal(a, arange(6).view({2, 3})));  // int64 vs float32 compare by value
  CHECK_FALSE(equal(a, a.view({3, 2})));    // shapes differ
  CHECK_FALSE(equal(a, a + 1));
  CHECK(equal(a.transpose(0, 1), a.transpose(0, 1).contiguous()));
  CHECK(equal(tensor({1.0f}).expand({3}), ones({3})));
  CHECK_FALSE(equal(tensor({NAN}), tensor({NAN})));
  CHECK(equal(zeros({0, 2}), zeros({0, 2}, kInt32)));
  CHECK(equal(tensor({true, false}), tensor({1, 0})));
  expect_error<Error>([] { (void)equal(zeros({2}, kMeta), zeros({2}, kMeta)); }, "[equal] cannot compare meta tensors");
  expect_error<Error>([] { (void)equal(zeros({2}), zeros({2}, kMeta)); },
                      "[equal] expected all tensors on the same device, got cpu and meta");
}

TEST_CASE("allclose: tolerances, broadcasting, NaN and infinities") {
  Tensor a = tensor({1.0, 100.0}, kFloat64);
  CHECK(allclose(a, a + 1e-9));
  CHECK_FALSE(allclose(a, a + 1e-3));
  CHECK(allclose(a, a + 1e-3, 1e-4, 1e-2));
  CHECK(allclose(tensor({100.0}), tensor({100.5}), 0.01));  // rtol scales with |b|
  CHECK_FALSE(allclose(tensor({100.0}), tensor({100.5}), 0.001));
  CHECK(allclose(tensor({1.0f, 1.0f}), tensor({1.0f})));     // broadcasts
  CHECK(allclose(tensor({INFINITY, -INFINITY}), tensor({INFINITY, -INFINITY})));
  CHECK_FALSE(allclose(tensor({INFINITY}), tensor({-INFINITY})));
  CHECK_FALSE(allclose(tensor({NAN}), tensor({NAN})));
  CHECK(allclose(tensor({1, 2}), tensor({1.0f, 2.0f})));
  CHECK(allclose(zeros({0}), zeros({0})));
  expect_error<ValueError>([] { (void)allclose(zeros({2}), zeros({3})); }, "[allclose] shapes [2] and [3]");
  expect_error<ValueError>([] { (void)allclose(zeros({2}), zeros({2}), -1.0); }, "[allclose] rtol and atol");
  expect_error<Error>([] { (void)allclose(zeros({2}, kMeta), zeros({2}, kMeta)); }, "[allclose] cannot compare meta");
}

// ---------------------------------------------------------------------------------------
// Elementwise comparisons, where and logical_not.

namespace {
using strata::testing::check_meta_matches;
using strata::testing::check_values;

using CompareFn = Tensor (*)(const Tensor&, const Tensor&);
using CompareScalarFn = Tensor (*)(const Tensor&, const Scalar&);
}  // namespace

TEST_CASE("eq ne lt le gt ge: tensor operands, values and kBool results") {
  Tensor a = tensor({1.0f, 2.0f, 3.0f, NAN});
  Tensor b = tensor({3.0f, 2.0f, 1.0f, NAN});
  check_values(eq(a, b), {4}, kBool, {0, 1, 0, 0});
  check_values(ne(a, b), {4}, kBool, {1, 0, 1, 1});
  check_values(lt(a, b), {4}, kBool, {1, 0, 0, 0});
  check_values(le(a, b), {4}, kBool, {1, 1, 0, 0});
  check_values(gt(a, b), {4}, kBool, {0, 0, 1, 0});
  check_values(ge(a, b), {4}, kBool, {0, 1, 1, 0});
  check_values(a.eq(b), {4}, kBool, {0, 1, 0, 0});
  check_values(a.ge(b), {4}, kBool, {0, 1, 1, 0});
  // Operands promote first: int32 2 and float 2.5 compare in float32.
  check_values(lt(tensor({2, 3}, kInt32), tensor({2.5f})), {2}, kBool, {1, 0});
  check_values(eq(tensor({true, false}), tensor({1, 1})), {2}, kBool, {1, 0});
  check_values(gt(tensor({200}, kUInt8), tensor({-1}, kInt32)), {1}, kBool, {1});
  check_values(eq(tensor({0.1f}, kFloat16), tensor({0.1f}, kFloat16)), {1}, kBool, {1});
}

TEST_CASE("eq ne lt le gt ge: scalar operands") {
  Tensor t = tensor({1, 2, 3});
  check_values(eq(t, 2), {3}, kBool, {0, 1, 0});
  check_values(ne(t, 2), {3}, kBool, {1, 0, 1});
  check_values(lt(t, 2), {3}, kBool, {1, 0, 0});
  check_values(le(t, 2), {3}, kBool, {1, 1, 0});
  check_values(gt(t, 2), {3}, kBool, {0, 0, 1});
  check_values(t.ge(2.5), {3}, kBool, {0, 0, 1});  // compared in float32
  check_values(t.lt(true), {3}, kBool, {0, 0, 0});
  check_values(gt(tensor({0.5f, NAN}), 0), {2}, kBool, {1, 0});
  expect_error<ValueError>([] { (void)lt(tensor({1}, kUInt8), 300); }, "[lt] value 300 cannot be converted to type UInt8");
}

TEST_CASE("comparisons: broadcasting, non-contiguous, zero-size, zero-dim and Meta") {
  Tensor column = tensor(std::vector<int64_t>{1, 2}, {2, 1});
  Tensor row = tensor({0, 1, 2});
  check_values(le(column, row), {2, 3}, kBool, {0, 1, 1, 0, 0, 1});
  check_values(le(row, full({}, 1)), {3}, kBool, {1, 1, 0});  // a one-element operand is read once
  check_values(gt(full({}, 1), row), {3}, kBool, {1, 0, 0});
  Tensor t = arange(6, kFloat64).view({2, 3}).transpose(0, 1);  // [[0, 3], [1, 4], [2, 5]]
  check_values(ge(t, tensor({1.0, 4.0}, kFloat64)), {3, 2}, kBool, {0, 0, 1, 1, 1, 1});
  check_values(eq(t, t.contiguous()), {3, 2}, kBool, {1, 1, 1, 1, 1, 1});
  check_values(lt(t, 2.5), {3, 2}, kBool, {1, 0, 1, 0, 1, 0});
  check_values(eq(zeros({0, 2}), zeros({2})), {0, 2}, kBool, {});
  check_values(ne(full({}, 1.0), full({}, 2.0)), {}, kBool, {1});
  const std::vector<CompareFn> ops = {&strata::eq, &strata::ne, &strata::lt, &strata::le, &strata::gt, &strata::ge};
  for (CompareFn op : ops) check_meta_matches(op(ones({2, 1}, kMeta), ones({3}, kMeta)), op(ones({2, 1}), ones({3})));
  const std::vector<CompareScalarFn> scalar_ops = {&strata::eq, &strata::ne, &strata::lt,
                                                   &strata::le, &strata::gt, &strata::ge};
  for (CompareScalarFn op : scalar_ops) check_meta_matches(op(ones({2}, kMeta), 1.5), op(ones({2}), 1.5));
  expect_error<ValueError>([] { (void)eq(zeros({2}), zeros({3})); }, "[eq] shapes [2] and [3] cannot be broadcast");
  expect_error<Error>([] { (void)gt(zeros({2}), zeros({2}, kMeta)); }, "[gt] expected all tensors on the same device");
}

TEST_CASE("comparisons: results carry no gradient") {
  Tensor x = tensor({-1.0, 2.0}, kFloat64).requires_grad_();
  Tensor mask = gt(x, 0);
  CHECK(mask.dtype() == kBool);
  CHECK_FALSE(mask.requires_grad());
  CHECK_FALSE(eq(x, x).requires_grad());
  CHECK_FALSE(logical_not(x).requires_grad());
}

TEST_CASE("where: picks self where the condition holds, broadcasting and promoting") {
  Tensor condition = tensor({true, false, true});
  check_values(where(condition, tensor({1.0f, 2.0f, 3.0f}), tensor({-1.0f, -2.0f, -3.0f})), {3}, kFloat32, {1, -2, 3});
  check_values(tensor({1, 2, 3}).where(condition, tensor({0})), {3}, kInt64, {1, 0, 3});
  check_values(where(condition, tensor({1, 2, 3}, kInt32), full({}, 0.5)), {3}, kFloat32, {1, 0.5, 3});
  Tensor column = tensor(std::vector<bool>{true, false}, {2, 1});
  check_values(where(column, arange(3), full({}, -1)), {2, 3}, kInt64, {0, 1, 2, -1, -1, -1});
  Tensor t = arange(6, kFloat64).view({2, 3}).transpose(0, 1);
  check_values(where(gt(t, 2), t, zeros({1}, kFloat64)), {3, 2}, kFloat64, {0, 3, 0, 4, 0, 5});
  check_values(where(zeros({0}, kBool), zeros({0}), ones({1})), {0}, kFloat32, {});
  check_values(where(full({}, true), full({}, 1.0f, kFloat16), full({}, 2.0f, kFloat16)), {}, kFloat16, {1});
  check_meta_matches(where(ones({2, 1}, TensorOptions(kBool).device(kMeta)), ones({3}, kMeta), ones({}, kMeta)),
                     where(ones({2, 1}, kBool), ones({3}), ones({})));
  expect_error<TypeError>([] { (void)where(ones({2}), ones({2}), ones({2})); },
                          "[where] expected condition to be a Bool tensor, got Float32");
  expect_error<ValueError>([] { (void)where(ones({2}, kBool), ones({3}), ones({1})); }, "[where] shapes");
}

TEST_CASE("where: contiguous operands and single values agree with a scalar loop, every size") {
  // The flat loops (full operands, or one value given as a 0-dim tensor, a [1] tensor or an
  // expanded one) against a plain loop: sizes around the vector widths, and one above the
  // parallel grain size, with NaN and -0 passed through as values.
  manual_seed(11);
  for (const int64_t n : {1, 15, 16, 17, 100, 4097, 40000}) {
    CAPTURE(n);
    Tensor condition = gt(rand({n}), 0.5);
    Tensor x = randn({n}), y = randn({n});
    x.data_ptr<float>()[0] = NAN;
    const std::vector<Tensor> singles = {full({}, -0.0f), full({1}, 2.5f), full({}, 7.0f).expand({n})};
    const bool* c = condition.data_ptr<bool>();
    for (const Tensor& single : singles) {
      const float value = single.contiguous().data_ptr<float>()[0];
      const std::pair<Tensor, Tensor> cases[] = {{x, y}, {x, single}, {single, y}};
      for (const auto& [a, b] : cases) {
        const Tensor result = where(condition, a, b);
        REQUIRE(result.sizes() == std::vector<int64_t>{n});
        const float* r = result.data_ptr<float>();
        for (int64_t i = 0; i < n; ++i) {
          const float expected = c[i] ? (a.numel() == n && a.is_contiguous() ? a.data_ptr<float>()[i] : value)
                                      : (b.numel() == n && b.is_contiguous() ? b.data_ptr<float>()[i] : value);
          if (std::isnan(expected))
            CHECK(std::isnan(r[i]));
          else if (r[i] != expected || std::signbit(r[i]) != std::signbit(expected))
            FAIL_CHECK("element " << i);
        }
      }
    }
  }
}

TEST_CASE("where: gradients go to the picked operand, summed over broadcast dims") {
  manual_seed(3);
  Tensor condition = gt(rand({3, 2}), 0.5);
  auto fn = [condition](const tensor_list& t) { return tensor_list{where(condition, t[0], t[1])}; };
  Tensor self = (rand({2, 3}, kFloat64) - 0.5).detach().transpose(0, 1).requires_grad_();
  Tensor other = rand({2}, kFloat64).requires_grad_();
  const autograd::GradcheckResult result = autograd::gradcheck(fn, {self, other});
  CHECK_MESSAGE(static_cast<bool>(result), result.message());
  Tensor x = ones({3}, TensorOptions(kFloat64).requires_grad(true));
  Tensor y = ones({}, TensorOptions(kFloat64).requires_grad(true));
  where(tensor({true, false, false}), x, y).sum().backward();
  check_values(x.grad(), {3}, kFloat64, {1, 0, 0});
  check_values(y.grad(), {}, kFloat64, {2});
}

TEST_CASE("logical_not: zero is false, everything else (NaN too) is true") {
  check_values(logical_not(tensor({0.0f, 1.5f, NAN, -0.0f})), {4}, kBool, {1, 0, 0, 1});
  check_values(logical_not(tensor({0, 3}, kInt32)), {2}, kBool, {1, 0});
  check_values(tensor({true, false}).logical_not(), {2}, kBool, {0, 1});
  check_values(logical_not(tensor({0.0f}, kBFloat16).expand({2})), {2}, kBool, {1, 1});
  check_values(logical_not(zeros({0})), {0}, kBool, {});
  check_meta_matches(logical_not(ones({2}, TensorOptions(kInt64).device(kMeta))), logical_not(ones({2}, kInt64)));
}

TEST_CASE("compare: int8 and int16 inputs compare by value and promote in where") {
  using strata::testing::check_values;
  Tensor i8 = tensor({int8_t{-1}, int8_t{0}, int8_t{100}});
  Tensor i16 = tensor({int16_t{-1}, int16_t{256}, int16_t{100}});
  check_values(eq(i8, i16), {3}, kBool, {1, 0, 1});
  check_values(lt(i8, i16), {3}, kBool, {0, 1, 0});
  check_values(gt(i16, 255), {3}, kBool, {0, 1, 0});
  check_values(logical_not(i8), {3}, kBool, {0, 1, 0});
  check_values(where(eq(i8, i16), i8, i16), {3}, kInt16, {-1, 256, 100});
}

TEST_CASE("comparisons: a Scalar operand is checked the same on Meta and CPU") {
  for (Device device : {Device(kCPU), Device(kMeta)}) {
    INFO("device ", device);
    expect_error<ValueError>([&] { (void)lt(ones({2}, TensorOptions(kUInt8).device(device)), 300); },
                             "[lt] value 300 cannot be converted to type UInt8");
    CHECK(ge(ones({2}, TensorOptions(kUInt8).device(device)), 2.5).dtype() == kBool);  // compares in float32
  }
}
