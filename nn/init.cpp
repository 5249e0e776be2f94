// nn::init, following torch.nn.init's formulas.
#include <strata/autograd/grad_mode.h>
#include <strata/nn/init.h>

#include <cmath>

namespace strata::nn::init {
namespace {

int64_t fan_of(const Tensor& tensor, FanMode mode) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return mode == FanMode::FanIn ? fan_in : fan_out;
}

void check_defined(const Tensor& tensor, const char* op) {
  STRATA_CHECK_VALUE(tensor.defined(), "[", op, "] the tensor is undefined");
}

}  // namespace

double calculate_gain(Nonlinearity nonlinearity, double param) {
  switch (nonlinearity) {
    case Nonlinearity::Tanh: return 5.0 / 3;
    case Nonlinearity::ReLU: return std::sqrt(2.0);
    case Nonlinearity::LeakyReLU: return std::sqrt(2.0 / (1 + param * param));
    case Nonlinearity::SELU: return 3.0 / 4;
    default: return 1.0;  // linear, conv and sigmoid
  }
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  check_defined(tensor, "calculate_fan_in_and_fan_out");
  STRATA_CHECK_VALUE(tensor.dim() >= 2, "[calculate_fan_in_and_fan_out] fan in and fan out can not be computed "
                     "for a tensor with fewer than 2 dimensions, got shape ", tensor.sizes());
  int64_t receptive_field = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive_field *= tensor.size(d);
  return {tensor.size(1) * receptive_field, tensor.size(0) * receptive_field};
}

Tensor uniform_(const Tensor& tensor, double low, double high) {
  check_defined(tensor, "uniform_");
  STRATA_CHECK_VALUE(low <= high, "[uniform_] expected low <= high, got low=", low, " and high=", high);
  NoGradGuard no_grad;
  tensor.copy_(rand(tensor.sizes(), tensor.options()) * (high - low) + low);
  return tensor;
}

Tensor normal_(const Tensor& tensor, double mean, double std) {
  check_defined(tensor, "normal_");
  STRATA_CHECK_VALUE(std >= 0, "[normal_] expected std >= 0, got ", std);
  NoGradGuard no_grad;
  tensor.copy_(randn(tensor.sizes(), tensor.options()) * std + mean);
  return tensor;
}

Tensor constant_(const Tensor& tensor, const Scalar& value) {
  check_defined(tensor, "constant_");
  NoGradGuard no_grad;
  fill_(tensor, value);
  return tensor;
}

Tensor ones_(const Tensor& tensor) { return constant_(tensor, 1); }
Tensor zeros_(const Tensor& tensor) { return constant_(tensor, 0); }

Tensor xavier_uniform_(const Tensor& tensor, double gain) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(tensor, -bound, bound);
}

Tensor xavier_normal_(const Tensor& tensor, double gain) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return normal_(tensor, 0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)));
}

Tensor kaiming_uniform_(const Tensor& tensor, double a, FanMode mode, Nonlinearity nonlinearity) {
  check_defined(tensor, "kaiming_uniform_");
  if (tensor.numel() == 0) return tensor;  // PyTorch warns and leaves it
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan_of(tensor, mode)));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(tensor, -bound, bound);
}

Tensor kaiming_normal_(const Tensor& tensor, double a, FanMode mode, Nonlinearity nonlinearity) {
  check_defined(tensor, "kaiming_normal_");
  if (tensor.numel() == 0) return tensor;
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan_of(tensor, mode)));
  return normal_(tensor, 0, std);
}

}  // namespace strata::nn::init
