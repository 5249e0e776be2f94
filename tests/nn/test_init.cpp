// nn::init: bounds and statistics of the initialisers, gains and fans.
#include <doctest/doctest.h>

#include <strata/nn/init.h>

#include <cmath>

#include "../ops/op_test_util.h"

using namespace strata;
using strata::testing::expect_error;
using strata::testing::values_of;

namespace {

struct Stats {
  double mean, std, min, max;
};

Stats stats_of(const Tensor& t) {
  const std::vector<double> values = values_of(t);
  double sum = 0, squares = 0, low = values[0], high = values[0];
  for (double v : values) {
    sum += v;
    low = std::min(low, v);
    high = std::max(high, v);
  }
  const double mean = sum / static_cast<double>(values.size());
  for (double v : values) squares += (v - mean) * (v - mean);
  return {mean, std::sqrt(squares / static_cast<double>(values.size() - 1)), low, high};
}

}  // namespace

TEST_CASE("nn: init gains and fans follow torch.nn.init") {
  using nn::init::Nonlinearity;
  CHECK(nn::init::calculate_gain(Nonlinearity::ReLU) == doctest::Approx(std::sqrt(2.0)));
  CHECK(nn::init::calculate_gain(Nonlinearity::Tanh) == doctest::Approx(5.0 / 3));
  CHECK(nn::init::calculate_gain(Nonlinearity::LeakyReLU, std::sqrt(5.0)) == doctest::Approx(std::sqrt(1.0 / 3)));
  CHECK(nn::init::calculate_gain(Nonlinearity::Sigmoid) == 1.0);
  CHECK(nn::init::calculate_gain(Nonlinearity::SELU) == 0.75);
  const auto [fan_in, fan_out] = nn::init::calculate_fan_in_and_fan_out(empty({16, 4, 3, 3}));
  CHECK(fan_in == 36);
  CHECK(fan_out == 144);
  expect_error<ValueError>([] { nn::init::calculate_fan_in_and_fan_out(empty({5})); },
                           "[calculate_fan_in_and_fan_out]", {"fewer than 2 dimensions"});
  expect_error<ValueError>([] { nn::init::xavier_uniform_(empty({5})); }, "[calculate_fan_in_and_fan_out]");
  expect_error<ValueError>([] { nn::init::uniform_(empty({5}), 1, 0); }, "[uniform_]", {"low <= high"});
}

TEST_CASE("nn: init kaiming and xavier draw with the documented spread") {
  manual_seed(0);
  const Tensor w = empty({256, 512});
  // kaiming_uniform_ (a = 0, fan_in, leaky_relu): bound = sqrt(3) * sqrt(2) / sqrt(512) = 0.108253
  nn::init::kaiming_uniform_(w);
  Stats s = stats_of(w);
  const double kaiming_bound = std::sqrt(3.0) * std::sqrt(2.0) / std::sqrt(512.0);
  CHECK(s.max <= kaiming_bound);
  CHECK(s.min >= -kaiming_bound);
  CHECK(s.std == doctest::Approx(kaiming_bound / std::sqrt(3.0)).epsilon(0.02));
  // kaiming_normal_ (fan_out, relu): std = sqrt(2) / sqrt(256)
  nn::init::kaiming_normal_(w, 0, nn::init::FanMode::FanOut, nn::init::Nonlinearity::ReLU);
  s = stats_of(w);
  CHECK(s.std == doctest::Approx(std::sqrt(2.0) / 16).epsilon(0.02));
  CHECK(std::abs(s.mean) < 0.002);
  // xavier_uniform_: bound = sqrt(6 / (512 + 256)) = 0.0883883
  nn::init::xavier_uniform_(w);
  s = stats_of(w);
  CHECK(s.max <= std::sqrt(6.0 / 768));
  CHECK(s.min >= -std::sqrt(6.0 / 768));
  CHECK(s.max > 0.99 * std::sqrt(6.0 / 768));
  // xavier_normal_ with gain 2: std = 2 * sqrt(2 / 768)
  nn::init::xavier_normal_(w, 2.0);
  CHECK(stats_of(w).std == doctest::Approx(2 * std::sqrt(2.0 / 768)).epsilon(0.02));
}

TEST_CASE("nn: init basic fills run in place, without grad, reproducibly") {
  Tensor w = empty({100, 100});
  w.requires_grad_();
  nn::init::normal_(w, 3, 0.5);
  CHECK(w.is_leaf());
  const Stats s = stats_of(w.detach());
  CHECK(s.mean == doctest::Approx(3).epsilon(0.01));
  CHECK(s.std == doctest::Approx(0.5).epsilon(0.03));
  nn::init::uniform_(w, -1, 2);
  const Stats u = stats_of(w.detach());
  CHECK(u.min >= -1);
  CHECK(u.max <= 2);
  CHECK(u.mean == doctest::Approx(0.5).epsilon(0.05));
  nn::init::constant_(w, 0.25);
  CHECK(stats_of(w.detach()).min == 0.25);
  nn::init::ones_(w);
  CHECK(stats_of(w.detach()).max == 1);
  nn::init::zeros_(w);
  CHECK(stats_of(w.detach()).max == 0);
  manual_seed(7);
  const Tensor a = nn::init::kaiming_normal_(empty({4, 4}));
  manual_seed(7);
  const Tensor b = nn::init::kaiming_normal_(empty({4, 4}));
  CHECK(equal(a, b));
}
