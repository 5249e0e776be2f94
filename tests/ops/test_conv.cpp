// Tests for ops/conv.cpp: conv2d and max_pool2d.
#include "op_test_util.h"

#include <strata/ops/structured.h>

#include <cmath>
#include <limits>

using namespace strata;
using strata::testing::check_gradcheck;
using strata::testing::check_gradgradcheck;
using strata::testing::check_meta_matches;
using strata::testing::check_values;
using strata::testing::expect_error;
using strata::testing::grad_input;
using strata::testing::values_of;

namespace {

struct ConvCase {
  std::vector<int64_t> input, weight;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
};

// The definition of conv2d, evaluated naively in double; input is [N, C, H, W].
std::vector<double> reference_conv(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvCase& c) {
  const std::vector<double> x = values_of(input), w = values_of(weight);
  const std::vector<double> b = bias.defined() ? values_of(bias) : std::vector<double>();
  const int64_t n_size = input.size(0), channels = input.size(1), height = input.size(2), width = input.size(3);
  const int64_t out_channels = weight.size(0), group_in = weight.size(1), kh = weight.size(2), kw = weight.size(3);
  const int64_t out_h = (height + 2 * c.padding[0] - c.dilation[0] * (kh - 1) - 1) / c.stride[0] + 1;
  const int64_t out_w = (width + 2 * c.padding[1] - c.dilation[1] * (kw - 1) - 1) / c.stride[1] + 1;
  const int64_t group_out = out_channels / c.groups;
  std::vector<double> out;
  for (int64_t n = 0; n < n_size; ++n)
    for (int64_t o = 0; o < out_channels; ++o)
      for (int64_t oh = 0; oh < out_h; ++oh)
        for (int64_t ow = 0; ow < out_w; ++ow) {
          double total = b.empty() ? 0.0 : b[o];
          for (int64_t ci = 0; ci < group_in; ++ci)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t h = oh * c.stride[0] - c.padding[0] + i * c.dilation[0];
                const int64_t v = ow * c.stride[1] - c.padding[1] + j * c.dilation[1];
                if (h < 0 || h >= height || v < 0 || v >= width) continue;
                const int64_t channel = o / group_out * group_in + ci;
                total += x[((n * channels + channel) * height + h) * width + v] * w[((o * group_in + ci) * kh + i) * kw + j];
              }
          out.push_back(total);
        }
  return out;
}

}  // namespace

TEST_CASE("conv2d: hand-worked values") {
  Tensor x = arange(9, kFloat32).view({1, 1, 3, 3});
  Tensor w = ones({1, 1, 2, 2});
  check_values(conv2d(x, w), {1, 1, 2, 2}, kFloat32, {8, 12, 20, 24});
  check_values(conv2d(x, w, tensor({0.5f})), {1, 1, 2, 2}, kFloat32, {8.5, 12.5, 20.5, 24.5});
  check_values(conv2d(x, w, {}, {2, 2}, {1, 1}), {1, 1, 2, 2}, kFloat32, {0, 3, 9, 24});
  check_values(conv2d(x.view({1, 3, 3}), w), {1, 2, 2}, kFloat32, {8, 12, 20, 24});  // unbatched
  check_values(conv2d(x, w, {}, {1, 1}, {0, 0}, {2, 2}), {1, 1, 1, 1}, kFloat32, {0 + 2 + 6 + 8});
}

TEST_CASE("conv2d: strides, padding, dilation, groups, dtypes against the definition") {
  const std::vector<ConvCase> cases = {
      {{2, 3, 6, 5}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1},
      {{2, 4, 7, 7}, {6, 2, 3, 2}, {2, 1}, {1, 2}, {1, 2}, 2},
      {{1, 4, 5, 5}, {4, 1, 3, 3}, {1, 2}, {1, 1}, {2, 1}, 4},   // depthwise
      {{3, 2, 4, 4}, {5, 2, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},   // pointwise 1x1
      {{9, 3, 16, 16}, {8, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1}, // enough work for threads
  };
  uint64_t seed = 51;
  for (const ConvCase& c : cases) {
    manual_seed(seed++);
    Tensor input = randn(c.input, kFloat64), weight = randn(c.weight, kFloat64), bias = randn({c.weight[0]}, kFloat64);
    Tensor out = conv2d(input, weight, bias, c.stride, c.padding, c.dilation, c.groups);
    CHECK(out.size(1) == c.weight[0]);
    check_values(out, out.sizes().vec(), kFloat64, reference_conv(input, weight, bias, c), 1e-10);
    Tensor single = conv2d(input.to(kFloat32), weight.to(kFloat32), {}, c.stride, c.padding, c.dilation, c.groups);
    check_values(single, out.sizes().vec(), kFloat32, reference_conv(input, weight, Tensor(), c), 1e-4);
    check_meta_matches(conv2d(input.to(kMeta), weight.to(kMeta), bias.to(kMeta), c.stride, c.padding, c.dilation,
                              c.groups),
                       out);
  }
  Tensor input = randn({2, 3, 5, 4}, kFloat64), weight = randn({2, 3, 2, 2}, kFloat64);
  Tensor strided = input.transpose(2, 3).contiguous().transpose(2, 3);  // non-contiguous input
  check_values(conv2d(strided, weight), {2, 2, 4, 3}, kFloat64, values_of(conv2d(input, weight)), 1e-12);
  check_values(conv2d(input.to(kBFloat16), weight.to(kBFloat16)), {2, 2, 4, 3}, kBFloat16,
               values_of(conv2d(input.to(kBFloat16).to(kFloat64), weight.to(kBFloat16).to(kFloat64))), 0.1);
  CHECK(conv2d(zeros({0, 3, 5, 4}), zeros({2, 3, 2, 2})).sizes() == IntArrayRef{0, 2, 4, 3});
}

TEST_CASE("conv2d: errors name the argument and shapes") {
  Tensor x = zeros({1, 4, 5, 5}), w = zeros({2, 3, 3, 3});
  expect_error<ValueError>([&] { (void)conv2d(x, w); },
                           "[conv2d] expected input of shape [1, 4, 5, 5] to have 3 channels", {"[2, 3, 3, 3]"});
  expect_error<ValueError>([&] { (void)conv2d(x, zeros({2, 4, 7, 3})); },
                           "[conv2d] the kernel of shape [2, 4, 7, 3] (dilation [1, 1]) is larger than the padded input");
  expect_error<ValueError>([&] { (void)conv2d(x, zeros({3, 2, 3, 3}), {}, {1, 1}, {0, 0}, {1, 1}, 2); },
                           "[conv2d] out_channels (3) must be divisible by groups (2)");
  expect_error<ValueError>([&] { (void)conv2d(x, zeros({2, 4, 3, 3}), zeros({3})); },
                           "[conv2d] expected a bias of shape [2] (one per output channel), got bias of shape [3]");
  expect_error<ValueError>([&] { (void)conv2d(x, zeros({2, 4, 3, 3}), {}, {0, 1}); },
                           "[conv2d] stride must be positive, got [0, 1]");
  expect_error<ValueError>([] { (void)conv2d(zeros({4, 5}), zeros({2, 4, 3, 3})); },
                           "[conv2d] expected a 3-d [C, H, W] or 4-d [N, C, H, W] input, got input of shape [4, 5]");
  expect_error<TypeError>([&] { (void)conv2d(x, zeros({2, 4, 3, 3}, kFloat64)); },
                          "[conv2d] expected floating-point input and weight of the same dtype, got Float32 and Float64");
}

TEST_CASE("conv2d: gradients for input, weight and bias, first and second order") {
  Tensor x = grad_input({2, 4, 5, 4}, 52, /*transposed=*/true);
  Tensor w = grad_input({4, 2, 3, 2}, 53), b = grad_input({4}, 54);
  auto fn = [](const tensor_list& in) {
    return tensor_list{conv2d(in[0], in[1], in[2], {2, 1}, {1, 1}, {1, 2}, 2)};
  };
  check_gradcheck(fn, {x, w, b});
  check_gradgradcheck(fn, {x, w, b});
  // The product makes grad_output depend on the inputs: d/d(grad_output) of _conv2d_backward.
  check_gradgradcheck([](const tensor_list& in) { return tensor_list{conv2d(in[0], in[1]) * in[1].sum()}; },
                      {grad_input({1, 2, 4, 3}, 59), grad_input({2, 2, 2, 2}, 60)});
  Tensor unbatched = grad_input({2, 4, 4}, 55);
  check_gradcheck([](const tensor_list& in) { return tensor_list{conv2d(in[0], in[1], in[2])}; },
                  {unbatched, grad_input({3, 2, 2, 2}, 56), grad_input({3}, 57)});
}

TEST_CASE("max_pool2d: windows, padding, dilation, ceil_mode, indices") {
  Tensor x = arange(16, kFloat32).view({1, 1, 4, 4});
  check_values(max_pool2d(x, {2, 2}), {1, 1, 2, 2}, kFloat32, {5, 7, 13, 15});
  check_values(max_pool2d(x, {3, 3}, {2, 2}, {1, 1}), {1, 1, 2, 2}, kFloat32, {5, 7, 13, 15});
  check_values(max_pool2d(x, {2, 2}, {1, 1}, {0, 0}, {2, 2}), {1, 1, 2, 2}, kFloat32, {10, 11, 14, 15});
  check_values(max_pool2d(x.view({1, 4, 4}), {3, 3}, {3, 3}, {0, 0}, {1, 1}, true), {1, 2, 2}, kFloat32,
               {10, 11, 14, 15});  // ceil_mode keeps the partial last window
  check_values(max_pool2d(x, {3, 3}, {3, 3}), {1, 1, 1, 1}, kFloat32, {10});
  check_values(max_pool2d(-x.transpose(2, 3), {2, 2}), {1, 1, 2, 2}, kFloat32, {0, -8, -2, -10});
  check_values(max_pool2d(arange(8, kInt64).view({2, 1, 2, 2}), {2, 2}), {2, 1, 1, 1}, kInt64, {3, 7});
  Tensor with_nan = tensor(std::vector<float>{1, NAN, 3, 4}, {1, 2, 2});
  check_values(max_pool2d(with_nan, {2, 2}), {1, 1, 1}, kFloat32, {NAN});
  auto [values, indices] = max_pool2d_with_indices(x, {2, 2});
  check_values(values, {1, 1, 2, 2}, kFloat32, {5, 7, 13, 15});
  check_values(indices, {1, 1, 2, 2}, kInt64, {5, 7, 13, 15});
  check_meta_matches(max_pool2d(x.to(kMeta), {3, 3}, {2, 2}, {1, 1}), max_pool2d(x, {3, 3}, {2, 2}, {1, 1}));
  expect_error<ValueError>([&] { (void)max_pool2d(x, {2, 2}, {}, {2, 2}); },
                           "[max_pool2d] padding [2, 2] should be at most half of the effective kernel size");
  expect_error<ValueError>([&] { (void)max_pool2d(x, {5, 5}); }, "[max_pool2d] the output size [0, 0] is too small",
                           {"[1, 1, 4, 4]"});
  expect_error<ValueError>([] { (void)max_pool2d(zeros({4, 4}), {2, 2}); },
                           "[max_pool2d] expected a 3-d [C, H, W] or 4-d [N, C, H, W] input, got input of shape [4, 4]");
  expect_error<ValueError>([&] { (void)max_pool2d(x, {2}); }, "[max_pool2d] expected kernel_size to have 2 values");
}

TEST_CASE("max_pool2d: gradients go to each window's maximum") {
  Tensor x = grad_input({2, 3, 5, 6}, 58, /*transposed=*/true);
  auto fn = [](const tensor_list& in) { return tensor_list{max_pool2d(in[0], {3, 2}, {2, 2}, {1, 1})}; };
  check_gradcheck(fn, {x});
  // The product makes the pooled gradient depend on x: double backward goes through
  // max_pool2d_with_indices_backward's own derivative.
  check_gradgradcheck([](const tensor_list& in) { return tensor_list{max_pool2d(in[0], {2, 2}) * in[0].sum()}; }, {x});
  Tensor overlapping = tensor(std::vector<double>{1, 9, 2, 3}, {1, 1, 2, 2}, kFloat64).requires_grad_();
  max_pool2d(overlapping, {1, 2}, {1, 1}, {0, 1}).sum().backward();  // windows share the 9
  check_values(overlapping.grad(), {1, 1, 2, 2}, kFloat64, {1, 2, 1, 2});
}

TEST_CASE("max_pool2d: a stride past the input with ceil_mode is one window") {
  // See Note [Window arithmetic overflow]: span + stride - 1 would overflow int64 here.
  constexpr int64_t huge = std::numeric_limits<int64_t>::max();
  Tensor x = arange(25, kFloat32).reshape({1, 1, 5, 5});
  Tensor pooled = max_pool2d(x, {2, 2}, {huge, 1}, {0, 0}, {1, 1}, /*ceil_mode=*/true);
  CHECK(pooled.sizes() == IntArrayRef{1, 1, 1, 4});
  check_values(pooled, {1, 1, 1, 4}, kFloat32, {6, 7, 8, 9});
}

TEST_CASE("conv: max_pool2d takes int8 and int16; conv2d refuses them like other integers") {
  Tensor pooled = max_pool2d(tensor({{int16_t{-300}, int16_t{7}}, {int16_t{2}, int16_t{-1}}}).view({1, 1, 2, 2}), {2, 2});
  CHECK(pooled.dtype() == kInt16);
  CHECK(pooled.sum().item<int64_t>() == 7);
  CHECK(max_pool2d(full({1, 1, 2, 2}, -5, kInt8), {2, 2}).sum().item<int64_t>() == -5);
  CHECK_THROWS_AS((void)conv2d(zeros({1, 1, 3, 3}, kInt8), zeros({1, 1, 2, 2}, kInt8)), Error);
}

TEST_CASE("_conv2d_backward: only the gradients asked for, on CPU and on Meta alike") {
  static const auto op = find_op("strata::_conv2d_backward")
                             .typed<std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, IntArrayRef,
                                                               IntArrayRef, IntArrayRef, int64_t, bool, bool)>();
  CHECK(detail::has_derived_meta("strata::_conv2d_backward"));
  manual_seed(21);
  const Tensor x = randn({2, 4, 5, 5}), w = randn({6, 2, 3, 3}), g = randn({2, 6, 3, 3});
  for (bool input_grad : {false, true}) {
    for (bool weight_grad : {false, true}) {
      INFO("input_grad ", input_grad, " weight_grad ", weight_grad);
      auto [gi, gw] = op.call(g, x, w, {1, 1}, {0, 0}, {1, 1}, 2, input_grad, weight_grad);
      auto [mi, mw] = op.call(g.to(kMeta), x.to(kMeta), w.to(kMeta), {1, 1}, {0, 0}, {1, 1}, 2, input_grad, weight_grad);
      CHECK(gi.defined() == input_grad);
      CHECK(mi.defined() == input_grad);
      CHECK(gw.defined() == weight_grad);
      CHECK(mw.defined() == weight_grad);
      if (input_grad) check_meta_matches(mi, gi);
      if (weight_grad) check_meta_matches(mw, gw);
    }
  }
  expect_error<ValueError>([&] { (void)op.call(g.to(kMeta), x.to(kMeta), w.to(kMeta), {1, 1}, {1, 1}, {1, 1}, 2, true,
                                               true); },
                           "[_conv2d_backward] expected grad_output of shape [2, 6, 5, 5], got [2, 6, 3, 3]");
}

TEST_CASE("conv2d and max_pool2d: float16 outputs come back through the float compute") {
  manual_seed(22);
  const Tensor x = randn({1, 2, 6, 6}), w = randn({3, 2, 3, 3});
  const Tensor half = conv2d(x.to(kFloat16), w.to(kFloat16));
  CHECK(half.dtype() == kFloat16);
  CHECK(allclose(half.to(kFloat32), conv2d(x, w), 1e-2, 1e-2));
  auto [values, indices] = max_pool2d_with_indices(x.to(kFloat16), {2, 2});
  auto [expected_values, expected_indices] = max_pool2d_with_indices(x, {2, 2});
  CHECK(equal(indices, expected_indices));
  CHECK(equal(values, expected_values.to(kFloat16)));
}

TEST_CASE("max_pool2d_with_indices_backward: the CPU compute checks the index values") {
  static const auto op = find_op("strata::max_pool2d_with_indices_backward")
                             .typed<Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                                           IntArrayRef, bool, const Tensor&)>();
  const Tensor self = zeros({1, 4, 4}), grad = ones({1, 2, 2});
  const Tensor indices = tensor(std::vector<int64_t>{0, 2, 8, 16}, {1, 2, 2});  // 16 is past the 4x4 plane
  expect_error<IndexError>([&] { (void)op.call(grad, self, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, indices); },
                           "[max_pool2d_with_indices_backward] index 16 is out of range for an input plane of 4x4");
  const Tensor meta = op.call(grad.to(kMeta), self.to(kMeta), {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, indices.to(kMeta));
  check_meta_matches(meta, self);
  const Tensor fine = tensor(std::vector<int64_t>{0, 2, 8, 15}, {1, 2, 2});
  check_values(op.call(grad, self, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, fine), {1, 4, 4}, kFloat32,
               {1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1});
}
