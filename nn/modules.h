#pragma once
// The built-in layers. Each is an `XImpl` module and an `X` handle (Note [Modules are handles]);
// parameters are initialised as PyTorch's layers do, reproducibly under manual_seed.
#include <cstdint>
#include <vector>

#include <strata/nn/module.h>

namespace strata::nn {

// y = x W^T + b; weight [out_features, in_features], bias [out_features].
class LinearImpl : public Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& input);
  // kaiming_uniform_(weight, sqrt(5)) and bias U(-1/sqrt(in), 1/sqrt(in)), as PyTorch.
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  int64_t in_features, out_features;
  Tensor& weight;
  Tensor& bias;  // undefined without a bias
};
STRATA_MODULE(Linear);

// LibTorch-style options for Conv2d: Conv2dOptions(3, 16, 3).stride(2).padding(1).
class Conv2dOptions {
 public:
  Conv2dOptions(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size);
  Conv2dOptions(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : Conv2dOptions(in_channels, out_channels, std::vector<int64_t>{kernel_size, kernel_size}) {}

  Conv2dOptions& stride(std::vector<int64_t> value);
  Conv2dOptions& stride(int64_t value) { return stride(std::vector<int64_t>{value, value}); }
  Conv2dOptions& padding(std::vector<int64_t> value);
  Conv2dOptions& padding(int64_t value) { return padding(std::vector<int64_t>{value, value}); }
  Conv2dOptions& dilation(std::vector<int64_t> value);
  Conv2dOptions& dilation(int64_t value) { return dilation(std::vector<int64_t>{value, value}); }
  Conv2dOptions& groups(int64_t value) { groups_ = value; return *this; }
  Conv2dOptions& bias(bool value) { bias_ = value; return *this; }

  int64_t in_channels() const { return in_channels_; }
  int64_t out_channels() const { return out_channels_; }
  const std::vector<int64_t>& kernel_size() const { return kernel_size_; }
  const std::vector<int64_t>& stride() const { return stride_; }
  const std::vector<int64_t>& padding() const { return padding_; }
  const std::vector<int64_t>& dilation() const { return dilation_; }
  int64_t groups() const { return groups_; }
  bool bias() const { return bias_; }

 private:
  int64_t in_channels_, out_channels_;
  std::vector<int64_t> kernel_size_, stride_{1, 1}, padding_{0, 0}, dilation_{1, 1};
  int64_t groups_ = 1;
  bool bias_ = true;
};

// weight [out_channels, in_channels / groups, kH, kW], bias [out_channels].
class Conv2dImpl : public Module {
 public:
  explicit Conv2dImpl(const Conv2dOptions& options);
  Conv2dImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1, int64_t padding = 0,
             int64_t dilation = 1, int64_t groups = 1, bool bias = true);
  Tensor forward(const Tensor& input);
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  Conv2dOptions options;
  Tensor& weight;
  Tensor& bias;
};
STRATA_MODULE(Conv2d);

// stride defaults to the kernel size.
class MaxPool2dImpl : public Module {
 public:
  MaxPool2dImpl(std::vector<int64_t> kernel_size, std::vector<int64_t> stride = {}, std::vector<int64_t> padding = {0, 0});
  MaxPool2dImpl(int64_t kernel_size, std::optional<int64_t> stride = std::nullopt, int64_t padding = 0);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  std::vector<int64_t> kernel_size, stride, padding;
};
STRATA_MODULE(MaxPool2d);

class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(int64_t start_dim = 1, int64_t end_dim = -1);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  int64_t start_dim, end_dim;
};
STRATA_MODULE(Flatten);

// A lookup table: weight [num_embeddings, embedding_dim], initialised N(0, 1).
class EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim);
  Tensor forward(const Tensor& indices);
  void pretty_print(std::ostream& stream) const override;

  int64_t num_embeddings, embedding_dim;
  Tensor& weight;
};
STRATA_MODULE(Embedding);

// Normalises over the trailing normalized_shape dims; weight ones, bias zeros when affine.
class LayerNormImpl : public Module {
 public:
  explicit LayerNormImpl(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  explicit LayerNormImpl(int64_t normalized_shape, double eps = 1e-5, bool elementwise_affine = true)
      : LayerNormImpl(std::vector<int64_t>{normalized_shape}, eps, elementwise_affine) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  std::vector<int64_t> normalized_shape;
  double eps;
  Tensor& weight;
  Tensor& bias;
};
STRATA_MODULE(LayerNorm);

// Zeroes elements with probability p while training; the identity in eval mode.
class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(double p = 0.5);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  double p;
};
STRATA_MODULE(Dropout);

// Activations without state.
class ReLUImpl : public Module {
 public:
  ReLUImpl() : Module("ReLU") {}
  Tensor forward(const Tensor& input) { return relu(input); }
};
STRATA_MODULE(ReLU);

class GELUImpl : public Module {
 public:
  // approximate: "none" or "tanh".
  explicit GELUImpl(std::string approximate = "none");
  Tensor forward(const Tensor& input) { return gelu(input, approximate); }
  void pretty_print(std::ostream& stream) const override;

  std::string approximate;
};
STRATA_MODULE(GELU);

class TanhImpl : public Module {
 public:
  TanhImpl() : Module("Tanh") {}
  Tensor forward(const Tensor& input) { return tanh(input); }
};
STRATA_MODULE(Tanh);

class SigmoidImpl : public Module {
 public:
  SigmoidImpl() : Module("Sigmoid") {}
  Tensor forward(const Tensor& input) { return sigmoid(input); }
};
STRATA_MODULE(Sigmoid);

}  // namespace strata::nn
