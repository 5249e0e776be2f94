#pragma once
// nn::init: in-place initialisers for parameters, with PyTorch's fan and gain rules
// (torch.nn.init). Each runs under NoGradGuard, draws from the default generator (so
// manual_seed makes it reproducible) and returns its tensor.
#include <cstdint>
#include <utility>

#include <strata/ops/ops.h>

namespace strata::nn::init {

enum class Nonlinearity { Linear, Conv1D, Conv2D, Conv3D, Sigmoid, Tanh, ReLU, LeakyReLU, SELU };
enum class FanMode { FanIn, FanOut };

// The recommended gain for a nonlinearity: 1 for linear/conv/sigmoid, 5/3 for tanh, sqrt(2)
// for relu, sqrt(2 / (1 + slope^2)) for leaky relu (param = negative slope), 3/4 for selu.
double calculate_gain(Nonlinearity nonlinearity, double param = 0.01);
// fan_in = size(1) * receptive field, fan_out = size(0) * receptive field (2 dims or more).
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

Tensor uniform_(const Tensor& tensor, double low = 0, double high = 1);
Tensor normal_(const Tensor& tensor, double mean = 0, double std = 1);
Tensor constant_(const Tensor& tensor, const Scalar& value);
Tensor ones_(const Tensor& tensor);
Tensor zeros_(const Tensor& tensor);
// U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)); N(0, gain * sqrt(2 / (fan_in + fan_out))).
Tensor xavier_uniform_(const Tensor& tensor, double gain = 1);
Tensor xavier_normal_(const Tensor& tensor, double gain = 1);
// std = gain(nonlinearity, a) / sqrt(fan); uniform draws from U(-sqrt(3) std, sqrt(3) std).
Tensor kaiming_uniform_(const Tensor& tensor, double a = 0, FanMode mode = FanMode::FanIn,
                        Nonlinearity nonlinearity = Nonlinearity::LeakyReLU);
Tensor kaiming_normal_(const Tensor& tensor, double a = 0, FanMode mode = FanMode::FanIn,
                       Nonlinearity nonlinearity = Nonlinearity::LeakyReLU);

}  // namespace strata::nn::init
