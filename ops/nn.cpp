// Neural-network functions: softmax and log_softmax (with their fused backward kernels
// _softmax_backward_data and _log_softmax_backward_data), dropout (native_dropout),
// layer_norm (native_layer_norm) and embedding (embedding_dense_backward).
// conv2d and max_pool2d live in conv.cpp.
// GCC 12 reports false positives inside Eigen's AVX-512 packets (as for linalg.cpp in
// CMakeLists.txt); the pragma must precede the first include of the intrinsics headers.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#define EIGEN_DONT_PARALLELIZE  // strata splits the work itself; see Note [Matmul threading]
#include <Eigen/Core>

#include <strata/autograd/function.h>
#include <strata/dispatch/library.h>
#include <strata/ops/elementwise.h>
#include <strata/ops/op_helpers.h>
#include <strata/tensor/random.h>

#include <cmath>
#include <mutex>

namespace strata {
namespace {

using detail::DimLayout;
using detail::layout_around;

// Runs fn(o) for every outer block o of the layout, in parallel when there is enough work.
template <class Fn>
void for_each_block(const DimLayout& layout, const Fn& fn) {
  const int64_t work = std::max<int64_t>(layout.size * layout.inner, 1);
  auto body = [&fn](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) fn(o);
  };
  if (layout.outer * work <= kDefaultGrainSize || layout.outer == 1) body(0, layout.outer);
  else parallel_for(0, layout.outer, std::max<int64_t>(1, kDefaultGrainSize / work), body);
}

// The compute dtype of the float kernels: float64 stays, everything else runs in float32.
ScalarType float_compute_type(ScalarType dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

// t converted to `dtype` and contiguous (itself when it already is).
Tensor contiguous_as(const Tensor& t, ScalarType dtype) {
  return t.dtype() == dtype && t.is_contiguous() ? t : detail::cast_to(t, dtype);
}

// ---------------------------------------------------------------------------------------
// softmax and log_softmax.

// Note [Stable softmax]
// Each slice along dim is shifted by its maximum before exponentiating, so the largest term
// is exp(0) = 1 and large logits (1e4 in float32) neither overflow nor lose the others:
// softmax = exp(x - m) / sum(exp(x - m)), log_softmax = (x - m) - log(sum(exp(x - m))).
// The slices are contiguous rows when dim is the last dim; otherwise a block [size, inner]
// is reduced column-wise, so the inner loop still runs over contiguous memory. Eigen's
// array expressions give vectorised exp and log. float16/bfloat16 compute in float32.

struct SoftmaxShape {
  ScalarType dtype;
  int64_t dim;
};

SoftmaxShape softmax_shape(const char* op, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  const ScalarType result = dtype.value_or(self.dtype());
  STRATA_CHECK_TYPE(is_floating_point(result), "[", op, "] expected a floating-point input or dtype, got ", result,
                    " for the input of shape ", self.sizes());
  return {result, wrap_dim(dim, self.dim(), op)};
}

template <class C>
using RowMajorArray = Eigen::Array<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class C>
using Column = Eigen::Array<C, Eigen::Dynamic, 1>;

template <class C, bool Log>
void softmax_block(const C* x, C* y, int64_t size, int64_t inner) {
  if (inner == 1) {
    Eigen::Map<const Column<C>> in(x, size);
    Eigen::Map<Column<C>> out(y, size);
    const C max = in.maxCoeff();
    if constexpr (Log) {
      out = in - max;
      out -= std::log(out.exp().sum());
    } else {
      out = (in - max).exp();
      out /= out.sum();
    }
    return;
  }
  Eigen::Map<const RowMajorArray<C>> in(x, size, inner);
  Eigen::Map<RowMajorArray<C>> out(y, size, inner);
  const Eigen::Array<C, 1, Eigen::Dynamic> max = in.colwise().maxCoeff();
  if constexpr (Log) {
    out = in.rowwise() - max;
    const Eigen::Array<C, 1, Eigen::Dynamic> log_sum = out.exp().colwise().sum().log();
    out.rowwise() -= log_sum;
  } else {
    out = (in.rowwise() - max).exp();
    const Eigen::Array<C, 1, Eigen::Dynamic> sum = out.colwise().sum();
    out.rowwise() /= sum;
  }
}

// grad_input from grad and the forward output y, per block:
//   softmax:     y * (g - sum(g * y))        log_softmax: g - exp(y) * sum(g)
template <class C, bool Log>
void softmax_backward_block(const C* g, const C* y, C* result, int64_t size, int64_t inner) {
  if (inner == 1) {  // one contiguous row: vector maps keep Eigen's packet exp
    Eigen::Map<const Column<C>> grad(g, size), out(y, size);
    Eigen::Map<Column<C>> grad_input(result, size);
    if constexpr (Log) grad_input = grad - out.exp() * grad.sum();
    else grad_input = out * (grad - (grad * out).sum());
    return;
  }
  Eigen::Map<const RowMajorArray<C>> grad(g, size, inner), out(y, size, inner);
  Eigen::Map<RowMajorArray<C>> grad_input(result, size, inner);
  if constexpr (Log) {
    const Eigen::Array<C, 1, Eigen::Dynamic> sum = grad.colwise().sum();
    grad_input = grad - (out.exp().rowwise() * sum);
  } else {
    const Eigen::Array<C, 1, Eigen::Dynamic> dot = (grad * out).colwise().sum();
    grad_input = out * (grad.rowwise() - dot);
  }
}

template <bool Log>
Tensor softmax_compute(const Tensor& self, const SoftmaxShape& shape) {
  Tensor out = detail::make_empty(self.sizes(), shape.dtype, self.device());
  if (out.numel() == 0) return out;
  const ScalarType compute = float_compute_type(shape.dtype);
  const Tensor input = contiguous_as(self, compute);
  Tensor result = shape.dtype == compute ? out : detail::make_empty(self.sizes(), compute, self.device());
  const DimLayout layout = layout_around(self.sizes(), shape.dim);
  visit_dtype(compute, [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* x = detail::data_of<T>(input);
      T* y = detail::data_of<T>(result);
      const int64_t block = layout.size * layout.inner;
      for_each_block(layout, [&](int64_t o) { softmax_block<T, Log>(x + o * block, y + o * block, layout.size, layout.inner); });
    }
  });
  if (!result.is_same(out)) detail::copy_kernel(out, result);
  return out;
}

template <bool Log>
Tensor softmax_cpu(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_compute<Log>(self, softmax_shape(Log ? "log_softmax" : "softmax", self, dim, dtype));
}

template <bool Log>
Tensor softmax_meta(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  const SoftmaxShape shape = softmax_shape(Log ? "log_softmax" : "softmax", self, dim, dtype);
  return detail::make_empty(self.sizes(), shape.dtype, self.device());
}

void check_softmax_backward(const char* op, const Tensor& grad, const Tensor& output, ScalarType input_dtype) {
  detail::check_same_device(op, grad, output);
  STRATA_CHECK_VALUE(grad.sizes() == output.sizes(), "[", op, "] grad_output of shape ", grad.sizes(),
                     " does not match output of shape ", output.sizes());
  STRATA_CHECK_TYPE(is_floating_point(output.dtype()) && is_floating_point(input_dtype), "[", op,
                    "] expected floating-point tensors, got ", output.dtype(), " and input_dtype ", input_dtype);
}

template <bool Log>
Tensor softmax_backward_cpu(const Tensor& grad, const Tensor& output, int64_t dim, ScalarType input_dtype) {
  const char* op = Log ? "_log_softmax_backward_data" : "_softmax_backward_data";
  check_softmax_backward(op, grad, output, input_dtype);
  Tensor grad_input = detail::make_empty(output.sizes(), input_dtype, output.device());
  if (grad_input.numel() == 0) return grad_input;
  const ScalarType compute = float_compute_type(promote_types(output.dtype(), input_dtype));
  const Tensor g = contiguous_as(grad, compute), y = contiguous_as(output, compute);
  Tensor result = input_dtype == compute ? grad_input : detail::make_empty(output.sizes(), compute, output.device());
  const DimLayout layout = layout_around(output.sizes(), wrap_dim(dim, output.dim(), op));
  visit_dtype(compute, [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* grad_data = detail::data_of<T>(g);
      const T* out_data = detail::data_of<T>(y);
      T* result_data = detail::data_of<T>(result);
      const int64_t block = layout.size * layout.inner;
      for_each_block(layout, [&](int64_t o) {
        softmax_backward_block<T, Log>(grad_data + o * block, out_data + o * block, result_data + o * block,
                                       layout.size, layout.inner);
      });
    }
  });
  if (!result.is_same(grad_input)) detail::copy_kernel(grad_input, result);
  return grad_input;
}

template <bool Log>
Tensor softmax_backward_meta(const Tensor& grad, const Tensor& output, int64_t dim, ScalarType input_dtype) {
  const char* op = Log ? "_log_softmax_backward_data" : "_softmax_backward_data";
  check_softmax_backward(op, grad, output, input_dtype);
  (void)wrap_dim(dim, output.dim(), op);
  return detail::make_empty(output.sizes(), input_dtype, output.device());
}


// ---------------------------------------------------------------------------------------
// dropout.

void check_dropout_probability(double p) {
  STRATA_CHECK_VALUE(p >= 0.0 && p <= 1.0, "[dropout] dropout probability has to be between 0 and 1, but got ", p);
}

// Note [Dropout]
// In training mode each element is kept with probability 1 - p and scaled by 1 / (1 - p), so
// the expectation is unchanged; p = 1 drops everything (zeros). The keep mask (kBool) is the
// second output and the whole gradient: grad * mask / (1 - p). Draws come from the default
// generator, one per element in order, so manual_seed makes the mask reproducible.
std::tuple<Tensor, Tensor> native_dropout_cpu(const Tensor& input, double p, std::optional<bool> train) {
  check_dropout_probability(p);
  STRATA_CHECK_TYPE(is_floating_point(input.dtype()), "[dropout] expected a floating-point input, got ", input.dtype());
  Tensor mask = detail::make_empty(input.sizes(), kBool, input.device());
  if (train.has_value() && !*train) {
    detail::fill_kernel(mask, true, "dropout");
    return {clone(input), mask};
  }
  bool* keep = detail::data_of<bool>(mask);
  {
    auto& generator = detail::default_cpu_generator();
    std::lock_guard lock(generator.mutex);
    for (int64_t i = 0, n = mask.numel(); i < n; ++i)
      keep[i] = static_cast<double>(generator.engine() >> 11) * 0x1.0p-53 >= p;
  }
  Tensor output = detail::make_empty(input.sizes(), input.dtype(), input.device());
  const Tensor x = detail::as_contiguous(input);
  const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  visit_dtype(input.dtype(), [&]<class T>() {
    using C = compute_type_t<T>;
    const T* in = detail::data_of<T>(x);
    T* out = detail::data_of<T>(output);
    const C factor = static_cast<C>(scale);
    for (int64_t i = 0, n = output.numel(); i < n; ++i) out[i] = keep[i] ? static_cast<T>(static_cast<C>(in[i]) * factor) : T(0);
  });
  return {output, mask};
}

std::tuple<Tensor, Tensor> native_dropout_meta(const Tensor& input, double p, std::optional<bool>) {
  check_dropout_probability(p);
  STRATA_CHECK_TYPE(is_floating_point(input.dtype()), "[dropout] expected a floating-point input, got ", input.dtype());
  return {detail::make_empty(input.sizes(), input.dtype(), input.device()),
          detail::make_empty(input.sizes(), kBool, input.device())};
}

std::tuple<Tensor, Tensor> call_native_dropout(const Tensor& input, double p, std::optional<bool> train) {
  static const auto op = find_op("strata::native_dropout")
                             .typed<std::tuple<Tensor, Tensor>(const Tensor&, double, std::optional<bool>)>();
  return op.call(input, p, train);
}

// Not training, p = 0 or no elements: the input itself, as in PyTorch.
Tensor dropout_composite(const Tensor& input, double p, bool train) {
  check_dropout_probability(p);
  if (!train || p == 0.0 || input.numel() == 0) return input;
  return std::get<0>(call_native_dropout(input, p, train));
}

// ---------------------------------------------------------------------------------------
// layer_norm.

// The input seen as [rows, row_size]: the trailing dims given by normalized_shape are one row.
struct LayerNormShape {
  int64_t rows = 1, row_size = 1;
  DimVector stat_sizes;  // the input's leading dims, then a 1 per normalized dim
};

LayerNormShape layer_norm_shape(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                                const std::optional<Tensor>& bias) {
  STRATA_CHECK_VALUE(!normalized_shape.empty(), "[layer_norm] normalized_shape must have at least one dimension");
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  const bool matches = axis >= 0 && input.sizes().slice(static_cast<size_t>(axis)) == normalized_shape;
  STRATA_CHECK_VALUE(matches, "[layer_norm] input of shape ", input.sizes(), " does not end with normalized_shape ",
                     normalized_shape);
  STRATA_CHECK_TYPE(is_floating_point(input.dtype()), "[layer_norm] expected a floating-point input, got ",
                    input.dtype());
  for (const std::optional<Tensor>* parameter : {&weight, &bias}) {
    if (!*parameter || !(*parameter)->defined()) continue;
    const char* name = parameter == &weight ? "weight" : "bias";
    detail::check_same_device("layer_norm", input, **parameter);
    STRATA_CHECK_VALUE((*parameter)->sizes() == normalized_shape, "[layer_norm] expected ", name, " of shape ",
                       normalized_shape, " (normalized_shape), got ", (*parameter)->sizes());
  }
  LayerNormShape shape;
  for (int64_t d = 0; d < input.dim(); ++d) {
    (d < axis ? shape.rows : shape.row_size) *= input.sizes()[d];
    shape.stat_sizes.push_back(d < axis ? input.sizes()[d] : 1);
  }
  return shape;
}

// Note [Layer norm statistics]
// Each row's mean and variance are computed in two passes (mean first, then the mean of the
// squared deviations) accumulated in double, so rows with a large offset lose nothing;
// rstd = 1 / sqrt(var + eps) with the biased variance, as in PyTorch.
template <class C>
void layer_norm_row(const C* x, C* y, const C* w, const C* b, int64_t n, double eps, C* mean_out, C* rstd_out) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
  const double mean = n > 0 ? sum / static_cast<double>(n) : 0.0;
  double squares = 0;
  for (int64_t i = 0; i < n; ++i) squares += (static_cast<double>(x[i]) - mean) * (static_cast<double>(x[i]) - mean);
  const double rstd = 1.0 / std::sqrt((n > 0 ? squares / static_cast<double>(n) : 0.0) + eps);
  const C mean_c = static_cast<C>(mean), rstd_c = static_cast<C>(rstd);
  for (int64_t i = 0; i < n; ++i) {
    C value = (x[i] - mean_c) * rstd_c;
    if (w) value *= w[i];
    if (b) value += b[i];
    y[i] = value;
  }
  *mean_out = mean_c;
  *rstd_out = rstd_c;
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_cpu(const Tensor& input, IntArrayRef normalized_shape,
                                                         const std::optional<Tensor>& weight,
                                                         const std::optional<Tensor>& bias, double eps) {
  const LayerNormShape shape = layer_norm_shape(input, normalized_shape, weight, bias);
  const ScalarType dtype = input.dtype(), compute = float_compute_type(dtype);
  Tensor output = detail::make_empty(input.sizes(), dtype, input.device());
  Tensor mean = detail::make_empty(shape.stat_sizes, dtype, input.device());
  Tensor rstd = detail::make_empty(shape.stat_sizes, dtype, input.device());
  const Tensor x = contiguous_as(input, compute);
  const Tensor w = weight && weight->defined() ? contiguous_as(*weight, compute) : Tensor();
  const Tensor b = bias && bias->defined() ? contiguous_as(*bias, compute) : Tensor();
  Tensor y = dtype == compute ? output : detail::make_empty(input.sizes(), compute, input.device());
  Tensor means = dtype == compute ? mean : detail::make_empty(shape.stat_sizes, compute, input.device());
  Tensor rstds = dtype == compute ? rstd : detail::make_empty(shape.stat_sizes, compute, input.device());
  visit_dtype(compute, [&]<class C>() {
    if constexpr (std::is_same_v<C, float> || std::is_same_v<C, double>) {
      const C* w_data = w.defined() ? detail::data_of<C>(w) : nullptr;
      const C* b_data = b.defined() ? detail::data_of<C>(b) : nullptr;
      const C* x_data = detail::data_of<C>(x);
      C *y_data = detail::data_of<C>(y), *mean_data = detail::data_of<C>(means), *rstd_data = detail::data_of<C>(rstds);
      const int64_t n = shape.row_size;
      for_each_block(DimLayout{shape.rows, n, 1}, [&](int64_t r) {
        layer_norm_row(x_data + r * n, y_data + r * n, w_data, b_data, n, eps, mean_data + r, rstd_data + r);
      });
    }
  });
  if (!y.is_same(output)) {
    detail::copy_kernel(output, y);
    detail::copy_kernel(mean, means);
    detail::copy_kernel(rstd, rstds);
  }
  return {output, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_meta(const Tensor& input, IntArrayRef normalized_shape,
                                                          const std::optional<Tensor>& weight,
                                                          const std::optional<Tensor>& bias, double) {
  const LayerNormShape shape = layer_norm_shape(input, normalized_shape, weight, bias);
  return {detail::make_empty(input.sizes(), input.dtype(), input.device()),
          detail::make_empty(shape.stat_sizes, input.dtype(), input.device()),
          detail::make_empty(shape.stat_sizes, input.dtype(), input.device())};
}

std::tuple<Tensor, Tensor, Tensor> call_native_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                                                          const std::optional<Tensor>& weight,
                                                          const std::optional<Tensor>& bias, double eps) {
  static const auto op = find_op("strata::native_layer_norm")
                             .typed<std::tuple<Tensor, Tensor, Tensor>(const Tensor&, IntArrayRef,
                                                                       const std::optional<Tensor>&,
                                                                       const std::optional<Tensor>&, double)>();
  return op.call(input, normalized_shape, weight, bias, eps);
}

Tensor layer_norm_composite(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                            const std::optional<Tensor>& bias, double eps, bool cudnn_enable) {
  (void)cudnn_enable;  // no cuDNN path
  return std::get<0>(call_native_layer_norm(input, normalized_shape, weight, bias, eps));
}

// ---------------------------------------------------------------------------------------
// embedding: rows of weight picked by indices, built from index_select and index_add.

void check_embedding(const Tensor& weight, const Tensor& indices, bool sparse) {
  STRATA_CHECK_VALUE(weight.dim() == 2, "[embedding] expected a 2-d weight [num_embeddings, embedding_dim], got "
                     "weight of shape ", weight.sizes());
  STRATA_CHECK_TYPE(indices.dtype() == kInt64 || indices.dtype() == kInt32, "[embedding] expected int64 or int32 "
                    "indices, got ", indices.dtype(), " indices of shape ", indices.sizes());
  STRATA_CHECK_NOT_IMPLEMENTED(!sparse, "[embedding] sparse gradients are not supported");
}

// Index values are checked here when they are on the CPU, so the error names embedding.
void check_embedding_indices(const Tensor& weight, const Tensor& indices) {
  if (!indices.is_cpu() || indices.numel() == 0) return;
  const Tensor values = detail::as_contiguous(indices);
  visit_dtype(values.dtype(), [&]<class I>() {
    if constexpr (std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>) {
      const I* data = detail::data_of<I>(values);
      for (int64_t i = 0; i < values.numel(); ++i)
        STRATA_CHECK_INDEX(data[i] >= 0 && data[i] < weight.sizes()[0], "[embedding] index ",
                           static_cast<int64_t>(data[i]), " is out of range for a weight of shape ", weight.sizes());
    }
  });
}

Tensor embedding_kernel(const Tensor& weight, const Tensor& indices, int64_t padding_idx, bool scale_grad_by_freq,
                        bool sparse) {
  (void)padding_idx;  // only the gradient skips the padding row
  (void)scale_grad_by_freq;
  check_embedding(weight, indices, sparse);
  check_embedding_indices(weight, indices);
  DimVector sizes(indices.sizes());
  sizes.push_back(weight.sizes()[1]);
  return index_select(weight, 0, indices.reshape({-1})).view(sizes);
}

// The weight's gradient: each index's row of grad_output added into its weight row, except
// for rows whose index is padding_idx; scale_grad_by_freq divides each row by how often its
// index occurs in the batch. Built from differentiable ops, so it has a derivative too.
Tensor embedding_dense_backward_composite(const Tensor& grad_output, const Tensor& indices, int64_t num_weights,
                                          int64_t padding_idx, bool scale_grad_by_freq) {
  const int64_t dim = grad_output.size(-1);
  const Tensor flat = indices.reshape({-1});
  Tensor rows = grad_output.reshape({-1, dim});
  if (padding_idx >= 0) rows = rows.masked_fill(eq(flat, padding_idx).unsqueeze(1), 0);
  if (scale_grad_by_freq) {
    const Tensor counts = zeros({num_weights}, rows.options()).index_add(0, flat, ones({flat.numel()}, rows.options()));
    rows = rows / counts.index_select(0, flat).unsqueeze(1);
  }
  return zeros({num_weights, dim}, rows.options()).index_add(0, flat, rows);
}

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  m.def("softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor");
  m.def("log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor");
  m.def("_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor");
  m.def("_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor");
  m.def("native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)");
  m.def("dropout(Tensor input, float p, bool train) -> Tensor", &dropout_composite);
  m.def("native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) "
        "-> (Tensor, Tensor, Tensor)");
  m.def("layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
        "float eps=1e-05, bool cudnn_enable=True) -> Tensor",
        &layer_norm_composite);
  m.def("embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, "
        "bool sparse=False) -> Tensor");
  m.def("embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, "
        "bool scale_grad_by_freq) -> Tensor",
        &embedding_dense_backward_composite);
}

STRATA_LIBRARY_IMPL(strata, CompositeExplicitAutograd, m) { m.impl("embedding", &embedding_kernel); }

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  m.impl("softmax.int", &softmax_cpu<false>);
  m.impl("log_softmax.int", &softmax_cpu<true>);
  m.impl("_softmax_backward_data", &softmax_backward_cpu<false>);
  m.impl("_log_softmax_backward_data", &softmax_backward_cpu<true>);
  m.impl("native_dropout", &native_dropout_cpu);
  m.impl("native_layer_norm", &native_layer_norm_cpu);
}

STRATA_LIBRARY_IMPL(strata, Meta, m) {
  m.impl("softmax.int", &softmax_meta<false>);
  m.impl("log_softmax.int", &softmax_meta<true>);
  m.impl("_softmax_backward_data", &softmax_backward_meta<false>);
  m.impl("_log_softmax_backward_data", &softmax_backward_meta<true>);
  m.impl("native_dropout", &native_dropout_meta);
  m.impl("native_layer_norm", &native_layer_norm_meta);
}

// ---------------------------------------------------------------------------------------
// Derivatives.

namespace {
using autograd::AutogradContext;

template <bool Log>
Tensor softmax_backward_data(const Tensor& grad, const Tensor& output, int64_t dim, ScalarType input_dtype) {
  static const auto op = find_op(Log ? "strata::_log_softmax_backward_data" : "strata::_softmax_backward_data")
                             .typed<Tensor(const Tensor&, const Tensor&, int64_t, ScalarType)>();
  return op.call(grad, output, dim, input_dtype);
}

// Note [Softmax double backward]
// A plain backward (grad mode off) runs the fused kernel _softmax_backward_data or
// _log_softmax_backward_data, which have no derivative of their own. Under create_graph the
// same gradient is built from differentiable ops on the saved output y instead, so it can be
// differentiated again: y * (g - sum(g * y)) for softmax and g - softmax(y) * sum(g) for
// log_softmax (softmax(y) = exp(y) because the exp(y) of a log_softmax sum to one).
template <bool Log>
struct SoftmaxFunction : autograd::Function<SoftmaxFunction<Log>> {
  static constexpr std::string_view name() { return Log ? "LogSoftmaxBackward" : "SoftmaxBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
    Tensor out = Log ? log_softmax(self, dim, dtype) : softmax(self, dim, dtype);
    ctx->save_for_backward({out});
    ctx->saved_data["dim"] = wrap_dim(dim, self.dim(), Log ? "log_softmax" : "softmax");
    return out;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const Tensor out = ctx->get_saved_variables()[0];
    const int64_t dim = ctx->saved_data["dim"].to_int();
    const Tensor& g = grads[0];
    if (!is_grad_enabled()) return {softmax_backward_data<Log>(g, out, dim, out.dtype()), Tensor(), Tensor()};
    if constexpr (Log) return {g - softmax(out, dim) * g.sum({dim}, true), Tensor(), Tensor()};
    return {out * (g - (g * out).sum({dim}, true)), Tensor(), Tensor()};
  }
};

// The mask is the second output (non-differentiable); grad * mask * scale.
struct NativeDropoutFunction : autograd::Function<NativeDropoutFunction> {
  static constexpr std::string_view name() { return "NativeDropoutBackward"; }
  static tensor_list forward(AutogradContext* ctx, const Tensor& input, double p, std::optional<bool> train) {
    auto [output, mask] = call_native_dropout(input, p, train);
    ctx->save_for_backward({mask});
    ctx->saved_data["scale"] = train.has_value() && !*train ? 1.0 : p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
    ctx->mark_non_differentiable({mask});
    return {output, mask};
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return {grads[0] * ctx->get_saved_variables()[0] * ctx->saved_data["scale"].to_double(), Tensor(), Tensor()};
  }
};

// Note [Layer norm backward]
// With xhat = (x - mean) * rstd and gw = grad * weight (grad without a weight), over each row:
//   d/dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)),
//   d/dweight = sum over rows of grad * xhat,   d/dbias = sum over rows of grad.
// A plain backward uses the saved mean and rstd. Under create_graph they are recomputed from x
// with differentiable ops (mean, rsqrt of the variance), so the second derivative sees how
// they depend on x.
struct LayerNormFunction : autograd::Function<LayerNormFunction> {
  static constexpr std::string_view name() { return "NativeLayerNormBackward"; }
  static tensor_list forward(AutogradContext* ctx, const Tensor& input, IntArrayRef normalized_shape,
                             const Tensor& weight, const Tensor& bias, double eps) {
    auto [output, mean, rstd] = call_native_layer_norm(input, normalized_shape, detail::as_optional(weight),
                                                       detail::as_optional(bias), eps);
    ctx->save_for_backward({input, weight, mean, rstd});
    ctx->saved_data["normalized_ndim"] = static_cast<int64_t>(normalized_shape.size());
    ctx->saved_data["eps"] = eps;
    ctx->mark_non_differentiable({mean, rstd});
    return {output, mean, rstd};
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const tensor_list saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &weight = saved[1];
    Tensor mean = saved[2], rstd = saved[3];
    const int64_t normalized_ndim = ctx->saved_data["normalized_ndim"].to_int(), axis = x.dim() - normalized_ndim;
    std::vector<int64_t> row_dims, batch_dims;
    for (int64_t d = 0; d < x.dim(); ++d) (d < axis ? batch_dims : row_dims).push_back(d);
    const double row_size = static_cast<double>(x.numel() / std::max<int64_t>(mean.numel(), 1));
    if (is_grad_enabled()) {  // See Note [Layer norm backward]
      mean = x.sum(row_dims, true) / row_size;
      const Tensor centered = x - mean;
      rstd = rsqrt((centered * centered).sum(row_dims, true) / row_size + ctx->saved_data["eps"].to_double());
    }
    const Tensor& g = grads[0];
    const Tensor xhat = (x - mean) * rstd;
    tensor_list result(5);
    if (ctx->needs_input_grad(0)) {
      const Tensor gw = weight.defined() ? g * weight : g;
      const Tensor mean_gw = gw.sum(row_dims, true) / row_size;
      const Tensor mean_gw_xhat = (gw * xhat).sum(row_dims, true) / row_size;
      result[0] = rstd * (gw - mean_gw - xhat * mean_gw_xhat);
    }
    if (ctx->needs_input_grad(2)) result[2] = batch_dims.empty() ? g * xhat : (g * xhat).sum(batch_dims);
    if (ctx->needs_input_grad(3)) result[3] = batch_dims.empty() ? g : g.sum(batch_dims);
    return result;
  }
};

// The gradient goes to weight only (indices are integers).
struct EmbeddingFunction : autograd::Function<EmbeddingFunction> {
  static constexpr std::string_view name() { return "EmbeddingBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& weight, const Tensor& indices, int64_t padding_idx,
                        bool scale_grad_by_freq, bool sparse) {
    ctx->save_for_backward({indices});
    ctx->saved_data["num_weights"] = weight.dim() > 0 ? weight.sizes()[0] : int64_t{0};
    ctx->saved_data["padding_idx"] = padding_idx;
    ctx->saved_data["scale_grad_by_freq"] = scale_grad_by_freq;
    return embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    static const auto op = find_op("strata::embedding_dense_backward")
                               .typed<Tensor(const Tensor&, const Tensor&, int64_t, int64_t, bool)>();
    return {op.call(grads[0], ctx->get_saved_variables()[0], ctx->saved_data["num_weights"].to_int(),
                    ctx->saved_data["padding_idx"].to_int(), ctx->saved_data["scale_grad_by_freq"].to_bool()),
            Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("native_dropout", [](const Tensor& input, double p, std::optional<bool> train) {
    return detail::to_tuple2(NativeDropoutFunction::apply(input, p, train));
  });
  m.impl("native_layer_norm", [](const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                                 const std::optional<Tensor>& bias, double eps) {
    return detail::to_tuple3(LayerNormFunction::apply(input, normalized_shape, detail::value_or_undefined(weight),
                                                      detail::value_or_undefined(bias), eps));
  });
  m.impl("embedding", autograd::kernel<EmbeddingFunction>());
}

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("softmax.int", autograd::kernel<SoftmaxFunction<false>>());
  m.impl("log_softmax.int", autograd::kernel<SoftmaxFunction<true>>());
}
}  // namespace

// ---------------------------------------------------------------------------------------
// Free functions.

Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  static const auto op =
      find_op("strata::softmax.int").typed<Tensor(const Tensor&, int64_t, std::optional<ScalarType>)>();
  return op.call(self, dim, dtype);
}
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  static const auto op =
      find_op("strata::log_softmax.int").typed<Tensor(const Tensor&, int64_t, std::optional<ScalarType>)>();
  return op.call(self, dim, dtype);
}
Tensor dropout(const Tensor& input, double p, bool train) {
  static const auto op = find_op("strata::dropout").typed<Tensor(const Tensor&, double, bool)>();
  return op.call(input, p, train);
}
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps) {
  static const auto op = find_op("strata::layer_norm")
                             .typed<Tensor(const Tensor&, IntArrayRef, const std::optional<Tensor>&,
                                           const std::optional<Tensor>&, double, bool)>();
  return op.call(input, normalized_shape, weight, bias, eps, true);
}
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx, bool scale_grad_by_freq,
                 bool sparse) {
  static const auto op =
      find_op("strata::embedding").typed<Tensor(const Tensor&, const Tensor&, int64_t, bool, bool)>();
  return op.call(weight, indices, padding_idx, scale_grad_by_freq, sparse);
}

}  // namespace strata
