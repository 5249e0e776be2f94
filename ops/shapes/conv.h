#pragma once
// Shape functions of the convolution and pooling family (ops/conv.cpp): conv2d,
// _conv2d_backward, max_pool2d_with_indices and its backward. See Note [Structured ops] in
// ops/structured.h. Depends on tensor/ only; compiles under nvcc.
#include <array>
#include <optional>

#include <strata/tensor/shape_checks.h>
#include <strata/tensor/tensor_meta.h>

namespace strata::shapes {

// ---------------------------------------------------------------------------------------
// conv2d.

// Note [conv2d geometry]
// input [N, C, H, W] (or unbatched [C, H, W]), weight [O, C / groups, kH, kW], bias [O];
// out = (in + 2 * padding - dilation * (k - 1) - 1) / stride + 1 per spatial dim. Each group
// g convolves input channels [g * C/groups, (g + 1) * C/groups) into output channels
// [g * O/groups, (g + 1) * O/groups).
struct ConvGeometry {
  int64_t batch, channels, height, width;    // input
  int64_t out_channels, kernel_h, kernel_w;  // weight
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

inline void check_pair(const char* op, const char* name, IntArrayRef values, int64_t minimum) {
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

inline Window checked_window(const char* op, int64_t size, int64_t kernel, int64_t pad, int64_t dilation,
                             IntArrayRef kernels, IntArrayRef paddings, IntArrayRef dilations) {
  Window w{};
  const bool overflow = __builtin_mul_overflow(pad, int64_t{2}, &w.padded) ||
                        __builtin_add_overflow(w.padded, size, &w.padded) ||
                        __builtin_mul_overflow(dilation, kernel - 1, &w.extent) ||
                        __builtin_add_overflow(w.extent, int64_t{1}, &w.extent);
  STRATA_CHECK_VALUE(!overflow, "[", op, "] the window arithmetic overflows int64 for kernel_size ", kernels,
                     ", padding ", paddings, " and dilation ", dilations);
  return w;
}

inline void check_conv_tensors(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
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

inline ConvGeometry conv2d_geometry(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                                    IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  check_conv_tensors(input, weight, bias);
  check_pair("conv2d", "stride", stride, 1);
  check_pair("conv2d", "padding", padding, 0);
  check_pair("conv2d", "dilation", dilation, 1);
  STRATA_CHECK_VALUE(groups > 0, "[conv2d] groups must be positive, got ", groups);
  ConvGeometry s{};
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

// Note [Channels-last convolutions]
// As in LibTorch, conv2d's result is channels last when its input or its weight is (by
// suggest_memory_format), and max_pool2d's results are when its input is; their gradients
// for the input and weight are laid out the same way. The CPU kernels then compute in NHWC
// directly (ops/conv.cpp); other backends may compute NCHW and copy.
inline bool is_channels_last(const Tensor& t) {
  return t.dim() == 4 && detail::suggest_memory_format(t.sizes(), t.strides()) == MemoryFormat::ChannelsLast;
}
inline bool conv2d_channels_last(const Tensor& input, const Tensor& weight) {
  return input.dim() == 4 && (is_channels_last(input) || is_channels_last(weight));
}
inline DimVector channels_last_strides_if(bool channels_last, IntArrayRef sizes) {
  return channels_last ? detail::strides_for(sizes, MemoryFormat::ChannelsLast) : DimVector();
}

inline TensorMeta conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  const ConvGeometry s = conv2d_geometry(input, weight, bias, stride, padding, dilation, groups);
  const DimVector sizes = s.out_sizes();
  return {sizes, input.dtype(), input.device(), channels_last_strides_if(conv2d_channels_last(input, weight), sizes)};
}

// (grad_input, grad_weight), each only when asked for (nullopt: the output is undefined).
inline std::array<std::optional<TensorMeta>, 2> _conv2d_backward(const Tensor& grad_output, const Tensor& input,
                                                                 const Tensor& weight, IntArrayRef stride,
                                                                 IntArrayRef padding, IntArrayRef dilation,
                                                                 int64_t groups, bool input_grad, bool weight_grad) {
  const ConvGeometry s = conv2d_geometry(input, weight, std::nullopt, stride, padding, dilation, groups);
  STRATA_CHECK_VALUE(grad_output.sizes() == s.out_sizes().ref(), "[_conv2d_backward] expected grad_output of shape ",
                     s.out_sizes().ref(), ", got ", grad_output.sizes());
  std::array<std::optional<TensorMeta>, 2> metas;
  const bool channels_last = conv2d_channels_last(input, weight);
  if (input_grad)
    metas[0] = TensorMeta(input.sizes(), input.dtype(), input.device(),
                          channels_last_strides_if(channels_last, input.sizes()));
  if (weight_grad)
    metas[1] = TensorMeta(weight.sizes(), weight.dtype(), weight.device(),
                          channels_last_strides_if(channels_last, weight.sizes()));
  return metas;
}

// ---------------------------------------------------------------------------------------
// max_pool2d.

struct PoolGeometry {
  int64_t planes, height, width, out_h, out_w;
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  DimVector out_sizes;
};

// PyTorch's pooling_output_shape, ceil_mode included: the last window must start inside the input
// or its left padding. floor or ceil of span / stride without forming span + stride - 1, which
// overflows for a huge stride (Note [Window arithmetic overflow]).
inline int64_t pooled_size(int64_t size, Window window, int64_t pad, int64_t stride, bool ceil_mode) {
  const int64_t span = window.padded - window.extent;
  int64_t steps = span / stride;  // rounded toward zero
  if (span % stride != 0 && span < 0 && !ceil_mode) --steps;
  if (span % stride != 0 && span > 0 && ceil_mode) ++steps;
  int64_t out = steps + 1, last_start = 0;
  if (ceil_mode && (__builtin_mul_overflow(steps, stride, &last_start) || last_start >= size + pad)) --out;
  return out;
}

inline PoolGeometry max_pool2d_geometry(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                        IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  constexpr const char* op = "max_pool2d";
  STRATA_CHECK_VALUE(self.dim() == 3 || self.dim() == 4, "[max_pool2d] expected a 3-d [C, H, W] or 4-d [N, C, H, W] "
                     "input, got input of shape ", self.sizes());
  STRATA_CHECK_TYPE(self.dtype() != kBool, "[max_pool2d] bool inputs are not supported");
  check_pair(op, "kernel_size", kernel_size, 1);
  const IntArrayRef steps = stride.empty() ? kernel_size : stride;  // stride defaults to the kernel
  check_pair(op, "stride", steps, 1);
  check_pair(op, "padding", padding, 0);
  check_pair(op, "dilation", dilation, 1);
  PoolGeometry s{};
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

// (the window maxima, their int64 flat indices in the input plane).
inline std::array<TensorMeta, 2> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                                         bool ceil_mode) {
  const PoolGeometry s = max_pool2d_geometry(self, kernel_size, stride, padding, dilation, ceil_mode);
  const DimVector strides = channels_last_strides_if(is_channels_last(self), s.out_sizes);
  return {TensorMeta(s.out_sizes, self.dtype(), self.device(), strides),
          TensorMeta(s.out_sizes, kInt64, self.device(), strides)};
}

inline TensorMeta max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self,
                                                   IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode, const Tensor& indices) {
  const PoolGeometry s = max_pool2d_geometry(self, kernel_size, stride, padding, dilation, ceil_mode);
  STRATA_CHECK_VALUE(grad_output.sizes() == s.out_sizes.ref() && indices.sizes() == s.out_sizes.ref(),
                     "[max_pool2d_with_indices_backward] expected grad_output and indices of shape ", s.out_sizes.ref(),
                     ", got ", grad_output.sizes(), " and ", indices.sizes());
  STRATA_CHECK_TYPE(indices.dtype() == kInt64, "[max_pool2d_with_indices_backward] expected int64 indices, got ",
                    indices.dtype());
  return {self.sizes(), grad_output.dtype(), self.device(), channels_last_strides_if(is_channels_last(self), self.sizes())};
}

}  // namespace strata::shapes
