// Learning-rate schedulers against PyTorch's sequences.
#include <doctest/doctest.h>

#include <strata/nn/optim.h>

#include <memory>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;

TEST_CASE("optim: StepLR multiplies by gamma every step_size epochs") {
  Tensor p = ones({1});
  p.requires_grad_();
  optim::SGD sgd({p}, optim::SGDOptions(1.0));
  optim::StepLR scheduler(sgd, 2, 0.5);
  CHECK(scheduler.get_last_lr() == std::vector<double>{1.0});
  std::vector<double> lrs;
  for (int epoch = 1; epoch <= 6; ++epoch) {
    sgd.step();
    scheduler.step();
    lrs.push_back(scheduler.get_last_lr()[0]);
  }
  // PyTorch: epochs 1..6 -> 1, 0.5, 0.5, 0.25, 0.25, 0.125
  CHECK(lrs == std::vector<double>{1.0, 0.5, 0.5, 0.25, 0.25, 0.125});
  CHECK(sgd.param_groups()[0].options().get_lr() == 0.125);
}

TEST_CASE("optim: CosineAnnealingLR follows the cosine down to eta_min and back") {
  Tensor p = ones({1});
  p.requires_grad_();
  optim::SGD sgd({p}, optim::SGDOptions(0.1));
  optim::CosineAnnealingLR scheduler(sgd, 4);
  // PyTorch's recursive values for base lr 0.1, T_max 4, epochs 1..10 (closed form
  // 0.05 * (1 + cos(pi * epoch / 4)) up to rounding):
  const std::vector<double> expected = {0.08535533905932738, 0.05, 0.014644660940672627, 0.0,
                                        0.014644660940672622, 0.05000000000000001, 0.0853553390593274,
                                        0.10000000000000003, 0.0853553390593274, 0.05000000000000003};
  for (double lr : expected) {
    scheduler.step();
    CHECK(scheduler.get_last_lr()[0] == doctest::Approx(lr).epsilon(1e-15));
  }
  optim::SGD floor_sgd({p}, optim::SGDOptions(1.0));
  optim::CosineAnnealingLR floor(floor_sgd, 2, 0.1);
  floor.step();
  floor.step();
  CHECK(floor.get_last_lr()[0] == doctest::Approx(0.1));  // eta_min at T_max
}

TEST_CASE("optim: schedulers reject a non-positive period") {
  Tensor p = ones({1});
  p.requires_grad_();
  optim::SGD sgd({p}, optim::SGDOptions(1.0));
  expect_error<ValueError>([&] { optim::StepLR(sgd, 0); }, "[StepLR]", {"step_size", "0"});
  expect_error<ValueError>([&] { optim::CosineAnnealingLR(sgd, -1); }, "[CosineAnnealingLR]", {"T_max", "-1"});
}
