// Shared by the torch_diff programs' files: the two "libraries" a case is written against, the
// common form of results, and case registration. See torch_diff.cpp.
#pragma once

#include <strata/strata.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace torch_diff {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using Shape = std::vector<int64_t>;

// ---- the two libraries ------------------------------------------------------------------------

struct StrataLib;
struct TorchLib;
template <class L>
using TensorList = std::vector<typename L::Tensor>;

struct StrataLib {
  using Tensor = strata::Tensor;
  static strata::ScalarType type(const std::string& name) {
    static const std::map<std::string, strata::ScalarType> types = {
        {"bool", strata::kBool},   {"u8", strata::kUInt8},   {"i8", strata::kInt8},
        {"i16", strata::kInt16},   {"i32", strata::kInt32},  {"i64", strata::kInt64},
        {"f16", strata::kFloat16}, {"bf16", strata::kBFloat16}, {"f32", strata::kFloat32},
        {"f64", strata::kFloat64}};
    return types.at(name);
  }
  static Tensor make(const std::vector<double>& values, const Shape& shape, const std::string& dtype,
                     bool requires_grad = false) {
    Tensor t = strata::tensor(values, strata::IntArrayRef(shape), strata::kFloat64).to(type(dtype));
    if (requires_grad) t.requires_grad_(true);
    return t;
  }
  static Tensor scalar_tensor(double v, const std::string& dtype) { return make({v}, {}, dtype); }
  static std::optional<strata::Scalar> none() { return std::nullopt; }
  static strata::Reduction reduction(int r) { return static_cast<strata::Reduction>(r); }
  static std::optional<Tensor> no_tensor() { return std::nullopt; }
  static Tensor cross_entropy(const Tensor& x, const Tensor& t, std::optional<Tensor> w, int r, int64_t ignore,
                              double smoothing) {
    return strata::cross_entropy(x, t, w, reduction(r), ignore, smoothing);
  }
  static Tensor nll_loss(const Tensor& x, const Tensor& t, std::optional<Tensor> w, int r, int64_t ignore) {
    return strata::nll_loss(x, t, w, reduction(r), ignore);
  }
  static Tensor mse_loss(const Tensor& x, const Tensor& t, int r) { return strata::mse_loss(x, t, reduction(r)); }
  static Tensor bce_logits(const Tensor& x, const Tensor& t, std::optional<Tensor> w, std::optional<Tensor> pw,
                           int r) {
    return strata::binary_cross_entropy_with_logits(x, t, w, pw, reduction(r));
  }
  static Tensor channels_last(const Tensor& t) { return t.contiguous(strata::MemoryFormat::ChannelsLast); }
  static Tensor var(const Tensor& t, Shape dims, bool unbiased, bool keepdim) {
    return strata::var(t, dims, unbiased, keepdim);
  }
  static Tensor std_(const Tensor& t, Shape dims, bool unbiased, bool keepdim) {
    return strata::std(t, dims, unbiased, keepdim);
  }
  static void manual_seed(uint64_t seed) { strata::manual_seed(seed); }
  static Tensor rand(const Shape& sizes) { return strata::rand(sizes); }
  static Tensor randn(const Shape& sizes) { return strata::randn(sizes); }
  static Tensor randint(int64_t low, int64_t high, const Shape& sizes) { return strata::randint(low, high, sizes); }
  static strata::nn::Linear linear_module(int64_t in, int64_t out) { return strata::nn::Linear(in, out); }
  static strata::nn::Conv2d conv2d_module(int64_t in, int64_t out, int64_t kernel) {
    return strata::nn::Conv2d(strata::nn::Conv2dOptions(in, out, kernel));
  }
  static strata::nn::Embedding embedding_module(int64_t count, int64_t dim) { return strata::nn::Embedding(count, dim); }
  static strata::nn::LayerNorm layer_norm_module(int64_t n) { return strata::nn::LayerNorm(n); }
  // fn run as jit::compile runs it (traced, elementwise chains fused).
  template <class F>
  static std::vector<Tensor> compiled(F fn, const std::vector<Tensor>& inputs) {
    return strata::jit::compile([fn](const strata::tensor_list& in) { return fn(in); })(inputs);
  }
  using Sequential = strata::nn::Sequential;
  using NoGrad = strata::NoGradGuard;
  static strata::nn::ReLU relu_module() { return strata::nn::ReLU(); }
  static strata::nn::GELU gelu_module() { return strata::nn::GELU(); }
  static strata::nn::Tanh tanh_module() { return strata::nn::Tanh(); }
  static strata::nn::Flatten flatten_module() { return strata::nn::Flatten(); }
  static strata::nn::MaxPool2d max_pool2d_module(int64_t kernel) { return strata::nn::MaxPool2d(kernel); }
  static strata::nn::Conv2d conv2d_module(int64_t in, int64_t out, int64_t kernel, int64_t padding) {
    return strata::nn::Conv2d(strata::nn::Conv2dOptions(in, out, kernel).padding(padding));
  }
  static strata::nn::Dropout dropout_module(double p) { return strata::nn::Dropout(p); }
  using SGD = strata::optim::SGD;
  using SGDOptions = strata::optim::SGDOptions;
  using Adam = strata::optim::Adam;
  using AdamOptions = strata::optim::AdamOptions;
  using AdamW = strata::optim::AdamW;
  using AdamWOptions = strata::optim::AdamWOptions;
  using StepLR = strata::optim::StepLR;
  template <class... A>
  static Tensor arange(A... a) { return strata::arange(a...); }
  template <class... A>
  static Tensor linspace(A... a) { return strata::linspace(a...); }
  template <class... A>
  static Tensor eye(A... a) { return strata::eye(a...); }
  static Tensor full(const Shape& sizes, double v) { return strata::full(sizes, v); }
  static Tensor full(const Shape& sizes, int64_t v) { return strata::full(sizes, v); }
  static Tensor full(const Shape& sizes, bool v) { return strata::full(sizes, v); }
  static std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                  bool create_graph) {
    return strata::autograd::grad(outputs, inputs, {}, /*retain_graph=*/true, create_graph);
  }
  static std::vector<Tensor> grad_allow_unused(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs) {
    return strata::autograd::grad(outputs, inputs, {}, /*retain_graph=*/true, /*create_graph=*/false,
                                  /*allow_unused=*/true);
  }
  template <class T>
  using Function = strata::autograd::Function<T>;
  using Ctx = strata::autograd::AutogradContext;
  static double to_double(const strata::IValue& v) { return v.to_double(); }
};

struct TorchLib {
  using Tensor = torch::Tensor;
  static torch::ScalarType type(const std::string& name) {
    static const std::map<std::string, torch::ScalarType> types = {
        {"bool", torch::kBool},  {"u8", torch::kUInt8},  {"i8", torch::kInt8},      {"i16", torch::kInt16},
        {"i32", torch::kInt32},  {"i64", torch::kInt64}, {"f16", torch::kFloat16}, {"bf16", torch::kBFloat16},
        {"f32", torch::kFloat32}, {"f64", torch::kFloat64}};
    return types.at(name);
  }
  static Tensor make(const std::vector<double>& values, const Shape& shape, const std::string& dtype,
                     bool requires_grad = false) {
    // clone: reshape's result is a view, and a view's autograd differs from a fresh tensor's.
    Tensor t = torch::tensor(values, torch::kFloat64).reshape(shape).to(type(dtype)).clone();
    if (requires_grad) t.requires_grad_(true);
    return t;
  }
  static Tensor scalar_tensor(double v, const std::string& dtype) { return make({v}, {}, dtype); }
  static c10::optional<c10::Scalar> none() { return c10::nullopt; }
  static c10::optional<Tensor> no_tensor() { return c10::nullopt; }
  static Tensor cross_entropy(const Tensor& x, const Tensor& t, c10::optional<Tensor> w, int r, int64_t ignore,
                              double smoothing) {
    return at::cross_entropy_loss(x, t, w, r, ignore, smoothing);
  }
  static Tensor nll_loss(const Tensor& x, const Tensor& t, c10::optional<Tensor> w, int r, int64_t ignore) {
    return at::nll_loss_nd(x, t, w, r, ignore);
  }
  static Tensor mse_loss(const Tensor& x, const Tensor& t, int r) { return at::mse_loss(x, t, r); }
  static Tensor bce_logits(const Tensor& x, const Tensor& t, c10::optional<Tensor> w, c10::optional<Tensor> pw,
                           int r) {
    return at::binary_cross_entropy_with_logits(x, t, w, pw, r);
  }
  static Tensor channels_last(const Tensor& t) { return t.contiguous(at::MemoryFormat::ChannelsLast); }
  static Tensor var(const Tensor& t, Shape dims, bool unbiased, bool keepdim) {
    return at::var(t, at::IntArrayRef(dims), unbiased, keepdim);
  }
  static Tensor std_(const Tensor& t, Shape dims, bool unbiased, bool keepdim) {
    return at::std(t, at::IntArrayRef(dims), unbiased, keepdim);
  }
  static void manual_seed(uint64_t seed) { torch::manual_seed(seed); }
  static Tensor rand(const Shape& sizes) { return torch::rand(sizes); }
  static Tensor randn(const Shape& sizes) { return torch::randn(sizes); }
  static Tensor randint(int64_t low, int64_t high, const Shape& sizes) { return torch::randint(low, high, sizes); }
  static torch::nn::Linear linear_module(int64_t in, int64_t out) { return torch::nn::Linear(in, out); }
  static torch::nn::Conv2d conv2d_module(int64_t in, int64_t out, int64_t kernel) {
    return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel));
  }
  static torch::nn::Embedding embedding_module(int64_t count, int64_t dim) { return torch::nn::Embedding(count, dim); }
  static torch::nn::LayerNorm layer_norm_module(int64_t n) {
    return torch::nn::LayerNorm(torch::nn::LayerNormOptions({n}));
  }
  // LibTorch runs fn eagerly: the reference for strata's compiled form.
  template <class F>
  static std::vector<Tensor> compiled(F fn, const std::vector<Tensor>& inputs) {
    return fn(inputs);
  }
  using Sequential = torch::nn::Sequential;
  using NoGrad = torch::NoGradGuard;
  static torch::nn::ReLU relu_module() { return torch::nn::ReLU(); }
  static torch::nn::GELU gelu_module() { return torch::nn::GELU(); }
  static torch::nn::Tanh tanh_module() { return torch::nn::Tanh(); }
  static torch::nn::Flatten flatten_module() { return torch::nn::Flatten(); }
  static torch::nn::MaxPool2d max_pool2d_module(int64_t kernel) {
    return torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(kernel));
  }
  static torch::nn::Conv2d conv2d_module(int64_t in, int64_t out, int64_t kernel, int64_t padding) {
    return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel).padding(padding));
  }
  static torch::nn::Dropout dropout_module(double p) { return torch::nn::Dropout(p); }
  using SGD = torch::optim::SGD;
  using SGDOptions = torch::optim::SGDOptions;
  using Adam = torch::optim::Adam;
  using AdamOptions = torch::optim::AdamOptions;
  using AdamW = torch::optim::AdamW;
  using AdamWOptions = torch::optim::AdamWOptions;
  using StepLR = torch::optim::StepLR;
  template <class... A>
  static Tensor arange(A... a) { return torch::arange(a...); }
  template <class... A>
  static Tensor linspace(A... a) { return torch::linspace(a...); }
  template <class... A>
  static Tensor eye(A... a) { return torch::eye(a...); }
  static Tensor full(const Shape& sizes, double v) { return torch::full(sizes, v); }
  static Tensor full(const Shape& sizes, int64_t v) { return torch::full(sizes, v); }
  static Tensor full(const Shape& sizes, bool v) { return torch::full(sizes, v); }
  static std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                  bool create_graph) {
    return torch::autograd::grad(outputs, inputs, {}, /*retain_graph=*/true, create_graph);
  }
  static std::vector<Tensor> grad_allow_unused(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs) {
    return torch::autograd::grad(outputs, inputs, {}, /*retain_graph=*/true, /*create_graph=*/false,
                                 /*allow_unused=*/true);
  }
  template <class T>
  using Function = torch::autograd::Function<T>;
  using Ctx = torch::autograd::AutogradContext;
  static double to_double(const c10::IValue& v) { return v.toDouble(); }
};

// ---- results in a common form ------------------------------------------------------------------

struct Value {
  bool defined = false;
  std::string dtype;
  Shape sizes, strides;
  std::vector<double> values;
};

struct Outcome {
  std::string error;  // empty: no exception
  std::vector<Value> values;
};

inline std::string canonical(strata::ScalarType t) { return std::string(strata::scalar_type_name(t)); }
inline std::string canonical(torch::ScalarType t) {
  switch (t) {
    case torch::kBool: return "Bool";
    case torch::kUInt8: return "UInt8";
    case torch::kInt8: return "Int8";
    case torch::kInt16: return "Int16";
    case torch::kInt32: return "Int32";
    case torch::kInt64: return "Int64";
    case torch::kFloat16: return "Float16";
    case torch::kBFloat16: return "BFloat16";
    case torch::kFloat32: return "Float32";
    case torch::kFloat64: return "Float64";
    default: return "other";
  }
}

inline Value convert(const strata::Tensor& t) {
  Value v;
  if (!t.defined()) return v;
  v.defined = true;
  v.dtype = canonical(t.dtype());
  v.sizes = t.sizes().vec();
  v.strides = t.strides().vec();
  strata::NoGradGuard no_grad;
  strata::Tensor d = t.detach().to(strata::kFloat64).contiguous();
  v.values.assign(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
  return v;
}

inline Value convert(const torch::Tensor& t) {
  Value v;
  if (!t.defined()) return v;
  v.defined = true;
  v.dtype = canonical(t.scalar_type());
  v.sizes = t.sizes().vec();
  v.strides = t.strides().vec();
  torch::NoGradGuard no_grad;
  torch::Tensor d = t.detach().to(torch::kFloat64).contiguous();
  v.values.assign(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
  return v;
}

template <class L, class F>
Outcome run_in(const F& fn) {
  Outcome outcome;
  try {
    for (const auto& t : fn(L{})) outcome.values.push_back(convert(t));
  } catch (const std::exception& e) {
    std::string message = e.what();
    outcome.error = message.substr(0, message.find('\n'));
    if (outcome.error.empty()) outcome.error = "(exception)";
  }
  return outcome;
}

struct Case {
  std::string name;
  std::function<Outcome()> strata_run, torch_run;
};

std::vector<Case>& cases();

template <class F>
void add_case(std::string name, F fn) {
  cases().push_back({std::move(name), [fn] { return run_in<StrataLib>(fn); }, [fn] { return run_in<TorchLib>(fn); }});
}

// One function per case file.
void register_pointwise_cases();
void register_reduction_cases();
void register_nn_cases();
void register_train_cases();
void register_layout_cases();
void register_dtype_cases();
void register_jit_cases();
void register_autograd_cases();
void register_function_cases();
void register_error_cases();

// Case-writing helpers; L is a library (StrataLib or TorchLib).
// decltype(lib_of(x)) names x's library inside a case written only over tensors.
StrataLib lib_of(const strata::Tensor&);
TorchLib lib_of(const torch::Tensor&);

inline std::vector<double> ramp(int64_t n, double start = -1.0, double step = 0.37) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + step * static_cast<double>(i % 7) - 0.11 * static_cast<double>(i / 7);
  return v;
}

inline int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Booleans as a float64 tensor, so that flags (requires_grad, is_leaf, ...) compare as values.
template <class L>
typename L::Tensor flags(std::initializer_list<bool> values) {
  std::vector<double> v;
  for (bool b : values) v.push_back(b ? 1.0 : 0.0);
  return L::make(v, {static_cast<int64_t>(v.size())}, "f64");
}

template <class T>
bool has_grad_fn(const T& t) {
  return t.grad_fn() != nullptr;
}

// Gradients of sum(y * ramp) with respect to each input that requires grad (in order).
template <class L>
TensorList<L> with_grads(const typename L::Tensor& y, const TensorList<L>& inputs) {
  TensorList<L> out{y};
  if (!y.requires_grad()) return out;
  y.backward(L::make(ramp(y.numel(), 0.5, 0.25), y.sizes().vec(), "f64").to(y.dtype()));
  for (const auto& x : inputs) out.push_back(x.grad());
  return out;
}

}  // namespace torch_diff
