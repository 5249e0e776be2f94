// nn::Module and its handles: registration, traversal, modes, moves, state dicts, printing.
#include <doctest/doctest.h>

#include <strata/nn/modules.h>
#include <strata/nn/sequential.h>

#include <cmath>
#include <sstream>

#include "../ops/op_test_util.h"

using namespace strata;
using strata::testing::expect_error;
using strata::testing::values_of;

namespace {

std::vector<std::string> names_of(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<std::string> names;
  for (const auto& [name, t] : named) names.push_back(name);
  return names;
}

// A user-defined module the LibTorch way, registering in default member initialisers.
struct Net : nn::Module {
  nn::Linear fc1 = register_module("fc1", nn::Linear(4, 8));
  nn::Linear fc2 = register_module("fc2", nn::Linear(8, 2));
  Tensor& scale = register_parameter("scale", ones({1}));
  Tensor& steps = register_buffer("steps", zeros({1}, kInt64));

  Tensor forward(const Tensor& x) { return fc2(relu(fc1(x))) * scale; }
};

// The same with a handle: BlockImpl holds the state, Block shares it.
struct BlockImpl : nn::Module {
  explicit BlockImpl(int64_t width) : Module("Block"), norm(width), linear(width, width) {
    register_module("norm", norm);
    register_module("linear", linear);
  }
  Tensor forward(const Tensor& x) { return x + linear(norm(x)); }
  nn::LayerNorm norm;
  nn::Linear linear;
};
STRATA_MODULE(Block);

}  // namespace

TEST_CASE("nn: copies of a module handle share its parameters") {
  nn::Linear a(2, 3);
  nn::Linear b = a;
  CHECK(b.ptr() == a.ptr());
  CHECK(b->weight.is_same(a->weight));
  {
    NoGradGuard no_grad;
    b->weight.fill_(2.0);
  }
  CHECK(values_of(a->weight) == std::vector<double>(6, 2.0));
  auto net = nn::Sequential(a);
  auto alias = net;
  CHECK(alias.parameters()[0].is_same(a->weight));
  nn::Linear empty{nullptr};
  CHECK(empty.is_empty());
  expect_error<Error>([&] { (void)empty->weight; }, "[ModuleHolder]", {"empty Linear handle"});
}

TEST_CASE("nn: a user-defined module registers submodules, parameters and buffers") {
  Net net;
  CHECK(names_of(net.named_parameters()) ==
        std::vector<std::string>{"scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
  CHECK(names_of(net.named_parameters(false)) == std::vector<std::string>{"scale"});
  CHECK(names_of(net.named_buffers()) == std::vector<std::string>{"steps"});
  CHECK(net.named_modules().size() == 3);
  const auto state = net.state_dict();
  CHECK(state.size() == 6);
  CHECK(state.count("steps"));
  Tensor loss = net.forward(randn({3, 4})).sum();
  loss.backward();
  for (const Tensor& p : net.parameters()) CHECK(p.grad().defined());
  net.zero_grad();
  for (const Tensor& p : net.parameters()) CHECK_FALSE(p.grad().defined());

  // Shared ownership works as well, and a user module nests in a Sequential.
  auto shared = std::make_shared<Net>();
  auto seq = nn::Sequential(shared, nn::Linear(2, 1));
  CHECK(seq.forward(randn({3, 4})).sizes() == IntArrayRef{3, 1});
  CHECK(seq.named_parameters()[1].first == "0.fc1.weight");

  Block block(4);
  CHECK(names_of(block.named_parameters()) ==
        std::vector<std::string>{"norm.weight", "norm.bias", "linear.weight", "linear.bias"});
  CHECK(block.forward(randn({2, 4})).sizes() == IntArrayRef{2, 4});
  expect_error<ValueError>([&] { block->register_parameter("norm", ones({1})); }, "[register_parameter]",
                           {"'norm' is already registered"});
  expect_error<ValueError>([&] { block->register_buffer("a.b", ones({1})); }, "[register_buffer]", {"'.'"});
}

TEST_CASE("nn: train and eval switch Dropout through the whole tree") {
  manual_seed(1);
  auto net = nn::Sequential(nn::Linear(8, 8), nn::Dropout(0.5));
  CHECK(net.is_training());
  CHECK(net[1]->is_training());
  const Tensor x = ones({64, 8});
  net.eval();
  CHECK_FALSE(net[1]->is_training());
  const Tensor y1 = net.forward(x), y2 = net.forward(x);
  CHECK(equal(y1, y2));
  net.train();
  const Tensor dropped = net.forward(x);
  const std::vector<double> kept = values_of(dropped), reference = values_of(y1);
  int zeros = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (kept[i] == 0) ++zeros;
    else CHECK(kept[i] == doctest::Approx(2 * reference[i]));
  }
  CHECK(zeros > 150);  // about half of 512
  CHECK(zeros < 362);
}

TEST_CASE("nn: to(kFloat64) converts parameters, keeping them leaves that require grad") {
  Net net;
  Tensor before = net.fc1->weight;
  net.to(kFloat64);
  for (const auto& [name, p] : net.named_parameters()) {
    INFO(name);
    CHECK(p.dtype() == kFloat64);
    CHECK(p.is_leaf());
    CHECK(p.requires_grad());
  }
  CHECK(net.named_buffers()[0].second.dtype() == kInt64);  // integral buffers stay
  CHECK(net.fc1->weight.dtype() == kFloat64);              // the members follow their slots
  CHECK(allclose(net.fc1->weight, before.to(kFloat64)));
  Tensor y = net.forward(randn({2, 4}, kFloat64));
  CHECK(y.dtype() == kFloat64);
  y.sum().backward();
  CHECK(net.fc1->weight.grad().dtype() == kFloat64);
  net.to(kCPU);  // already there: nothing changes
  CHECK(net.fc2->weight.dtype() == kFloat64);
}

TEST_CASE("nn: load_state_dict copies in place and names what does not fit") {
  manual_seed(2);
  auto source = nn::Sequential(nn::Linear(3, 2), nn::ReLU(), nn::Linear(2, 1));
  auto target = nn::Sequential(nn::Linear(3, 2), nn::ReLU(), nn::Linear(2, 1));
  const Tensor weight = target->at<nn::LinearImpl>(0).weight;
  target.load_state_dict(source.state_dict());
  CHECK(weight.is_same(target->at<nn::LinearImpl>(0).weight));  // in place
  const Tensor x = randn({4, 3});
  CHECK(equal(source.forward(x), target.forward(x)));

  auto state = source.state_dict();
  state.erase("2.bias");
  state["3.weight"] = ones({1});
  expect_error<ValueError>([&] { target.load_state_dict(state); }, "[load_state_dict]",
                           {"missing keys: 2.bias", "unexpected keys: 3.weight"});
  target.load_state_dict(state, /*strict=*/false);
  state = source.state_dict();
  state["0.weight"] = ones({3, 2});
  expect_error<ValueError>([&] { target.load_state_dict(state); }, "[load_state_dict]",
                           {"size mismatch for 0.weight", "expected shape [2, 3]", "got [3, 2]"});
}

TEST_CASE("nn: zero_grad sets gradients to none by default, or to zero") {
  nn::Linear lin(2, 2);
  lin.forward(ones({1, 2})).sum().backward();
  lin.zero_grad(false);
  CHECK(values_of(lin->weight.grad()) == std::vector<double>(4, 0.0));
  lin.zero_grad();
  CHECK_FALSE(lin->weight.grad().defined());
}

TEST_CASE("nn: printing a module shows the tree") {
  auto net = nn::Sequential(nn::Linear(4, 3), nn::ReLU(), nn::Sequential(nn::Dropout(0.25), nn::Linear(3, 1, false)));
  std::ostringstream out;
  out << net;
  CHECK(out.str() ==
        "Sequential(\n"
        "  (0): Linear(in_features=4, out_features=3, bias=true)\n"
        "  (1): ReLU()\n"
        "  (2): Sequential(\n"
        "    (0): Dropout(p=0.25)\n"
        "    (1): Linear(in_features=3, out_features=1, bias=false)\n"
        "  )\n"
        ")");
  std::ostringstream user;
  user << Net();
  CHECK(user.str().rfind("Net(\n  (fc1): Linear(", 0) == 0);
}

TEST_CASE("nn: tied weights are listed once as parameters but under every name in state_dict") {
  auto encoder = nn::Linear(3, 3), decoder = nn::Linear(3, 3, false);
  decoder->weight = encoder->weight;  // the slot now holds the encoder's tensor
  auto net = nn::Sequential(encoder, decoder);
  CHECK(names_of(net.named_parameters()) == std::vector<std::string>{"0.weight", "0.bias"});
  CHECK(net.state_dict().size() == 3);
  CHECK(net.state_dict().count("1.weight"));
}
