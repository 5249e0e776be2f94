// custom_loss_and_regularizer: a focal loss written as an autograd::Function and an L1 weight
// penalty written as an operator with its own derivative, both used in one training loop.
//
//   ./build/samples/custom_loss_and_regularizer
//
// What it shows:
//   1. FocalLoss (Lin et al., 2017: -(1 - p_t)^gamma * log p_t, averaged over the batch) is a
//      Function<FocalLoss> with a hand-derived backward; gradcheck confirms it in float64.
//   2. `reg::l1_penalty(Tensor w, float strength) -> Tensor` is declared by schema, gets a CPU
//      kernel (one pass over the data), a Meta kernel and an Autograd kernel from a Function.
//   3. An MLP trains on the digits data with loss = focal + sum of penalties on its weights;
//      the penalty visibly shrinks the weights compared with training on the focal loss alone.
#include <strata/strata.h>

#include <cmath>
#include <cstdio>
#include <iostream>

using namespace strata;

// Focal loss over logits [N, C] and class indices [N]. With p = softmax(z), p_t = p[target]:
//   FL = -(1 - p_t)^g log p_t,   dFL/dz_j = c * (onehot_j - p_j),
//   c = g * p_t * (1 - p_t)^(g - 1) * log p_t - (1 - p_t)^g          (for g >= 1).
struct FocalLoss : autograd::Function<FocalLoss> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& logits, const Tensor& target, double gamma) {
    STRATA_CHECK(gamma >= 1.0, "[focal_loss] gamma must be >= 1 for this derivative, got ", gamma);
    Tensor log_p = log_softmax(logits, 1);
    Tensor log_pt = gather(log_p, 1, target.unsqueeze(1)).squeeze(1);
    Tensor pt = exp(log_pt);
    Tensor loss = (neg(pow(1.0 - pt, gamma)) * log_pt).mean();
    ctx->save_for_backward({log_p, target});
    ctx->saved_data["gamma"] = gamma;
    return loss;
  }

  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grad_outputs) {
    const tensor_list saved = ctx->get_saved_variables();
    const Tensor& log_p = saved[0];
    const Tensor& target = saved[1];
    const double gamma = ctx->saved_data["gamma"].to_double();
    Tensor p = exp(log_p);
    Tensor log_pt = gather(log_p, 1, target.unsqueeze(1));  // [N, 1]
    Tensor pt = exp(log_pt);
    Tensor c = pt * pow(1.0 - pt, gamma - 1.0) * log_pt * gamma - pow(1.0 - pt, gamma);
    Tensor classes = arange(log_p.size(1), TensorOptions(kInt64)).unsqueeze(0);
    Tensor one_hot = eq(classes, target.unsqueeze(1)).to(log_p.dtype());
    Tensor grad_logits = c * (one_hot - p) * (grad_outputs[0] / static_cast<double>(log_p.size(0)));
    return {grad_logits, Tensor(), Tensor()};
  }
};

// ---- reg::l1_penalty: strength * sum(|w|), an operator with CPU, Meta and Autograd kernels.
template <class T>
double abs_sum(const T* data, int64_t count) {
  double total = 0;
  for (int64_t i = 0; i < count; ++i) total += std::abs(static_cast<double>(data[i]));
  return total;
}

Tensor l1_penalty_cpu(const Tensor& w, double strength) {
  STRATA_CHECK(w.dtype() == kFloat32 || w.dtype() == kFloat64, "[reg::l1_penalty] expected float32 or float64 w, got ",
               w.dtype());
  Tensor input = w.contiguous();
  const double total = input.dtype() == kFloat32 ? abs_sum(input.data_ptr<float>(), input.numel())
                                                 : abs_sum(input.data_ptr<double>(), input.numel());
  return full({}, strength * total, w.dtype());
}

Tensor l1_penalty_meta(const Tensor& w, double) { return empty({}, TensorOptions(w.dtype()).device(kMeta)); }

struct L1Penalty : autograd::Function<L1Penalty> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& w, double strength) {
    ctx->save_for_backward({w});
    ctx->saved_data["strength"] = strength;
    return call("reg::l1_penalty", w, strength).to_tensor();  // Autograd excluded: the CPU kernel
  }
  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grad_outputs) {
    Tensor w = ctx->get_saved_variables()[0];
    return {sign(w) * grad_outputs[0] * ctx->saved_data["strength"].to_double(), Tensor()};
  }
};

STRATA_LIBRARY(reg, m) { m.def("l1_penalty(Tensor w, float strength) -> Tensor"); }
STRATA_LIBRARY_IMPL(reg, CPU, m) { m.impl("l1_penalty", l1_penalty_cpu); }
STRATA_LIBRARY_IMPL(reg, Meta, m) { m.impl("l1_penalty", l1_penalty_meta); }
STRATA_LIBRARY_IMPL(reg, Autograd, m) { m.impl("l1_penalty", autograd::kernel<L1Penalty>()); }

namespace {

struct Result {
  double accuracy, weight_l1;
};

// Trains a 64-32-10 MLP on the first 1,400 digits; returns held-out accuracy and sum |W|.
Result train(const data::Example& digits, double penalty_strength) {
  manual_seed(1);
  auto penalty = find_op("reg::l1_penalty").typed<Tensor(const Tensor&, double)>();
  auto net = nn::Sequential(nn::Linear(64, 32), nn::ReLU(), nn::Linear(32, 10));
  optim::SGD sgd(net.parameters(), optim::SGDOptions(0.1).momentum(0.9));
  const int64_t train_count = 1400;
  data::TensorDataset train_set(digits.data.slice(0, 0, train_count), digits.target.slice(0, 0, train_count));
  data::DataLoader loader(train_set, /*batch_size=*/32, /*shuffle=*/true);
  for (int epoch = 0; epoch < 15; ++epoch) {
    for (auto& [x, y] : loader) {
      Tensor loss = FocalLoss::apply(net.forward(x), y, 2.0);
      if (penalty_strength > 0)
        for (auto& [name, p] : net.named_parameters())
          if (name.ends_with("weight")) loss = loss + penalty.call(p, penalty_strength);
      sgd.zero_grad();
      loss.backward();
      sgd.step();
    }
  }
  NoGradGuard no_grad;
  Tensor test_x = digits.data.slice(0, train_count, digits.data.size(0));
  Tensor test_y = digits.target.slice(0, train_count, digits.target.size(0));
  const double accuracy = eq(argmax(net.forward(test_x), 1), test_y).to(kFloat64).mean().item<double>();
  double weight_l1 = 0;
  for (auto& [name, p] : net.named_parameters())
    if (name.ends_with("weight")) weight_l1 += abs(p).sum().item<double>();
  return {accuracy, weight_l1};
}

}  // namespace

int main() {
  // 1. The focal loss's derivative against finite differences.
  manual_seed(0);
  Tensor logits = randn({5, 4}, kFloat64).requires_grad_();
  Tensor target = tensor({0, 3, 1, 1, 2}, kInt64);
  autograd::GradcheckResult check = autograd::gradcheck(
      [&](const tensor_list& in) { return tensor_list{FocalLoss::apply(in[0], target, 2.0)}; }, {logits});
  std::cout << "focal loss gradcheck: " << check << "\n";
  Tensor w = randn({3, 3}, kFloat64).requires_grad_();
  autograd::GradcheckResult check_l1 = autograd::gradcheck(
      [](const tensor_list& in) { return tensor_list{call("reg::l1_penalty", in[0], 0.5).to_tensor()}; }, {w});
  std::cout << "l1 penalty gradcheck: " << check_l1 << "\n\n" << dump_dispatch_table("reg::l1_penalty") << "\n";

  // 2. Training with and without the penalty.
  data::Example digits = data::load_digits(STRATA_SAMPLE_DATA_DIR "/digits.csv.gz");
  const Result plain = train(digits, 0.0);
  const Result penalised = train(digits, 1e-4);
  std::printf("focal loss only:       held-out accuracy %.1f%%, sum |W| = %.1f\n", 100 * plain.accuracy,
              plain.weight_l1);
  std::printf("focal loss + L1 1e-4:  held-out accuracy %.1f%%, sum |W| = %.1f\n", 100 * penalised.accuracy,
              penalised.weight_l1);
  return (check && check_l1) ? 0 : 1;
}
