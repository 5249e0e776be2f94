// The built-in layers: PyTorch's initialisation, shapes through a small CNN, argument errors.
#include <doctest/doctest.h>

#include <strata/nn/modules.h>
#include <strata/nn/sequential.h>

#include <cmath>

#include "../ops/op_test_util.h"

using namespace strata;
using strata::testing::expect_error;
using strata::testing::values_of;

TEST_CASE("nn: Linear and Conv2d initialise as PyTorch, reproducibly") {
  manual_seed(3);
  nn::Linear a(100, 50);
  manual_seed(3);
  nn::Linear b(100, 50);
  CHECK(equal(a->weight, b->weight));
  CHECK(equal(a->bias, b->bias));
  const double bound = 1 / std::sqrt(100.0);  // kaiming_uniform(a = sqrt(5)) gives U(-1/sqrt(fan_in), ...)
  double largest = 0;
  for (double v : values_of(a->weight)) largest = std::max(largest, std::abs(v));
  CHECK(largest <= bound);
  CHECK(largest > 0.9 * bound);
  for (double v : values_of(a->bias)) CHECK(std::abs(v) <= bound);
  nn::Conv2d conv(4, 8, 3);
  const double conv_bound = 1 / std::sqrt(4.0 * 9);
  for (double v : values_of(conv->weight)) CHECK(std::abs(v) <= conv_bound);
  CHECK_FALSE(nn::Linear(2, 3, false)->bias.defined());
  CHECK(nn::Linear(2, 3, false).parameters().size() == 1);
}

TEST_CASE("nn: a small CNN's layers give the expected shapes") {
  manual_seed(4);
  auto net = nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2),
                            nn::Conv2d(4, 8, 3, /*stride=*/2, /*padding=*/1, /*dilation=*/1, /*groups=*/2),
                            nn::GELU(), nn::Flatten(), nn::LayerNorm(8 * 2 * 2), nn::Dropout(0.1),
                            nn::Linear(32, 10));
  const Tensor y = net.forward(randn({2, 1, 8, 8}));
  CHECK(y.sizes() == IntArrayRef{2, 10});
  CHECK(net->at<nn::Conv2dImpl>(3).weight.sizes() == IntArrayRef{8, 2, 3, 3});
  y.sum().backward();
  for (const auto& [name, p] : net.named_parameters()) CHECK_MESSAGE(p.grad().defined(), name);

  nn::Embedding embedding(10, 3);
  CHECK(embedding.forward(tensor({1, 2, 2})).sizes() == IntArrayRef{3, 3});
  CHECK(nn::Flatten(0).forward(ones({2, 3})).sizes() == IntArrayRef{6});
  nn::LayerNorm plain(std::vector<int64_t>{3}, 1e-5, false);
  CHECK(plain.parameters().empty());
  CHECK(nn::MaxPool2d(2, 1).forward(ones({1, 1, 4, 4})).sizes() == IntArrayRef{1, 1, 3, 3});
}

TEST_CASE("nn: bad layer arguments name the layer") {
  expect_error<ValueError>([] { nn::Linear(0, 3); }, "[Linear]", {"in_features", "0"});
  expect_error<ValueError>([] { nn::Linear(2, -1); }, "[Linear]", {"out_features"});
  expect_error<ValueError>([] { nn::Conv2d(3, 4, 3, 1, 0, 1, 2); }, "[Conv2d]", {"in_channels (3)", "groups (2)"});
  expect_error<ValueError>([] { nn::Conv2d(4, 6, 3, 1, 0, 1, 4); }, "[Conv2d]", {"out_channels (6)"});
  expect_error<ValueError>([] { nn::Conv2d(3, 4, 0); }, "[Conv2d]", {"kernel_size"});
  expect_error<ValueError>([] { nn::Dropout(1.5); }, "[Dropout]", {"1.5"});
  expect_error<ValueError>([] { nn::Embedding(0, 3); }, "[Embedding]", {"num_embeddings"});
  expect_error<ValueError>([] { nn::GELU("fast"); }, "[GELU]", {"fast"});
  expect_error<ValueError>([] { nn::Sequential().forward(ones({1})); }, "[Sequential]", {"empty"});
}
