// jit::detail::PreparedGraph, what jit::compile runs: typed calls for the common call shapes,
// boxed calls for the rest, and the same results, gradients and dispatch as eager code.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() && equal(a.contiguous(), b.contiguous());
}

tensor_list tanh_chain(const tensor_list& in) {
  Tensor y = in[0];
  for (int i = 0; i < 20; ++i) y = tanh(y * 0.5 + 0.1);
  return {y};
}

}  // namespace

TEST_CASE("jit prepared graph: every node of a tanh chain is typed, and results and gradients equal eager's") {
  jit::Graph graph = jit::trace(tanh_chain, {randn({8})});
  jit::detail::PreparedGraph prepared(graph);
  CHECK(graph.nodes().size() == 60);
  CHECK(prepared.typed_nodes() == 60);  // mul.Scalar (T S), add.Scalar (T S S), tanh (T)

  Tensor eager_x = randn({8}).requires_grad_();
  Tensor prepared_x = eager_x.detach().clone().requires_grad_();
  Tensor eager_y = tanh_chain({eager_x})[0];
  Tensor prepared_y = prepared.run({prepared_x})[0];
  CHECK(same_bits(prepared_y, eager_y));
  CHECK(prepared_y.grad_fn() != nullptr);
  eager_y.sum().backward();
  prepared_y.sum().backward();
  CHECK(same_bits(prepared_x.grad(), eager_x.grad()));
}

TEST_CASE("jit prepared graph: other call shapes run boxed, mixed with typed ones, and equal eager") {
  nn::Linear with_bias(6, 4);
  nn::Linear no_bias(4, 3, /*bias=*/false);
  auto fn = [&](const tensor_list& in) -> tensor_list {
    Tensor h = relu(with_bias(in[0]));    // linear (T T O), relu (T)
    Tensor z = no_bias(h) - in[1] * 2.0;  // linear with None bias, mul.Scalar, sub.Tensor (T T S)
    Tensor s = softmax(z, 1);             // an int argument: boxed
    Tensor c = cat({s, z}, 0);            // a list: boxed
    Tensor d = c.clone();                 // clone with memory_format=None (T M)
    d.mul_(3.0);                          // in place: boxed
    return {d.sum(0), maximum(z, s)};     // sum.dim_IntList boxed, maximum (T T)
  };
  tensor_list example{randn({5, 6}), randn({5, 3})};
  jit::Graph graph = jit::trace(fn, example);
  jit::detail::PreparedGraph prepared(graph);
  INFO(graph.str());
  size_t constants = 0;
  for (const jit::Node& node : graph.nodes()) constants += node.op == "prim::Constant";
  CHECK(constants == 3);  // two weights, one bias
  CHECK(prepared.typed_nodes() == 7);
  CHECK(prepared.typed_nodes() < graph.nodes().size() - constants);

  for (int round = 0; round < 2; ++round) {  // a prepared graph runs again and again
    tensor_list inputs{randn({5, 6}), randn({5, 3})};
    tensor_list eager = fn(inputs);
    tensor_list replayed = prepared.run(inputs);
    REQUIRE(replayed.size() == 2);
    CHECK(same_bits(replayed[0], eager[0]));
    CHECK(same_bits(replayed[1], eager[1]));
    CHECK(same_bits(replayed[0], graph.run(inputs)[0]));
  }
}

TEST_CASE("jit prepared graph: a replaced kernel and a re-defined op are called as they are now") {
  auto square_plus = [](const tensor_list& in) -> tensor_list {
    return {find_op("prepared_test::twice").typed<Tensor(const Tensor&)>().call(in[0]) + in[0]};
  };
  Tensor x = tensor({1.0f, 2.0f, 3.0f});
  std::optional<jit::Graph> graph;
  std::optional<jit::detail::PreparedGraph> prepared;
  {
    Library def("prepared_test", Library::DEF);
    def.def("twice(Tensor x) -> Tensor");
    Library cpu("prepared_test", Library::IMPL, DispatchKey::CPU);
    cpu.impl("twice", [](const Tensor& t) { return t * 2.0; });
    graph.emplace(jit::trace(square_plus, {x}));
    prepared.emplace(*graph);
    CHECK(prepared->typed_nodes() == 2);
    CHECK(equal(prepared->run({x})[0], tensor({3.0f, 6.0f, 9.0f})));
    {
      Library replaced("strata", Library::IMPL, DispatchKey::CPU);  // add.Tensor's CPU kernel, for a while
      replaced.impl("add.Tensor", [](const Tensor& a, const Tensor&, const Scalar&) { return a.clone(); });
      CHECK(equal(prepared->run({x})[0], tensor({2.0f, 4.0f, 6.0f})));
    }
    CHECK(equal(prepared->run({x})[0], tensor({3.0f, 6.0f, 9.0f})));
  }
  // The op is defined again with another schema (a new schema generation): its typed handle is
  // stale, and the node goes back to the boxed call, which fills in the new default.
  Library def("prepared_test", Library::DEF);
  def.def("twice(Tensor x, float k=2.0) -> Tensor");
  Library cpu("prepared_test", Library::IMPL, DispatchKey::CPU);
  cpu.impl("twice", [](const Tensor& t, double k) { return t * (k * 2.0); });
  CHECK(equal(prepared->run({x})[0], tensor({5.0f, 10.0f, 15.0f})));
}

TEST_CASE("jit prepared graph: inputs on another device run as Graph::run does, and bad inputs are errors") {
  jit::Graph graph = jit::trace(tanh_chain, {randn({8})});
  jit::detail::PreparedGraph prepared(graph);
  Tensor shaped = prepared.run({empty({8}, TensorOptions().device(kMeta))})[0];
  CHECK(shaped.device().is_meta());
  CHECK(shaped.sizes() == IntArrayRef{8});
  strata::testing::expect_error<ValueError>([&] { prepared.run({randn({8}), randn({8})}); }, "[jit::Graph::run]",
                                            {"expected 1 inputs"});
  strata::testing::expect_error<TypeError>([&] { prepared.run({ones({8}, kFloat64)}); }, "[jit::Graph::run]",
                                           {"dtype"});
}

TEST_CASE("jit prepared graph: clone with a constant memory format runs typed and lays out as eager") {
  auto fn = [](const tensor_list& in) -> tensor_list {
    return {in[0].clone(MemoryFormat::ChannelsLast), relu(in[0]).clone()};
  };
  const tensor_list example{randn({2, 3, 4, 5})};
  const jit::Graph graph = jit::trace(fn, example);
  const jit::detail::PreparedGraph prepared(graph);
  INFO(graph.str());
  CHECK(prepared.typed_nodes() == 3);  // clone (T M) twice, relu (T)
  const tensor_list inputs{randn({2, 3, 4, 5}).contiguous(MemoryFormat::ChannelsLast)};
  const tensor_list eager = fn(inputs);
  const tensor_list replayed = prepared.run(inputs);
  REQUIRE(replayed.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(same_bits(replayed[i], eager[i]));
    CHECK(replayed[i].strides() == eager[i].strides());
    CHECK(replayed[i].is_contiguous(MemoryFormat::ChannelsLast));
  }
}
