#pragma once
// The op table's entries for nn functions, convolution and pooling, losses and the fused
// optimizer steps (see op_table.h). Included once, by tests/ops/test_op_table.cpp.
#include <strata/ops/optim.h>

#include "op_table_samples.h"

namespace strata::optable {
namespace entries {

// ---------------------------------------------------------------------------------------
// nn functions (ops/nn.cpp).

inline std::vector<OpEntry> nn_entries() {
  std::vector<OpEntry> t;
  for (const bool is_log : {false, true}) {
    t.push_back(entry(is_log ? "strata::log_softmax.int" : "strata::softmax.int", kFloating, {0}, [is_log](ScalarType dtype) {
      const auto op = [is_log](const Tensor& x, int64_t dim, std::optional<ScalarType> to) {
        return is_log ? log_softmax(x, dim, to) : softmax(x, dim, to);
      };
      return concat(dim_samples(dtype, [op](const Tensor& x, int64_t dim, bool) { return tensor_list{op(x, dim, std::nullopt)}; },
                                true),
                    unary_samples(dtype, u([op](const Tensor& x) { return op(x, 1, kFloat64); }), {}, {{{3, 4}}},
                                  " to float64"));
    }));
  }
  OpEntry dropout_entry = entry("strata::dropout", kFloating, {0}, [](ScalarType dtype) {
    std::vector<Sample> samples = unary_samples(dtype, u([](const Tensor& x) { return dropout(x, 0.25, true); }), kPositive,
                                                {{{}}, {{0, 3}}, {{20, 30}}, {{20, 30}, Layout::Transposed}}, " p=0.25");
    return concat(std::move(samples), unary_samples(dtype, [](const Tensor& x) {
      return tensor_list{dropout(x, 0.0, true), dropout(x, 0.5, false)};
    }, kPositive, {{{3, 4}}}, " p=0 and eval"));
  });
  dropout_entry.values = Values::Random;
  dropout_entry.check_random = [](const tensor_list& in, const tensor_list& out) {
    // Each element is dropped (0) or kept and scaled by 1 / (1 - p); p = 0 and eval keep all.
    const bool scaled = out.size() == 1;
    const Tensor x = in[0].to(kFloat64), y = out[0].to(kFloat64);
    const Tensor kept = ne(y, 0);
    const double tolerance = in[0].dtype() == kFloat64 ? 1e-12 : 1e-2;
    CHECK(allclose(where(kept, y, zeros_like(y)), where(kept, x * (scaled ? 1 / 0.75 : 1.0), zeros_like(y)), tolerance, tolerance));
    if (!scaled) {
      CHECK(logical_not(kept).sum().item<int64_t>() == 0);
      CHECK(allclose(out[1].to(kFloat64), x, 0, 0));
    } else if (y.numel() >= 100) {
      CHECK(std::abs(kept.to(kFloat64).mean().item<double>() - 0.75) < 0.1);
    }
  };
  t.push_back(dropout_entry);
  OpEntry layer_norm_entry = entry("strata::layer_norm", kFloating, {0, 1, 2}, [](ScalarType dtype) {
    std::vector<Sample> samples;
    const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
        {{{3, 4}}, {4}}, {{{2, 3, 4}, Layout::Transposed}, {3, 4}}, {{{4}}, {4}}, {{{0, 4}}, {4}}};
    for (const auto& [shape, normalized] : cases) {
      samples.push_back(sample(describe(shape) + " no affine", {make_arg(shape.sizes, dtype, shape.layout)},
                               [normalized](const tensor_list& in) { return tensor_list{layer_norm(in[0], normalized)}; }));
      samples.push_back(sample(describe(shape) + " affine",
                               {make_arg(shape.sizes, dtype, shape.layout), make_arg(normalized, dtype),
                                make_arg(normalized, dtype)},
                               [normalized](const tensor_list& in) {
                                 return tensor_list{layer_norm(in[0], normalized, in[1], in[2], 1e-3)};
                               }));
    }
    return samples;
  });
  layer_norm_entry.tolerance_scale = 4;
  t.push_back(layer_norm_entry);
  t.push_back(entry("strata::embedding", kAllTypes, {0}, [](ScalarType dtype) {
    std::vector<Sample> samples{
        sample("[6] indices", {make_arg({10, 3}, dtype), make_index({6}, 10)},
               [](const tensor_list& in) { return tensor_list{embedding(in[0], in[1])}; }),
        sample("[2, 3] indices, padding_idx 2", {make_arg({4, 3}, dtype), make_index({2, 3}, 4)},
               [](const tensor_list& in) { return tensor_list{embedding(in[0], in[1], 2)}; }),
        sample("[8] indices, scale_grad_by_freq", {make_arg({4, 3}, dtype), make_index({8}, 4)},
               [](const tensor_list& in) { return tensor_list{embedding(in[0], in[1], -1, true)}; }),
        sample("0-d index, transposed weight", {make_arg({5, 3}, dtype, Layout::Transposed), make_index({}, 3)},
               [](const tensor_list& in) { return tensor_list{embedding(in[0], in[1])}; }),
        sample("[0] indices", {make_arg({5, 3}, dtype), make_index({0}, 5)},
               [](const tensor_list& in) { return tensor_list{embedding(in[0], in[1])}; }),
        sample("[3, 2] int32 indices", {make_arg({5, 3}, dtype), make_index({3, 2}, 5).as(kInt32)},
               [](const tensor_list& in) { return tensor_list{embedding(in[0], in[1])}; })};
    samples[1].true_gradient = samples[2].true_gradient = false;
    return samples;
  }));
  return t;
}

// ---------------------------------------------------------------------------------------
// Convolution and pooling (ops/conv.cpp).

inline std::vector<OpEntry> conv_entries() {
  std::vector<OpEntry> t;
  OpEntry conv = entry("strata::conv2d", kFloating, {0, 1, 2}, [](ScalarType dtype) {
    return std::vector<Sample>{
        sample("[1, 2, 5, 5] by [3, 2, 3, 3] with bias",
               {make_arg({1, 2, 5, 5}, dtype), make_arg({3, 2, 3, 3}, dtype), make_arg({3}, dtype)},
               [](const tensor_list& in) { return tensor_list{conv2d(in[0], in[1], in[2])}; }),
        sample("[2, 2, 6, 5] transposed, stride 2, padding 1",
               {make_arg({2, 2, 6, 5}, dtype, Layout::Transposed), make_arg({3, 2, 2, 3}, dtype)},
               [](const tensor_list& in) { return tensor_list{conv2d(in[0], in[1], std::nullopt, {2, 2}, {1, 1})}; }),
        sample("[1, 4, 7, 7] dilation 2, groups 2",
               {make_arg({1, 4, 7, 7}, dtype), make_arg({4, 2, 2, 2}, dtype, Layout::Sliced), make_arg({4}, dtype)},
               [](const tensor_list& in) { return tensor_list{conv2d(in[0], in[1], in[2], {1, 1}, {0, 1}, {2, 2}, 2)}; }),
        sample("unbatched [2, 4, 4]", {make_arg({2, 4, 4}, dtype), make_arg({1, 2, 3, 3}, dtype)},
               [](const tensor_list& in) { return tensor_list{conv2d(in[0], in[1])}; }),
        sample("empty batch [0, 2, 4, 4]", {make_arg({0, 2, 4, 4}, dtype), make_arg({1, 2, 3, 3}, dtype)},
               [](const tensor_list& in) { return tensor_list{conv2d(in[0], in[1])}; })};
  });
  conv.tolerance_scale = 8;
  t.push_back(conv);
  const auto pool_samples = [](ScalarType dtype, bool with_indices) {
    const auto op = [with_indices](const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef d, bool ceil) {
      if (!with_indices) return tensor_list{max_pool2d(x, k, s, p, d, ceil)};
      auto [values, indices] = max_pool2d_with_indices(x, k, s, p, d, ceil);
      return tensor_list{values, indices};
    };
    return std::vector<Sample>{
        sample("[1, 2, 6, 6] kernel 2", {make_arg({1, 2, 6, 6}, dtype, Layout::Contiguous, kDistinct)},
               [op](const tensor_list& in) { return op(in[0], {2, 2}, {}, {0, 0}, {1, 1}, false); }),
        sample("[2, 1, 5, 6] transposed, kernel 3 stride 2 padding 1",
               {make_arg({2, 1, 5, 6}, dtype, Layout::Transposed, kDistinct)},
               [op](const tensor_list& in) { return op(in[0], {3, 3}, {2, 2}, {1, 1}, {1, 1}, false); }),
        sample("[1, 1, 7, 7] dilation 2 ceil_mode", {make_arg({1, 1, 7, 7}, dtype, Layout::Contiguous, kDistinct)},
               [op](const tensor_list& in) { return op(in[0], {2, 2}, {2, 2}, {0, 0}, {2, 2}, true); }),
        sample("unbatched [2, 4, 4]", {make_arg({2, 4, 4}, dtype, Layout::Contiguous, kDistinct)},
               [op](const tensor_list& in) { return op(in[0], {2, 2}, {1, 2}, {0, 0}, {1, 1}, false); }),
    };
  };
  t.push_back(entry("strata::max_pool2d", kAllButBool, {0}, [pool_samples](ScalarType dtype) { return pool_samples(dtype, false); }));
  OpEntry with_indices = entry("strata::max_pool2d_with_indices", kAllButBool, {0},
                               [pool_samples](ScalarType dtype) { return pool_samples(dtype, true); });
  with_indices.grad_outputs = {0};
  t.push_back(with_indices);
  return t;
}

// ---------------------------------------------------------------------------------------
// Losses (ops/loss.cpp).

inline std::vector<OpEntry> loss_entries() {
  std::vector<OpEntry> t;
  const std::vector<Reduction> reductions = {Reduction::Mean, Reduction::Sum, Reduction::None};
  const auto reduction_name = [](Reduction r) {
    return r == Reduction::Mean ? std::string(" mean") : r == Reduction::Sum ? std::string(" sum") : std::string(" none");
  };
  // Class-index cases: input shape, target shape, classes.
  struct ClassCase {
    Shape input;
    std::vector<int64_t> target;
  };
  const std::vector<ClassCase> class_cases = {{{{4, 5}}, {4}}, {{{5}}, {}}, {{{2, 3, 4}, Layout::Transposed}, {2, 4}}, {{{0, 5}}, {0}}};
  const auto class_samples = [=](ScalarType dtype, bool cross_entropy) {
    std::vector<Sample> samples;
    for (const ClassCase& c : class_cases) {
      const int64_t classes = c.input.sizes.size() == 1 ? c.input.sizes[0] : c.input.sizes[1];
      for (const Reduction r : reductions) {
        const auto op = [cross_entropy, r](const Tensor& x, const Tensor& target, const std::optional<Tensor>& w,
                                           int64_t ignore, double smoothing) {
          return cross_entropy ? strata::cross_entropy(x, target, w, r, ignore, smoothing) : nll_loss(x, target, w, r, ignore);
        };
        samples.push_back(sample(describe(c.input) + reduction_name(r),
                                 {make_arg(c.input.sizes, dtype, c.input.layout), make_index(c.target, classes)},
                                 [op](const tensor_list& in) { return tensor_list{op(in[0], in[1], std::nullopt, -100, 0.0)}; }));
        samples.push_back(sample(describe(c.input) + reduction_name(r) + " weighted, ignore_index 1",
                                 {make_arg(c.input.sizes, dtype, c.input.layout), make_index(c.target, classes),
                                  make_arg({classes}, dtype, Layout::Contiguous, kPositive)},
                                 [op](const tensor_list& in) { return tensor_list{op(in[0], in[1], in[2], 1, 0.0)}; }));
        if (cross_entropy) {
          samples.push_back(sample(describe(c.input) + reduction_name(r) + " label_smoothing 0.2",
                                   {make_arg(c.input.sizes, dtype, c.input.layout), make_index(c.target, classes)},
                                   [op](const tensor_list& in) { return tensor_list{op(in[0], in[1], std::nullopt, 1, 0.2)}; }));
          samples.push_back(sample(describe(c.input) + reduction_name(r) + " probabilities",
                                   {make_arg(c.input.sizes, dtype, c.input.layout),
                                    make_arg(c.input.sizes, dtype, Layout::Contiguous, {0, 1})},
                                   [op](const tensor_list& in) { return tensor_list{op(in[0], in[1], std::nullopt, -100, 0.1)}; }));
        }
      }
    }
    return samples;
  };
  t.push_back(entry("strata::nll_loss", kFloating, {0}, [class_samples](ScalarType dtype) { return class_samples(dtype, false); }));
  OpEntry ce = entry("strata::cross_entropy_loss", kFloating, {0, 1},
                     [class_samples](ScalarType dtype) { return class_samples(dtype, true); });
  ce.note = "called through cross_entropy()";
  ce.tolerance_scale = 4;
  t.push_back(ce);
  t.push_back(entry("strata::mse_loss", kFloating, {0, 1}, [=](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const Reduction r : reductions)
      samples = concat(std::move(samples), binary_samples(dtype, b([r](const Tensor& x, const Tensor& y) {
        return mse_loss(x, y, r);
      }), {}, {}, {{{{3, 4}}, {{3, 4}}}, {{{3, 4}, Layout::Transposed}, {{4}}}, {{{}}, {{}}}, {{{0, 4}}, {{0, 4}}}}));
    return samples;
  }));
  OpEntry bce = entry("strata::binary_cross_entropy_with_logits", kFloating, {0, 1, 2, 3}, [=](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const Reduction r : reductions) {
      samples = concat(std::move(samples), binary_samples(dtype, b([r](const Tensor& x, const Tensor& y) {
        return binary_cross_entropy_with_logits(x, y, std::nullopt, std::nullopt, r);
      }), {}, {0, 1}, {{{{3, 4}}, {{3, 4}}}, {{{3, 4}, Layout::Transposed}, {{3, 4}, Layout::Sliced}}, {{{}}, {{}}}, {{{0, 4}}, {{0, 4}}}}));
      samples.push_back(sample(std::string("[3, 4] weight [4] pos_weight [4]") + reduction_name(r),
                               {make_arg({3, 4}, dtype), make_arg({3, 4}, dtype, Layout::Contiguous, {0, 1}),
                                make_arg({4}, dtype, Layout::Contiguous, kPositive),
                                make_arg({4}, dtype, Layout::Contiguous, kPositive)},
                               [r](const tensor_list& in) {
                                 return tensor_list{binary_cross_entropy_with_logits(in[0], in[1], in[2], in[3], r)};
                               }));
    }
    return samples;
  });
  t.push_back(bce);
  return t;
}

// ---------------------------------------------------------------------------------------
// Fused optimizer steps (ops/optim.cpp): applied to clones; the updated tensors are the outputs.

inline std::vector<OpEntry> optim_entries() {
  std::vector<OpEntry> t;
  t.push_back(entry("strata::_fused_sgd_", kFloating, {}, [](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const Shape& shape : std::vector<Shape>{{{3, 4}}, {{}}, {{0}}})
      for (const bool nesterov : {false, true})
        samples.push_back(sample(describe(shape) + (nesterov ? " nesterov" : " momentum"),
                                 {make_arg(shape.sizes, dtype), make_arg(shape.sizes, dtype), make_arg(shape.sizes, dtype)},
                                 [nesterov](const tensor_list& in) {
                                   // Optimizer steps run on tensors without history (under NoGradGuard
                                   // in nn::optim): the clones are detached.
                                   Tensor param = in[0].detach().clone(), buffer = in[2].detach().clone();
                                   _fused_sgd_(param, in[1], buffer, 0.1, 0.9, 0.0, 0.01, nesterov, false, false);
                                   Tensor plain = in[0].detach().clone();
                                   _fused_sgd_(plain, in[1], std::nullopt, 0.1, 0.0, 0.0, 0.0, false, true, true);
                                   return tensor_list{param, buffer, plain};
                                 }));
    return samples;
  }));
  OpEntry adam = entry("strata::_fused_adam_", kFloating, {}, [](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const Shape& shape : std::vector<Shape>{{{3, 4}}, {{}}, {{0}}})
      for (const bool amsgrad : {false, true})
        samples.push_back(sample(describe(shape) + (amsgrad ? " amsgrad adamw" : " adam"),
                                 {make_arg(shape.sizes, dtype), make_arg(shape.sizes, dtype), make_arg(shape.sizes, dtype),
                                  make_arg(shape.sizes, dtype, Layout::Contiguous, kPositive),
                                  make_arg(shape.sizes, dtype, Layout::Contiguous, kPositive)},
                                 [amsgrad](const tensor_list& in) {
                                   Tensor param = in[0].detach().clone(), avg = in[2].detach().clone(),
                                          avg_sq = in[3].detach().clone(), max_sq = in[4].detach().clone();
                                   _fused_adam_(param, in[1], avg, avg_sq, amsgrad ? std::optional<Tensor>(max_sq) : std::nullopt,
                                                3, 0.01, 0.9, 0.999, 0.01, 1e-8, amsgrad, false, amsgrad);
                                   return tensor_list{param, avg, avg_sq, max_sq};
                                 }));
    return samples;
  });
  adam.tolerance_scale = 4;
  t.push_back(adam);
  // The list overloads over two parameters of different shapes (Note [Multi-tensor optimizer
  // steps]); inputs: param, grad, state... of the first, then of the second.
  t.push_back(entry("strata::_fused_sgd_.list", kFloating, {}, [](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const bool nesterov : {false, true})
      samples.push_back(sample(std::string("[3, 4] and [5]") + (nesterov ? " nesterov" : " momentum"),
                               {make_arg({3, 4}, dtype), make_arg({3, 4}, dtype), make_arg({3, 4}, dtype),
                                make_arg({5}, dtype), make_arg({5}, dtype), make_arg({5}, dtype)},
                               [nesterov](const tensor_list& in) {
                                 const tensor_list params = {in[0].detach().clone(), in[3].detach().clone()};
                                 const tensor_list buffers = {in[2].detach().clone(), in[5].detach().clone()};
                                 _fused_sgd_(params, tensor_list{in[1], in[4]}, buffers, 0.1, 0.9, 0.0, 0.01, nesterov,
                                             false, false);
                                 return tensor_list{params[0], params[1], buffers[0], buffers[1]};
                               }));
    return samples;
  }));
  OpEntry adam_list = entry("strata::_fused_adam_.list", kFloating, {}, [](ScalarType dtype) {
    std::vector<Sample> samples;
    for (const bool amsgrad : {false, true}) {
      std::vector<Arg> args;
      for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{3, 4}, std::vector<int64_t>{5}})
        for (int k = 0; k < 5; ++k)
          args.push_back(k < 3 ? make_arg(sizes, dtype) : make_arg(sizes, dtype, Layout::Contiguous, kPositive));
      samples.push_back(sample(std::string("[3, 4] and [5]") + (amsgrad ? " amsgrad adamw" : " adam"), args,
                               [amsgrad](const tensor_list& in) {
                                 tensor_list state[4];  // params, exp_avgs, exp_avg_sqs, max_exp_avg_sqs
                                 for (size_t entry = 0; entry < 2; ++entry)
                                   for (size_t k = 0; k < 4; ++k)
                                     state[k].push_back(in[entry * 5 + (k == 0 ? 0 : k + 1)].detach().clone());
                                 _fused_adam_(state[0], tensor_list{in[1], in[6]}, state[1], state[2],
                                              amsgrad ? state[3] : tensor_list{}, std::vector<int64_t>{3, 1}, 0.01,
                                              0.9, 0.999, 0.01, 1e-8, amsgrad, false, amsgrad);
                                 tensor_list out;
                                 for (const tensor_list& list : state) out.insert(out.end(), list.begin(), list.end());
                                 return out;
                               }));
    }
    return samples;
  });
  adam_list.tolerance_scale = 4;
  t.push_back(adam_list);
  return t;
}

}  // namespace entries
}  // namespace strata::optable
