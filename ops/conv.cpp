// Convolution and pooling: conv2d (im2col + GEMM, with _conv2d_backward for its gradients)
// and max_pool2d (max_pool2d_with_indices, max_pool2d_with_indices_backward).
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

#include <cstring>
#include <limits>
#include <vector>

namespace strata {
namespace {

// ---------------------------------------------------------------------------------------
// conv2d: shapes.

// Note [conv2d geometry]
// input [N, C, H, W] (or unbatched [C, H, W]), weight [O, C / groups, kH, kW], bias [O];
// out = (in + 2 * padding - dilation * (k - 1) - 1) / stride + 1 per spatial dim. Each group
// g convolves input channels [g * C/groups, (g + 1) * C/groups) into output channels
// [g * O/groups, (g + 1) * O/groups).
struct ConvShape {
  int64_t batch, channels, height, width;          // input
  int64_t out_channels, kernel_h, kernel_w;        // weight
  int64_t out_h, out_w, groups;
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  bool unbatched;
  int64_t group_in() const { return channels / groups; }
  int64_t group_out() const { return out_channels / groups; }
  int64_t patch() const { return group_in() * kernel_h * kernel_w; }  // rows of one group's columns
  int64_t out_plane() const { return out_h * out_w; }
  DimVector out_sizes() const {
    return unbatched ? DimVector{out_channels, out_h, out_w} : DimVector{batch, out_channels, out_h, out_w};
  }
};

void check_pair(const char* op, const char* name, IntArrayRef values, int64_t minimum) {
  STRATA_CHECK_VALUE(values.size() == 2, "[", op, "] expected ", name, " to have 2 values, got ", values);
  STRATA_CHECK_VALUE(values[0] >= minimum && values[1] >= minimum, "[", op, "] ", name, " must be ",
                     minimum == 0 ? "non-negative" : "positive", ", got ", values);
}

// Note [Window arithmetic overflow]
// kernel_size, stride, padding and dilation are user input and may be anything up to INT64_MAX,
// so size + 2 * padding and dilation * (kernel - 1) + 1 are computed with overflow checks (a huge
// value gets a ValueError, never a wrapped, undefined output size), and pooled_size rounds up
// without forming span + stride - 1, so a huge stride is simply one window.
struct Window {
  int64_t padded;  // size + 2 * padding
  int64_t extent;  // dilation * (kernel - 1) + 1, the span one window covers
};

Window checked_window(const char* op, int64_t size, int64_t kernel, int64_t pad, int64_t dilation, IntArrayRef kernels,
                      IntArrayRef paddings, IntArrayRef dilations) {
  Window w{};
  const bool overflow = __builtin_mul_overflow(pad, int64_t{2}, &w.padded) ||
                        __builtin_add_overflow(w.padded, size, &w.padded) ||
                        __builtin_mul_overflow(dilation, kernel - 1, &w.extent) ||
                        __builtin_add_overflow(w.extent, int64_t{1}, &w.extent);
  STRATA_CHECK_VALUE(!overflow, "[", op, "] the window arithmetic overflows int64 for kernel_size ", kernels,
                     ", padding ", paddings, " and dilation ", dilations);
  return w;
}

void check_conv_tensors(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  detail::check_same_device("conv2d", input, weight);
  STRATA_CHECK_VALUE(input.dim() == 3 || input.dim() == 4, "[conv2d] expected a 3-d [C, H, W] or 4-d [N, C, H, W] "
                     "input, got input of shape ", input.sizes());
  STRATA_CHECK_VALUE(weight.dim() == 4, "[conv2d] expected a 4-d weight [out_channels, in_channels / groups, kH, kW], "
                     "got weight of shape ", weight.sizes());
  STRATA_CHECK_TYPE(is_floating_point(input.dtype()) && input.dtype() == weight.dtype(), "[conv2d] expected "
                    "floating-point input and weight of the same dtype, got ", input.dtype(), " and ", weight.dtype());
  if (bias && bias->defined()) {
    detail::check_same_device("conv2d", input, *bias);
    STRATA_CHECK_VALUE(bias->dim() == 1 && bias->sizes()[0] == weight.sizes()[0], "[conv2d] expected a bias of shape [",
                       weight.sizes()[0], "] (one per output channel), got bias of shape ", bias->sizes());
    STRATA_CHECK_TYPE(bias->dtype() == input.dtype(), "[conv2d] expected a bias of dtype ", input.dtype(), ", got ",
                      bias->dtype());
  }
}

ConvShape conv_shape(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                     IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  check_conv_tensors(input, weight, bias);
  check_pair("conv2d", "stride", stride, 1);
  check_pair("conv2d", "padding", padding, 0);
  check_pair("conv2d", "dilation", dilation, 1);
  STRATA_CHECK_VALUE(groups > 0, "[conv2d] groups must be positive, got ", groups);
  ConvShape s{};
  s.unbatched = input.dim() == 3;
  const int64_t lead = s.unbatched ? 0 : 1;
  s.batch = s.unbatched ? 1 : input.sizes()[0];
  s.channels = input.sizes()[lead];
  s.height = input.sizes()[lead + 1];
  s.width = input.sizes()[lead + 2];
  s.out_channels = weight.sizes()[0];
  s.kernel_h = weight.sizes()[2];
  s.kernel_w = weight.sizes()[3];
  s.groups = groups;
  s.stride_h = stride[0], s.stride_w = stride[1], s.pad_h = padding[0], s.pad_w = padding[1];
  s.dilation_h = dilation[0], s.dilation_w = dilation[1];
  STRATA_CHECK_VALUE(s.out_channels % groups == 0, "[conv2d] out_channels (", s.out_channels,
                     ") must be divisible by groups (", groups, ") for weight of shape ", weight.sizes());
  STRATA_CHECK_VALUE(weight.sizes()[1] * groups == s.channels, "[conv2d] expected input of shape ", input.sizes(),
                     " to have ", weight.sizes()[1] * groups, " channels (weight.size(1) * groups for weight of shape ",
                     weight.sizes(), " and groups=", groups, "), but got ", s.channels, " channels");
  const IntArrayRef kernel = weight.sizes().slice(2);  // See Note [Window arithmetic overflow]
  const Window h = checked_window("conv2d", s.height, s.kernel_h, s.pad_h, s.dilation_h, kernel, padding, dilation);
  const Window w = checked_window("conv2d", s.width, s.kernel_w, s.pad_w, s.dilation_w, kernel, padding, dilation);
  const bool fits = h.padded >= h.extent && w.padded >= w.extent;
  s.out_h = fits ? (h.padded - h.extent) / s.stride_h + 1 : 0;
  s.out_w = fits ? (w.padded - w.extent) / s.stride_w + 1 : 0;
  STRATA_CHECK_VALUE(fits && s.out_h > 0 && s.out_w > 0, "[conv2d] the kernel of shape ", weight.sizes(),
                     " (dilation ", dilation, ") is larger than the padded input of shape ", input.sizes(),
                     " (padding ", padding, ")");
  int64_t output_numel = 0, columns_numel = 0;  // the output and one group's im2col buffer
  const bool too_large = __builtin_mul_overflow(s.batch, s.out_channels, &output_numel) ||
                         __builtin_mul_overflow(output_numel, s.out_h, &output_numel) ||
                         __builtin_mul_overflow(output_numel, s.out_w, &output_numel) ||
                         __builtin_mul_overflow(s.patch(), s.out_h, &columns_numel) ||
                         __builtin_mul_overflow(columns_numel, s.out_w, &columns_numel);
  STRATA_CHECK_VALUE(!too_large, "[conv2d] the output of size [", s.batch, ", ", s.out_channels, ", ", s.out_h, ", ",
                     s.out_w, "] is too large (more elements than int64 can count) for padding ", padding,
                     " and stride ", stride);
  return s;
}

// ---------------------------------------------------------------------------------------
// conv2d: im2col and col2im for one sample and one group.

// columns[(c * kH + i) * kW + j][oh * out_w + ow] = x[c][oh * sh - ph + i * dh][ow * sw - pw + j * dw] (0 outside).
template <class T>
void im2col(const T* x, const ConvShape& s, T* columns) {
  const int64_t plane = s.out_plane();
  for (int64_t c = 0; c < s.group_in(); ++c) {
    for (int64_t i = 0; i < s.kernel_h; ++i) {
      for (int64_t j = 0; j < s.kernel_w; ++j) {
        T* row = columns + ((c * s.kernel_h + i) * s.kernel_w + j) * plane;
        for (int64_t oh = 0; oh < s.out_h; ++oh) {
          const int64_t h = oh * s.stride_h - s.pad_h + i * s.dilation_h;
          T* out = row + oh * s.out_w;
          if (h < 0 || h >= s.height) {
            std::fill(out, out + s.out_w, T(0));
            continue;
          }
          const T* in = x + (c * s.height + h) * s.width;
          for (int64_t ow = 0; ow < s.out_w; ++ow) {
            const int64_t w = ow * s.stride_w - s.pad_w + j * s.dilation_w;
            out[ow] = w >= 0 && w < s.width ? in[w] : T(0);
          }
        }
      }
    }
  }
}

// The adjoint of im2col: adds every column entry back into its input position.
template <class T>
void col2im(const T* columns, const ConvShape& s, T* x) {
  const int64_t plane = s.out_plane();
  for (int64_t c = 0; c < s.group_in(); ++c) {
    for (int64_t i = 0; i < s.kernel_h; ++i) {
      for (int64_t j = 0; j < s.kernel_w; ++j) {
        const T* row = columns + ((c * s.kernel_h + i) * s.kernel_w + j) * plane;
        for (int64_t oh = 0; oh < s.out_h; ++oh) {
          const int64_t h = oh * s.stride_h - s.pad_h + i * s.dilation_h;
          if (h < 0 || h >= s.height) continue;
          T* out = x + (c * s.height + h) * s.width;
          for (int64_t ow = 0; ow < s.out_w; ++ow) {
            const int64_t w = ow * s.stride_w - s.pad_w + j * s.dilation_w;
            if (w >= 0 && w < s.width) out[w] += row[oh * s.out_w + ow];
          }
        }
      }
    }
  }
}

template <class T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MatrixMap = Eigen::Map<Matrix<T>>;
template <class T>
using ConstMatrixMap = Eigen::Map<const Matrix<T>>;

// A 1x1 kernel with stride 1 and no padding reads the input plane directly as its columns.
bool is_pointwise(const ConvShape& s) {
  return s.kernel_h == 1 && s.kernel_w == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 && s.pad_w == 0;
}

// Runs fn(begin, end) over the samples [0, batch): in parallel chunks when the work is large.
template <class Fn>
void for_each_sample_chunk(const ConvShape& s, int64_t chunks, const Fn& fn) {
  if (chunks <= 1) {
    fn(int64_t{0}, s.batch, int64_t{0});
    return;
  }
  parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t chunk = begin; chunk < end; ++chunk)
      fn(chunk * s.batch / chunks, (chunk + 1) * s.batch / chunks, chunk);
  });
}

int64_t sample_chunks(const ConvShape& s) {
  const int64_t work = s.batch * s.out_channels * s.out_plane() * s.patch();
  if (work < 64 * 64 * 64 || s.batch == 1) return 1;
  return std::min<int64_t>(s.batch, get_num_threads());
}

// ---------------------------------------------------------------------------------------
// conv2d: forward and backward kernels (T is float or double).

template <class T>
void conv_forward(const T* x, const T* weight, const T* bias, T* y, const ConvShape& s) {
  const int64_t plane = s.out_plane(), patch = s.patch();
  for_each_sample_chunk(s, sample_chunks(s), [&](int64_t begin, int64_t end, int64_t) {
    std::vector<T> columns(is_pointwise(s) ? 0 : static_cast<size_t>(patch * plane));
    for (int64_t n = begin; n < end; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        const T* input = x + (n * s.channels + g * s.group_in()) * s.height * s.width;
        const T* cols = input;
        if (!is_pointwise(s)) {
          im2col(input, s, columns.data());
          cols = columns.data();
        }
        MatrixMap<T> out(y + (n * s.out_channels + g * s.group_out()) * plane, s.group_out(), plane);
        out.noalias() = ConstMatrixMap<T>(weight + g * s.group_out() * patch, s.group_out(), patch) *
                        ConstMatrixMap<T>(cols, patch, plane);
        if (bias) out.colwise() += Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(bias + g * s.group_out(), s.group_out());
      }
    }
  });
}

// Note [conv2d backward]
// grad_input = col2im(W_g^T * grad_g) per sample and group; grad_weight = sum over samples of
// grad_g * im2col(x)^T. Threads take contiguous ranges of samples; each range adds its
// weight gradient into its own buffer, and the buffers are summed at the end, so no two
// threads write the same memory and the result does not depend on scheduling order.
template <class T>
void conv_backward(const T* grad, const T* x, const T* weight, T* grad_input, T* grad_weight, const ConvShape& s) {
  const int64_t plane = s.out_plane(), patch = s.patch();
  const int64_t chunks = sample_chunks(s), weight_numel = s.out_channels * patch;
  std::vector<T> partial(grad_weight ? static_cast<size_t>(chunks * weight_numel) : 0, T(0));
  for_each_sample_chunk(s, chunks, [&](int64_t begin, int64_t end, int64_t chunk) {
    std::vector<T> columns(static_cast<size_t>(patch * plane));
    for (int64_t n = begin; n < end; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        ConstMatrixMap<T> grad_g(grad + (n * s.out_channels + g * s.group_out()) * plane, s.group_out(), plane);
        ConstMatrixMap<T> weight_g(weight + g * s.group_out() * patch, s.group_out(), patch);
        const int64_t input_offset = (n * s.channels + g * s.group_in()) * s.height * s.width;
        if (grad_input) {
          MatrixMap<T>(columns.data(), patch, plane).noalias() = weight_g.transpose() * grad_g;
          col2im(columns.data(), s, grad_input + input_offset);
        }
        if (grad_weight) {
          im2col(x + input_offset, s, columns.data());
          MatrixMap<T>(partial.data() + chunk * weight_numel + g * s.group_out() * patch, s.group_out(), patch)
              .noalias() += grad_g * ConstMatrixMap<T>(columns.data(), patch, plane).transpose();
        }
      }
    }
  });
  if (!grad_weight) return;
  std::fill(grad_weight, grad_weight + weight_numel, T(0));
  for (int64_t chunk = 0; chunk < chunks; ++chunk)
    for (int64_t i = 0; i < weight_numel; ++i) grad_weight[i] += partial[static_cast<size_t>(chunk * weight_numel + i)];
}

// Calls fn.template operator()<C>() with C the float compute type of dtype (float16 and
// bfloat16 compute in float).
template <class Fn>
void visit_float(ScalarType dtype, Fn&& fn) {
  if (dtype == kFloat64) fn.template operator()<double>();
  else fn.template operator()<float>();
}

ScalarType compute_dtype(ScalarType dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

Tensor dense(const Tensor& t, ScalarType dtype) {
  return t.dtype() == dtype && t.is_contiguous() ? t : detail::cast_to(t, dtype);
}

Tensor conv2d_cpu(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  const ConvShape s = conv_shape(input, weight, bias, stride, padding, dilation, groups);
  const ScalarType compute = compute_dtype(input.dtype());
  Tensor out = detail::make_empty(s.out_sizes(), input.dtype(), input.device());
  if (out.numel() == 0) return out;
  Tensor result = input.dtype() == compute ? out : detail::make_empty(s.out_sizes(), compute, input.device());
  const Tensor x = dense(input, compute), w = dense(weight, compute);
  const Tensor b = bias && bias->defined() ? dense(*bias, compute) : Tensor();
  visit_float(compute, [&]<class T>() {
    conv_forward<T>(detail::data_of<T>(x), detail::data_of<T>(w), b.defined() ? detail::data_of<T>(b) : nullptr,
                    detail::data_of<T>(result), s);
  });
  if (!result.is_same(out)) detail::copy_kernel(out, result);
  return out;
}

Tensor conv2d_meta(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  const ConvShape s = conv_shape(input, weight, bias, stride, padding, dilation, groups);
  return detail::make_empty(s.out_sizes(), input.dtype(), input.device());
}

void check_conv_grad(const ConvShape& s, const Tensor& grad) {
  STRATA_CHECK_VALUE(grad.sizes() == s.out_sizes().ref(), "[_conv2d_backward] expected grad_output of shape ",
                     s.out_sizes().ref(), ", got ", grad.sizes());
}

// (grad_input, grad_weight); each undefined unless asked for. See Note [conv2d backward].
std::tuple<Tensor, Tensor> conv2d_backward_cpu(const Tensor& grad, const Tensor& input, const Tensor& weight,
                                               IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                               int64_t groups, bool input_grad, bool weight_grad) {
  const ConvShape s = conv_shape(input, weight, std::nullopt, stride, padding, dilation, groups);
  check_conv_grad(s, grad);
  const ScalarType dtype = input.dtype(), compute = compute_dtype(dtype);
  Tensor grad_input = input_grad ? detail::make_empty(input.sizes(), compute, input.device()) : Tensor();
  Tensor grad_weight = weight_grad ? detail::make_empty(weight.sizes(), compute, input.device()) : Tensor();
  if (grad_input.defined()) detail::fill_kernel(grad_input, 0, "_conv2d_backward");
  if (grad_weight.defined()) detail::fill_kernel(grad_weight, 0, "_conv2d_backward");
  if (grad.numel() > 0 && (input_grad || weight_grad)) {
    const Tensor g = dense(grad, compute), x = dense(input, compute), w = dense(weight, compute);
    visit_float(compute, [&]<class T>() {
      conv_backward<T>(detail::data_of<T>(g), detail::data_of<T>(x), detail::data_of<T>(w),
                       input_grad ? detail::data_of<T>(grad_input) : nullptr,
                       weight_grad ? detail::data_of<T>(grad_weight) : nullptr, s);
    });
  }
  if (grad_input.defined() && compute != dtype) grad_input = detail::cast_to(grad_input, dtype);
  if (grad_weight.defined() && compute != dtype) grad_weight = detail::cast_to(grad_weight, dtype);
  return {grad_input, grad_weight};
}

std::tuple<Tensor, Tensor> conv2d_backward_meta(const Tensor& grad, const Tensor& input, const Tensor& weight,
                                                IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                                int64_t groups, bool input_grad, bool weight_grad) {
  const ConvShape s = conv_shape(input, weight, std::nullopt, stride, padding, dilation, groups);
  check_conv_grad(s, grad);
  return {input_grad ? detail::make_empty(input.sizes(), input.dtype(), input.device()) : Tensor(),
          weight_grad ? detail::make_empty(weight.sizes(), weight.dtype(), weight.device()) : Tensor()};
}

// ---------------------------------------------------------------------------------------
// max_pool2d.

struct PoolShape {
  int64_t planes, height, width, out_h, out_w;
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  DimVector out_sizes;
};

// PyTorch's pooling_output_shape, ceil_mode included: the last window must start inside the input
// or its left padding. floor or ceil of span / stride without forming span + stride - 1, which
// overflows for a huge stride (Note [Window arithmetic overflow]).
int64_t pooled_size(int64_t size, Window window, int64_t pad, int64_t stride, bool ceil_mode) {
  const int64_t span = window.padded - window.extent;
  int64_t steps = span / stride;  // rounded toward zero
  if (span % stride != 0 && span < 0 && !ceil_mode) --steps;
  if (span % stride != 0 && span > 0 && ceil_mode) ++steps;
  int64_t out = steps + 1, last_start = 0;
  if (ceil_mode && (__builtin_mul_overflow(steps, stride, &last_start) || last_start >= size + pad)) --out;
  return out;
}

PoolShape pool_shape(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                     IntArrayRef dilation, bool ceil_mode) {
  constexpr const char* op = "max_pool2d";
  STRATA_CHECK_VALUE(self.dim() == 3 || self.dim() == 4, "[max_pool2d] expected a 3-d [C, H, W] or 4-d [N, C, H, W] "
                     "input, got input of shape ", self.sizes());
  STRATA_CHECK_TYPE(self.dtype() != kBool, "[max_pool2d] bool inputs are not supported");
  check_pair(op, "kernel_size", kernel_size, 1);
  const IntArrayRef steps = stride.empty() ? kernel_size : stride;  // stride defaults to the kernel
  check_pair(op, "stride", steps, 1);
  check_pair(op, "padding", padding, 0);
  check_pair(op, "dilation", dilation, 1);
  PoolShape s{};
  s.height = self.size(-2), s.width = self.size(-1);
  const Window h = checked_window(op, s.height, kernel_size[0], padding[0], dilation[0], kernel_size, padding, dilation);
  const Window w = checked_window(op, s.width, kernel_size[1], padding[1], dilation[1], kernel_size, padding, dilation);
  STRATA_CHECK_VALUE(padding[0] <= h.extent / 2 && padding[1] <= w.extent / 2, "[max_pool2d] padding ", padding,
                     " should be at most half of the effective kernel size for kernel_size ", kernel_size,
                     " and dilation ", dilation);
  s.planes = self.size(-3) * (self.dim() == 4 ? self.size(0) : 1);
  s.kernel_h = kernel_size[0], s.kernel_w = kernel_size[1], s.stride_h = steps[0], s.stride_w = steps[1];
  s.pad_h = padding[0], s.pad_w = padding[1], s.dilation_h = dilation[0], s.dilation_w = dilation[1];
  s.out_h = pooled_size(s.height, h, s.pad_h, s.stride_h, ceil_mode);
  s.out_w = pooled_size(s.width, w, s.pad_w, s.stride_w, ceil_mode);
  STRATA_CHECK_VALUE(s.out_h > 0 && s.out_w > 0, "[max_pool2d] the output size [", s.out_h, ", ", s.out_w,
                     "] is too small for input of shape ", self.sizes(), " and kernel_size ", kernel_size);
  s.out_sizes = DimVector(self.sizes());
  s.out_sizes[s.out_sizes.size() - 2] = s.out_h;
  s.out_sizes[s.out_sizes.size() - 1] = s.out_w;
  return s;
}

// The max of each window (NaN wins, as in PyTorch) and its flat index in the input plane.
template <class T>
void max_pool_plane(const T* x, T* y, int64_t* indices, const PoolShape& s) {
  using C = compute_type_t<T>;
  for (int64_t oh = 0; oh < s.out_h; ++oh) {
    for (int64_t ow = 0; ow < s.out_w; ++ow) {
      int64_t best = -1;
      C best_value{};
      for (int64_t i = 0; i < s.kernel_h; ++i) {
        const int64_t h = oh * s.stride_h - s.pad_h + i * s.dilation_h;
        if (h < 0 || h >= s.height) continue;
        for (int64_t j = 0; j < s.kernel_w; ++j) {
          const int64_t w = ow * s.stride_w - s.pad_w + j * s.dilation_w;
          if (w < 0 || w >= s.width) continue;
          const C value = static_cast<C>(x[h * s.width + w]);
          if (best < 0 || value > best_value || value != value) {
            best = h * s.width + w;
            best_value = value;
            if (value != value) break;
          }
        }
      }
      y[oh * s.out_w + ow] = static_cast<T>(best_value);
      indices[oh * s.out_w + ow] = best;
    }
  }
}

std::tuple<Tensor, Tensor> max_pool2d_cpu(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                          IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  const PoolShape s = pool_shape(self, kernel_size, stride, padding, dilation, ceil_mode);
  Tensor out = detail::make_empty(s.out_sizes, self.dtype(), self.device());
  Tensor indices = detail::make_empty(s.out_sizes, kInt64, self.device());
  if (out.numel() == 0) return {out, indices};
  const Tensor x = detail::as_contiguous(self);
  visit_dtype(self.dtype(), [&]<class T>() {
    const T* in = detail::data_of<T>(x);
    T* y = detail::data_of<T>(out);
    int64_t* index = detail::data_of<int64_t>(indices);
    const int64_t in_plane = s.height * s.width, out_plane = s.out_h * s.out_w;
    auto body = [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) max_pool_plane(in + p * in_plane, y + p * out_plane, index + p * out_plane, s);
    };
    const int64_t work = out_plane * s.kernel_h * s.kernel_w;
    if (s.planes * work <= kDefaultGrainSize) body(0, s.planes);
    else parallel_for(0, s.planes, std::max<int64_t>(1, kDefaultGrainSize / work), body);
  });
  return {out, indices};
}

std::tuple<Tensor, Tensor> max_pool2d_meta(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                           IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  const PoolShape s = pool_shape(self, kernel_size, stride, padding, dilation, ceil_mode);
  return {detail::make_empty(s.out_sizes, self.dtype(), self.device()),
          detail::make_empty(s.out_sizes, kInt64, self.device())};
}

void check_pool_backward(const PoolShape& s, const Tensor& grad, const Tensor& indices) {
  STRATA_CHECK_VALUE(grad.sizes() == s.out_sizes.ref() && indices.sizes() == s.out_sizes.ref(),
                     "[max_pool2d_with_indices_backward] expected grad_output and indices of shape ", s.out_sizes.ref(),
                     ", got ", grad.sizes(), " and ", indices.sizes());
  STRATA_CHECK_TYPE(indices.dtype() == kInt64, "[max_pool2d_with_indices_backward] expected int64 indices, got ",
                    indices.dtype());
}

// Each output gradient adds into the input position its window's max came from.
Tensor max_pool2d_backward_cpu(const Tensor& grad, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                               IntArrayRef padding, IntArrayRef dilation, bool ceil_mode, const Tensor& indices) {
  const PoolShape s = pool_shape(self, kernel_size, stride, padding, dilation, ceil_mode);
  check_pool_backward(s, grad, indices);
  Tensor grad_input = detail::make_empty(self.sizes(), grad.dtype(), self.device());
  detail::fill_kernel(grad_input, 0, "max_pool2d_with_indices_backward");
  if (grad.numel() == 0) return grad_input;
  const Tensor g = detail::as_contiguous(grad), index = detail::as_contiguous(indices);
  visit_dtype(grad.dtype(), [&]<class T>() {
    using C = compute_type_t<T>;
    const T* grad_data = detail::data_of<T>(g);
    const int64_t* index_data = detail::data_of<int64_t>(index);
    T* result = detail::data_of<T>(grad_input);
    const int64_t in_plane = s.height * s.width, out_plane = s.out_h * s.out_w;
    auto body = [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p)
        for (int64_t k = 0; k < out_plane; ++k) {
          const int64_t target = index_data[p * out_plane + k];
          if (target < 0) continue;
          T& slot = result[p * in_plane + target];
          slot = static_cast<T>(static_cast<C>(slot) + static_cast<C>(grad_data[p * out_plane + k]));
        }
    };
    if (grad.numel() <= kDefaultGrainSize) body(0, s.planes);
    else parallel_for(0, s.planes, std::max<int64_t>(1, kDefaultGrainSize / out_plane), body);
  });
  return grad_input;
}

Tensor max_pool2d_backward_meta(const Tensor& grad, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                IntArrayRef padding, IntArrayRef dilation, bool ceil_mode, const Tensor& indices) {
  check_pool_backward(pool_shape(self, kernel_size, stride, padding, dilation, ceil_mode), grad, indices);
  return detail::make_empty(self.sizes(), grad.dtype(), self.device());
}

// ---------------------------------------------------------------------------------------
// Typed handles and composites.

Tensor call_conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  static const auto op = find_op("strata::conv2d")
                             .typed<Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                                           IntArrayRef, IntArrayRef, int64_t)>();
  return op.call(input, weight, bias, stride, padding, dilation, groups);
}

std::tuple<Tensor, Tensor> call_conv2d_backward(const Tensor& grad, const Tensor& input, const Tensor& weight,
                                                IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                                int64_t groups, bool input_grad, bool weight_grad) {
  static const auto op = find_op("strata::_conv2d_backward")
                             .typed<std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, IntArrayRef,
                                                               IntArrayRef, IntArrayRef, int64_t, bool, bool)>();
  return op.call(grad, input, weight, stride, padding, dilation, groups, input_grad, weight_grad);
}

std::tuple<Tensor, Tensor> call_max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                           IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  static const auto op = find_op("strata::max_pool2d_with_indices")
                             .typed<std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                                                               IntArrayRef, bool)>();
  return op.call(self, kernel_size, stride, padding, dilation, ceil_mode);
}

Tensor call_max_pool2d_backward(const Tensor& grad, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                IntArrayRef padding, IntArrayRef dilation, bool ceil_mode, const Tensor& indices) {
  static const auto op = find_op("strata::max_pool2d_with_indices_backward")
                             .typed<Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                                           IntArrayRef, bool, const Tensor&)>();
  return op.call(grad, self, kernel_size, stride, padding, dilation, ceil_mode, indices);
}

Tensor max_pool2d_composite(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                            IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(call_max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode));
}

}  // namespace

STRATA_LIBRARY_FRAGMENT(strata, m) {
  m.def("conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, "
        "SymInt[2] dilation=1, SymInt groups=1) -> Tensor");
  m.def("_conv2d_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[2] stride, SymInt[2] padding, "
        "SymInt[2] dilation, SymInt groups, bool input_grad, bool weight_grad) -> (Tensor, Tensor)");
  m.def("max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
        "int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)");
  m.def("max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, "
        "int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor");
  m.def("max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, "
        "bool ceil_mode=False) -> Tensor",
        &max_pool2d_composite);
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  m.impl("conv2d", &conv2d_cpu);
  m.impl("_conv2d_backward", &conv2d_backward_cpu);
  m.impl("max_pool2d_with_indices", &max_pool2d_cpu);
  m.impl("max_pool2d_with_indices_backward", &max_pool2d_backward_cpu);
}

STRATA_LIBRARY_IMPL(strata, Meta, m) {
  m.impl("conv2d", &conv2d_meta);
  m.impl("_conv2d_backward", &conv2d_backward_meta);
  m.impl("max_pool2d_with_indices", &max_pool2d_meta);
  m.impl("max_pool2d_with_indices_backward", &max_pool2d_backward_meta);
}

// ---------------------------------------------------------------------------------------
// Derivatives.

namespace {
using autograd::AutogradContext;

struct ConvArgs {
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
};

void save_conv_args(AutogradContext* ctx, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                    int64_t groups) {
  ctx->saved_data["stride"] = stride;
  ctx->saved_data["padding"] = padding;
  ctx->saved_data["dilation"] = dilation;
  ctx->saved_data["groups"] = groups;
}

ConvArgs load_conv_args(AutogradContext* ctx) {
  return {ctx->saved_data["stride"].to_int_list(), ctx->saved_data["padding"].to_int_list(),
          ctx->saved_data["dilation"].to_int_list(), ctx->saved_data["groups"].to_int()};
}

struct Conv2dFunction : autograd::Function<Conv2dFunction> {
  static constexpr std::string_view name() { return "Conv2dBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
    ctx->save_for_backward({input, weight});
    save_conv_args(ctx, stride, padding, dilation, groups);
    return call_conv2d(input, weight, detail::as_optional(bias), stride, padding, dilation, groups);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const tensor_list saved = ctx->get_saved_variables();
    const ConvArgs a = load_conv_args(ctx);
    auto [grad_input, grad_weight] = call_conv2d_backward(grads[0], saved[0], saved[1], a.stride, a.padding,
                                                          a.dilation, a.groups, ctx->needs_input_grad(0),
                                                          ctx->needs_input_grad(1));
    Tensor grad_bias;
    if (ctx->needs_input_grad(2)) grad_bias = grads[0].dim() == 4 ? grads[0].sum({0, 2, 3}) : grads[0].sum({1, 2});
    return {grad_input, grad_weight, grad_bias, Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

// Note [conv2d double backward]
// _conv2d_backward is linear in grad_output, and each of its outputs is bilinear: grad_input
// = Bx(g, W) is the adjoint of x -> conv(x, W), grad_weight = Bw(g, x) the adjoint of
// W -> conv(x, W). So with incoming gradients gi (for grad_input) and gw (for grad_weight):
//   d/dg = conv2d(gi, W) + conv2d(x, gw),  d/dW = Bw(g, gi),  d/dx = Bx(g, gw),
// which are conv2d and _conv2d_backward again.
struct Conv2dBackwardFunction : autograd::Function<Conv2dBackwardFunction> {
  static constexpr std::string_view name() { return "Conv2dBackwardBackward"; }
  static tensor_list forward(AutogradContext* ctx, const Tensor& grad, const Tensor& input, const Tensor& weight,
                             IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups,
                             bool input_grad, bool weight_grad) {
    ctx->save_for_backward({grad, input, weight});
    save_conv_args(ctx, stride, padding, dilation, groups);
    auto [grad_input, grad_weight] =
        call_conv2d_backward(grad, input, weight, stride, padding, dilation, groups, input_grad, weight_grad);
    return {grad_input, grad_weight};
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const tensor_list saved = ctx->get_saved_variables();
    const Tensor &g = saved[0], &x = saved[1], &w = saved[2], &gi = grads[0], &gw = grads[1];
    const ConvArgs a = load_conv_args(ctx);
    Tensor grad_g, grad_x, grad_w;
    if (ctx->needs_input_grad(0)) {
      if (gi.defined()) grad_g = call_conv2d(gi, w, std::nullopt, a.stride, a.padding, a.dilation, a.groups);
      if (gw.defined()) {
        Tensor term = call_conv2d(x, gw, std::nullopt, a.stride, a.padding, a.dilation, a.groups);
        grad_g = grad_g.defined() ? grad_g + term : term;
      }
    }
    if (ctx->needs_input_grad(1) && gw.defined())
      grad_x = std::get<0>(call_conv2d_backward(g, x, gw, a.stride, a.padding, a.dilation, a.groups, true, false));
    if (ctx->needs_input_grad(2) && gi.defined())
      grad_w = std::get<1>(call_conv2d_backward(g, gi, w, a.stride, a.padding, a.dilation, a.groups, false, true));
    return {grad_g, grad_x, grad_w, Tensor(), Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

struct MaxPool2dFunction : autograd::Function<MaxPool2dFunction> {
  static constexpr std::string_view name() { return "MaxPool2DWithIndicesBackward"; }
  static tensor_list forward(AutogradContext* ctx, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                             IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
    auto [out, indices] = call_max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode);
    ctx->save_for_backward({self, indices});
    ctx->saved_data["kernel_size"] = kernel_size;
    ctx->saved_data["stride"] = stride;
    ctx->saved_data["padding"] = padding;
    ctx->saved_data["dilation"] = dilation;
    ctx->saved_data["ceil_mode"] = ceil_mode;
    ctx->mark_non_differentiable({indices});
    return {out, indices};
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const tensor_list saved = ctx->get_saved_variables();
    return {call_max_pool2d_backward(grads[0], saved[0], ctx->saved_data["kernel_size"].to_int_list(),
                                     ctx->saved_data["stride"].to_int_list(), ctx->saved_data["padding"].to_int_list(),
                                     ctx->saved_data["dilation"].to_int_list(), ctx->saved_data["ceil_mode"].to_bool(),
                                     saved[1]),
            Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

// Linear in grad_output: its derivative gathers the incoming gradient at the same indices.
struct MaxPool2dBackwardFunction : autograd::Function<MaxPool2dBackwardFunction> {
  static constexpr std::string_view name() { return "MaxPool2DWithIndicesBackwardBackward"; }
  static Tensor forward(AutogradContext* ctx, const Tensor& grad, const Tensor& self, IntArrayRef kernel_size,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                        const Tensor& indices) {
    ctx->save_for_backward({indices});
    return call_max_pool2d_backward(grad, self, kernel_size, stride, padding, dilation, ceil_mode, indices);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const Tensor indices = ctx->get_saved_variables()[0];
    const Tensor& gg = grads[0];
    const Tensor planes = gg.flatten(-2), flat_indices = indices.flatten(-2);
    return {planes.gather(-1, flat_indices).view(indices.sizes()), Tensor(), Tensor(), Tensor(), Tensor(), Tensor(),
            Tensor(), Tensor()};
  }
};

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("conv2d", [](const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                      IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
    return Conv2dFunction::apply(input, weight, detail::value_or_undefined(bias), stride, padding, dilation, groups);
  });
  m.impl("_conv2d_backward", [](const Tensor& grad, const Tensor& input, const Tensor& weight, IntArrayRef stride,
                                IntArrayRef padding, IntArrayRef dilation, int64_t groups, bool input_grad,
                                bool weight_grad) {
    return detail::to_tuple2(Conv2dBackwardFunction::apply(grad, input, weight, stride, padding, dilation, groups,
                                                           input_grad, weight_grad));
  });
  m.impl("max_pool2d_with_indices", [](const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                       IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
    return detail::to_tuple2(MaxPool2dFunction::apply(self, kernel_size, stride, padding, dilation, ceil_mode));
  });
  m.impl("max_pool2d_with_indices_backward", autograd::kernel<MaxPool2dBackwardFunction>());
}
}  // namespace

// ---------------------------------------------------------------------------------------
// Free functions.

Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return call_conv2d(input, weight, bias, stride, padding, dilation, groups);
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return call_max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode);
}

Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  static const auto op = find_op("strata::max_pool2d")
                             .typed<Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, bool)>();
  return op.call(self, kernel_size, stride, padding, dilation, ceil_mode);
}

}  // namespace strata
