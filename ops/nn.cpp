// Neural-network functions: softmax and log_softmax (with their fused backward kernels
// _softmax_backward_data and _log_softmax_backward_data), dropout (native_dropout),
// layer_norm (native_layer_norm) and embedding (embedding_dense_backward).
// conv2d and max_pool2d live in conv.cpp. The shape functions are in shapes/nn.h and the Meta
// kernels derive from them (Note [Structured ops]).
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
#include <strata/ops/eigen_math.h>
#include <strata/ops/elementwise.h>
#include <strata/ops/lane_sum.h>
#include <strata/ops/op_helpers.h>
#include <strata/ops/shapes/nn.h>
#include <strata/ops/structured.h>
#include <strata/tensor/random.h>

#include <cmath>
#include <cstring>
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

// Where a kernel writing dense `dtype` memory puts the values of `out`: out itself when it is
// contiguous of that dtype, else a temporary that write_back copies into out.
Tensor dense_destination(const Tensor& out, ScalarType dtype) {
  return out.dtype() == dtype && out.is_contiguous() ? out : detail::make_empty(out.sizes(), dtype, out.device());
}
void write_back(const Tensor& out, const Tensor& dense) {
  if (!dense.is_same(out)) detail::copy_kernel(out, dense);
}

// ---------------------------------------------------------------------------------------
// softmax and log_softmax (CPU compute; shapes in shapes/nn.h).

// Note [Stable softmax]
// Each slice along dim is shifted by its maximum before exponentiating, so the largest term
// is exp(0) = 1 and large logits (1e4 in float32) neither overflow nor lose the others:
// softmax = exp(x - m) / sum(exp(x - m)), log_softmax = (x - m) - log(sum(exp(x - m))).
// The slices are contiguous rows when dim is the last dim; otherwise a block [size, inner]
// is reduced column-wise, so the inner loop still runs over contiguous memory. Eigen's
// array expressions give vectorised exp and log. float16/bfloat16 compute in float32.

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
      out -= std::log(detail::full_range_exp(out).sum());
    } else {
      out = detail::full_range_exp(in - max);  // Note [Eigen exp underflow]
      out /= out.sum();
    }
    return;
  }
  Eigen::Map<const RowMajorArray<C>> in(x, size, inner);
  Eigen::Map<RowMajorArray<C>> out(y, size, inner);
  const Eigen::Array<C, 1, Eigen::Dynamic> max = in.colwise().maxCoeff();
  if constexpr (Log) {
    out = in.rowwise() - max;
    const Eigen::Array<C, 1, Eigen::Dynamic> log_sum = detail::full_range_exp(out).colwise().sum().log();
    out.rowwise() -= log_sum;
  } else {
    out = detail::full_range_exp(in.rowwise() - max);
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
    if constexpr (Log) grad_input = grad - detail::full_range_exp(out) * grad.sum();
    else grad_input = out * (grad - (grad * out).sum());
    return;
  }
  Eigen::Map<const RowMajorArray<C>> grad(g, size, inner), out(y, size, inner);
  Eigen::Map<RowMajorArray<C>> grad_input(result, size, inner);
  if constexpr (Log) {
    const Eigen::Array<C, 1, Eigen::Dynamic> sum = grad.colwise().sum();
    grad_input = grad - (detail::full_range_exp(out).rowwise() * sum);
  } else {
    const Eigen::Array<C, 1, Eigen::Dynamic> dot = (grad * out).colwise().sum();
    grad_input = out * (grad.rowwise() - dot);
  }
}

template <bool Log>
void softmax_out_cpu(const Tensor& out, const Tensor& self, int64_t dim, std::optional<ScalarType>) {
  if (out.numel() == 0) return;
  const ScalarType compute = float_compute_type(out.dtype());
  const Tensor input = contiguous_as(self, compute);
  const Tensor result = dense_destination(out, compute);
  const DimLayout layout = layout_around(self.sizes(), wrap_dim(dim, self.dim(), Log ? "log_softmax" : "softmax"));
  visit_dtype(compute, [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* x = detail::data_of<T>(input);
      T* y = detail::data_of<T>(result);
      const int64_t block = layout.size * layout.inner;
      for_each_block(layout, [&](int64_t o) { softmax_block<T, Log>(x + o * block, y + o * block, layout.size, layout.inner); });
    }
  });
  write_back(out, result);
}

template <bool Log>
void softmax_backward_out_cpu(const Tensor& grad_input, const Tensor& grad, const Tensor& output, int64_t dim,
                              ScalarType input_dtype) {
  if (grad_input.numel() == 0) return;
  const char* op = Log ? "_log_softmax_backward_data" : "_softmax_backward_data";
  const ScalarType compute = float_compute_type(promote_types(output.dtype(), input_dtype));
  const Tensor g = contiguous_as(grad, compute), y = contiguous_as(output, compute);
  const Tensor result = dense_destination(grad_input, compute);
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
  write_back(grad_input, result);
}

// ---------------------------------------------------------------------------------------
// dropout.

// Note [Dropout]
// In training mode each element is kept with probability 1 - p and scaled by 1 / (1 - p), so
// the expectation is unchanged; p = 1 drops everything (zeros). The keep mask (kBool) is the
// second output and the whole gradient: grad * mask / (1 - p). Draws come from the default
// generator, one per element in order, so manual_seed makes the mask reproducible.
void native_dropout_out_cpu(const Tensor& output, const Tensor& mask, const Tensor& input, double p,
                            std::optional<bool> train) {
  if (train.has_value() && !*train) {
    detail::fill_kernel(mask, true, "dropout");
    detail::copy_kernel(output, input);
    return;
  }
  const Tensor keep_mask = dense_destination(mask, kBool);
  bool* keep = detail::data_of<bool>(keep_mask);
  {
    auto& generator = detail::default_cpu_generator();
    std::lock_guard lock(generator.mutex);
    for (int64_t i = 0, n = keep_mask.numel(); i < n; ++i)
      keep[i] = static_cast<double>(generator.engine() >> 11) * 0x1.0p-53 >= p;
  }
  const Tensor result = dense_destination(output, input.dtype());
  const Tensor x = detail::as_contiguous(input);
  const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  visit_dtype(input.dtype(), [&]<class T>() {
    using C = compute_type_t<T>;
    const T* in = detail::data_of<T>(x);
    T* out = detail::data_of<T>(result);
    const C factor = static_cast<C>(scale);
    for (int64_t i = 0, n = result.numel(); i < n; ++i) out[i] = keep[i] ? static_cast<T>(static_cast<C>(in[i]) * factor) : T(0);
  });
  write_back(mask, keep_mask);
  write_back(output, result);
}

std::tuple<Tensor, Tensor> call_native_dropout(const Tensor& input, double p, std::optional<bool> train) {
  static const auto op = find_op("strata::native_dropout")
                             .typed<std::tuple<Tensor, Tensor>(const Tensor&, double, std::optional<bool>)>();
  return op.call(input, p, train);
}

// Not training, p = 0 or no elements: the input itself, as in PyTorch.
Tensor dropout_composite(const Tensor& input, double p, bool train) {
  shapes::check_dropout_probability(p);
  if (!train || p == 0.0 || input.numel() == 0) return input;
  return std::get<0>(call_native_dropout(input, p, train));
}

// ---------------------------------------------------------------------------------------
// layer_norm.

// Note [Layer norm statistics]
// Each row's mean and variance are computed in two passes (mean first, then the mean of the
// squared deviations) accumulated in double, so rows with a large offset lose nothing;
// rstd = 1 / sqrt(var + eps) with the biased variance, as in PyTorch.
// Both sums run in double lanes (Note [Lane sums] in ops/lane_sum.h).
template <class C>
void layer_norm_row(const C* x, C* y, const C* w, const C* b, int64_t n, double eps, C* mean_out, C* rstd_out) {
  const double sum = detail::lane_sum(x, n, [](auto v) { return v; });
  const double mean = n > 0 ? sum / static_cast<double>(n) : 0.0;
  const double squares = detail::lane_sum(x, n, [mean](auto v) { return (v - mean) * (v - mean); });
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

void native_layer_norm_out_cpu(const Tensor& output, const Tensor& mean, const Tensor& rstd, const Tensor& input,
                               IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                               const std::optional<Tensor>& bias, double eps) {
  const shapes::LayerNormGeometry shape = shapes::layer_norm_geometry(input, normalized_shape, weight, bias);
  const ScalarType compute = float_compute_type(input.dtype());
  const Tensor x = contiguous_as(input, compute);
  const Tensor w = weight && weight->defined() ? contiguous_as(*weight, compute) : Tensor();
  const Tensor b = bias && bias->defined() ? contiguous_as(*bias, compute) : Tensor();
  const Tensor y = dense_destination(output, compute), means = dense_destination(mean, compute),
               rstds = dense_destination(rstd, compute);
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
  write_back(output, y);
  write_back(mean, means);
  write_back(rstd, rstds);
}

// native_layer_norm_backward (Note [Layer norm backward]): any backend by the composite below;
// the CPU in one fused pass per row for grad_input and one pass over column blocks for the
// weight's and bias's gradients, all sums in double.
std::vector<int64_t> layer_norm_dims(const Tensor& x, IntArrayRef normalized_shape, bool rows) {
  const int64_t axis = x.dim() - static_cast<int64_t>(normalized_shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d)
    if ((d >= axis) == rows) dims.push_back(d);
  return dims;
}

double layer_norm_row_size(IntArrayRef normalized_shape) {
  double size = 1;
  for (int64_t d : normalized_shape) size *= static_cast<double>(d);
  return size;
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward_composite(const Tensor& grad, const Tensor& x,
                                                                 IntArrayRef normalized_shape, const Tensor& mean,
                                                                 const Tensor& rstd, const std::optional<Tensor>& weight,
                                                                 const std::optional<Tensor>& bias,
                                                                 const std::vector<bool>& output_mask) {
  const std::vector<int64_t> row_dims = layer_norm_dims(x, normalized_shape, true);
  const std::vector<int64_t> batch_dims = layer_norm_dims(x, normalized_shape, false);
  const double row_size = layer_norm_row_size(normalized_shape);
  const Tensor xhat = (x - mean) * rstd;
  const bool has_weight = weight && weight->defined(), has_bias = bias && bias->defined();
  Tensor grad_input, grad_weight, grad_bias;
  if (output_mask.size() > 0 && output_mask[0]) {
    const Tensor gw = has_weight ? grad * *weight : grad;
    const Tensor mean_gw = gw.sum(row_dims, true) / row_size;
    const Tensor mean_gw_xhat = (gw * xhat).sum(row_dims, true) / row_size;
    grad_input = rstd * (gw - mean_gw - xhat * mean_gw_xhat);
  }
  if (output_mask.size() > 1 && output_mask[1] && has_weight)
    grad_weight = batch_dims.empty() ? grad * xhat : (grad * xhat).sum(batch_dims);
  if (output_mask.size() > 2 && output_mask[2] && has_bias) grad_bias = batch_dims.empty() ? grad : grad.sum(batch_dims);
  return {grad_input, grad_weight, grad_bias};
}

// grad_input of one row: rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = grad * weight.
template <class C>
void layer_norm_backward_row(const C* g, const C* x, const C* w, C* dx, int64_t n, double mean, double rstd) {
  using detail::Double4;
  Double4 sum_gw = {0, 0, 0, 0}, sum_gw_xhat = {0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    Double4 gw = detail::load_as_double4(g + j);
    if (w) gw *= detail::load_as_double4(w + j);
    sum_gw += gw;
    sum_gw_xhat += gw * ((detail::load_as_double4(x + j) - mean) * rstd);
  }
  double total_gw = (sum_gw[0] + sum_gw[1]) + (sum_gw[2] + sum_gw[3]);
  double total_gw_xhat = (sum_gw_xhat[0] + sum_gw_xhat[1]) + (sum_gw_xhat[2] + sum_gw_xhat[3]);
  for (; j < n; ++j) {
    const double gw = static_cast<double>(g[j]) * (w ? static_cast<double>(w[j]) : 1.0);
    total_gw += gw;
    total_gw_xhat += gw * ((static_cast<double>(x[j]) - mean) * rstd);
  }
  const C mean_gw = static_cast<C>(total_gw / static_cast<double>(n));
  const C mean_gw_xhat = static_cast<C>(total_gw_xhat / static_cast<double>(n));
  const C mean_c = static_cast<C>(mean), rstd_c = static_cast<C>(rstd);
  for (int64_t i = 0; i < n; ++i) {
    const C gw = w ? g[i] * w[i] : g[i];
    dx[i] = rstd_c * (gw - mean_gw - (x[i] - mean_c) * rstd_c * mean_gw_xhat);
  }
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward_cpu(const Tensor& grad, const Tensor& input,
                                                                  IntArrayRef normalized_shape, const Tensor& mean,
                                                                  const Tensor& rstd, const std::optional<Tensor>& weight,
                                                                  const std::optional<Tensor>& bias,
                                                                  const std::vector<bool>& output_mask) {
  constexpr const char* op = "native_layer_norm_backward";
  const shapes::LayerNormGeometry shape = shapes::layer_norm_geometry(input, normalized_shape, weight, bias);
  for (const Tensor* t : {&grad, &mean, &rstd}) detail::check_same_device(op, input, *t);
  STRATA_CHECK_VALUE(grad.sizes() == input.sizes(), "[", op, "] grad_out of shape ", grad.sizes(),
                     " does not match input of shape ", input.sizes());
  STRATA_CHECK_VALUE(mean.numel() == shape.rows && rstd.numel() == shape.rows, "[", op, "] mean (", mean.numel(),
                     " elements) and rstd (", rstd.numel(), ") must hold one value per row (", shape.rows, ")");
  STRATA_CHECK_VALUE(output_mask.size() == 3, "[", op, "] output_mask must have 3 entries, got ", output_mask.size());
  const bool has_weight = weight && weight->defined(), has_bias = bias && bias->defined();
  const bool want_input = output_mask[0], want_weight = output_mask[1] && has_weight,
             want_bias = output_mask[2] && has_bias;
  const ScalarType compute = float_compute_type(input.dtype());
  const Tensor x = contiguous_as(input, compute), g = contiguous_as(grad, compute);
  const Tensor means = contiguous_as(mean, compute), rstds = contiguous_as(rstd, compute);
  const Tensor w = has_weight ? contiguous_as(*weight, compute) : Tensor();
  const Device device = input.device();
  Tensor grad_input = want_input ? detail::make_empty(input.sizes(), compute, device) : Tensor();
  Tensor grad_weight = want_weight ? detail::make_empty(normalized_shape, compute, device) : Tensor();
  Tensor grad_bias = want_bias ? detail::make_empty(normalized_shape, compute, device) : Tensor();
  const int64_t rows = shape.rows, n = shape.row_size;
  visit_dtype(compute, [&]<class C>() {
    if constexpr (std::is_same_v<C, float> || std::is_same_v<C, double>) {
      const C *x_data = detail::data_of<C>(x), *g_data = detail::data_of<C>(g);
      const C *mean_data = detail::data_of<C>(means), *rstd_data = detail::data_of<C>(rstds);
      const C* w_data = has_weight ? detail::data_of<C>(w) : nullptr;
      if (want_input && n > 0) {
        C* dx = detail::data_of<C>(grad_input);
        for_each_block(DimLayout{rows, n, 1}, [&](int64_t r) {
          layer_norm_backward_row(g_data + r * n, x_data + r * n, w_data, dx + r * n, n,
                                  static_cast<double>(mean_data[r]), static_cast<double>(rstd_data[r]));
        });
      }
      if (!want_weight && !want_bias) return;
      // Columns in blocks, each summed over every row in double.
      constexpr int64_t kBlock = 256;
      C* dw = want_weight ? detail::data_of<C>(grad_weight) : nullptr;
      C* db = want_bias ? detail::data_of<C>(grad_bias) : nullptr;
      auto columns = [&](int64_t begin, int64_t end) {
        double acc_w[kBlock], acc_b[kBlock];
        for (int64_t block = begin; block < end; ++block) {
          const int64_t first = block * kBlock, width = std::min(kBlock, n - first);
          std::fill_n(acc_w, width, 0.0);
          std::fill_n(acc_b, width, 0.0);
          for (int64_t r = 0; r < rows; ++r) {
            const C* gr = g_data + r * n + first;
            const C* xr = x_data + r * n + first;
            const double m = static_cast<double>(mean_data[r]), s = static_cast<double>(rstd_data[r]);
            for (int64_t j = 0; j < width; ++j) {
              acc_w[j] += static_cast<double>(gr[j]) * ((static_cast<double>(xr[j]) - m) * s);
              acc_b[j] += static_cast<double>(gr[j]);
            }
          }
          for (int64_t j = 0; j < width; ++j) {
            if (dw) dw[first + j] = static_cast<C>(acc_w[j]);
            if (db) db[first + j] = static_cast<C>(acc_b[j]);
          }
        }
      };
      const int64_t blocks = (n + kBlock - 1) / kBlock;
      const int64_t grain = std::max<int64_t>(1, kDefaultGrainSize / std::max<int64_t>(1, rows * kBlock));
      if (blocks <= grain) columns(0, blocks);
      else parallel_for(0, blocks, grain, columns);
    }
  });
  auto finish = [](const Tensor& t, ScalarType dtype) { return t.defined() && t.dtype() != dtype ? detail::cast_to(t, dtype) : t; };
  return {finish(grad_input, input.dtype()), has_weight ? finish(grad_weight, weight->dtype()) : grad_weight,
          has_bias ? finish(grad_bias, bias->dtype()) : grad_bias};
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
// embedding: rows of weight picked by indices.

// The row numbers in `indices` (int32 or int64), checked against the table's size: a value
// check, so it is the compute's (each backend checks its own indices).
std::vector<int64_t> embedding_rows(const Tensor& weight, const Tensor& indices) {
  std::vector<int64_t> rows(static_cast<size_t>(indices.numel()));
  const Tensor values = detail::as_contiguous(indices);
  visit_dtype(values.dtype(), [&]<class I>() {
    if constexpr (std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>) {
      const I* data = detail::data_of<I>(values);
      for (size_t i = 0; i < rows.size(); ++i) {
        rows[i] = static_cast<int64_t>(data[i]);
        STRATA_CHECK_INDEX(rows[i] >= 0 && rows[i] < weight.sizes()[0], "[embedding] index ", rows[i],
                           " is out of range for a weight of shape ", weight.sizes());
      }
    }
  });
  return rows;
}

// out[..., :] = weight[index, :]: a memcpy per row when the weight's rows are dense, else an
// element-by-element strided copy (dtype-blind, by element size).
void embedding_out_cpu(const Tensor& out, const Tensor& weight, const Tensor& indices, int64_t, bool, bool) {
  const std::vector<int64_t> rows = embedding_rows(weight, indices);
  if (out.numel() == 0) return;
  const Tensor dest = dense_destination(out, out.dtype());
  const int64_t dim = weight.sizes()[1], size = weight.element_size();
  const int64_t row_stride = weight.stride(0) * size, column_stride = weight.stride(1) * size;
  const char* table = static_cast<const char*>(weight.impl()->data());
  char* result = static_cast<char*>(dest.impl()->data());
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const char* source = table + rows[static_cast<size_t>(i)] * row_stride;
      char* target = result + i * dim * size;
      if (column_stride == size) {
        std::memcpy(target, source, static_cast<size_t>(dim * size));
        continue;
      }
      for (int64_t j = 0; j < dim; ++j)
        std::memcpy(target + j * size, source + j * column_stride, static_cast<size_t>(size));
    }
  };
  const int64_t count = static_cast<int64_t>(rows.size());
  if (count * dim <= kDefaultGrainSize) body(0, count);
  else parallel_for(0, count, std::max<int64_t>(1, kDefaultGrainSize / std::max<int64_t>(dim, 1)), body);
  write_back(out, dest);
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
  using namespace shapes;
  using detail::def_structured;
  def_structured<&softmax_int>(m, "softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor");
  def_structured<&log_softmax_int>(m, "log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor");
  def_structured<&_softmax_backward_data>(
      m, "_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor");
  def_structured<&_log_softmax_backward_data>(
      m, "_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor");
  def_structured<&shapes::native_dropout>(m, "native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)");
  m.def("dropout(Tensor input, float p, bool train) -> Tensor", &dropout_composite);
  def_structured<&shapes::native_layer_norm>(m, "native_layer_norm(Tensor input, SymInt[] normalized_shape, "
                                                "Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)");
  m.def("layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
        "float eps=1e-05, bool cudnn_enable=True) -> Tensor",
        &layer_norm_composite);
  m.def("native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, "
        "Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)");
  def_structured<&shapes::embedding>(m, "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, "
                                "bool scale_grad_by_freq=False, bool sparse=False) -> Tensor");
  m.def("embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, "
        "bool scale_grad_by_freq) -> Tensor",
        &embedding_dense_backward_composite);
}

// The composite serves every backend without a kernel of its own (CUDA, Meta).
STRATA_LIBRARY_IMPL(strata, CompositeExplicitAutograd, m) {
  m.impl("native_layer_norm_backward", &layer_norm_backward_composite);
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  using namespace shapes;
  using detail::structured;
  m.impl("softmax.int", structured<&softmax_int, &softmax_out_cpu<false>>());
  m.impl("log_softmax.int", structured<&log_softmax_int, &softmax_out_cpu<true>>());
  m.impl("_softmax_backward_data", structured<&_softmax_backward_data, &softmax_backward_out_cpu<false>>());
  m.impl("_log_softmax_backward_data", structured<&_log_softmax_backward_data, &softmax_backward_out_cpu<true>>());
  m.impl("native_dropout", structured<&shapes::native_dropout, &native_dropout_out_cpu>());
  m.impl("native_layer_norm", structured<&shapes::native_layer_norm, &native_layer_norm_out_cpu>());
  m.impl("native_layer_norm_backward", &native_layer_norm_backward_cpu);
  m.impl("embedding", structured<&shapes::embedding, &embedding_out_cpu>());
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
    const Tensor out = autograd::detail::saved_tensors(*ctx)[0];
    const int64_t dim = ctx->saved_data["dim"].to_int();
    const Tensor& g = grads[0];
    if (!is_grad_enabled())
      return autograd::detail::gradients_in(std::move(grads), softmax_backward_data<Log>(g, out, dim, out.dtype()),
                                            Tensor(), Tensor());
    if constexpr (Log)
      return autograd::detail::gradients_in(std::move(grads), g - softmax(out, dim) * g.sum({dim}, true), Tensor(),
                                            Tensor());
    return autograd::detail::gradients_in(std::move(grads), out * (g - (g * out).sum({dim}, true)), Tensor(), Tensor());
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
    return autograd::detail::gradients_in(
        std::move(grads), grads[0] * autograd::detail::saved_tensors(*ctx)[0] * ctx->saved_data["scale"].to_double(),
        Tensor(), Tensor());
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
    ctx->save_for_backward({input, weight, mean, rstd, bias});  // bias: only whether it is there, as in ATen
    ctx->saved_data["normalized_ndim"] = static_cast<int64_t>(normalized_shape.size());
    ctx->saved_data["eps"] = eps;
    ctx->mark_non_differentiable({mean, rstd});
    return {output, mean, rstd};
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    static const auto backward_op =
        find_op("strata::native_layer_norm_backward")
            .typed<std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, IntArrayRef, const Tensor&,
                                                      const Tensor&, const std::optional<Tensor>&,
                                                      const std::optional<Tensor>&, const std::vector<bool>&)>();
    const auto saved = autograd::detail::saved_tensors(*ctx);
    const Tensor &x = saved[0], &weight = saved[1];
    Tensor mean = saved[2], rstd = saved[3];
    const int64_t normalized_ndim = ctx->saved_data["normalized_ndim"].to_int();
    const IntArrayRef normalized_shape = x.sizes().slice(static_cast<size_t>(x.dim() - normalized_ndim));
    const std::vector<bool> mask{ctx->needs_input_grad(0), ctx->needs_input_grad(2), ctx->needs_input_grad(3)};
    const std::optional<Tensor> bias_present = detail::as_optional(saved[4]);
    if (is_grad_enabled()) {  // See Note [Layer norm backward]: recomputed, differentiably
      const std::vector<int64_t> row_dims = layer_norm_dims(x, normalized_shape, true);
      const double row_size = layer_norm_row_size(normalized_shape);
      mean = x.sum(row_dims, true) / row_size;
      const Tensor centered = x - mean;
      rstd = rsqrt((centered * centered).sum(row_dims, true) / row_size + ctx->saved_data["eps"].to_double());
      auto [dx, dw, db] =
          layer_norm_backward_composite(grads[0], x, normalized_shape, mean, rstd, detail::as_optional(weight),
                                        bias_present, mask);
      return {dx, Tensor(), dw, db, Tensor()};
    }
    auto [dx, dw, db] =
        backward_op.call(grads[0], x, normalized_shape, mean, rstd, detail::as_optional(weight), bias_present, mask);
    return {dx, Tensor(), dw, db, Tensor()};
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
    return autograd::detail::gradients_in(
        std::move(grads),
        op.call(grads[0], autograd::detail::saved_tensors(*ctx)[0], ctx->saved_data["num_weights"].to_int(),
                ctx->saved_data["padding_idx"].to_int(), ctx->saved_data["scale_grad_by_freq"].to_bool()),
        Tensor(), Tensor(), Tensor(), Tensor());
  }
};

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("native_dropout", [](const Tensor& input, double p, std::optional<bool> train) {
    return detail::to_tuple2(NativeDropoutFunction::apply_op(input, p, train));
  });
  m.impl("native_layer_norm", [](const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                                 const std::optional<Tensor>& bias, double eps) {
    return detail::to_tuple3(LayerNormFunction::apply_op(input, normalized_shape, detail::value_or_undefined(weight),
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
