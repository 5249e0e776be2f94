// The built-in layers: construction (with PyTorch's default initialisation) and forward.
#include <strata/autograd/grad_mode.h>
#include <strata/nn/init.h>
#include <strata/nn/modules.h>

#include <cmath>

namespace strata::nn {
namespace {

int64_t positive(int64_t value, const char* module, const char* name) {
  STRATA_CHECK_VALUE(value > 0, "[", module, "] ", name, " must be positive, got ", value);
  return value;
}

void print_list(std::ostream& stream, const std::vector<int64_t>& values) {
  stream << "[";
  for (size_t i = 0; i < values.size(); ++i) stream << (i ? ", " : "") << values[i];
  stream << "]";
}

// PyTorch's default for Linear and Conv2d: kaiming_uniform_(weight, a = sqrt(5)), which is
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the bias from the same bound.
void reset_like_pytorch(const Tensor& weight, const Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (!bias.defined()) return;
  const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
  const double bound = fan_in > 0 ? 1 / std::sqrt(static_cast<double>(fan_in)) : 0;
  init::uniform_(bias, -bound, bound);
}

std::vector<int64_t> pair_of(std::vector<int64_t> values, const char* name) {
  if (values.size() == 1) values.push_back(values[0]);
  STRATA_CHECK_VALUE(values.size() == 2, "[Conv2d] ", name, " must have 1 or 2 values, got ", values.size());
  return values;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Linear.

LinearImpl::LinearImpl(int64_t in_features, int64_t out_features, bool bias)
    : Module("Linear"),
      in_features(positive(in_features, "Linear", "in_features")),
      out_features(positive(out_features, "Linear", "out_features")),
      weight(register_parameter("weight", empty({out_features, in_features}))),
      bias(register_parameter("bias", bias ? empty({out_features}) : Tensor())) {
  reset_parameters();
}

void LinearImpl::reset_parameters() { reset_like_pytorch(weight, bias); }

Tensor LinearImpl::forward(const Tensor& input) {
  return linear(input, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt);
}

void LinearImpl::pretty_print(std::ostream& stream) const {
  stream << "Linear(in_features=" << in_features << ", out_features=" << out_features
         << ", bias=" << (bias.defined() ? "true" : "false") << ")";
}

// ---------------------------------------------------------------------------------------
// Conv2d.

Conv2dOptions::Conv2dOptions(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size)
    : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(pair_of(std::move(kernel_size), "kernel_size")) {}

Conv2dOptions& Conv2dOptions::stride(std::vector<int64_t> value) {
  stride_ = pair_of(std::move(value), "stride");
  return *this;
}
Conv2dOptions& Conv2dOptions::padding(std::vector<int64_t> value) {
  padding_ = pair_of(std::move(value), "padding");
  return *this;
}
Conv2dOptions& Conv2dOptions::dilation(std::vector<int64_t> value) {
  dilation_ = pair_of(std::move(value), "dilation");
  return *this;
}

namespace {
const Conv2dOptions& checked(const Conv2dOptions& options) {
  positive(options.in_channels(), "Conv2d", "in_channels");
  positive(options.out_channels(), "Conv2d", "out_channels");
  positive(options.groups(), "Conv2d", "groups");
  for (int64_t k : options.kernel_size()) positive(k, "Conv2d", "kernel_size");
  for (int64_t s : options.stride()) positive(s, "Conv2d", "stride");
  for (int64_t d : options.dilation()) positive(d, "Conv2d", "dilation");
  for (int64_t p : options.padding())
    STRATA_CHECK_VALUE(p >= 0, "[Conv2d] padding must be non-negative, got ", p);
  STRATA_CHECK_VALUE(options.in_channels() % options.groups() == 0, "[Conv2d] in_channels (", options.in_channels(),
                     ") must be divisible by groups (", options.groups(), ")");
  STRATA_CHECK_VALUE(options.out_channels() % options.groups() == 0, "[Conv2d] out_channels (",
                     options.out_channels(), ") must be divisible by groups (", options.groups(), ")");
  return options;
}
}  // namespace

Conv2dImpl::Conv2dImpl(const Conv2dOptions& options)
    : Module("Conv2d"),
      options(checked(options)),
      weight(register_parameter("weight", empty({options.out_channels(), options.in_channels() / options.groups(),
                                                 options.kernel_size()[0], options.kernel_size()[1]}))),
      bias(register_parameter("bias", options.bias() ? empty({options.out_channels()}) : Tensor())) {
  reset_parameters();
}

Conv2dImpl::Conv2dImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride,
                       int64_t padding, int64_t dilation, int64_t groups, bool bias)
    : Conv2dImpl(Conv2dOptions(in_channels, out_channels, kernel_size)
                     .stride(stride)
                     .padding(padding)
                     .dilation(dilation)
                     .groups(groups)
                     .bias(bias)) {}

void Conv2dImpl::reset_parameters() { reset_like_pytorch(weight, bias); }

Tensor Conv2dImpl::forward(const Tensor& input) {
  return conv2d(input, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt, options.stride(),
                options.padding(), options.dilation(), options.groups());
}

void Conv2dImpl::pretty_print(std::ostream& stream) const {
  stream << "Conv2d(" << options.in_channels() << ", " << options.out_channels() << ", kernel_size=";
  print_list(stream, options.kernel_size());
  stream << ", stride=";
  print_list(stream, options.stride());
  if (options.padding() != std::vector<int64_t>{0, 0}) {
    stream << ", padding=";
    print_list(stream, options.padding());
  }
  if (options.dilation() != std::vector<int64_t>{1, 1}) {
    stream << ", dilation=";
    print_list(stream, options.dilation());
  }
  if (options.groups() != 1) stream << ", groups=" << options.groups();
  if (!options.bias()) stream << ", bias=false";
  stream << ")";
}

// ---------------------------------------------------------------------------------------
// Pooling, reshaping, lookup, normalisation, dropout and activations.

MaxPool2dImpl::MaxPool2dImpl(std::vector<int64_t> kernel_size, std::vector<int64_t> stride,
                             std::vector<int64_t> padding)
    : Module("MaxPool2d"), kernel_size(std::move(kernel_size)), stride(std::move(stride)), padding(std::move(padding)) {
  for (int64_t k : this->kernel_size) positive(k, "MaxPool2d", "kernel_size");
}

MaxPool2dImpl::MaxPool2dImpl(int64_t kernel_size, std::optional<int64_t> stride, int64_t padding)
    : MaxPool2dImpl(std::vector<int64_t>{kernel_size, kernel_size},
                    stride ? std::vector<int64_t>{*stride, *stride} : std::vector<int64_t>{},
                    std::vector<int64_t>{padding, padding}) {}

Tensor MaxPool2dImpl::forward(const Tensor& input) { return max_pool2d(input, kernel_size, stride, padding); }

void MaxPool2dImpl::pretty_print(std::ostream& stream) const {
  stream << "MaxPool2d(kernel_size=";
  print_list(stream, kernel_size);
  stream << ", stride=";
  print_list(stream, stride.empty() ? kernel_size : stride);
  stream << ", padding=";
  print_list(stream, padding);
  stream << ")";
}

FlattenImpl::FlattenImpl(int64_t start_dim, int64_t end_dim)
    : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}

Tensor FlattenImpl::forward(const Tensor& input) { return flatten(input, start_dim, end_dim); }

void FlattenImpl::pretty_print(std::ostream& stream) const {
  stream << "Flatten(start_dim=" << start_dim << ", end_dim=" << end_dim << ")";
}

EmbeddingImpl::EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
    : Module("Embedding"),
      num_embeddings(positive(num_embeddings, "Embedding", "num_embeddings")),
      embedding_dim(positive(embedding_dim, "Embedding", "embedding_dim")),
      weight(register_parameter("weight", empty({num_embeddings, embedding_dim}))) {
  init::normal_(weight);
}

Tensor EmbeddingImpl::forward(const Tensor& indices) { return embedding(weight, indices); }

void EmbeddingImpl::pretty_print(std::ostream& stream) const {
  stream << "Embedding(num_embeddings=" << num_embeddings << ", embedding_dim=" << embedding_dim << ")";
}

namespace {
std::vector<int64_t> checked_shape(std::vector<int64_t> shape) {
  STRATA_CHECK_VALUE(!shape.empty(), "[LayerNorm] normalized_shape must not be empty");
  for (int64_t size : shape) positive(size, "LayerNorm", "each normalized_shape size");
  return shape;
}
}  // namespace

LayerNormImpl::LayerNormImpl(std::vector<int64_t> normalized_shape, double eps, bool elementwise_affine)
    : Module("LayerNorm"),
      normalized_shape(checked_shape(std::move(normalized_shape))),
      eps(eps),
      weight(register_parameter("weight", elementwise_affine ? ones(this->normalized_shape) : Tensor())),
      bias(register_parameter("bias", elementwise_affine ? zeros(this->normalized_shape) : Tensor())) {
  STRATA_CHECK_VALUE(eps >= 0, "[LayerNorm] eps must be non-negative, got ", eps);
}

Tensor LayerNormImpl::forward(const Tensor& input) {
  auto optional = [](const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; };
  return layer_norm(input, normalized_shape, optional(weight), optional(bias), eps);
}

void LayerNormImpl::pretty_print(std::ostream& stream) const {
  stream << "LayerNorm(";
  print_list(stream, normalized_shape);
  stream << ", eps=" << eps << ", elementwise_affine=" << (weight.defined() ? "true" : "false") << ")";
}

DropoutImpl::DropoutImpl(double p) : Module("Dropout"), p(p) {
  STRATA_CHECK_VALUE(p >= 0 && p <= 1, "[Dropout] dropout probability has to be between 0 and 1, got ", p);
}

Tensor DropoutImpl::forward(const Tensor& input) { return dropout(input, p, is_training()); }

void DropoutImpl::pretty_print(std::ostream& stream) const { stream << "Dropout(p=" << p << ")"; }

GELUImpl::GELUImpl(std::string approximate) : Module("GELU"), approximate(std::move(approximate)) {
  STRATA_CHECK_VALUE(this->approximate == "none" || this->approximate == "tanh",
                     "[GELU] approximate must be 'none' or 'tanh', got '", this->approximate, "'");
}

void GELUImpl::pretty_print(std::ostream& stream) const {
  stream << "GELU(";
  if (approximate != "none") stream << "approximate='" << approximate << "'";
  stream << ")";
}

}  // namespace strata::nn
