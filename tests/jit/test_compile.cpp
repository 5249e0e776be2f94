// jit::compile: a trace per input signature, fused elementwise chains, eager-equal results and
// gradients.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include <strata/jit/fusion.h>



#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;

namespace {

tensor_list expression(const tensor_list& in) { return {in[0] * in[1] + in[2] * in[3] - in[4]}; }

tensor_list tanh_chain(const tensor_list& in) {
  Tensor y = in[0];
  for (int i = 0; i < 100; ++i) y = tanh(y * 0.5 + 0.1);
  return {y};
}

tensor_list random_inputs(int count, IntArrayRef sizes, ScalarType dtype = kFloat32) {
  tensor_list inputs;
  for (int i = 0; i < count; ++i) inputs.push_back(randn(sizes, TensorOptions().dtype(dtype)) * 3.0);
  return inputs;
}

}  // namespace

TEST_CASE("jit::compile: no grad, an elementwise chain runs fused and equals eager bit for bit") {
  NoGradGuard no_grad;
  auto fast = jit::compile(expression);
  for (int64_t n : {1, 7, 1000, 70001}) {
    tensor_list inputs = random_inputs(5, {n});
    CHECK(equal(fast(inputs)[0], expression(inputs)[0]));
    CHECK(fast.fused_chains(inputs) == 1);
  }
  CHECK(fast.cache_size() == 4);  // one trace per signature (here, per size)
  const std::string text = fast.graph_for(random_inputs(5, {7})).str();
  INFO(text);
  CHECK(text.find("prim::FusedChain[mul.Tensor,mul.Tensor,add.Tensor,sub.Tensor]") != std::string::npos);
  CHECK(text.find("strata::mul") == std::string::npos);
}

TEST_CASE("jit::compile: large chains run through a generated kernel, bit for bit") {
  // Note [Generated kernels]: by default, outputs of 1 MiB and more.
  NoGradGuard no_grad;
  const strata::testing::TemporaryKernelCache cache;
  const jit::detail::CodegenModeGuard codegen(jit::detail::CodegenMode::large);
  auto fast = jit::compile(expression);
  for (int64_t n : {int64_t{1000}, (int64_t{1} << 20) + 3}) {
    tensor_list inputs = random_inputs(5, {n});
    CHECK(equal(fast(inputs)[0], expression(inputs)[0]));
  }
  // Only the large run compiled: one kernel in the folder.
  CHECK(cache.files().size() == 2);  // its .cpp and .so
}

TEST_CASE("jit::compile: the tanh chain fuses into one pass, float32 and float64") {
  NoGradGuard no_grad;
  auto fast = jit::compile(tanh_chain);
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    tensor_list inputs = random_inputs(1, {8}, dtype);
    CHECK(equal(fast(inputs)[0], tanh_chain(inputs)[0]));
    CHECK(fast.fused_chains(inputs) == 1);
  }
  CHECK(fast.cache_size() == 2);  // another dtype is a new trace, not an error
}

TEST_CASE("jit::compile: chains around other ops, captured tensors and other dtypes stay exact") {
  NoGradGuard no_grad;
  Tensor w = randn({6, 6}), bias = randn({6});
  auto fn = [&](const tensor_list& in) -> tensor_list {
    Tensor h = (in[0] * 2.0 + bias).relu();
    Tensor m = matmul(h, w);
    return {(m - 1.0).sigmoid() * m, h.sum()};
  };
  tensor_list inputs{randn({4, 6})};
  auto fast = jit::compile(fn);
  tensor_list eager = fn(inputs), compiled = fast(inputs);
  CHECK(equal(compiled[0], eager[0]));
  CHECK(equal(compiled[1], eager[1]));
  CHECK(fast.fused_chains(inputs) == 1);  // + bias broadcasts: only (m - 1).sigmoid() * m fuses
  auto integral = jit::compile([](const tensor_list& in) -> tensor_list { return {in[0] * 3 + 1}; });
  Tensor ints = arange(10);
  CHECK(equal(integral({ints})[0], ints * 3 + 1));
  CHECK(integral.fused_chains({ints}) == 0);  // only float32 and float64 chains fuse
}

TEST_CASE("jit::compile: under grad, gradients equal eager's and nothing is fused") {
  tensor_list eager_inputs = random_inputs(1, {8});
  eager_inputs[0].requires_grad_();
  Tensor compiled_input = eager_inputs[0].detach().clone().requires_grad_();
  auto fast = jit::compile(tanh_chain);
  tanh_chain(eager_inputs)[0].sum().backward();
  Tensor y = fast({compiled_input})[0];
  y.sum().backward();
  CHECK(equal(y, tanh_chain(eager_inputs)[0]));
  CHECK(equal(compiled_input.grad(), eager_inputs[0].grad()));
  CHECK(fast.fused_chains({compiled_input}) == 0);
  {
    NoGradGuard no_grad;  // grad mode is part of the signature: a second plan, fused
    CHECK(fast.fused_chains({compiled_input}) == 1);
  }
  CHECK(fast.cache_size() == 2);
}

TEST_CASE("jit::compile: errors") {
  expect_error<ValueError>([] { jit::compile(nullptr); }, "[jit::compile]", {"empty"});
  auto fast = jit::compile(expression);
  expect_error<ValueError>([&] { fast({Tensor(), Tensor(), Tensor(), Tensor(), Tensor()}); }, "[jit::compile]",
                           {"undefined"});
  NoGradGuard no_grad;
  expect_error<ValueError>([&] { fast.graph_for(random_inputs(5, {3})).save("/tmp/strata_never_written.graph"); },
                           "[jit::Graph::save]", {"fused chains", "jit::trace"});
}
