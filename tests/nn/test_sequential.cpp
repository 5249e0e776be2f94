// nn::Sequential: naming, forwarding, indexing and appending.
#include <doctest/doctest.h>

#include <strata/nn/modules.h>
#include <strata/nn/sequential.h>


#include "../ops/op_test_util.h"

using namespace strata;
using strata::testing::expect_error;

namespace {
std::vector<std::string> names_of(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<std::string> names;
  for (const auto& [name, t] : named) names.push_back(name);
  return names;
}
}  // namespace

TEST_CASE("nn: Sequential names parameters by position and forwards through its modules") {
  manual_seed(0);
  auto net = nn::Sequential(nn::Linear(4, 3), nn::ReLU(), nn::Linear(3, 2));
  CHECK(net.size() == 3);
  CHECK(names_of(net.named_parameters()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  CHECK(net.parameters().size() == 4);
  CHECK(net.named_parameters()[0].second.sizes() == IntArrayRef{3, 4});
  CHECK(net.children().size() == 3);
  const Tensor x = randn({5, 4});
  const Tensor y = net.forward(x);
  CHECK(y.sizes() == IntArrayRef{5, 2});
  auto& first = net->at<nn::LinearImpl>(0);
  auto& last = net->at<nn::LinearImpl>(2);
  const Tensor expected = linear(relu(linear(x, first.weight, first.bias)), last.weight, last.bias);
  CHECK(allclose(y, expected));
  CHECK(net[1]->name() == "ReLU");
  net.push_back(nn::Sigmoid());
  CHECK(net.size() == 4);
  CHECK(allclose(net(x), sigmoid(expected)));
  net.push_back("head", nn::Linear(2, 1));
  CHECK(net.named_parameters().back().first == "head.bias");
  CHECK(net.named_modules()[0].second.get() == net.get());  // the root comes first
  CHECK(net.named_modules()[5].first == "head");
  expect_error<IndexError>([&] { (void)net[7]; }, "[Sequential]", {"index 7"});
  expect_error<TypeError>([&] { (void)net->at<nn::Conv2dImpl>(0); }, "[Sequential]", {"Linear"});
}
