// Tests for ops/nn.cpp: softmax, log_softmax, dropout, layer_norm, embedding.
#include "op_test_util.h"

#include <strata/ops/structured.h>

using namespace strata;
using strata::testing::check_gradcheck;
using strata::testing::check_gradgradcheck;
using strata::testing::check_meta_matches;
using strata::testing::check_values;
using strata::testing::expect_error;
using strata::testing::grad_input;
using strata::testing::values_of;

TEST_CASE("softmax and log_softmax: hand-worked values along any dim") {
  const std::vector<double> probabilities{0.09003057317038043, 0.24472847105479764, 0.6652409557748218};
  const std::vector<double> log_probabilities{-2.4076059644443806, -1.4076059644443804, -0.4076059644443804};
  Tensor row = tensor({1.0, 2.0, 3.0}, kFloat64);
  check_values(softmax(row, 0), {3}, kFloat64, probabilities, 1e-15);
  check_values(row.log_softmax(-1), {3}, kFloat64, log_probabilities, 1e-15);
  Tensor columns = row.view({3, 1}).expand({3, 2}).contiguous();  // softmax down the columns: inner > 1
  check_values(columns.softmax(0), {3, 2}, kFloat64,
               {probabilities[0], probabilities[0], probabilities[1], probabilities[1], probabilities[2],
                probabilities[2]},
               1e-15);
  check_values(log_softmax(columns.transpose(0, 1), 1), {2, 3}, kFloat64,
               {log_probabilities[0], log_probabilities[1], log_probabilities[2], log_probabilities[0],
                log_probabilities[1], log_probabilities[2]},
               1e-15);
  check_values(softmax(full({}, 5.0f), 0), {}, kFloat32, {1});
  check_values(softmax(tensor({1.0f, 2.0f, 3.0f}).to(kFloat16), 0), {3}, kFloat16, probabilities, 1e-3);
  check_values(softmax(tensor({1, 2, 3}), 0, kFloat64), {3}, kFloat64, probabilities, 1e-15);  // dtype converts
  CHECK(softmax(zeros({0, 3}), 1).sizes() == IntArrayRef{0, 3});
  check_meta_matches(softmax(columns.to(kMeta), 0), columns.softmax(0));
  check_meta_matches(log_softmax(row.to(kMeta), 0, kFloat32), log_softmax(row, 0, kFloat32));
}

TEST_CASE("softmax and log_softmax: large logits stay finite") {
  Tensor logits = tensor({10000.0f, 10000.0f, -10000.0f});
  check_values(softmax(logits, 0), {3}, kFloat32, {0.5, 0.5, 0});
  check_values(log_softmax(logits, 0), {3}, kFloat32, {-0.6931471805599453, -0.6931471805599453, -20000.693}, 1e-3);
  check_values(log_softmax(tensor({-1e300, 0.0}, kFloat64), 0), {2}, kFloat64, {-1e300, 0});
  Tensor big = tensor(std::vector<float>{1000, 0, 1000, 0}, {2, 2});
  check_values(softmax(big, 0), {2, 2}, kFloat32, {0.5, 0.5, 0.5, 0.5});
}

// A -inf logit (an attention mask) has probability exactly 0 and log-probability -inf, along
// the contiguous dim and along an outer one: Note [Eigen exp underflow].
TEST_CASE("softmax and log_softmax: masked (-inf) logits give exact zeros") {
  const double inf = std::numeric_limits<double>::infinity();
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    INFO(dtype);
    std::vector<double> logits(32, 0.5);
    for (size_t i = 0; i < logits.size(); i += 3) logits[i] = -inf;
    const Tensor row = from_blob(logits.data(), {32}, kFloat64).to(dtype);
    const Tensor column = row.reshape({32, 1}).expand({32, 4}).contiguous();
    for (const auto& [x, dim] : {std::pair{row, int64_t{0}}, std::pair{column, int64_t{0}}}) {
      const std::vector<double> p = values_of(softmax(x, dim)), logp = values_of(log_softmax(x, dim));
      const size_t width = static_cast<size_t>(x.numel()) / logits.size();
      for (size_t i = 0; i < p.size(); ++i) {
        const bool masked = (i / width) % 3 == 0;
        if (masked) {
          CHECK(p[i] == 0.0);
          CHECK(logp[i] == -inf);
        } else {
          CHECK(p[i] == doctest::Approx(1.0 / 21));
        }
      }
    }
  }
}

TEST_CASE("softmax and log_softmax: errors") {
  expect_error<TypeError>([] { (void)softmax(tensor({1, 2}), 0); },
                          "[softmax] expected a floating-point input or dtype, got Int64", {"[2]"});
  expect_error<TypeError>([] { (void)log_softmax(ones({2}), 0, kInt32); },
                          "[log_softmax] expected a floating-point input or dtype, got Int32");
  expect_error<IndexError>([] { (void)softmax(ones({2, 3}), 2); }, "[softmax] dimension 2 out of range");
}

TEST_CASE("softmax and log_softmax: gradients, first and second order") {
  Tensor x = grad_input({3, 4}, 31, /*transposed=*/true);
  for (int64_t dim : {0, 1}) {
    check_gradcheck([dim](const tensor_list& in) { return tensor_list{softmax(in[0], dim)}; }, {x});
    check_gradcheck([dim](const tensor_list& in) { return tensor_list{log_softmax(in[0], dim)}; }, {x});
    check_gradgradcheck([dim](const tensor_list& in) { return tensor_list{softmax(in[0], dim)}; }, {x});
    check_gradgradcheck([dim](const tensor_list& in) { return tensor_list{log_softmax(in[0], dim)}; }, {x});
  }
  Tensor y = grad_input({2, 3}, 32).detach().to(kFloat32).requires_grad_();  // dtype=float64 output
  softmax(y, 1, kFloat64).select(1, 0).sum().backward();
  CHECK(y.grad().dtype() == kFloat32);
}

TEST_CASE("dropout: keeps 1 - p of the elements, scaled; reproducible under manual_seed") {
  Tensor x = ones({1000});
  manual_seed(7);
  Tensor first = dropout(x, 0.25, true);
  manual_seed(7);
  Tensor second = dropout(x, 0.25, true);
  CHECK(equal(first, second));
  const std::vector<double> values = values_of(first);
  int64_t kept = 0;
  bool only_two_values = true;
  for (double v : values) {
    kept += v != 0;
    only_two_values = only_two_values && (v == 0 || std::abs(v - 1 / 0.75) < 1e-6);
  }
  CHECK(only_two_values);
  CHECK(kept > 700);
  CHECK(kept < 800);
  manual_seed(8);
  CHECK_FALSE(equal(dropout(x, 0.25, true), first));
  CHECK(dropout(x, 0.25, false).is_same(x));  // not training: the input itself
  CHECK(dropout(x, 0.0, true).is_same(x));
  check_values(dropout(tensor({1.0f, NAN}), 1.0, true), {2}, kFloat32, {0, 0});
  Tensor strided = arange(6, kFloat64).view({2, 3}).transpose(0, 1);
  manual_seed(1);
  Tensor out = dropout(strided, 0.5, true);
  const std::vector<double> in_values = values_of(strided), out_values = values_of(out);
  for (size_t i = 0; i < in_values.size(); ++i) CHECK((out_values[i] == 0 || out_values[i] == 2 * in_values[i]));
  check_meta_matches(dropout(x.to(kMeta), 0.5, true), first);
  expect_error<ValueError>([&] { (void)dropout(x, 1.5, true); },
                           "[dropout] dropout probability has to be between 0 and 1, but got 1.5");
  expect_error<TypeError>([] { (void)dropout(ones({2}, kInt64), 0.5, true); },
                          "[dropout] expected a floating-point input, got Int64");
}

TEST_CASE("dropout: the gradient is the same mask and scale") {
  Tensor x = grad_input({4, 5}, 33, /*transposed=*/true);
  manual_seed(3);
  Tensor y = dropout(x, 0.4, true);
  y.sum().backward();
  const std::vector<double> grad = values_of(x.grad()), out = values_of(y), in = values_of(x);
  for (size_t i = 0; i < grad.size(); ++i) CHECK(std::abs(grad[i] * in[i] - out[i]) < 1e-12);
  // Fixed seed per call: the function is deterministic, so gradcheck applies.
  check_gradcheck([](const tensor_list& t) {
    manual_seed(5);
    return tensor_list{dropout(t[0], 0.5, true)};
  }, {x});
}

TEST_CASE("layer_norm: hand-worked values, weight and bias, trailing dims") {
  // mean 2.5, biased variance 1.25: (x - 2.5) / sqrt(1.25).
  const double r = 1 / std::sqrt(1.25);
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, kFloat64);
  check_values(layer_norm(x, {4}, {}, {}, 0.0), {4}, kFloat64, {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r}, 1e-15);
  Tensor w = tensor({1.0, 2.0, 1.0, 2.0}, kFloat64), b = tensor({0.0, 0.0, 1.0, 1.0}, kFloat64);
  check_values(layer_norm(x, {4}, w, b, 0.0), {4}, kFloat64, {-1.5 * r, -1.0 * r, 0.5 * r + 1, 3.0 * r + 1}, 1e-15);
  Tensor batch = tensor(std::vector<float>{1, 2, 3, 4, 10, 10, 10, 10}, {2, 2, 2});
  check_values(layer_norm(batch, {2, 2}), {2, 2, 2}, kFloat32,
               {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r, 0, 0, 0, 0}, 1e-5);
  check_values(layer_norm(batch.transpose(0, 2).contiguous().transpose(0, 2), {2}), {2, 2, 2}, kFloat32,
               {-1, 1, -1, 1, 0, 0, 0, 0}, 1e-4);
  check_values(layer_norm(tensor({1e6f + 1, 1e6f + 3}), {2}), {2}, kFloat32, {-1, 1}, 1e-4);  // large offset
  check_values(layer_norm(x.to(kBFloat16), {4}), {4}, kBFloat16, {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r}, 1e-2);
  check_meta_matches(layer_norm(batch.to(kMeta), {2, 2}), layer_norm(batch, {2, 2}));
  expect_error<ValueError>([&] { (void)layer_norm(batch, {3}); },
                           "[layer_norm] input of shape [2, 2, 2] does not end with normalized_shape [3]");
  expect_error<ValueError>([&] { (void)layer_norm(x, {4}, ones({3}, kFloat64)); },
                           "[layer_norm] expected weight of shape [4] (normalized_shape), got [3]");
  expect_error<ValueError>([&] { (void)layer_norm(x, {}); }, "[layer_norm] normalized_shape must have at least one");
}

TEST_CASE("layer_norm: gradients for input, weight and bias, first and second order") {
  Tensor x = grad_input({3, 4}, 34, /*transposed=*/true);
  Tensor w = grad_input({4}, 35), b = grad_input({4}, 36);
  auto affine = [](const tensor_list& in) { return tensor_list{layer_norm(in[0], {4}, in[1], in[2])}; };
  check_gradcheck(affine, {x, w, b});
  check_gradgradcheck(affine, {x, w, b});
  Tensor y = grad_input({2, 3, 2}, 37);
  check_gradcheck([](const tensor_list& in) { return tensor_list{layer_norm(in[0], {3, 2})}; }, {y});
  check_gradgradcheck([](const tensor_list& in) { return tensor_list{layer_norm(in[0], {2})}; }, {y});
}

// native_layer_norm_backward's CPU kernel fuses what its composite computes (used under
// create_graph, and by other backends); both must agree, with or without weight and bias.
TEST_CASE("layer_norm: the fused CPU backward equals the composite one") {
  manual_seed(5);
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{7, 300}, {3, 5}, {1, 1024}, {33, 2}}) {
    CAPTURE(rows);
    CAPTURE(n);
    const Tensor x = randn({rows, n}).requires_grad_(), w = randn({n}).requires_grad_(), b = randn({n}).requires_grad_();
    const Tensor seed = randn({rows, n});
    const tensor_list fused = autograd::grad({layer_norm(x, {n}, w, b)}, {x, w, b}, {seed});
    const tensor_list composite = autograd::grad({layer_norm(x, {n}, w, b)}, {x, w, b}, {seed}, false, true);
    for (size_t i = 0; i < 3; ++i) CHECK(allclose(fused[i], composite[i].detach(), 1e-4, 1e-5));
    const tensor_list plain = autograd::grad({layer_norm(x, {n})}, {x}, {seed});
    const tensor_list plain_composite = autograd::grad({layer_norm(x, {n})}, {x}, {seed}, false, true);
    CHECK(allclose(plain[0], plain_composite[0].detach(), 1e-4, 1e-5));
  }
  // float16 computes in float32 and returns float16 gradients.
  const Tensor half = randn({4, 16}).to(kFloat16).requires_grad_();
  const Tensor weight = ones({16}, kFloat16).requires_grad_();
  layer_norm(half, {16}, weight).sum().backward();
  CHECK(half.grad().dtype() == kFloat16);
  CHECK(weight.grad().dtype() == kFloat16);
  CHECK(allclose(half.grad().to(kFloat32), zeros({4, 16}), 0, 1e-2));  // d(sum of a normalised row)/dx = 0
  expect_error<ValueError>(
      [&] {
        (void)call("strata::native_layer_norm_backward", ones({2, 3}), ones({2, 4}), std::vector<int64_t>{4},
                   ones({2, 1}), ones({2, 1}), IValue(), IValue(), std::vector<bool>{true, false, false});
      },
      "[native_layer_norm_backward] grad_out of shape [2, 3] does not match input of shape [2, 4]");
}

TEST_CASE("embedding: rows by index, gradients scatter-add into the rows") {
  Tensor weight = arange(6, kFloat32).view({3, 2});
  Tensor indices = tensor(std::vector<int64_t>{2, 0, 2, 1}, {2, 2});
  check_values(embedding(weight, indices), {2, 2, 2}, kFloat32, {4, 5, 0, 1, 4, 5, 2, 3});
  check_values(embedding(weight, full({}, 1).to(kInt32)), {2}, kFloat32, {2, 3});
  check_values(embedding(weight.transpose(0, 1).contiguous().transpose(0, 1), tensor({1})), {1, 2}, kFloat32, {2, 3});
  CHECK(embedding(weight, zeros({0}, kInt64)).sizes() == IntArrayRef{0, 2});
  check_meta_matches(embedding(weight.to(kMeta), indices.to(kMeta)), embedding(weight, indices));
  Tensor table = ones({3, 2}, kFloat64).requires_grad_();
  embedding(table, indices).sum().backward();
  check_values(table.grad(), {3, 2}, kFloat64, {1, 1, 1, 1, 2, 2});
  Tensor padded = ones({3, 2}, kFloat64).requires_grad_();
  embedding(padded, indices, /*padding_idx=*/2).sum().backward();
  check_values(padded.grad(), {3, 2}, kFloat64, {1, 1, 1, 1, 0, 0});
  Tensor scaled = ones({3, 2}, kFloat64).requires_grad_();
  embedding(scaled, indices, -1, /*scale_grad_by_freq=*/true).sum().backward();
  check_values(scaled.grad(), {3, 2}, kFloat64, {1, 1, 1, 1, 1, 1});
  check_gradcheck([indices](const tensor_list& in) { return tensor_list{embedding(in[0], indices)}; },
                  {grad_input({3, 2}, 38, /*transposed=*/true)});
  expect_error<IndexError>([&] { (void)embedding(weight, tensor({3})); },
                           "[embedding] index 3 is out of range for a weight of shape [3, 2]");
  expect_error<ValueError>([&] { (void)embedding(ones({3}), tensor({0})); },
                           "[embedding] expected a 2-d weight [num_embeddings, embedding_dim], got weight of shape [3]");
  expect_error<TypeError>([&] { (void)embedding(weight, tensor({0.0f})); },
                          "[embedding] expected int64 or int32 indices, got Float32");
  expect_error<NotImplementedError>([&] { (void)embedding(weight, tensor({0}), -1, false, true); },
                                    "[embedding] sparse gradients are not supported");
}

TEST_CASE("nn: int8 and int16 indices for embedding are refused by name; softmax takes a dtype") {
  Tensor weight = arange(6, kFloat32).view({3, 2});
  strata::testing::expect_error<TypeError>([&] { (void)embedding(weight, tensor({int8_t{1}})); }, "[embedding]",
                                          {"Int8"});
  strata::testing::check_values(softmax(tensor({int16_t{0}, int16_t{0}}), 0, kFloat32), {2}, kFloat32, {0.5, 0.5});
}

TEST_CASE("embedding: a CPU kernel whose compute checks the indices; Meta derives the shape and reads no values") {
  CHECK(find_op("strata::embedding").has_kernel_for(DispatchKey::CPU));
  CHECK(detail::has_derived_meta("strata::embedding"));
  const Tensor weight = arange(6, kFloat32).view({3, 2});
  // A Meta tensor has no values, so an index that is out of range on the CPU is not an error there.
  check_meta_matches(embedding(weight.to(kMeta), tensor({7, 0}).to(kMeta)), embedding(weight, tensor({2, 0})));
  expect_error<IndexError>([&] { (void)embedding(weight, tensor({0, 7})); },
                           "[embedding] index 7 is out of range for a weight of shape [3, 2]");
  expect_error<IndexError>([&] { (void)embedding(weight, tensor({-1}).to(kInt32)); },
                           "[embedding] index -1 is out of range for a weight of shape [3, 2]");
  expect_error<Error>([&] { (void)embedding(weight, tensor({0}).to(kMeta)); },
                      "[embedding] expected all tensors on the same device");
}

TEST_CASE("embedding: rows of any dtype, dense or strided, many indices (the parallel path)") {
  manual_seed(12);
  const Tensor indices = randint(0, 10, {40, 25});
  for (ScalarType dtype : {kFloat64, kFloat16, kInt64}) {
    INFO("dtype ", dtype);
    const Tensor table = randn({10, 64}).to(dtype);
    CHECK(equal(embedding(table, indices), index_select(table, 0, indices.reshape({-1})).view({40, 25, 64})));
    const Tensor strided = table.t().contiguous().t();  // column stride 10: the element-by-element copy
    CHECK(equal(embedding(strided, indices.to(kInt32)), embedding(table, indices)));
  }
}

TEST_CASE("nn: the Meta kernels of softmax, dropout and layer_norm come from their shape functions") {
  for (const char* name : {"strata::softmax.int", "strata::log_softmax.int", "strata::_softmax_backward_data",
                           "strata::_log_softmax_backward_data", "strata::native_dropout",
                           "strata::native_layer_norm"}) {
    INFO(name);
    CHECK(detail::has_derived_meta(name));
  }
  const Tensor x = empty({2, 3}, kMeta);
  expect_error<TypeError>([&] { (void)softmax(x, 0, kInt64); }, "[softmax] expected a floating-point input or dtype");
  expect_error<Error>([&] { (void)log_softmax(x, 2); }, "[log_softmax]");
  static const auto native_layer_norm =
      find_op("strata::native_layer_norm")
          .typed<std::tuple<Tensor, Tensor, Tensor>(const Tensor&, IntArrayRef, const std::optional<Tensor>&,
                                                    const std::optional<Tensor>&, double)>();
  auto [out, mean, rstd] = native_layer_norm.call(x, {3}, std::nullopt, std::nullopt, 1e-5);
  CHECK(out.sizes() == IntArrayRef{2, 3});
  CHECK(mean.sizes() == IntArrayRef{2, 1});
  CHECK(rstd.is_meta());
}
