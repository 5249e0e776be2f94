// Tests for cuda/unary_ops.h on the host: the unary kernels' math against the CPU ops.
#include <doctest/doctest.h>

#include <strata/cuda/unary_ops.h>

#include <string_view>

#include "cpu_reference.h"

using namespace strata;
using namespace strata::cuda::detail;
using namespace strata::testing::cuda_host;

namespace {

// Checks op(x) against cpu(tensor of xs), value by value: exactly, or within `tolerance`.
template <class T, class Op, class Cpu>
void check_against_cpu(const Op& op, Cpu cpu, const std::vector<T>& inputs, double tolerance = 0) {
  const std::vector<T> expected = cpu_values<T>(cpu(cpu_tensor(inputs)));
  REQUIRE(expected.size() == inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const T actual = op(inputs[i]);
    INFO("input ", +inputs[i], ": functor ", +actual, ", CPU ", +expected[i]);
    if (tolerance == 0) CHECK(same(actual, expected[i]));
    else CHECK(close(actual, expected[i], tolerance));
  }
}

template <class T>
void check_integer_ops() {
  const std::vector<T> inputs = integer_edges<T>();
  check_against_cpu<T>(NegOp{}, [](const Tensor& t) { return neg(t); }, inputs);
  check_against_cpu<T>(AbsOp{}, [](const Tensor& t) { return abs(t); }, inputs);
  check_against_cpu<T>(SignOp{}, [](const Tensor& t) { return sign(t); }, inputs);
  check_against_cpu<T>(ReluOp{}, [](const Tensor& t) { return relu(t); }, inputs);
}

template <class T>
void check_floating_math(double tolerance) {
  const std::vector<T> inputs = floating_specials<T>();
  check_against_cpu<T>(NegOp{}, [](const Tensor& t) { return neg(t); }, inputs);
  check_against_cpu<T>(AbsOp{}, [](const Tensor& t) { return abs(t); }, inputs);
  check_against_cpu<T>(SignOp{}, [](const Tensor& t) { return sign(t); }, inputs);
  check_against_cpu<T>(ReluOp{}, [](const Tensor& t) { return relu(t); }, inputs);
  check_against_cpu<T>(ExpOp{}, [](const Tensor& t) { return exp(t); }, inputs, tolerance);
  check_against_cpu<T>(LogOp{}, [](const Tensor& t) { return log(t); }, inputs, tolerance);
  check_against_cpu<T>(SqrtOp{}, [](const Tensor& t) { return sqrt(t); }, inputs);
  check_against_cpu<T>(RsqrtOp{}, [](const Tensor& t) { return rsqrt(t); }, inputs, tolerance);
  check_against_cpu<T>(SinOp{}, [](const Tensor& t) { return sin(t); }, inputs, tolerance);
  check_against_cpu<T>(CosOp{}, [](const Tensor& t) { return cos(t); }, inputs, tolerance);
  check_against_cpu<T>(TanhOp{}, [](const Tensor& t) { return tanh(t); }, inputs, tolerance);
  check_against_cpu<T>(SigmoidOp{}, [](const Tensor& t) { return sigmoid(t); }, inputs, tolerance);
  check_against_cpu<T>(SiluOp{}, [](const Tensor& t) { return silu(t); }, inputs, tolerance);
  check_against_cpu<T>(GeluErfOp{}, [](const Tensor& t) { return gelu(t, "none"); }, inputs, tolerance);
  check_against_cpu<T>(GeluTanhOp{}, [](const Tensor& t) { return gelu(t, "tanh"); }, inputs, tolerance);
}

}  // namespace

TEST_CASE("unary_ops: neg abs sign relu match the CPU at every integer type's edges") {
  check_integer_ops<uint8_t>();
  check_integer_ops<int8_t>();
  check_integer_ops<int16_t>();
  check_integer_ops<int32_t>();
  check_integer_ops<int64_t>();
  // Integers wrap: neg and abs of the minimum are the minimum.
  CHECK(NegOp{}(int8_t{-128}) == int8_t{-128});
  CHECK(AbsOp{}(std::numeric_limits<int64_t>::min()) == std::numeric_limits<int64_t>::min());
  // abs and sign keep bool.
  check_against_cpu<bool>(AbsOp{}, [](const Tensor& t) { return abs(t); }, {false, true});
  check_against_cpu<bool>(SignOp{}, [](const Tensor& t) { return sign(t); }, {false, true});
}

TEST_CASE("unary_ops: floating math matches the CPU, specials included") {
  check_floating_math<float>(2e-6);
  check_floating_math<double>(1e-13);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(SignOp{}(nan) == 0.0f);
  CHECK(std::isnan(ReluOp{}(nan)));
  CHECK(std::signbit(ReluOp{}(-0.0f)));  // -0 < 0 is false, as on the CPU
  CHECK(RsqrtOp{}(-0.0) == -std::numeric_limits<double>::infinity());
  CHECK(SigmoidOp{}(-1000.0f) == 0.0f);
  CHECK(SigmoidOp{}(1000.0f) == 1.0f);
}

TEST_CASE("unary_ops: gelu_backward matches the CPU in both forms") {
  const std::vector<double> inputs = {-6, -3, -1, -0.25, 0, 0.5, 1, 2.5, 8};
  const Tensor x = cpu_tensor(inputs), g = cpu_tensor(std::vector<double>(inputs.size(), 0.75));
  for (const std::string_view form : {"none", "tanh"}) {
    const std::vector<double> expected = cpu_values<double>(gelu_backward(g, x, form));
    for (size_t i = 0; i < inputs.size(); ++i) {
      const double actual =
          form == "none" ? GeluErfBackwardOp{}(0.75, inputs[i]) : GeluTanhBackwardOp{}(0.75, inputs[i]);
      INFO(form, " at ", inputs[i], ": functor ", actual, ", CPU ", expected[i]);
      CHECK(close(actual, expected[i], 1e-13));
    }
  }
}

TEST_CASE("unary_ops: clamp matches the CPU with NaN, crossed and missing bounds") {
  const std::vector<float> inputs = floating_specials<float>();
  const float inf = std::numeric_limits<float>::infinity();
  check_against_cpu<float>(ClampOp<float>{-1.5f, 2.0f}, [](const Tensor& t) { return clamp(t, -1.5, 2.0); }, inputs);
  check_against_cpu<float>(ClampOp<float>{3.0f, -1.0f}, [](const Tensor& t) { return clamp(t, 3.0, -1.0); }, inputs);
  check_against_cpu<float>(ClampOp<float>{clamp_lowest<float>(), 0.5f},
                           [](const Tensor& t) { return clamp(t, std::nullopt, 0.5); }, inputs);
  CHECK(clamp_lowest<float>() == -inf);
  const std::vector<int32_t> integers = integer_edges<int32_t>();
  check_against_cpu<int32_t>(ClampOp<int32_t>{-7, clamp_highest<int32_t>()},
                             [](const Tensor& t) { return clamp(t, -7, std::nullopt); }, integers);
  check_against_cpu<int32_t>(ClampOp<int32_t>{0, 1}, [](const Tensor& t) { return clamp(t, 0, 1); }, integers);
}

TEST_CASE("unary_ops: the wrapping helpers wrap and fill fills") {
  CHECK(wrapping_add(int8_t{127}, int8_t{1}) == int8_t{-128});
  CHECK(wrapping_sub(int16_t{-32768}, int16_t{1}) == int16_t{32767});
  CHECK(wrapping_mul(int64_t{1} << 62, int64_t{4}) == 0);
  CHECK(wrapping_add(uint8_t{255}, uint8_t{2}) == uint8_t{1});
  CHECK(wrapping_add(true, true) == true);
  CHECK(FillOp<float>{2.5f}() == 2.5f);
}
