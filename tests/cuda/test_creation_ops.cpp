// Tests for cuda/creation_ops.h on the host: the values the creation kernels write, against
// the CPU ops (arange, linspace, eye) and, for the random ones, their ranges, exactness and
// statistics (the CUDA numbers are not the CPU generator's).
#include <doctest/doctest.h>

#include <strata/cuda/creation_ops.h>

#include <set>

#include "cpu_reference.h"

using namespace strata;
using namespace strata::cuda::detail;
using namespace strata::testing::cuda_host;

namespace {

// op(i) for every index of `expected`, compared exactly.
template <class T, class Op>
void check_indexed(const Op& op, const std::vector<T>& expected) {
  for (size_t i = 0; i < expected.size(); ++i) {
    const T actual = static_cast<T>(op(static_cast<int64_t>(i)));
    INFO("index ", i, ": functor ", +actual, ", CPU ", +expected[i]);
    CHECK(same(actual, expected[i]));
  }
}

}  // namespace

TEST_CASE("creation_ops: arange matches the CPU for integer and floating ranges") {
  const auto integral = [](int64_t start, int64_t step) {
    return ArangeIntegralOp{static_cast<uint64_t>(start), static_cast<uint64_t>(step)};
  };
  check_indexed(integral(-7, 3), cpu_values<int64_t>(arange(-7, 30, 3)));
  check_indexed(integral(10, -4), cpu_values<int64_t>(arange(10, -10, -4)));
  constexpr int64_t lowest = std::numeric_limits<int64_t>::min(), highest = std::numeric_limits<int64_t>::max();
  check_indexed(integral(lowest, highest), cpu_values<int64_t>(arange(lowest, highest, highest)));
  check_indexed(ArangeFloatingOp{0.1, 0.17}, cpu_values<double>(arange(0.1, 2.3, 0.17, TensorOptions(kFloat64))));
  check_indexed(ArangeFloatingOp{-1.0, 0.3}, cpu_values<float>(arange(-1.0, 5.0, 0.3)));
  check_indexed(ArangeFloatingOp{1e6, 1e-3}, cpu_values<double>(arange(1e6, 1e6 + 1, 1e-3, TensorOptions(kFloat64))));
}

TEST_CASE("creation_ops: linspace matches the CPU, both ends exact") {
  for (const int64_t steps : {1, 2, 3, 7, 100, 1001}) {
    INFO(steps, " steps");
    check_indexed(linspace_op(-1.3, 2.9, steps),
                  cpu_values<double>(linspace(-1.3, 2.9, steps, TensorOptions(kFloat64))));
    check_indexed(linspace_op(0.0, 1.0, steps), cpu_values<float>(linspace(0.0, 1.0, steps)));
    check_indexed(linspace_op(-5, 17, steps), cpu_values<int32_t>(linspace(-5, 17, steps, TensorOptions(kInt32))));
  }
  const LinspaceOp op = linspace_op(0.1, 0.7, 11);
  CHECK(op(0) == 0.1);
  CHECK(op(10) == 0.7);
}

TEST_CASE("creation_ops: eye matches the CPU for square and oblong shapes") {
  for (const auto& [n, m] : {std::pair<int64_t, int64_t>{4, 4}, {2, 5}, {5, 2}, {1, 1}}) {
    INFO(n, " x ", m);
    check_indexed(EyeOp{m}, cpu_values<float>(eye(n, m)));
  }
}

TEST_CASE("creation_ops: rand draws exact values in [0, 1) by element index") {
  const uint64_t seed = 99, offset = 8;
  std::set<double> seen;
  double sum = 0;
  for (int64_t e = 0; e < 20000; ++e) {
    const float single = RandOp<24>{seed, offset}(e);
    const float half = RandOp<11>{seed, offset}(e);
    const double full = RandOp<53>{seed, offset}(e);
    CHECK((single >= 0 && single < 1 && half >= 0 && half < 1 && full >= 0 && full < 1));
    // Whole multiples of 2^-digits: exact in the dtype, so rounding to it never gives 1.
    CHECK(std::ldexp(half, 11) == std::floor(std::ldexp(half, 11)));
    CHECK(std::ldexp(single, 24) == std::floor(std::ldexp(single, 24)));
    seen.insert(full);
    sum += single;
  }
  CHECK(seen.size() == 20000);
  CHECK(sum / 20000 == doctest::Approx(0.5).epsilon(0.01));
  // Element e reads number e (one per element), or 2e and 2e + 1 for float64.
  CHECK(RandOp<24>{seed, offset}(5) == uniform_float(philox_number(seed, offset, 5)));
  CHECK(RandOp<53>{seed, offset}(5) ==
        uniform_double(philox_number(seed, offset, 10), philox_number(seed, offset, 11)));
  CHECK(RandOp<24>{seed, 0}(8) == RandOp<24>{seed, 8}(0));  // a later offset continues the stream
  CHECK(uniform_at<8>(seed, 0, 3) == static_cast<float>(philox_number(seed, 0, 3) >> 24) / 256);
}

TEST_CASE("creation_ops: randn pairs are standard normal") {
  const auto check_moments = []<int digits>() {
    const RandnPairOp<digits> op{1234, 0};
    using C = std::conditional_t<digits == 53, double, float>;
    double sum = 0, squares = 0;
    constexpr int64_t pairs = 50000;
    for (int64_t pair = 0; pair < pairs; ++pair) {
      C first = 0, second = 0;
      op(pair, first, second);
      CHECK((std::isfinite(first) && std::isfinite(second)));
      sum += static_cast<double>(first) + static_cast<double>(second);
      squares += static_cast<double>(first) * first + static_cast<double>(second) * second;
    }
    const double mean = sum / (2 * pairs), variance = squares / (2 * pairs) - mean * mean;
    CHECK(std::abs(mean) < 0.02);
    CHECK(variance == doctest::Approx(1.0).epsilon(0.02));
  };
  check_moments.template operator()<24>();
  check_moments.template operator()<53>();
  // u1 = 0 gives radius 0 (log(1 - 0) = 0), never NaN.
  float first = 1, second = 1;
  RandnPairOp<24>{0, 0}(0, first, second);
  CHECK(std::isfinite(first));
}

TEST_CASE("creation_ops: randint stays in [low, high) and covers it") {
  std::set<int64_t> seen;
  const RandintOp small{5, 0, -3, 7};
  for (int64_t e = 0; e < 2000; ++e) {
    const int64_t value = small(e);
    CHECK((value >= -3 && value < 4));
    seen.insert(value);
  }
  CHECK(seen.size() == 7);
  // The full int64 range (high - low wraps to 2^64 - 1 as an unsigned range).
  constexpr int64_t lowest = std::numeric_limits<int64_t>::min(), highest = std::numeric_limits<int64_t>::max();
  const RandintOp wide{5, 0, lowest, static_cast<uint64_t>(highest) - static_cast<uint64_t>(lowest)};
  bool negative = false, positive = false;
  for (int64_t e = 0; e < 100; ++e) {
    const int64_t value = wide(e);
    CHECK(value < highest);
    negative |= value < 0, positive |= value > 0;
  }
  CHECK((negative && positive));
  // Two numbers per element: high word first.
  const uint64_t draw = uint64_t{philox_number(5, 0, 6)} << 32 | philox_number(5, 0, 7);
  CHECK(small(3) == -3 + static_cast<int64_t>(draw % 7));
}
