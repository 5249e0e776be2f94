// Tests for ops/creation.cpp: empty, zeros, ones, full, arange, rand, randn, the *_like
// functions and tensor().
#include "op_test_util.h"

#include <strata/ops/structured.h>

using namespace strata;
using strata::testing::check_meta_matches;
using strata::testing::check_values;
using strata::testing::expect_error;
using strata::testing::values_of;

TEST_CASE("empty: shape, default dtype, options and meta") {
  Tensor t = empty({2, 3});
  CHECK(t.sizes() == IntArrayRef{2, 3});
  CHECK(t.dtype() == kFloat32);
  CHECK(t.is_cpu());
  CHECK(t.is_contiguous());
  CHECK(empty({4}, kInt32).dtype() == kInt32);
  Tensor meta = empty({5, 0}, TensorOptions(kFloat64).device(kMeta));
  CHECK(meta.is_meta());
  CHECK(meta.dtype() == kFloat64);
  CHECK(meta.numel() == 0);
  CHECK(empty({}).dim() == 0);
  expect_error<ValueError>([] { (void)empty({2, -1}); }, "[empty]");
}

TEST_CASE("zeros and ones: values in every dtype") {
  for (ScalarType dtype : {kBool, kUInt8, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64}) {
    INFO("dtype ", dtype);
    check_values(zeros({2, 2}, dtype), {2, 2}, dtype, {0, 0, 0, 0});
    check_values(ones({3}, dtype), {3}, dtype, {1, 1, 1});
  }
  check_values(zeros({}), {}, kFloat32, {0});
  check_values(ones({0, 4}), {0, 4}, kFloat32, {});
  check_meta_matches(zeros({3, 1}, kMeta), zeros({3, 1}));
  check_meta_matches(ones({2}, TensorOptions(kInt64).device(kMeta)), ones({2}, kInt64));
  expect_error<ValueError>([] { (void)zeros({-3}); }, "[zeros]");
  expect_error<ValueError>([] { (void)ones({-3}); }, "[ones]");
}

TEST_CASE("full: the dtype comes from the value unless given") {
  check_values(full({2}, 3), {2}, kInt64, {3, 3});
  check_values(full({2}, 2.5), {2}, kFloat32, {2.5, 2.5});
  check_values(full({1}, true), {1}, kBool, {1});
  check_values(full({2, 1}, 7, kFloat64), {2, 1}, kFloat64, {7, 7});
  check_values(full({1}, 2.7, kInt32), {1}, kInt32, {2});  // truncates like PyTorch
  check_values(full({1}, -1, kUInt8), {1}, kUInt8, {255});
  check_values(full({}, 0.5, kFloat16), {}, kFloat16, {0.5});
  check_meta_matches(full({3}, 1.5, kMeta), full({3}, 1.5));
  expect_error<ValueError>([] { (void)full({2}, 300, kUInt8); },
                           "[full] value 300 cannot be converted to type UInt8 without overflow");
  expect_error<ValueError>([] { (void)full({2}, 1e6, kFloat16); }, "[full] value");
  expect_error<ValueError>([] { (void)full({2}, 300, TensorOptions(kUInt8).device(kMeta)); }, "[full] value 300");
}

TEST_CASE("arange: integer and floating ranges") {
  check_values(arange(5), {5}, kInt64, {0, 1, 2, 3, 4});
  check_values(arange(0, 1, 0.25), {4}, kFloat32, {0, 0.25, 0.5, 0.75});
  check_values(arange(5, 0, -2), {3}, kInt64, {5, 3, 1});
  check_values(arange(1, 2.5, 0.5), {3}, kFloat32, {1, 1.5, 2});
  check_values(arange(1.0, 2.0), {1}, kFloat32, {1});
  check_values(arange(3, kFloat64), {3}, kFloat64, {0, 1, 2});
  check_values(arange(0, 10, 3, kInt32), {4}, kInt32, {0, 3, 6, 9});
  check_values(arange(3, 3), {0}, kInt64, {});
  const int64_t big = int64_t{1} << 53;
  Tensor large = arange(big, big + 3);
  CHECK(large.data_ptr<int64_t>()[2] == big + 2);  // exact integer arithmetic
  check_meta_matches(arange(10, kMeta), arange(10));
  check_meta_matches(arange(0.0, 1.0, 0.1, kMeta), arange(0.0, 1.0, 0.1));
  CHECK(arange(0.0, 1.0, 0.1).numel() == 10);
}

TEST_CASE("arange: errors") {
  expect_error<ValueError>([] { (void)arange(0, 5, 0); }, "[arange] step must be nonzero");
  expect_error<ValueError>([] { (void)arange(5, 0, 1); }, "[arange] step 1 has the wrong sign");
  expect_error<ValueError>([] { (void)arange(0, 5, -1); }, "[arange]");
  expect_error<ValueError>([] { (void)arange(0.0, INFINITY); }, "[arange] unsupported range");
  expect_error<ValueError>([] { (void)arange(5, 0, 1, kMeta); }, "[arange]");
}

TEST_CASE("full: a uint64_t value above int64's range keeps its value") {
  constexpr uint64_t largest = std::numeric_limits<uint64_t>::max();
  CHECK(full({1}, largest, kFloat64).item<double>() == 18446744073709551615.0);
  CHECK(full({1}, uint64_t{1} << 63, kFloat32).item<double>() == 9223372036854775808.0);
  expect_error<ValueError>([] { (void)full({1}, largest); }, "[full] value 18446744073709551615", {"Int64"});
  expect_error<ValueError>([] { (void)full({1}, largest, kUInt8); }, "[full]", {"UInt8"});
}

TEST_CASE("arange: lengths near the int64 limits are exact") {
  constexpr int64_t lowest = std::numeric_limits<int64_t>::min(), highest = std::numeric_limits<int64_t>::max();
  Tensor extremes = arange(lowest, highest, highest);
  REQUIRE(extremes.numel() == 3);
  CHECK(extremes.select(0, 0).item<int64_t>() == lowest);
  CHECK(extremes.select(0, 1).item<int64_t>() == -1);
  CHECK(extremes.select(0, 2).item<int64_t>() == highest - 1);
  Tensor wide = arange(-5, highest, int64_t{1} << 62);  // -5, 2^62 - 5, 2^63 - 5
  REQUIRE(wide.numel() == 3);
  CHECK(wide.select(0, 1).item<int64_t>() == (int64_t{1} << 62) - 5);
  CHECK(wide.select(0, 2).item<int64_t>() == highest - 4);
  CHECK(arange(lowest, highest, highest, kMeta).numel() == 3);
  expect_error<ValueError>([] { (void)arange(lowest, highest); }, "[arange]", {"too large"});
  expect_error<ValueError>([] { (void)arange(lowest, highest, 1, kMeta); }, "[arange]", {"too large"});
}

TEST_CASE("rand and randn: ranges, dtypes, reproducibility") {
  manual_seed(42);
  Tensor u = rand({1000});
  CHECK(u.dtype() == kFloat32);
  const std::vector<double> values = values_of(u);
  double mean = 0;
  for (double v : values) {
    CHECK(v >= 0.0);
    CHECK(v < 1.0);
    mean += v / 1000;
  }
  CHECK(mean == doctest::Approx(0.5).epsilon(0.1));
  manual_seed(42);
  CHECK(values_of(rand({1000})) == values);  // same seed, same numbers
  CHECK(values_of(rand({1000})) != values);  // the generator moved on
  for (ScalarType dtype : {kFloat16, kBFloat16, kFloat64}) {
    for (double v : values_of(rand({200}, dtype))) {
      CHECK(v >= 0.0);
      CHECK(v < 1.0);
    }
  }
  Tensor n = randn({10001}, kFloat64);
  double sum = 0, square = 0;
  for (double v : values_of(n)) {
    sum += v;
    square += v * v;
  }
  CHECK(sum / 10001 == doctest::Approx(0.0).epsilon(0.05).scale(1));
  CHECK(square / 10001 == doctest::Approx(1.0).epsilon(0.05));
  check_meta_matches(rand({2, 3}, kMeta), rand({2, 3}));
  check_meta_matches(randn({4}, TensorOptions(kFloat16).device(kMeta)), randn({4}, kFloat16));
  CHECK(rand({0}).numel() == 0);
  expect_error<TypeError>([] { (void)rand({2}, kInt64); }, "[rand] expected a floating point dtype, got Int64");
  expect_error<TypeError>([] { (void)randn({2}, kBool); }, "[randn]");
}

TEST_CASE("like: options default to the tensor's") {
  Tensor source = tensor({1, 2, 3}, kInt32);
  check_values(zeros_like(source), {3}, kInt32, {0, 0, 0});
  check_values(ones_like(source, kFloat64), {3}, kFloat64, {1, 1, 1});
  check_values(full_like(source, 7), {3}, kInt32, {7, 7, 7});
  CHECK(empty_like(source).dtype() == kInt32);
  CHECK(empty_like(source, kMeta).is_meta());
  CHECK(rand_like(source, kFloat32).sizes() == IntArrayRef{3});
  CHECK(randn_like(zeros({2, 2})).sizes() == IntArrayRef{2, 2});
  expect_error<TypeError>([&] { (void)rand_like(source); }, "[rand]");
}

TEST_CASE("tensor: a single value is 0-d, with the literal dtype rule") {
  check_values(tensor(3.5), {}, kFloat32, {3.5});
  check_values(tensor(7), {}, kInt64, {7});
  check_values(tensor(true), {}, kBool, {1});
  check_values(tensor(2.5f, kFloat64), {}, kFloat64, {2.5});
  check_values(tensor(int8_t{-3}), {}, kInt8, {-3});  // narrow integer types keep their dtype, as in LibTorch
}

TEST_CASE("tensor: nested initializer lists give 2-d and 3-d tensors; ragged lists throw") {
  check_values(tensor({{1, 2}, {3, 4}}), {2, 2}, kInt64, {1, 2, 3, 4});
  check_values(tensor({{1.5, 2.5, 3.5}}), {1, 3}, kFloat32, {1.5, 2.5, 3.5});
  check_values(tensor({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}, {{9, 10}, {11, 12}}}, kFloat64), {3, 2, 2}, kFloat64,
               {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  check_values(tensor({{true}, {false}}), {2, 1}, kBool, {1, 0});
  expect_error<ValueError>([] { (void)tensor({{1, 2}, {3}}); }, "[tensor] ragged nested list: expected 2",
                           {"got 1"});
  expect_error<ValueError>([] { (void)tensor({{{1, 2}}, {{3, 4}, {5, 6}}}); }, "[tensor] ragged nested list");
  expect_error<ValueError>([] { (void)tensor({{{1, 2}, {3}}}); }, "[tensor] ragged nested list");
}

TEST_CASE("tensor: a std::vector keeps its element type's dtype") {
  CHECK(tensor(std::vector<int>{1, 2}).dtype() == kInt32);
  CHECK(tensor(std::vector<double>{1, 2}).dtype() == kFloat64);
  CHECK(tensor(std::vector<float>{1, 2}).dtype() == kFloat32);
  CHECK(tensor(std::vector<int64_t>{1, 2}).dtype() == kInt64);
  CHECK(tensor(std::vector<bool>{true}).dtype() == kBool);
  CHECK(tensor(std::vector<uint8_t>{1}).dtype() == kUInt8);
  CHECK(tensor(std::vector<int8_t>{-1}).dtype() == kInt8);
  CHECK(tensor(std::vector<int16_t>{-1}).dtype() == kInt16);
  check_values(tensor(std::vector<int16_t>{-300, 300}), {2}, kInt16, {-300, 300});
  check_values(tensor(std::vector<int>{1, 2, 3, 4}, {2, 2}), {2, 2}, kInt32, {1, 2, 3, 4});
  check_values(tensor(std::vector<double>{1, 2}, kFloat32), {2}, kFloat32, {1, 2});
}

TEST_CASE("tensor: set_default_dtype changes what floating literals, full, arange and empty give") {
  struct DefaultDtypeScope {
    DefaultDtypeScope() { set_default_dtype(kFloat64); }
    ~DefaultDtypeScope() { set_default_dtype(kFloat32); }
  } scope;
  CHECK(tensor({1.5, 2.5}).dtype() == kFloat64);
  CHECK(tensor(0.1).item<double>() == 0.1);
  CHECK(tensor({1, 2}).dtype() == kInt64);
  CHECK(full({2}, 0.5).dtype() == kFloat64);
  CHECK(full({2}, 3).dtype() == kInt64);
  CHECK(arange(0.0, 1.0, 0.5).dtype() == kFloat64);
  CHECK(arange(3).dtype() == kInt64);
  CHECK(empty({2}).dtype() == kFloat64);
  CHECK(zeros({2}).dtype() == kFloat64);
  CHECK(rand({2}).dtype() == kFloat64);
  CHECK(linspace(0, 1, 3).dtype() == kFloat64);
  CHECK(tensor(std::vector<float>{1}).dtype() == kFloat32);  // vectors keep their own type
}

TEST_CASE("tensor: dtype inference and copies of the values") {
  check_values(tensor({1, 2, 3}), {3}, kInt64, {1, 2, 3});
  check_values(tensor({1.5f, 2.5f}), {2}, kFloat32, {1.5, 2.5});
  check_values(tensor({1.5, 2.5}), {2}, kFloat32, {1.5, 2.5});
  check_values(tensor({true, false}), {2}, kBool, {1, 0});
  check_values(tensor({short{4}}), {1}, kInt16, {4});
  check_values(tensor({4LL}), {1}, kInt64, {4});
  check_values(tensor({1, 2}, kFloat64), {2}, kFloat64, {1, 2});
  check_values(tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}), {2, 3}, kFloat64, {1, 2, 3, 4, 5, 6});
  check_values(tensor(std::vector<bool>{true, false, true}, {3}), {3}, kBool, {1, 0, 1});
  check_values(tensor(std::vector<int64_t>{5}, IntArrayRef{}), {}, kInt64, {5});
  check_values(tensor(std::vector<float>{}, {0, 2}), {0, 2}, kFloat32, {});
  Tensor meta = tensor({1.0f, 2.0f}, kMeta);
  CHECK(meta.is_meta());
  CHECK(meta.sizes() == IntArrayRef{2});
  expect_error<ValueError>([] { (void)tensor(std::vector<float>{1, 2, 3}, {2, 2}); },
                           "[tensor] got 3 values for shape [2, 2] (4 elements)");
}

TEST_CASE("creation: requires_grad in the options makes a leaf that requires grad") {
  CHECK(zeros({2}, requires_grad()).requires_grad());
  CHECK(tensor({1.0f}, requires_grad()).is_leaf());
  CHECK(ones_like(zeros({1}), requires_grad()).requires_grad());
  CHECK(arange(0.0, 3.0, 1.0, requires_grad()).requires_grad());
  expect_error<TypeError>([] { (void)zeros({2}, TensorOptions(kInt64).requires_grad(true)); }, "[requires_grad_]");
}

TEST_CASE("linspace: inclusive endpoints, dtypes and edge counts") {
  check_values(linspace(0, 1, 5), {5}, kFloat32, {0, 0.25, 0.5, 0.75, 1});
  check_values(linspace(-1.0, 1.0, 3, kFloat64), {3}, kFloat64, {-1, 0, 1});
  check_values(linspace(10, 0, 3), {3}, kFloat32, {10, 5, 0});
  check_values(linspace(0, 10, 4, kInt64), {4}, kInt64, {0, 3, 6, 10});  // truncated, end exact
  check_values(linspace(0, 1, 3, kFloat16), {3}, kFloat16, {0, 0.5, 1});
  check_values(linspace(2, 7, 1), {1}, kFloat32, {2});
  check_values(linspace(2, 7, 0), {0}, kFloat32, {});
  Tensor fine = linspace(0.1, 0.9, 9, kFloat64);
  CHECK(values_of(fine).back() == 0.9);  // the end is exact, not 0.1 + 8 * step
  check_meta_matches(linspace(0, 1, 4, kMeta), linspace(0, 1, 4));
  expect_error<ValueError>([] { (void)linspace(0, 1, -1); }, "[linspace] number of steps must be non-negative, got -1");
  expect_error<TypeError>([] { (void)linspace(0, 1, 2, kBool); }, "[linspace] dtype Bool is not supported");
}

TEST_CASE("eye: identity matrices in every dtype") {
  check_values(eye(3), {3, 3}, kFloat32, {1, 0, 0, 0, 1, 0, 0, 0, 1});
  check_values(eye(2, 3), {2, 3}, kFloat32, {1, 0, 0, 0, 1, 0});
  check_values(eye(3, 2, kInt64), {3, 2}, kInt64, {1, 0, 0, 1, 0, 0});
  check_values(eye(2, kBool), {2, 2}, kBool, {1, 0, 0, 1});
  check_values(eye(2, kBFloat16), {2, 2}, kBFloat16, {1, 0, 0, 1});
  check_values(eye(0), {0, 0}, kFloat32, {});
  check_values(eye(2, 0), {2, 0}, kFloat32, {});
  check_meta_matches(eye(4, TensorOptions(kFloat64).device(kMeta)), eye(4, kFloat64));
  check_meta_matches(eye(2, 5, kMeta), eye(2, 5));
  CHECK(eye(2, TensorOptions(kFloat64).requires_grad(true)).requires_grad());
  expect_error<ValueError>([] { (void)eye(-1); }, "[eye] n and m must be non-negative, got n=-1 and m=-1");
  expect_error<ValueError>([] { (void)eye(2, -3); }, "[eye] n and m must be non-negative");
}

TEST_CASE("randint: integers in [low, high), reproducible under manual_seed") {
  manual_seed(7);
  Tensor a = randint(10, {1000});
  CHECK(a.dtype() == kInt64);
  CHECK(a.sizes() == IntArrayRef{1000});
  std::vector<int> counts(10, 0);
  for (double v : values_of(a)) {
    REQUIRE((v >= 0 && v < 10 && v == std::floor(v)));
    ++counts[static_cast<size_t>(v)];
  }
  for (int count : counts) CHECK(count > 50);  // every value appears (expected 100 each)
  manual_seed(7);
  CHECK(values_of(randint(10, {1000})) == values_of(a));
  CHECK(values_of(randint(10, {1000})) != values_of(a));
  for (double v : values_of(randint(-3, 3, {200}, kInt32))) CHECK((v >= -3 && v < 3));
  check_values(randint(5, 6, {3}, kFloat64), {3}, kFloat64, {5, 5, 5});
  check_values(randint(5, 6, {2}, kUInt8), {2}, kUInt8, {5, 5});
  check_values(randint(1, {0}), {0}, kInt64, {});
  const int64_t big = int64_t{1} << 62;
  for (double v : values_of(randint(-big, big, {100}))) CHECK((v >= -static_cast<double>(big) && v <= big));
  check_meta_matches(randint(3, {2, 2}, kMeta), randint(3, {2, 2}));
  check_meta_matches(randint(0, 3, {4}, TensorOptions(kInt32).device(kMeta)), randint(0, 3, {4}, kInt32));
  expect_error<ValueError>([] { (void)randint(5, 5, {2}); }, "[randint] low must be less than high, got low=5 and high=5");
  expect_error<ValueError>([] { (void)randint(0, 300, {2}, kUInt8); }, "[randint] value 299 cannot be converted");
  expect_error<ValueError>([] { (void)randint(3, {-1}); }, "[randint]");
}

TEST_CASE("creation: int8 and int16 in every factory") {
  check_values(zeros({2}, kInt8), {2}, kInt8, {0, 0});
  check_values(ones({2}, kInt16), {2}, kInt16, {1, 1});
  check_values(full({2}, -128, kInt8), {2}, kInt8, {-128, -128});
  check_values(arange(-2, 2, 1, kInt16), {4}, kInt16, {-2, -1, 0, 1});
  check_values(eye(2, kInt8), {2, 2}, kInt8, {1, 0, 0, 1});
  check_values(linspace(-4, 4, 3, kInt16), {3}, kInt16, {-4, 0, 4});
  Tensor drawn = randint(-5, 5, {100}, kInt8);
  CHECK(drawn.dtype() == kInt8);
  CHECK(drawn.min().item<int64_t>() >= -5);
  CHECK(drawn.max().item<int64_t>() < 5);
  expect_error<ValueError>([] { (void)full({1}, 128, kInt8); }, "[full] value 128 cannot be converted to type Int8");
  expect_error<ValueError>([] { (void)full({1}, 40000, kInt16); }, "[full]", {"Int16"});
}

TEST_CASE("creation: arange(end), eye(n) and randint(high) forward to the general forms on every backend") {
  for (const char* name : {"strata::arange", "strata::eye", "strata::randint"}) {
    INFO(name);
    CHECK_FALSE(find_op(name).has_kernel_for(DispatchKey::CPU));
    CHECK_FALSE(find_op(name).has_kernel_for(DispatchKey::Meta));
  }
  for (const char* name : {"strata::empty.memory_format", "strata::zeros", "strata::full", "strata::arange.start_step",
                           "strata::eye.m", "strata::randint.low", "strata::linspace", "strata::rand"})
    CHECK(detail::has_derived_meta(name));
  check_meta_matches(eye(3, kMeta), eye(3));
  check_values(arange(3, kInt32), {3}, kInt32, {0, 1, 2});
  expect_error<ValueError>([] { (void)randint(0, {2}, kMeta); }, "[randint] low must be less than high");
  expect_error<ValueError>([] { (void)randint(300, {2}, TensorOptions(kUInt8).device(kMeta)); }, "[randint]",
                           {"UInt8"});
}

TEST_CASE("creation: new_empty, new_zeros, new_ones and new_full take the tensor's dtype and device") {
  const Tensor x = arange(6, kInt16).reshape({2, 3}).t();
  const Tensor z = x.new_zeros({4});
  check_values(z, {4}, kInt16, {0, 0, 0, 0});
  check_values(x.new_ones({2}, kFloat64), {2}, kFloat64, {1, 1});
  check_values(x.new_full({2, 2}, 7), {2, 2}, kInt16, {7, 7, 7, 7});
  const Tensor e = x.new_empty({3, 0});
  CHECK(e.sizes() == IntArrayRef{3, 0});
  CHECK(e.dtype() == kInt16);
  CHECK(e.is_contiguous());
  const Tensor leaf = randn({2}).new_zeros({3}, requires_grad());
  CHECK(leaf.requires_grad());
  CHECK(leaf.is_leaf());
  check_meta_matches(x.to(kMeta).new_full({2}, 3), x.new_full({2}, 3));
  expect_error<ValueError>([&] { (void)x.new_full({1}, 40000); }, "[full]", {"Int16"});
}

TEST_CASE("creation: empty takes a memory format as an argument or in the options, not both") {
  CHECK(empty({2, 3, 4, 5}, {}, MemoryFormat::ChannelsLast).is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(empty({2, 3, 4, 5}, kFloat64, MemoryFormat::Contiguous).is_contiguous());
  expect_error<ValueError>(
      [] { (void)empty({2, 3, 4, 5}, memory_format(MemoryFormat::ChannelsLast), MemoryFormat::ChannelsLast); },
      "[empty] memory_format is set both in the options and as an argument");
}
