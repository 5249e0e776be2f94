// Graph mode: tracing, the text form, replay (with autograd, on Meta), save/load, errors.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  return equal(a.contiguous(), b.contiguous());
}

// A custom Function used bare (not as an op's kernel): y = x * x * k, dy/dx = 2 k x.
struct ScaledSquare : autograd::Function<ScaledSquare> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, double k) {
    ctx->save_for_backward({x});
    ctx->saved_data["k"] = k;
    return x * x * k;
  }
  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grads) {
    Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * x * (2 * ctx->saved_data["k"].to_double()), Tensor()};
  }
};

// The same Function as the Autograd kernel of a custom op, with a deliberately different
// backward (3x) so a test can tell which derivative ran.
struct SwishLike : autograd::Function<SwishLike> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, double beta) {
    ctx->save_for_backward({x});
    return x * sigmoid(x * beta);
  }
  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grads) {
    Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * 3.0, Tensor()};
  }
};

Tensor swish_cpu(const Tensor& x, double beta) { return x * sigmoid(x * beta); }

struct JitOps {
  Library def{"jit_test", Library::DEF};
  Library cpu{"jit_test", Library::IMPL, DispatchKey::CPU};
  Library meta{"jit_test", Library::IMPL, DispatchKey::Meta};
  Library autograd{"jit_test", Library::IMPL, DispatchKey::Autograd};
  JitOps() {
    def.def("swish(Tensor x, float beta=1.0) -> Tensor");
    cpu.impl("swish", swish_cpu);
    meta.impl("swish", [](const Tensor& x, double) { return empty_like(x); });
    autograd.impl("swish", autograd::kernel<SwishLike>());
  }
};

Tensor call_swish(const Tensor& x, double beta) {
  return find_op("jit_test::swish").typed<Tensor(const Tensor&, double)>().call(x, beta);
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("strata_jit_" + name)).string();
}

}  // namespace

TEST_CASE("jit::trace: records every op with its schema name, constants and values") {
  Tensor w = randn({3, 4});
  auto fn = [&](const tensor_list& in) -> tensor_list {
    Tensor h = relu(matmul(in[0], w) + 0.5);
    return {h.sum(1), softmax(h, 1)};
  };
  Tensor x = randn({2, 3});
  jit::Graph g = jit::trace(fn, {x});
  const std::string text = g.str();
  INFO(text);
  CHECK(text.find("graph(%0 : Float32[2, 3] cpu):") == 0);
  CHECK(text.find("= prim::Constant($0)") != std::string::npos);
  CHECK(text.find("= strata::matmul(%0, %1)") != std::string::npos);
  CHECK(text.find("strata::add.Scalar(%2, 0.5, 1)") != std::string::npos);
  CHECK(text.find("strata::relu(") != std::string::npos);
  // softmax is recorded as itself, not as the ops its kernel is made of
  CHECK(text.find("strata::softmax") != std::string::npos);
  CHECK(text.find("strata::exp") == std::string::npos);
  CHECK(text.find("  return (") != std::string::npos);
  CHECK(g.inputs().size() == 1);
  CHECK(g.outputs().size() == 2);
  CHECK(g.host_reads() == 0);
}

TEST_CASE("jit::Graph::run: replay equals eager bit for bit, for new inputs of the same signature") {
  Tensor w = randn({8, 5}), b = randn({5});
  auto fn = [&](const tensor_list& in) -> tensor_list {
    Tensor y = tanh(linear(in[0], w.t(), b)) * in[1] - in[1].exp();
    return {y, y.mean()};
  };
  jit::Graph g = jit::trace(fn, {randn({4, 8}), randn({4, 5})});
  for (int64_t rows : {4, 7}) {  // other sizes of the same rank replay too
    tensor_list inputs{randn({rows, 8}), randn({rows, 5})};
    tensor_list eager = fn(inputs), replayed = g.run(inputs);
    REQUIRE(replayed.size() == 2);
    CHECK(same_bits(eager[0], replayed[0]));
    CHECK(same_bits(eager[1], replayed[1]));
  }
}

// Note [Prepared replay]: a graph prepares its runs once, and again after any edit.
TEST_CASE("jit::Graph::run: runs are prepared once and again after edits; copies run on their own") {
  auto fn = [](const tensor_list& in) -> tensor_list { return {tanh(in[0] * 0.5 + 0.1)}; };
  const Tensor x = randn({6});
  jit::Graph g = jit::trace(fn, {x});
  for (int run = 0; run < 3; ++run) CHECK(same_bits(g.run({x})[0], fn({x})[0]));
  const jit::Graph original = g;
  // An edit as a pass makes it: the mul's constant 0.5 becomes 2.
  int edited = 0;
  for (jit::Node& node : g.mutable_nodes()) {
    if (node.op != "strata::mul.Scalar") continue;
    node.inputs[1] = jit::Operand::of_constant(IValue(Scalar(2.0)));
    ++edited;
  }
  REQUIRE(edited == 1);
  CHECK(same_bits(g.run({x})[0], tanh(x * 2.0 + 0.1)));
  CHECK(same_bits(original.run({x})[0], fn({x})[0]));  // the copy kept the IR it was given
  // Another output: the graph's input itself.
  g.mutable_outputs() = {g.inputs()[0]};
  CHECK(same_bits(g.run({x})[0], x));
  // Moves and assignments carry the IR, and the graph moved to prepares for itself.
  jit::Graph moved = std::move(g);
  CHECK(same_bits(moved.run({x})[0], x));
  moved = original;
  CHECK(same_bits(moved.run({x})[0], fn({x})[0]));
  g = jit::trace([](const tensor_list& in) -> tensor_list { return {in[0] * 3.0}; }, {x});
  CHECK(same_bits(g.run({x})[0], x * 3.0));
}

TEST_CASE("jit::Graph::run: under grad, replay records autograd and a traced model trains") {
  manual_seed(3);
  nn::Linear first(6, 4), second(4, 2);
  auto model = [&](const tensor_list& in) -> tensor_list { return {second(relu(first(in[0])))}; };
  Tensor x = randn({5, 6}), target = randn({5, 2});
  jit::Graph g = jit::trace(model, {x});

  Tensor eager_loss = mse_loss(model({x})[0], target);
  eager_loss.backward();
  Tensor eager_grad = first->weight.grad().clone();
  first->weight.grad().zero_();
  second->weight.grad().zero_();
  first->bias.grad().zero_();
  second->bias.grad().zero_();

  Tensor loss = mse_loss(g.run({x})[0], target);
  CHECK(same_bits(loss, eager_loss));
  loss.backward();
  CHECK(same_bits(first->weight.grad(), eager_grad));

  // The graph holds the parameters themselves: an optimizer step shows in the next replay.
  optim::SGD sgd(std::vector<Tensor>{first->weight, first->bias, second->weight, second->bias}, optim::SGDOptions(0.1));
  const double before = loss.item<double>();
  for (int step = 0; step < 20; ++step) {
    sgd.zero_grad();
    Tensor l = mse_loss(g.run({x})[0], target);
    l.backward();
    sgd.step();
  }
  CHECK(mse_loss(g.run({x})[0], target).item<double>() < before);
}

TEST_CASE("jit::trace: a custom op appears as that op and replays its custom derivative") {
  JitOps ops;
  auto fn = [](const tensor_list& in) -> tensor_list { return {call_swish(in[0] * 2.0, 1.5)}; };
  Tensor x = randn({3}).requires_grad_();
  jit::Graph g = jit::trace(fn, {x});
  const std::string text = g.str();
  INFO(text);
  CHECK(text.find("= jit_test::swish(%1, 1.5)") != std::string::npos);
  CHECK(text.find("strata::sigmoid") == std::string::npos);  // the Function's inside is not traced
  Tensor y = g.run({x})[0];
  CHECK(same_bits(y, fn({x})[0]));
  y.sum().backward();
  CHECK(same_bits(x.grad(), full({3}, 6.0)));  // SwishLike's backward: 3 * d(2x)/dx
}

TEST_CASE("jit::trace: a bare Function::apply is one prim::Function node that replays its backward") {
  auto fn = [](const tensor_list& in) -> tensor_list { return {ScaledSquare::apply(in[0] + 1.0, 3.0)}; };
  Tensor x = randn({4}).requires_grad_();
  jit::Graph g = jit::trace(fn, {x});
  const std::string text = g.str();
  INFO(text);
  CHECK(text.find("prim::Function[ScaledSquare](%1)") != std::string::npos);
  CHECK(text.find("strata::mul") == std::string::npos);
  Tensor other = randn({4}).requires_grad_();
  Tensor y = g.run({other})[0];
  CHECK(same_bits(y, fn({other})[0]));
  y.sum().backward();
  CHECK(allclose(other.grad(), (other.detach() + 1.0) * 6.0));
  // It cannot be saved: the closure lives in this process only.
  expect_error<ValueError>([&] { g.save(temp_path("bare.graph")); }, "[jit::Graph::save]",
                           {"ScaledSquare", "autograd::kernel<ScaledSquare>"});
}

TEST_CASE("jit::trace: in-place ops are mutations, and replay applies them to the new inputs") {
  auto fn = [](const tensor_list& in) -> tensor_list {
    Tensor y = in[0] * 2.0;
    y.add_(in[1]);
    y.relu_();
    return {y + in[0]};
  };
  jit::Graph g = jit::trace(fn, {randn({6}), randn({6})});
  const std::string text = g.str();
  INFO(text);
  CHECK(text.find("strata::add_.Tensor") != std::string::npos);
  CHECK(text.find("strata::relu_") != std::string::npos);
  tensor_list inputs{randn({6}), randn({6})};
  CHECK(same_bits(g.run(inputs)[0], fn(inputs)[0]));
}

TEST_CASE("jit::Graph::run: on Meta, a CPU trace infers every shape without data") {
  nn::Linear layer(10, 3);
  auto fn = [&](const tensor_list& in) -> tensor_list { return {softmax(layer(in[0]), 1).sum(0)}; };
  jit::Graph g = jit::trace(fn, {randn({2, 10})});
  Tensor x = empty({64, 10}, TensorOptions().device(kMeta));
  tensor_list out = g.run({x});
  CHECK(out[0].device().is_meta());
  CHECK(out[0].sizes() == IntArrayRef{3});
  // Creation ops traced with the default device follow the graph to Meta.
  auto with_zeros = [](const tensor_list& in) -> tensor_list { return {in[0] + zeros({4}) + ones({4}, kFloat32)}; };
  jit::Graph made = jit::trace(with_zeros, {randn({4})});
  Tensor shaped = made.run({empty({4}, TensorOptions().device(kMeta))})[0];
  CHECK(shaped.device().is_meta());
  CHECK(shaped.sizes() == IntArrayRef{4});
}

TEST_CASE("jit::Graph::run: inputs of another count, dtype, rank or device are clear errors") {
  auto fn = [](const tensor_list& in) -> tensor_list { return {in[0] + in[1]}; };
  jit::Graph g = jit::trace(fn, {randn({2, 3}), randn({2, 3})});
  expect_error<ValueError>([&] { g.run({randn({2, 3})}); }, "[jit::Graph::run]", {"expected 2 inputs", "got 1"});
  expect_error<TypeError>([&] { g.run({randn({2, 3}), randn({2, 3}, TensorOptions().dtype(kFloat64))}); },
                          "[jit::Graph::run]", {"input 1", "Float64", "Float32"});
  expect_error<ValueError>([&] { g.run({randn({2, 3}), randn({6})}); }, "[jit::Graph::run]",
                           {"input 1", "1 dimensions", "traced with 2"});
  expect_error<ValueError>([&] { g.run({randn({2, 3}), empty({2, 3}, TensorOptions().device(kMeta))}); },
                           "[jit::Graph::run]", {"input 1", "meta"});
}

TEST_CASE("jit::trace: item() and data-dependent results warn that the graph is specialised") {
  auto fn = [](const tensor_list& in) -> tensor_list {
    const double scale = in[0].sum().item<double>() > 0 ? 2.0 : -2.0;
    return {in[0] * scale};
  };
  std::ostringstream captured;
  std::streambuf* previous = std::cerr.rdbuf(captured.rdbuf());
  jit::Graph g = jit::trace(fn, {ones({3})});
  std::cerr.rdbuf(previous);
  CHECK(g.host_reads() == 1);
  CHECK(captured.str().find("[jit::trace] warning: item") != std::string::npos);
  CHECK(captured.str().find("specialised") != std::string::npos);
  // Specialised: a negative input still multiplies by 2, as traced.
  CHECK(same_bits(g.run({-ones({3})})[0], full({3}, -2.0)));
}

TEST_CASE("jit::trace: bad arguments are clear errors") {
  Tensor x = randn({2});
  expect_error<ValueError>([&] { jit::trace(nullptr, {x}); }, "[jit::trace]", {"empty"});
  expect_error<ValueError>([&] { jit::trace([](const tensor_list& in) { return in; }, {x, x}); }, "[jit::trace]",
                           {"input 1", "same tensor as input 0"});
  expect_error<ValueError>([&] { jit::trace([](const tensor_list&) { return tensor_list{Tensor()}; }, {x}); },
                           "[jit::trace]", {"output 0", "undefined"});
}

TEST_CASE("jit::Graph::save and jit::load: round trip exactly, custom ops found by name") {
  JitOps ops;
  nn::Linear layer(4, 3);
  auto fn = [&](const tensor_list& in) -> tensor_list {
    Tensor h = call_swish(layer(in[0]), 0.25);
    Tensor sorted = std::get<0>(h.max(1, true));
    return {cat({h, sorted}, 1).clamp(-1e-05, 1.0 / 3.0), h.to(kFloat64).sum({0}, false)};
  };
  Tensor x = randn({5, 4});
  jit::Graph g = jit::trace(fn, {x});
  const std::string path = temp_path("roundtrip.graph");
  g.save(path);
  jit::Graph loaded = jit::load(path);
  CHECK(loaded.str() == g.str());
  Tensor other = randn({5, 4});
  tensor_list a = g.run({other}), b = loaded.run({other});
  CHECK(same_bits(a[0], b[0]));
  CHECK(same_bits(a[1], b[1]));
  CHECK(jit::parse(g.str(), {layer->weight, layer->bias}).str() == g.str());
  std::filesystem::remove(path);
}

TEST_CASE("jit::load: a missing op, a damaged file and a bare Function are clear errors") {
  const std::string path = temp_path("missing.graph");
  {
    JitOps ops;
    jit::trace([](const tensor_list& in) -> tensor_list { return {call_swish(in[0], 1.0)}; }, {randn({2})}).save(path);
  }
  expect_error<ValueError>([&] { jit::load(path); }, "[jit::load]", {"jit_test::swish", "not registered", "load_library"});
  expect_error<ValueError>([&] { jit::load(temp_path("does_not_exist.graph")); }, "[jit::load]", {"cannot open"});
  {
    std::ofstream(path) << "hello";
  }
  expect_error<ValueError>([&] { jit::load(path); }, "[jit::load]", {"not a strata graph file"});
  std::filesystem::remove(path);
  expect_error<ValueError>([&] { jit::parse("graph(%0 : Float32[2] cpu):\n  %1 : Float32[2] cpu = prim::Function[F](%0)\n  return (%1)\n"); },
                           "[jit::parse]", {"bare Function F", "autograd::kernel<F>"});
  expect_error<ValueError>([&] { jit::parse("graph(%0 : Float32[2] cpu):\n  %1 : Float32[2] cpu = strata::relu(%7)\n  return (%1)\n"); },
                           "[jit::parse]", {"line 2", "%7 is used before it is defined"});
}

TEST_CASE("jit::trace: threads trace at the same time without seeing each other's ops") {
  auto square = [](const tensor_list& in) -> tensor_list { return {in[0] * in[0]}; };
  auto shifted = [](const tensor_list& in) -> tensor_list { return {(in[0] + 1.0).exp()}; };
  std::string square_text, shifted_text;
  std::thread first([&] {
    for (int i = 0; i < 50; ++i) square_text = jit::trace(square, {randn({3})}).str();
  });
  std::thread second([&] {
    for (int i = 0; i < 50; ++i) shifted_text = jit::trace(shifted, {randn({3})}).str();
  });
  Tensor untraced = randn({3}) * 2.0;  // this thread is not tracing meanwhile
  first.join();
  second.join();
  CHECK(square_text.find("strata::mul.Tensor(%0, %0)") != std::string::npos);
  CHECK(square_text.find("exp") == std::string::npos);
  CHECK(shifted_text.find("strata::exp(%1)") != std::string::npos);
  CHECK(shifted_text.find("mul") == std::string::npos);
  CHECK(untraced.defined());
}
