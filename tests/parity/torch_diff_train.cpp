// torch_diff cases: optimizer steps, learning-rate schedules, second derivatives, factories.
#include "torch_diff.h"

namespace torch_diff {
namespace {

// Three steps of `make_optimizer(params)` on loss = sum((w @ x + b - 1)^2) + sum(w^3) / 3 (so
// that weight decay, momentum and the moments all see changing, signed gradients); the
// parameters after every step.
template <class L, class Make>
TensorList<L> train(Make make_optimizer, int steps = 3) {
  auto w = L::make(ramp(6), {3, 2}, "f64", true);
  auto b = L::make({0.5, -0.25, 0.1}, {3}, "f64", true);
  auto x = L::make({0.3, -0.7}, {2}, "f64");
  auto optimizer = make_optimizer(TensorList<L>{w, b});
  TensorList<L> out;
  for (int step = 0; step < steps; ++step) {
    optimizer.zero_grad();
    auto residual = matmul(w, x) + b - 1;
    auto loss = (residual * residual).sum() + (w * w * w).sum() / 3;
    loss.backward();
    optimizer.step();
    out.push_back(w.detach().clone());
    out.push_back(b.detach().clone());
  }
  return out;
}

#define STRATA_DIFF_OPTIM(name, expr)                                                 \
  add_case("optim " name, [](auto lib) {                                               \
    using L = decltype(lib);                                                           \
    return train<L>([](const TensorList<L>& params) { return expr; });                 \
  })

void optimizer_cases() {
  STRATA_DIFF_OPTIM("SGD", typename L::SGD(params, typename L::SGDOptions(0.1)));
  STRATA_DIFF_OPTIM("SGD momentum", typename L::SGD(params, typename L::SGDOptions(0.1).momentum(0.9)));
  STRATA_DIFF_OPTIM("SGD momentum dampening",
                    typename L::SGD(params, typename L::SGDOptions(0.1).momentum(0.9).dampening(0.5)));
  STRATA_DIFF_OPTIM("SGD nesterov", typename L::SGD(params, typename L::SGDOptions(0.1).momentum(0.9).nesterov(true)));
  STRATA_DIFF_OPTIM("SGD weight_decay momentum",
                    typename L::SGD(params, typename L::SGDOptions(0.05).momentum(0.5).weight_decay(0.1)));
  STRATA_DIFF_OPTIM("Adam", typename L::Adam(params, typename L::AdamOptions(0.1)));
  STRATA_DIFF_OPTIM("Adam betas eps", typename L::Adam(params, typename L::AdamOptions(0.1).betas({0.5, 0.9}).eps(1e-3)));
  STRATA_DIFF_OPTIM("Adam weight_decay", typename L::Adam(params, typename L::AdamOptions(0.1).weight_decay(0.3)));
  STRATA_DIFF_OPTIM("Adam amsgrad", typename L::Adam(params, typename L::AdamOptions(0.1).amsgrad(true)));
  STRATA_DIFF_OPTIM("AdamW", typename L::AdamW(params, typename L::AdamWOptions(0.1)));
  STRATA_DIFF_OPTIM("AdamW weight_decay amsgrad",
                    typename L::AdamW(params, typename L::AdamWOptions(0.1).weight_decay(0.3).amsgrad(true)));
  add_case("optim StepLR", [](auto lib) {
    using L = decltype(lib);
    auto w = L::make({1, 2}, {2}, "f64", true);
    typename L::SGD sgd(TensorList<L>{w}, typename L::SGDOptions(1.0));
    typename L::StepLR schedule(sgd, 2, 0.5);
    TensorList<L> out;
    for (int epoch = 0; epoch < 5; ++epoch) {
      sgd.zero_grad();
      (w * w).sum().backward();
      sgd.step();
      schedule.step();
      out.push_back(w.detach().clone());
    }
    return out;
  });
}

// x's first and second derivatives of sum(op(x) * ramp): grad with create_graph, then the
// gradient of sum(first * ramp).
template <class Op>
void second_order_case(const std::string& name, const Shape& shape, Op op) {
  add_case("second-order " + name, [=](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(count(shape), -1.1, 0.43), shape, "f64", true);
    auto y = op(x);
    auto weights = L::make(ramp(y.numel(), 0.5, 0.25), y.sizes().vec(), "f64");
    auto first_grad = L::grad({(y * weights).sum()}, {x}, true)[0];
    auto second = L::grad({(first_grad * L::make(ramp(x.numel(), 0.2, -0.3), shape, "f64")).sum()}, {x}, false)[0];
    return TensorList<L>{y, first_grad, second};
  });
}

#define STRATA_DIFF_SECOND(name, shape, expr) second_order_case(name, shape, [](const auto& x) { return expr; })

void second_order_cases() {
  const Shape v = {6}, m = {2, 3};
  STRATA_DIFF_SECOND("exp", v, exp(x));
  STRATA_DIFF_SECOND("log", v, log(x.abs() + 0.5));
  STRATA_DIFF_SECOND("sqrt", v, sqrt(x * x + 1));
  STRATA_DIFF_SECOND("rsqrt", v, rsqrt(x * x + 1));
  STRATA_DIFF_SECOND("sin", v, sin(x));
  STRATA_DIFF_SECOND("cos", v, cos(x));
  STRATA_DIFF_SECOND("tanh", v, tanh(x));
  STRATA_DIFF_SECOND("sigmoid", v, sigmoid(x));
  STRATA_DIFF_SECOND("silu", v, silu(x));
  STRATA_DIFF_SECOND("gelu", v, gelu(x));
  STRATA_DIFF_SECOND("gelu tanh", v, gelu(x, "tanh"));
  STRATA_DIFF_SECOND("relu*x", v, relu(x) * x);
  STRATA_DIFF_SECOND("abs*x", v, abs(x) * x);
  STRATA_DIFF_SECOND("clamp*x", v, clamp(x, -0.5, 0.5) * x);
  STRATA_DIFF_SECOND("pow 3", v, pow(x, 3));
  STRATA_DIFF_SECOND("pow 2.5 of positive", v, pow(x * x + 0.1, 2.5));
  STRATA_DIFF_SECOND("pow tensor tensor", v, pow(x * x + 0.5, x));
  STRATA_DIFF_SECOND("div", v, x / (x * x + 1));
  STRATA_DIFF_SECOND("maximum", v, maximum(x * x, x + 0.3));
  STRATA_DIFF_SECOND("where", v, where(gt(x, 0), x * x, x * x * x));
  STRATA_DIFF_SECOND("softmax", m, softmax(x, 1));
  STRATA_DIFF_SECOND("log_softmax", m, log_softmax(x, 0));
  STRATA_DIFF_SECOND("logsumexp", m, logsumexp(x, Shape{1}));
  STRATA_DIFF_SECOND("prod", m, x.prod(1));
  STRATA_DIFF_SECOND("prod with zero", m, (x * decltype(lib_of(x))::make({1, 1, 0, 1, 1, 1}, {2, 3}, "f64")).prod());
  STRATA_DIFF_SECOND("var", m, decltype(lib_of(x))::var(x, {1}, true, false));
  STRATA_DIFF_SECOND("std", m, decltype(lib_of(x))::std_(x, {0}, true, false));
  STRATA_DIFF_SECOND("norm", m, x.norm());
  STRATA_DIFF_SECOND("norm 3", m, x.norm(3));
  STRATA_DIFF_SECOND("max", m, x.max() * x);
  STRATA_DIFF_SECOND("mean", m, x.mean({0}) * x);
  STRATA_DIFF_SECOND("matmul", m, matmul(x, x.t()));
  STRATA_DIFF_SECOND("layer_norm", m, layer_norm(x, {3}));
  STRATA_DIFF_SECOND("mse_loss", m, decltype(lib_of(x))::mse_loss(x * x, sin(x), 1));
  STRATA_DIFF_SECOND("cross_entropy", m,
                     decltype(lib_of(x))::cross_entropy(x * x, decltype(lib_of(x))::make({2, 0}, {2}, "i64"),
                                                        decltype(lib_of(x))::no_tensor(), 1, -100, 0.1));
  STRATA_DIFF_SECOND("bce_logits", m,
                     decltype(lib_of(x))::bce_logits(x * x, sigmoid(x), decltype(lib_of(x))::no_tensor(),
                                                     decltype(lib_of(x))::no_tensor(), 1));
  STRATA_DIFF_SECOND("conv2d", (Shape{1, 2, 3, 3}),
                     conv2d(x, x.slice(2, 0, 2).slice(3, 0, 2).transpose(0, 1).contiguous(), {}, {1, 1}, {1, 1}));
  STRATA_DIFF_SECOND("max_pool2d", (Shape{1, 1, 4, 4}), max_pool2d(x * x, {2, 2}) * 2);
  STRATA_DIFF_SECOND("gather", m, x.gather(1, decltype(lib_of(x))::make({2, 0, 1, 1}, {2, 2}, "i64")) * x.sum());
  STRATA_DIFF_SECOND("index_select", m,
                     x.index_select(1, decltype(lib_of(x))::make({2, 2}, {2}, "i64")) * x.slice(1, 0, 2));
  STRATA_DIFF_SECOND("embedding", m, embedding(x, decltype(lib_of(x))::make({1, 0, 1}, {3}, "i64")) * 3);
}

void factory_cases() {
  add_case("factory arange float step", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{L::arange(0.0, 1.0, 0.1), L::arange(1, 10, 3), L::arange(5), L::arange(-1.5, 2.5),
                         L::arange(10, 0, -3)};
  });
  add_case("factory arange empty and bad", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{L::arange(3, 3)};
  });
  add_case("factory arange wrong sign", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{L::arange(0, 3, -1)};
  });
  add_case("factory arange zero step", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{L::arange(0, 3, 0)};
  });
  add_case("factory linspace", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{L::linspace(0, 1, 5), L::linspace(-2.5, 7, 7), L::linspace(3, 3, 1), L::linspace(1, 2, 0),
                         L::linspace(10, 0, 4)};
  });
  add_case("factory eye", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{L::eye(3), L::eye(2, 4), L::eye(0)};
  });
  add_case("factory full inference", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{L::full({2}, 1.5), L::full({2}, int64_t{3}), L::full({2}, true)};
  });
}

// Forward and backward through a network whose parameters are set to ramps: the output, the
// parameters' shapes (in parameters() order) and their gradients.
template <class L, class Net>
TensorList<L> run_network(Net net, const Shape& input_shape, bool train) {
  auto params = net->parameters();
  {
    typename L::NoGrad no_grad;
    for (size_t i = 0; i < params.size(); ++i)
      params[i].copy_(L::make(ramp(params[i].numel(), 0.3 - 0.1 * i, -0.07), params[i].sizes().vec(), "f32"));
  }
  train ? net->train() : net->eval();
  auto x = L::make(ramp(count(input_shape), -0.8, 0.23), input_shape, "f32", true);
  auto y = net->forward(x);
  TensorList<L> out = with_grads<L>(y, {x});
  for (const auto& p : params) {
    out.push_back(L::make(std::vector<double>(p.sizes().begin(), p.sizes().end()), {p.dim()}, "i64"));
    out.push_back(p.grad());
  }
  return out;
}

void network_cases() {
  add_case("module MLP", [](auto lib) {
    using L = decltype(lib);
    typename L::Sequential net(L::linear_module(4, 5), L::relu_module(), L::linear_module(5, 3), L::tanh_module());
    return run_network<L>(net, {2, 4}, true);
  });
  add_case("module CNN", [](auto lib) {
    using L = decltype(lib);
    typename L::Sequential net(L::conv2d_module(2, 3, 3, 1), L::relu_module(), L::max_pool2d_module(2),
                               L::flatten_module(), L::linear_module(12, 4), L::gelu_module());
    return run_network<L>(net, {2, 2, 4, 4}, true);
  });
  add_case("module LayerNorm and Dropout in eval", [](auto lib) {
    using L = decltype(lib);
    typename L::Sequential net(L::linear_module(6, 5), L::layer_norm_module(5), L::dropout_module(0.5));
    return run_network<L>(net, {3, 6}, false);
  });
}

}  // namespace

void register_train_cases() {
  network_cases();
  optimizer_cases();
  second_order_cases();
  factory_cases();
}

}  // namespace torch_diff
