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
#include <strata/ops/shapes/conv.h>
#include <strata/ops/structured.h>

#include <cstring>
#include <limits>
#include <memory>
#include <vector>

namespace strata {
namespace {

using ConvShape = shapes::ConvGeometry;  // See Note [conv2d geometry] in shapes/conv.h
using PoolShape = shapes::PoolGeometry;


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

// ---------------------------------------------------------------------------------------
// conv2d in NHWC (Note [Channels-last convolutions] in shapes/conv.h): the input is [N, H, W, C]
// in memory, the weight [OC, kH, kW, C/groups] (OHWI) and the output [N, OH, OW, OC], so for
// one sample and group the output is the matrix columns * W_g^T with one row per output
// position: columns[oh * out_w + ow][(i * kW + j) * group_in + c] = x[h][w][g * group_in + c].

template <class T>
using StridedMap = Eigen::Map<Matrix<T>, 0, Eigen::OuterStride<>>;
template <class T>
using ConstStridedMap = Eigen::Map<const Matrix<T>, 0, Eigen::OuterStride<>>;

template <class T>
void im2col_nhwc(const T* x, const ConvShape& s, int64_t group, T* columns) {
  const int64_t cin = s.group_in(), patch = s.patch();
  for (int64_t oh = 0; oh < s.out_h; ++oh) {
    for (int64_t ow = 0; ow < s.out_w; ++ow) {
      T* row = columns + (oh * s.out_w + ow) * patch;
      for (int64_t i = 0; i < s.kernel_h; ++i) {
        const int64_t h = oh * s.stride_h - s.pad_h + i * s.dilation_h;
        for (int64_t j = 0; j < s.kernel_w; ++j) {
          const int64_t w = ow * s.stride_w - s.pad_w + j * s.dilation_w;
          T* out = row + (i * s.kernel_w + j) * cin;
          if (h < 0 || h >= s.height || w < 0 || w >= s.width) std::fill(out, out + cin, T(0));
          else std::copy_n(x + (h * s.width + w) * s.channels + group * cin, cin, out);
        }
      }
    }
  }
}

// The adjoint of im2col_nhwc: adds every column entry back into its input position.
template <class T>
void col2im_nhwc(const T* columns, const ConvShape& s, int64_t group, T* x) {
  const int64_t cin = s.group_in(), patch = s.patch();
  for (int64_t oh = 0; oh < s.out_h; ++oh) {
    for (int64_t ow = 0; ow < s.out_w; ++ow) {
      const T* row = columns + (oh * s.out_w + ow) * patch;
      for (int64_t i = 0; i < s.kernel_h; ++i) {
        const int64_t h = oh * s.stride_h - s.pad_h + i * s.dilation_h;
        if (h < 0 || h >= s.height) continue;
        for (int64_t j = 0; j < s.kernel_w; ++j) {
          const int64_t w = ow * s.stride_w - s.pad_w + j * s.dilation_w;
          if (w < 0 || w >= s.width) continue;
          const T* in = row + (i * s.kernel_w + j) * cin;
          T* out = x + (h * s.width + w) * s.channels + group * cin;
          for (int64_t c = 0; c < cin; ++c) out[c] += in[c];
        }
      }
    }
  }
}

template <class T>
void conv_forward_nhwc(const T* x, const T* weight, const T* bias, T* y, const ConvShape& s) {
  const int64_t plane = s.out_plane(), patch = s.patch(), in_sample = s.height * s.width * s.channels;
  for_each_sample_chunk(s, sample_chunks(s), [&](int64_t begin, int64_t end, int64_t) {
    std::vector<T> columns(is_pointwise(s) ? 0 : static_cast<size_t>(patch * plane));
    for (int64_t n = begin; n < end; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        StridedMap<T> out(y + n * plane * s.out_channels + g * s.group_out(), plane, s.group_out(),
                          Eigen::OuterStride<>(s.out_channels));
        const ConstMatrixMap<T> weight_g(weight + g * s.group_out() * patch, s.group_out(), patch);
        if (is_pointwise(s)) {  // the input rows are the columns
          out.noalias() = ConstStridedMap<T>(x + n * in_sample + g * s.group_in(), plane, patch,
                                             Eigen::OuterStride<>(s.channels)) * weight_g.transpose();
        } else {
          im2col_nhwc(x + n * in_sample, s, g, columns.data());
          out.noalias() = ConstMatrixMap<T>(columns.data(), plane, patch) * weight_g.transpose();
        }
        if (bias)
          out.rowwise() += Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(bias + g * s.group_out(), s.group_out());
      }
    }
  });
}

// As conv_backward (Note [conv2d backward]), in NHWC: grad_input = col2im(grad_g * W_g) and
// grad_weight = sum over samples of grad_g^T * columns, in OHWI.
template <class T>
void conv_backward_nhwc(const T* grad, const T* x, const T* weight, T* grad_input, T* grad_weight,
                        const ConvShape& s) {
  const int64_t plane = s.out_plane(), patch = s.patch(), in_sample = s.height * s.width * s.channels;
  const int64_t chunks = sample_chunks(s), weight_numel = s.out_channels * patch;
  std::vector<T> partial(grad_weight ? static_cast<size_t>(chunks * weight_numel) : 0, T(0));
  for_each_sample_chunk(s, chunks, [&](int64_t begin, int64_t end, int64_t chunk) {
    std::vector<T> columns(static_cast<size_t>(patch * plane));
    for (int64_t n = begin; n < end; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        const ConstStridedMap<T> grad_g(grad + n * plane * s.out_channels + g * s.group_out(), plane, s.group_out(),
                                        Eigen::OuterStride<>(s.out_channels));
        const ConstMatrixMap<T> weight_g(weight + g * s.group_out() * patch, s.group_out(), patch);
        if (grad_input) {
          MatrixMap<T>(columns.data(), plane, patch).noalias() = grad_g * weight_g;
          col2im_nhwc(columns.data(), s, g, grad_input + n * in_sample);
        }
        if (grad_weight) {
          im2col_nhwc(x + n * in_sample, s, g, columns.data());
          MatrixMap<T>(partial.data() + chunk * weight_numel + g * s.group_out() * patch, s.group_out(), patch)
              .noalias() += grad_g.transpose() * ConstMatrixMap<T>(columns.data(), plane, patch);
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

// Where a kernel writing dense `dtype` memory puts the values of `out`: out itself when it is
// contiguous of that dtype, else a temporary that write_back copies into out.
Tensor dense_destination(const Tensor& out, ScalarType dtype) {
  return out.dtype() == dtype && out.is_contiguous() ? out : detail::make_empty(out.sizes(), dtype, out.device());
}
void write_back(const Tensor& out, const Tensor& dense) {
  if (!dense.is_same(out)) detail::copy_kernel(out, dense);
}

// dense() and dense_destination() in channels-last order (NHWC for activations, OHWI for
// weights).
Tensor dense_channels_last(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype && t.is_contiguous(MemoryFormat::ChannelsLast)) return t;
  Tensor copy = detail::empty_from_meta(
      TensorMeta(t.sizes(), dtype, t.device(), detail::strides_for(t.sizes(), MemoryFormat::ChannelsLast)));
  detail::copy_kernel(copy, t);
  return copy;
}
Tensor dense_channels_last_destination(const Tensor& out, ScalarType dtype) {
  if (out.dtype() == dtype && out.is_contiguous(MemoryFormat::ChannelsLast)) return out;
  return detail::empty_from_meta(
      TensorMeta(out.sizes(), dtype, out.device(), detail::strides_for(out.sizes(), MemoryFormat::ChannelsLast)));
}

void conv2d_out_cpu(const Tensor& out, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                    IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  if (out.numel() == 0) return;
  const ConvShape s = shapes::conv2d_geometry(input, weight, bias, stride, padding, dilation, groups);
  const ScalarType compute = compute_dtype(input.dtype());
  const bool nhwc = shapes::conv2d_channels_last(input, weight);  // Note [Channels-last convolutions]
  const Tensor result = nhwc ? dense_channels_last_destination(out, compute) : dense_destination(out, compute);
  const auto operand = [&](const Tensor& t) { return nhwc ? dense_channels_last(t, compute) : dense(t, compute); };
  const Tensor x = operand(input), w = operand(weight);
  const Tensor b = bias && bias->defined() ? dense(*bias, compute) : Tensor();
  visit_float(compute, [&]<class T>() {
    const T* bias_data = b.defined() ? detail::data_of<T>(b) : nullptr;
    if (nhwc)
      conv_forward_nhwc<T>(detail::data_of<T>(x), detail::data_of<T>(w), bias_data, detail::data_of<T>(result), s);
    else
      conv_forward<T>(detail::data_of<T>(x), detail::data_of<T>(w), bias_data, detail::data_of<T>(result), s);
  });
  write_back(out, result);
}

// Fills grad_input and grad_weight, each undefined unless asked for. See Note [conv2d backward].
void conv2d_backward_out_cpu(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad,
                             const Tensor& input, const Tensor& weight, IntArrayRef stride, IntArrayRef padding,
                             IntArrayRef dilation, int64_t groups, bool, bool) {
  const ConvShape s = shapes::conv2d_geometry(input, weight, std::nullopt, stride, padding, dilation, groups);
  const ScalarType compute = compute_dtype(input.dtype());
  const bool nhwc = shapes::conv2d_channels_last(input, weight);
  const auto destination = [&](const Tensor& t) {
    if (!t.defined()) return Tensor();
    return nhwc ? dense_channels_last_destination(t, compute) : dense_destination(t, compute);
  };
  const Tensor input_result = destination(grad_input), weight_result = destination(grad_weight);
  if (input_result.defined()) detail::fill_kernel(input_result, 0, "_conv2d_backward");
  if (weight_result.defined()) detail::fill_kernel(weight_result, 0, "_conv2d_backward");
  if (grad.numel() > 0 && (input_result.defined() || weight_result.defined())) {
    const auto operand = [&](const Tensor& t) { return nhwc ? dense_channels_last(t, compute) : dense(t, compute); };
    const Tensor g = operand(grad), x = operand(input), w = operand(weight);
    visit_float(compute, [&]<class T>() {
      T* input_data = input_result.defined() ? detail::data_of<T>(input_result) : nullptr;
      T* weight_data = weight_result.defined() ? detail::data_of<T>(weight_result) : nullptr;
      if (nhwc)
        conv_backward_nhwc<T>(detail::data_of<T>(g), detail::data_of<T>(x), detail::data_of<T>(w), input_data,
                              weight_data, s);
      else
        conv_backward<T>(detail::data_of<T>(g), detail::data_of<T>(x), detail::data_of<T>(w), input_data, weight_data,
                         s);
    });
  }
  if (input_result.defined()) write_back(grad_input, input_result);
  if (weight_result.defined()) write_back(grad_weight, weight_result);
}

// ---------------------------------------------------------------------------------------
// max_pool2d.

// The max of each window (NaN wins, as in PyTorch) and its flat index in the input plane. Ties
// keep the first; within a window row the first NaN ends the row (a later row's NaN then wins).
// The comparisons select without branching: on real data they are coin flips, and mispredicted
// branches cost more than the rest of the window. The shape is read into locals, which the
// stores through `indices` (int64, like PoolShape's fields) would otherwise force to reload.
template <class T>
void max_pool_plane(const T* x, T* y, int64_t* indices, const PoolShape& s) {
  using C = compute_type_t<T>;
  const int64_t out_h = s.out_h, out_w = s.out_w, height = s.height, width = s.width, kernel_h = s.kernel_h,
                kernel_w = s.kernel_w, stride_h = s.stride_h, stride_w = s.stride_w, pad_h = s.pad_h, pad_w = s.pad_w,
                dilation_h = s.dilation_h, dilation_w = s.dilation_w;
  // Without horizontal padding and with every window inside the row, a whole output row is
  // scanned window element by window element, each step independent across the row's outputs
  // (no chain of dependent compares, and a loop the compiler can vectorise).
  if (pad_w == 0 && (out_w - 1) * stride_w + (kernel_w - 1) * dilation_w < width) {
    const auto width_out = static_cast<size_t>(out_w);
    const std::unique_ptr<C[]> best_value(new C[width_out]);  // not vector<C>: C may be bool
    const std::unique_ptr<int64_t[]> best(new int64_t[width_out]);
    const std::unique_ptr<unsigned char[]> row_nan(new unsigned char[width_out]);
    C* __restrict values = best_value.get();
    int64_t* __restrict where = best.get();
    unsigned char* __restrict ended = row_nan.get();
    for (int64_t oh = 0; oh < out_h; ++oh) {
      std::fill_n(where, out_w, int64_t{-1});
      std::fill_n(values, out_w, C{});
      for (int64_t i = 0; i < kernel_h; ++i) {
        const int64_t h = oh * stride_h - pad_h + i * dilation_h;
        if (h < 0 || h >= height) continue;
        std::fill_n(ended, out_w, static_cast<unsigned char>(0));
        for (int64_t j = 0; j < kernel_w; ++j) {
          const int64_t first = h * width + j * dilation_w;
          const T* __restrict src = x + first;
          for (int64_t ow = 0; ow < out_w; ++ow) {
            const C value = static_cast<C>(src[ow * stride_w]);
            const bool nan = value != value;
            const bool take = !ended[ow] & ((where[ow] < 0) | (value > values[ow]) | nan);
            where[ow] = take ? first + ow * stride_w : where[ow];
            values[ow] = take ? value : values[ow];
            ended[ow] = static_cast<unsigned char>(ended[ow] | (take & nan));
          }
        }
      }
      for (int64_t ow = 0; ow < out_w; ++ow) {
        y[oh * out_w + ow] = static_cast<T>(values[ow]);
        indices[oh * out_w + ow] = where[ow];
      }
    }
    return;
  }
  for (int64_t oh = 0; oh < out_h; ++oh) {
    for (int64_t ow = 0; ow < out_w; ++ow) {
      int64_t best = -1;
      C best_value{};
      for (int64_t i = 0; i < kernel_h; ++i) {
        const int64_t h = oh * stride_h - pad_h + i * dilation_h;
        if (h < 0 || h >= height) continue;
        bool row_nan = false;
        for (int64_t j = 0; j < kernel_w; ++j) {
          const int64_t w = ow * stride_w - pad_w + j * dilation_w;
          if (w < 0 || w >= width) continue;
          const C value = static_cast<C>(x[h * width + w]);
          const bool nan = value != value;
          const bool take = !row_nan & ((best < 0) | (value > best_value) | nan);
          best = take ? h * width + w : best;
          best_value = take ? value : best_value;
          row_nan |= take & nan;
        }
      }
      y[oh * out_w + ow] = static_cast<T>(best_value);
      indices[oh * out_w + ow] = best;
    }
  }
}

// max_pool_plane for every channel at once, over NHWC memory: output positions [begin, end)
// of the batch. The window is scanned in the same order, so values and indices are the
// plane version's.
template <class T>
void max_pool_nhwc(const T* x, T* y, int64_t* indices, const PoolShape& s, int64_t channels, int64_t begin,
                   int64_t end) {
  using C = compute_type_t<T>;
  const auto count = static_cast<size_t>(channels);
  std::vector<C> best_value(count);
  std::vector<int64_t> best(count);
  std::vector<char> row_done(count);  // a NaN ends the scan of its window row, as the break there
  const int64_t out_plane = s.out_h * s.out_w;
  for (int64_t p = begin; p < end; ++p) {
    const int64_t n = p / out_plane, oh = p % out_plane / s.out_w, ow = p % s.out_w;
    std::fill(best.begin(), best.end(), int64_t{-1});
    std::fill(best_value.begin(), best_value.end(), C{});
    for (int64_t i = 0; i < s.kernel_h; ++i) {
      const int64_t h = oh * s.stride_h - s.pad_h + i * s.dilation_h;
      if (h < 0 || h >= s.height) continue;
      std::fill(row_done.begin(), row_done.end(), char{0});
      for (int64_t j = 0; j < s.kernel_w; ++j) {
        const int64_t w = ow * s.stride_w - s.pad_w + j * s.dilation_w;
        if (w < 0 || w >= s.width) continue;
        const T* in = x + ((n * s.height + h) * s.width + w) * channels;
        for (size_t c = 0; c < count; ++c) {
          if (row_done[c]) continue;
          const C value = static_cast<C>(in[c]);
          if (best[c] < 0 || value > best_value[c] || value != value) {
            best[c] = h * s.width + w;
            best_value[c] = value;
            if (value != value) row_done[c] = 1;
          }
        }
      }
    }
    for (size_t c = 0; c < count; ++c) {
      y[p * channels + static_cast<int64_t>(c)] = static_cast<T>(best_value[c]);
      indices[p * channels + static_cast<int64_t>(c)] = best[c];
    }
  }
}

void max_pool2d_out_cpu(const Tensor& out, const Tensor& indices, const Tensor& self, IntArrayRef kernel_size,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  if (out.numel() == 0) return;
  const PoolShape s = shapes::max_pool2d_geometry(self, kernel_size, stride, padding, dilation, ceil_mode);
  if (shapes::is_channels_last(self)) {  // Note [Channels-last convolutions] in shapes/conv.h
    const Tensor x = dense_channels_last(self, self.dtype());
    const Tensor result = dense_channels_last_destination(out, self.dtype());
    const Tensor result_indices = dense_channels_last_destination(indices, kInt64);
    const int64_t channels = self.size(1), positions = self.size(0) * s.out_h * s.out_w;
    visit_dtype(self.dtype(), [&]<class T>() {
      auto body = [&](int64_t begin, int64_t end) {
        max_pool_nhwc(detail::data_of<T>(x), detail::data_of<T>(result), detail::data_of<int64_t>(result_indices), s,
                      channels, begin, end);
      };
      const int64_t work = channels * s.kernel_h * s.kernel_w;
      if (positions * work <= kDefaultGrainSize) body(0, positions);
      else parallel_for(0, positions, std::max<int64_t>(1, kDefaultGrainSize / work), body);
    });
    write_back(out, result);
    write_back(indices, result_indices);
    return;
  }
  const Tensor x = detail::as_contiguous(self);
  const Tensor result = dense_destination(out, self.dtype()), result_indices = dense_destination(indices, kInt64);
  visit_dtype(self.dtype(), [&]<class T>() {
    const T* in = detail::data_of<T>(x);
    T* y = detail::data_of<T>(result);
    int64_t* index = detail::data_of<int64_t>(result_indices);
    const int64_t in_plane = s.height * s.width, out_plane = s.out_h * s.out_w;
    auto body = [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) max_pool_plane(in + p * in_plane, y + p * out_plane, index + p * out_plane, s);
    };
    const int64_t work = out_plane * s.kernel_h * s.kernel_w;
    if (s.planes * work <= kDefaultGrainSize) body(0, s.planes);
    else parallel_for(0, s.planes, std::max<int64_t>(1, kDefaultGrainSize / work), body);
  });
  write_back(out, result);
  write_back(indices, result_indices);
}

// Each output gradient adds into the input position its window's max came from. The indices
// are values, so their range is checked here (a backend's compute checks its own).
void max_pool2d_backward_out_cpu(const Tensor& grad_input, const Tensor& grad, const Tensor& self,
                                 IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                                 IntArrayRef dilation, bool ceil_mode, const Tensor& indices) {
  const PoolShape s = shapes::max_pool2d_geometry(self, kernel_size, stride, padding, dilation, ceil_mode);
  if (shapes::is_channels_last(self)) {  // the same in NHWC: samples in parallel, channels inner
    const Tensor result = dense_channels_last_destination(grad_input, grad_input.dtype());
    detail::fill_kernel(result, 0, "max_pool2d_with_indices_backward");
    if (grad.numel() > 0) {
      const Tensor g = dense_channels_last(grad, grad.dtype()), index = dense_channels_last(indices, kInt64);
      const int64_t channels = self.size(1), in_plane = s.height * s.width, out_plane = s.out_h * s.out_w;
      visit_dtype(grad.dtype(), [&]<class T>() {
        using C = compute_type_t<T>;
        const T* grad_data = detail::data_of<T>(g);
        const int64_t* index_data = detail::data_of<int64_t>(index);
        T* result_data = detail::data_of<T>(result);
        auto body = [&](int64_t begin, int64_t end) {
          for (int64_t n = begin; n < end; ++n)
            for (int64_t k = n * out_plane * channels; k < (n + 1) * out_plane * channels; ++k) {
              const int64_t target = index_data[k];
              if (target < 0) continue;  // a window with no input element
              STRATA_CHECK_INDEX(target < in_plane, "[max_pool2d_with_indices_backward] index ", target,
                                 " is out of range for an input plane of ", s.height, "x", s.width, " elements");
              T& slot = result_data[(n * in_plane + target) * channels + k % channels];
              slot = static_cast<T>(static_cast<C>(slot) + static_cast<C>(grad_data[k]));
            }
        };
        if (grad.numel() <= kDefaultGrainSize) body(0, self.size(0));
        else parallel_for(0, self.size(0), std::max<int64_t>(1, kDefaultGrainSize / (out_plane * channels)), body);
      });
    }
    write_back(grad_input, result);
    return;
  }
  const Tensor result = dense_destination(grad_input, grad_input.dtype());
  detail::fill_kernel(result, 0, "max_pool2d_with_indices_backward");
  if (grad.numel() > 0) {
    const Tensor g = detail::as_contiguous(grad), index = detail::as_contiguous(indices);
    visit_dtype(grad.dtype(), [&]<class T>() {
      using C = compute_type_t<T>;
      const T* grad_data = detail::data_of<T>(g);
      const int64_t* index_data = detail::data_of<int64_t>(index);
      T* result_data = detail::data_of<T>(result);
      const int64_t in_plane = s.height * s.width, out_plane = s.out_h * s.out_w;
      auto body = [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p)
          for (int64_t k = 0; k < out_plane; ++k) {
            const int64_t target = index_data[p * out_plane + k];
            if (target < 0) continue;  // a window with no input element
            STRATA_CHECK_INDEX(target < in_plane, "[max_pool2d_with_indices_backward] index ", target,
                               " is out of range for an input plane of ", s.height, "x", s.width, " elements");
            T& slot = result_data[p * in_plane + target];
            slot = static_cast<T>(static_cast<C>(slot) + static_cast<C>(grad_data[p * out_plane + k]));
          }
      };
      if (grad.numel() <= kDefaultGrainSize) body(0, s.planes);
      else parallel_for(0, s.planes, std::max<int64_t>(1, kDefaultGrainSize / out_plane), body);
    });
  }
  write_back(grad_input, result);
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
  using detail::def_structured;
  def_structured<&shapes::conv2d>(m, "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, "
                                     "SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor");
  detail::def_optional_outputs<&shapes::_conv2d_backward>(
      m, "_conv2d_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[2] stride, SymInt[2] padding, "
         "SymInt[2] dilation, SymInt groups, bool input_grad, bool weight_grad) -> (Tensor, Tensor)");
  def_structured<&shapes::max_pool2d_with_indices>(
      m, "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
         "int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)");
  def_structured<&shapes::max_pool2d_with_indices_backward>(
      m, "max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, "
         "int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor");
  m.def("max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, "
        "bool ceil_mode=False) -> Tensor",
        &max_pool2d_composite);
}

STRATA_LIBRARY_IMPL(strata, CPU, m) {
  using detail::structured;
  m.impl("conv2d", structured<&shapes::conv2d, &conv2d_out_cpu>());
  m.impl("_conv2d_backward", detail::optional_outputs<&shapes::_conv2d_backward, &conv2d_backward_out_cpu>());
  m.impl("max_pool2d_with_indices", structured<&shapes::max_pool2d_with_indices, &max_pool2d_out_cpu>());
  m.impl("max_pool2d_with_indices_backward",
         structured<&shapes::max_pool2d_with_indices_backward, &max_pool2d_backward_out_cpu>());
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
    const auto saved = autograd::detail::saved_tensors(*ctx);
    const ConvArgs a = load_conv_args(ctx);
    auto [grad_input, grad_weight] = call_conv2d_backward(grads[0], saved[0], saved[1], a.stride, a.padding,
                                                          a.dilation, a.groups, ctx->needs_input_grad(0),
                                                          ctx->needs_input_grad(1));
    Tensor grad_bias;
    if (ctx->needs_input_grad(2)) grad_bias = grads[0].dim() == 4 ? grads[0].sum({0, 2, 3}) : grads[0].sum({1, 2});
    return autograd::detail::gradients_in(std::move(grads), grad_input, grad_weight, grad_bias, Tensor(), Tensor(),
                                          Tensor(), Tensor());
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
    const auto saved = autograd::detail::saved_tensors(*ctx);
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
    return autograd::detail::gradients_in(std::move(grads), grad_g, grad_x, grad_w, Tensor(), Tensor(), Tensor(),
                                          Tensor(), Tensor(), Tensor());
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
    const auto saved = autograd::detail::saved_tensors(*ctx);
    return autograd::detail::gradients_in(
        std::move(grads),
        call_max_pool2d_backward(grads[0], saved[0], ctx->saved_data["kernel_size"].to_int_list(),
                                 ctx->saved_data["stride"].to_int_list(), ctx->saved_data["padding"].to_int_list(),
                                 ctx->saved_data["dilation"].to_int_list(), ctx->saved_data["ceil_mode"].to_bool(),
                                 saved[1]),
        Tensor(), Tensor(), Tensor(), Tensor(), Tensor());
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
    const Tensor indices = autograd::detail::saved_tensors(*ctx)[0];
    const Tensor& gg = grads[0];
    const Tensor planes = gg.flatten(-2), flat_indices = indices.flatten(-2);
    return autograd::detail::gradients_in(std::move(grads), planes.gather(-1, flat_indices).view(indices.sizes()),
                                          Tensor(), Tensor(), Tensor(), Tensor(), Tensor(), Tensor(), Tensor());
  }
};

STRATA_LIBRARY_IMPL(strata, Autograd, m) {
  m.impl("conv2d", [](const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                      IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
    return Conv2dFunction::apply_op(input, weight, detail::value_or_undefined(bias), stride, padding, dilation, groups);
  });
  m.impl("_conv2d_backward", [](const Tensor& grad, const Tensor& input, const Tensor& weight, IntArrayRef stride,
                                IntArrayRef padding, IntArrayRef dilation, int64_t groups, bool input_grad,
                                bool weight_grad) {
    return detail::to_tuple2(Conv2dBackwardFunction::apply_op(grad, input, weight, stride, padding, dilation, groups,
                                                           input_grad, weight_grad));
  });
  m.impl("max_pool2d_with_indices", [](const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                       IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
    return detail::to_tuple2(MaxPool2dFunction::apply_op(self, kernel_size, stride, padding, dilation, ceil_mode));
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
