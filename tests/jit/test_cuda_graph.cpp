// jit::CudaGraph: capture and replay on a GPU (skipped without one), errors everywhere.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;

namespace {

const bool gpu_missing = !cuda::is_available();

tensor_list tanh_chain(const tensor_list& in) {
  Tensor y = in[0];
  for (int i = 0; i < 50; ++i) y = tanh(y * 0.5 + in[1]);
  return {y, y.sum()};
}

}  // namespace

TEST_CASE("jit::CudaGraph: inputs that are not CUDA tensors are clear errors") {
  jit::Graph g = jit::trace(tanh_chain, {randn({8}), randn({8})});
  expect_error<ValueError>([&] { jit::CudaGraph(g, {randn({8}), randn({8})}); }, "[jit::CudaGraph]",
                           {"example input 0", "cpu", "to(kCUDA)"});
  expect_error<ValueError>([&] { jit::CudaGraph(g, {}); }, "[jit::CudaGraph]", {"at least one input"});
}

TEST_CASE("jit::CudaGraph: a replay equals the graph's own run, input after input" * doctest::skip(gpu_missing)) {
  tensor_list example{randn({8}).cuda(), randn({8}).cuda()};
  jit::Graph g = jit::trace(tanh_chain, example);
  jit::CudaGraph captured(g, example);
  tensor_list first_inputs{randn({8}).cuda(), randn({8}).cuda()};
  tensor_list first = captured.run(first_inputs);
  tensor_list second_inputs{randn({8}).cuda(), randn({8}).cuda()};
  tensor_list second = captured.run(second_inputs);
  tensor_list expected_first = g.run(first_inputs), expected_second = g.run(second_inputs);
  CHECK(equal(first[0].cpu(), expected_first[0].cpu()));  // still intact after the second replay
  CHECK(equal(first[1].cpu(), expected_first[1].cpu()));
  CHECK(equal(second[0].cpu(), expected_second[0].cpu()));
  CHECK(equal(second[1].cpu(), expected_second[1].cpu()));
  expect_error<ValueError>([&] { captured.run({randn({8}).cuda(), randn({9}).cuda()}); }, "[jit::CudaGraph::run]",
                           {"input 1", "shape [8]"});
}

TEST_CASE("jit::CudaGraph: a model with parameters replays, and follows in-place parameter updates" *
          doctest::skip(gpu_missing)) {
  nn::Linear layer(16, 4);
  layer->to(kCUDA);
  auto model = [&](const tensor_list& in) -> tensor_list { return {relu(layer(in[0]))}; };
  tensor_list example{randn({32, 16}).cuda()};
  jit::Graph g = jit::trace(model, example);
  jit::CudaGraph captured(g, example);
  Tensor x = randn({32, 16}).cuda();
  CHECK(equal(captured.run({x})[0].cpu(), g.run({x})[0].cpu()));
  {
    NoGradGuard no_grad;
    layer->weight.mul_(0.5);  // the captured launches read the parameter's memory
  }
  CHECK(equal(captured.run({x})[0].cpu(), model({x})[0].detach().cpu()));
}

// Note [Capture pools]: conv2d's columns and a long sum's partials are scratch memory freed inside
// the captured run; replays write them again, so they must never back a tensor made afterwards.
TEST_CASE("jit::CudaGraph: scratch memory of the captured run is never handed out after it" *
          doctest::skip(gpu_missing)) {
  Tensor w = randn({8, 4, 3, 3}).cuda();
  auto model = [&](const tensor_list& in) -> tensor_list {
    return {conv2d(in[0], w, {}, {1, 1}, {1, 1}).sum({2, 3}), in[1].sum()};
  };
  tensor_list example{randn({2, 4, 16, 16}).cuda(), randn({1 << 20}).cuda()};
  jit::Graph g = jit::trace(model, example);
  jit::CudaGraph captured(g, example);
  tensor_list inputs{randn({2, 4, 16, 16}).cuda(), randn({1 << 20}).cuda()};
  tensor_list first = captured.run(inputs);
  const Tensor first_values = first[0].cpu(), first_sum = first[1].cpu();
  tensor_list made_after;  // allocations that would take the scratch blocks, were they shared
  for (int i = 0; i < 8; ++i) made_after.push_back(full({4096}, 7.0f).cuda());
  for (int i = 0; i < 3; ++i) (void)captured.run({randn({2, 4, 16, 16}).cuda(), randn({1 << 20}).cuda()});
  cuda::synchronize();
  CHECK(equal(first[0].cpu(), first_values));
  CHECK(equal(first[1].cpu(), first_sum));
  for (const Tensor& t : made_after) CHECK(equal(t.cpu(), full({4096}, 7.0f)));
  tensor_list expected = g.run(inputs);
  CHECK(allclose(first_values, expected[0].cpu(), 1e-5, 1e-5));
}

TEST_CASE("jit::CudaGraph: random ops are refused inside a capture" * doctest::skip(gpu_missing)) {
  auto model = [](const tensor_list& in) -> tensor_list { return {dropout(in[0], 0.5, true)}; };
  tensor_list example{randn({64}).cuda()};
  jit::Graph g = jit::trace(model, example);
  expect_error<Error>([&] { jit::CudaGraph(g, example); }, "[native_dropout]", {"random numbers", "replay"});
  // The stream is usable afterwards, and eval-mode dropout captures.
  auto eval_model = [](const tensor_list& in) -> tensor_list { return {dropout(in[0], 0.5, false) * 2}; };
  jit::Graph h = jit::trace(eval_model, example);
  jit::CudaGraph captured(h, example);
  Tensor x = randn({64}).cuda();
  CHECK(equal(captured.run({x})[0].cpu(), (x * 2).cpu()));
}
