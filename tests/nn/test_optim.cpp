// Optimizers against hand-worked steps, parameter groups, state dicts, schedulers, a small fit.
#include <doctest/doctest.h>

#include <strata/nn/modules.h>
#include <strata/nn/optim.h>
#include <strata/nn/sequential.h>

#include <cmath>
#include <functional>
#include <memory>

#include "../ops/op_test_util.h"

using namespace strata;
using strata::testing::expect_error;
using strata::testing::values_of;

namespace {

// Every test starts from p = [1, -2] (float64) and feeds the gradients g1 = [1, 2],
// g2 = [0.5, -1], g3 = [-1, 0], one per step.
const std::vector<std::vector<double>> kGrads = {{1, 2}, {0.5, -1}, {-1, 0}};

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(tensor_list)>;

// p after each of the steps.
std::vector<std::vector<double>> run_steps(const MakeOptimizer& make, size_t steps = 3) {
  Tensor p = tensor({1.0, -2.0}, kFloat64);
  p.requires_grad_();
  auto optimizer = make({p});
  std::vector<std::vector<double>> result;
  for (size_t s = 0; s < steps; ++s) {
    p.set_grad(tensor(kGrads[s], {2}, kFloat64));
    optimizer->step();
    result.push_back(values_of(p.detach()));
  }
  return result;
}

void check_steps(const MakeOptimizer& make, const std::vector<std::vector<double>>& expected, double tolerance = 1e-12) {
  const auto actual = run_steps(make, expected.size());
  for (size_t s = 0; s < expected.size(); ++s)
    for (size_t i = 0; i < 2; ++i) {
      INFO("step ", s + 1, " element ", i, ": got ", actual[s][i], ", expected ", expected[s][i]);
      CHECK(std::abs(actual[s][i] - expected[s][i]) <= tolerance);
    }
}

template <class O, class Options>
MakeOptimizer make(const Options& options) {
  return [options](tensor_list params) { return std::make_unique<O>(std::move(params), options); };
}

}  // namespace

TEST_CASE("optim: SGD without momentum subtracts lr * grad") {
  // p1 = [1, -2] - 0.1 * [1, 2] = [0.9, -2.2]; p2 = p1 - 0.1 * [0.5, -1] = [0.85, -2.1];
  // p3 = p2 - 0.1 * [-1, 0] = [0.95, -2.1].
  check_steps(make<optim::SGD>(optim::SGDOptions(0.1)), {{0.9, -2.2}, {0.85, -2.1}, {0.95, -2.1}});
}

TEST_CASE("optim: SGD momentum starts the buffer at the first gradient and applies dampening after") {
  // momentum 0.9, dampening 0.1, lr 0.1:
  // step 1: buf = g1 = [1, 2] (no dampening on the first step); p = [1, -2] - 0.1 buf = [0.9, -2.2]
  // step 2: buf = 0.9 [1, 2] + 0.9 [0.5, -1] = [1.35, 0.9]; p = [0.9 - 0.135, -2.2 - 0.09] = [0.765, -2.29]
  // step 3: buf = 0.9 [1.35, 0.9] + 0.9 [-1, 0] = [0.315, 0.81]; p = [0.7335, -2.371]
  check_steps(make<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9).dampening(0.1)),
              {{0.9, -2.2}, {0.765, -2.29}, {0.7335, -2.371}});
}

TEST_CASE("optim: SGD nesterov steps along grad + momentum * buf") {
  // momentum 0.9, lr 0.1:
  // step 1: buf = [1, 2]; d = g1 + 0.9 buf = [1.9, 3.8]; p = [0.81, -2.38]
  // step 2: buf = 0.9 [1, 2] + [0.5, -1] = [1.4, 0.8]; d = [0.5 + 1.26, -1 + 0.72] = [1.76, -0.28];
  //         p = [0.81 - 0.176, -2.38 + 0.028] = [0.634, -2.352]
  // step 3: buf = 0.9 [1.4, 0.8] + [-1, 0] = [0.26, 0.72]; d = [-1 + 0.234, 0.648] = [-0.766, 0.648];
  //         p = [0.634 + 0.0766, -2.352 - 0.0648] = [0.7106, -2.4168]
  check_steps(make<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9).nesterov(true)),
              {{0.81, -2.38}, {0.634, -2.352}, {0.7106, -2.4168}});
}

TEST_CASE("optim: SGD weight decay adds weight_decay * p to the gradient") {
  // weight_decay 0.5, lr 0.1: d = g + 0.5 p
  // step 1: d = [1 + 0.5, 2 - 1] = [1.5, 1]; p = [0.85, -2.1]
  // step 2: d = [0.5 + 0.425, -1 - 1.05] = [0.925, -2.05]; p = [0.7575, -1.895]
  // step 3: d = [-1 + 0.37875, -0.9475] = [-0.62125, -0.9475]; p = [0.819625, -1.80025]
  check_steps(make<optim::SGD>(optim::SGDOptions(0.1).weight_decay(0.5)),
              {{0.85, -2.1}, {0.7575, -1.895}, {0.819625, -1.80025}});
}

TEST_CASE("optim: Adam matches torch.optim.Adam step by step") {
  // lr 0.1, betas (0.9, 0.999), eps 1e-8. Step 1: m = 0.1 g1 = [0.1, 0.2], v = 0.001 g1^2 =
  // [0.001, 0.004]; m / (1 - 0.9) = [1, 2] and sqrt(v / (1 - 0.999)) = [1, 2], so
  // p = p - 0.1 * [1 / (1 + 1e-8), 2 / (2 + 1e-8)] = [0.900000001, -2.0999999995].
  // Step 2: m = 0.9 m + 0.1 g2 = [0.14, 0.08], v = 0.999 v + 0.001 g2^2 = [0.00124975, 0.004996];
  // step size 0.1 / (1 - 0.81) = 0.526315..., denom = sqrt(v) / sqrt(1 - 0.998001) + 1e-8
  // = [0.790648.., 1.580876..]; p = [0.9 - 0.526315 * 0.14 / 0.790648, ...] = [0.806782.., -2.126633..].
  // Step 3 likewise (m = [0.026, 0.072], v = [0.00224850, 0.00499100]).
  check_steps(make<optim::Adam>(optim::AdamOptions(0.1)),
              {{0.900000001, -2.0999999995},
               {0.8067820382981611, -2.1266337032975686},
               {0.7957037312938717, -2.1472216334965584}});
}

TEST_CASE("optim: Adam weight decay is L2 (added to the gradient); amsgrad keeps the largest v") {
  // weight_decay 0.5: step 1 sees g = [1 + 0.5, 2 - 1] = [1.5, 1] and moves each coordinate
  // by about lr (m / sqrt(v) = sign(g) on the first step): p = [0.9000000006667, -2.099999999].
  check_steps(make<optim::Adam>(optim::AdamOptions(0.1).weight_decay(0.5)),
              {{0.9000000006666666, -2.099999999},
               {0.8035708995171409, -2.0624779684898313},
               {0.7533508546301215, -2.0097214502758787}});
  // amsgrad: steps 1-2 as plain Adam; at step 3, v[1] = 0.999 * 0.004996 = 0.004991 falls below
  // its maximum 0.004996, which is used instead: p[1] = -2.14721133695676 (plain: -2.14722163...).
  check_steps(make<optim::Adam>(optim::AdamOptions(0.1).amsgrad(true)),
              {{0.900000001, -2.0999999995},
               {0.8067820382981611, -2.1266337032975686},
               {0.7957037312938717, -2.14721133695676}});
}

TEST_CASE("optim: AdamW decays the weights before the Adam step") {
  // weight_decay 0.5, lr 0.1: p *= 1 - 0.05 first, then the plain Adam update with the raw
  // gradient: step 1: [0.95, -1.9] - [0.099999999, 0.0999999995] = [0.850000001, -1.9999999995].
  check_steps(make<optim::AdamW>(optim::AdamWOptions(0.1).weight_decay(0.5)),
              {{0.850000001, -1.9999999995},
               {0.714282038248161, -1.9266337033225682},
               {0.6674896293314636, -1.8508899483554297}});
  CHECK(optim::AdamWOptions().weight_decay() == 1e-2);
  CHECK(optim::AdamOptions().weight_decay() == 0);
}

TEST_CASE("optim: float32 parameters follow the float64 results closely") {
  Tensor p = tensor({1.0f, -2.0f});
  p.requires_grad_();
  optim::Adam adam({p}, optim::AdamOptions(0.1));
  for (const auto& g : kGrads) {
    p.set_grad(tensor(g, {2}, kFloat32));
    adam.step();
  }
  strata::testing::check_values(p.detach(), {2}, kFloat32, {0.7957037312938717, -2.1472216334965584}, 1e-6);
}

TEST_CASE("optim: parameter groups keep their own learning rates") {
  Tensor a = tensor({1.0}, kFloat64), b = tensor({1.0}, kFloat64), c = tensor({1.0}, kFloat64);
  for (const Tensor& t : {a, b, c}) t.requires_grad_();
  optim::SGD sgd({optim::ParamGroup({a}), optim::ParamGroup({b}, optim::SGDOptions(0.01))}, optim::SGDOptions(0.1));
  sgd.add_param_group(optim::ParamGroup({c}, optim::SGDOptions(1.0)));
  REQUIRE(sgd.param_groups().size() == 3);
  CHECK(sgd.param_groups()[0].options().get_lr() == 0.1);  // the defaults
  for (const Tensor& t : {a, b, c}) t.set_grad(ones({1}, kFloat64));
  sgd.step();
  CHECK(a.item<double>() == doctest::Approx(0.9).epsilon(1e-15));
  CHECK(b.item<double>() == doctest::Approx(0.99).epsilon(1e-15));
  CHECK(c.item<double>() == doctest::Approx(0.0).epsilon(1e-15));
  expect_error<ValueError>([&] { sgd.add_param_group(optim::ParamGroup({a})); }, "[SGD]", {"more than one"});
}

TEST_CASE("optim: a parameter without a gradient is left alone; zero_grad clears gradients") {
  Tensor a = tensor({1.0, 2.0}, kFloat64), b = tensor({3.0}, kFloat64);
  a.requires_grad_();
  b.requires_grad_();
  optim::Adam adam({a, b}, optim::AdamOptions(0.1));
  a.set_grad(ones({2}, kFloat64));
  adam.step();
  CHECK(b.item<double>() == 3.0);
  CHECK(adam.state(b).empty());
  CHECK(adam.state(a).at("step").item<int64_t>() == 1);
  adam.zero_grad(false);
  CHECK(a.grad().defined());
  CHECK(values_of(a.grad()) == std::vector<double>{0, 0});
  adam.zero_grad();
  CHECK_FALSE(a.grad().defined());
}

namespace {

// Runs steps 1-2 with one optimizer, saves its state dict, restores it into a fresh optimizer on
// a copy of the parameters, and checks step 3 gives the same result as the original's.
void check_resumes(const MakeOptimizer& make) {
  Tensor p = tensor({1.0, -2.0}, kFloat64);
  p.requires_grad_();
  auto original = make({p});
  for (size_t s = 0; s < 2; ++s) {
    p.set_grad(tensor(kGrads[s], {2}, kFloat64));
    original->step();
  }
  std::map<std::string, Tensor> saved;
  for (const auto& [key, t] : original->state_dict()) saved[key] = t.clone();
  Tensor q = p.detach().clone();
  q.requires_grad_();
  auto restored = make({q});
  restored->load_state_dict(saved);
  for (Tensor t : {p, q}) t.set_grad(tensor(kGrads[2], {2}, kFloat64));
  original->step();
  restored->step();
  CHECK(values_of(p.detach()) == values_of(q.detach()));
}

}  // namespace

TEST_CASE("optim: state_dict round trip resumes identically") {
  check_resumes(make<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9).dampening(0.1)));
  check_resumes(make<optim::Adam>(optim::AdamOptions(0.1).amsgrad(true)));
  check_resumes(make<optim::AdamW>(optim::AdamWOptions(0.1)));

  Tensor p = tensor({1.0, -2.0}, kFloat64);
  p.requires_grad_();
  optim::Adam adam({p}, optim::AdamOptions(0.1));
  p.set_grad(ones({2}, kFloat64));
  adam.step();
  const auto state = adam.state_dict();
  for (const char* key : {"state.0.step", "state.0.exp_avg", "state.0.exp_avg_sq", "param_groups.0.lr",
                          "param_groups.0.beta1", "param_groups.0.params"})
    CHECK_MESSAGE(state.count(key), key);
  CHECK(state.at("param_groups.0.lr").item<double>() == 0.1);

  // Group options come back too (a scheduler's lr, say).
  optim::Adam other({p}, optim::AdamOptions(0.5));
  other.load_state_dict(state);
  CHECK(other.param_groups()[0].options().get_lr() == 0.1);
}

TEST_CASE("optim: load_state_dict rejects a dict of another shape") {
  Tensor p = tensor({1.0, -2.0}, kFloat64), r = tensor({1.0, 2.0, 3.0}, kFloat64);
  p.requires_grad_();
  r.requires_grad_();
  optim::SGD sgd({p}, optim::SGDOptions(0.1).momentum(0.9));
  p.set_grad(ones({2}, kFloat64));
  sgd.step();
  optim::SGD wrong_shape({r}, optim::SGDOptions(0.1).momentum(0.9));
  expect_error<ValueError>([&] { wrong_shape.load_state_dict(sgd.state_dict()); }, "[load_state_dict]",
                           {"state.0.momentum_buffer", "[2]", "[3]"});
  optim::SGD two_params({p, r}, optim::SGDOptions(0.1));
  expect_error<ValueError>([&] { two_params.load_state_dict(sgd.state_dict()); }, "[load_state_dict]",
                           {"group 0 has 2 parameters"});
  auto malformed = sgd.state_dict();
  malformed["state.x.momentum_buffer"] = ones({2});
  expect_error<ValueError>([&] { sgd.load_state_dict(malformed); }, "[load_state_dict]", {"malformed key"});
}

TEST_CASE("optim: bad options name the optimizer and the option") {
  Tensor p = ones({2});
  p.requires_grad_();
  expect_error<ValueError>([&] { optim::SGD({p}, optim::SGDOptions(-0.1)); }, "[SGD]", {"learning rate", "-0.1"});
  expect_error<ValueError>([&] { optim::SGD({p}, optim::SGDOptions(0.1).nesterov(true)); }, "[SGD]", {"nesterov"});
  expect_error<ValueError>([&] { optim::SGD({p}, optim::SGDOptions(0.1).momentum(-1)); }, "[SGD]", {"momentum"});
  expect_error<ValueError>([&] { optim::Adam({p}, optim::AdamOptions(-1)); }, "[Adam]", {"learning rate"});
  expect_error<ValueError>([&] { optim::Adam({p}, optim::AdamOptions(0.1).betas({1.0, 0.999})); }, "[Adam]",
                           {"beta1"});
  expect_error<ValueError>([&] { optim::AdamW({p}, optim::AdamWOptions(0.1).eps(-1)); }, "[AdamW]", {"eps"});
  expect_error<ValueError>([&] { optim::SGD({p * 2}, optim::SGDOptions(0.1)); }, "[SGD]", {"non-leaf"});
}

TEST_CASE("optim: a two-layer MLP fits a toy problem") {
  manual_seed(0);
  // Label 1 when x0 * x1 > 0 (an XOR-like pattern a linear model can't fit).
  Tensor x = rand({256, 2}) * 2 - 1;
  Tensor y = gt(x.select(1, 0) * x.select(1, 1), 0).to(kInt64);
  auto net = nn::Sequential(nn::Linear(2, 32), nn::Tanh(), nn::Linear(32, 2));
  optim::Adam adam(net.parameters(), optim::AdamOptions(0.05));
  double first = 0, last = 0;
  for (int step = 0; step < 150; ++step) {
    adam.zero_grad();
    Tensor loss = cross_entropy(net.forward(x), y);
    loss.backward();
    adam.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  INFO("loss went from ", first, " to ", last);
  CHECK(last < 0.3 * first);
  NoGradGuard no_grad;
  const double accuracy = eq(argmax(net.forward(x), 1), y).to(kFloat32).mean().item<double>();
  CHECK(accuracy > 0.9);
}

TEST_CASE("optim: the Training section of API.md compiles and runs as written") {
  manual_seed(6);
  auto net = nn::Sequential(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
  const Tensor x = randn({8, 784}), target = randint(10, {8});
  Tensor logits = net.forward(x);
  CHECK(logits.sizes() == IntArrayRef{8, 10});
  CHECK(net.parameters().size() == 4);
  CHECK(net.named_parameters()[0].first == "0.weight");
  net.train();
  net.eval();
  net.to(kCPU);
  net.zero_grad();
  optim::SGD sgd(net.parameters(), optim::SGDOptions(0.1).momentum(0.9).dampening(0).weight_decay(1e-4).nesterov(false));
  optim::Adam adam(net.parameters(), optim::AdamOptions(1e-3).betas({0.9, 0.999}).eps(1e-8).weight_decay(0));
  optim::AdamW adamw(net.parameters(), optim::AdamWOptions(1e-3));
  for (optim::Optimizer* optimizer : std::vector<optim::Optimizer*>{&sgd, &adam, &adamw}) {
    optimizer->zero_grad();
    Tensor loss = cross_entropy(net.forward(x), target);
    loss.backward();
    optimizer->step();
  }
  CHECK_FALSE(equal(net.forward(x), logits));
}

TEST_CASE("optim: float32 steps match torch.optim bit for bit") {
  // Expected values: torch.optim's single-tensor SGD, Adam and AdamW run op by op with LibTorch
  // 1.13's CPU kernels (x86-64 with FMA) on the same inputs, 3 steps, printed as hex floats.
  const std::vector<float> start = {0.5f, -1.25f, 3.0f, 1e-3f, -7.5f, 2.25f, -0.125f};
  const std::vector<std::vector<float>> grads = {{0.3f, -0.7f, 1.1f, 0.01f, -2.5f, 0.0f, 0.6f},
                                                 {-0.2f, 0.4f, 0.9f, -0.03f, 1.5f, 0.25f, -0.6f},
                                                 {0.8f, -0.1f, -1.3f, 0.02f, 0.5f, -0.75f, 0.05f}};
  auto run = [&](const MakeOptimizer& make) {
    Tensor p = tensor(start, {7});
    p.requires_grad_();
    auto optimizer = make({p});
    for (const auto& g : grads) {
      p.set_grad(tensor(g, {7}));
      optimizer->step();
    }
    const float* data = p.detach().data_ptr<float>();
    return std::vector<float>(data, data + 7);
  };
  CHECK(run(make<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01))) ==
        std::vector<float>{0x1.2e55cp-2, -0x1.16d5f2p+0, 0x1.4d13a2p+1, 0x1.ed777ap-10, -0x1.c5585cp+2,
                           0x1.2743f4p+1, -0x1.6a2854p-3});
  CHECK(run(make<optim::Adam>(optim::AdamOptions(0.01).weight_decay(0.1).amsgrad(true))) ==
        std::vector<float>{0x1.eb7962p-2, -0x1.3b3ed6p+0, 0x1.7cfa04p+1, -0x1.064c7ap-8, -0x1.dec798p+2,
                           0x1.1d66dap+1, -0x1.125908p-3});
  CHECK(run(make<optim::AdamW>(optim::AdamWOptions(0.01).weight_decay(0.1))) ==
        std::vector<float>{0x1.ec5554p-2, -0x1.3b530ep+0, 0x1.7c22bcp+1, -0x1.15796p-8, -0x1.ddc6aep+2,
                           0x1.1eba76p+1, -0x1.12888ep-3});
}

// See Note [One fused call per parameter bucket] in nn/optim.cpp: a group of mixed dtypes, with
// a parameter that first gets a gradient a step late (its own step count and momentum start),
// steps exactly as one optimizer per parameter does.
TEST_CASE("optim: a group of mixed dtypes and late gradients steps as one optimizer per parameter") {
  manual_seed(31);
  const std::vector<std::pair<std::vector<int64_t>, ScalarType>> specs = {
      {{3, 4}, kFloat32}, {{5}, kFloat64}, {{7}, kFloat32}, {{}, kFloat64}};
  std::vector<std::pair<std::string, MakeOptimizer>> optimizers = {
      {"SGD nesterov", make<optim::SGD>(optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.01))},
      {"SGD dampening", make<optim::SGD>(optim::SGDOptions(0.05).momentum(0.9).dampening(0.3))},
      {"Adam amsgrad", make<optim::Adam>(optim::AdamOptions(0.01).amsgrad(true).weight_decay(0.01))},
      {"AdamW", make<optim::AdamW>(optim::AdamWOptions(0.01))}};
  for (const auto& [name, make_optimizer] : optimizers) {
    INFO(name);
    tensor_list together, alone;
    std::vector<std::unique_ptr<optim::Optimizer>> singles;
    for (const auto& [sizes, dtype] : specs) {
      const Tensor start = randn(sizes, dtype);
      together.push_back(start.clone().requires_grad_());
      alone.push_back(start.clone().requires_grad_());
      singles.push_back(make_optimizer({alone.back()}));
    }
    auto grouped = make_optimizer(together);
    for (int step = 0; step < 3; ++step) {
      for (size_t i = 0; i < specs.size(); ++i) {
        if (step == 0 && i == 2) continue;  // no gradient yet
        const Tensor g = randn(specs[i].first, specs[i].second);
        together[i].set_grad(g);
        alone[i].set_grad(g.clone());
      }
      grouped->step();
      for (size_t i = 0; i < specs.size(); ++i)
        if (alone[i].grad().defined()) singles[i]->step();
    }
    for (size_t i = 0; i < specs.size(); ++i) {
      INFO("param ", i);
      CHECK(equal(together[i].detach(), alone[i].detach()));
    }
  }
}
