// graph_mode: a small model with a custom op and a custom Function, captured as a graph:
// traced, printed, saved, loaded, replayed on Meta for its shapes, trained through the
// replayed graph, compiled, and timed against eager mode.
//
//   ./build/samples/graph_mode
//
// What it shows:
//   1. jit::trace records every op the model calls, built-in or custom (`demo::swish`, whose
//      Autograd kernel is a Function, appears as that op), and a bare Function::apply (the
//      ClampedSquare regulariser) as one prim::Function node; g.str() prints one node a line.
//   2. g.save / jit::load round-trip the graph; ops are found by name, so demo::swish must be
//      registered when loading. A bare Function cannot be saved: the sample traces the saved
//      model without it, and shows the error it would get.
//   3. g.run on Meta tensors infers every shape of the model for a batch of 4096, with no data.
//   4. Replay under grad records autograd as eager does: a few SGD steps through the graph.
//   5. jit::compile traces once per input signature and fuses elementwise chains; the sample
//      times an elementwise-heavy function eagerly and compiled.
//   6. A large chain of exactly rounded ops (a * b + c * d - e) runs as a kernel generated for
//      it, compiled once with the machine's C++ compiler and cached in ~/.cache/strata/kernels.
#include <strata/strata.h>

#include <chrono>
#include <filesystem>
#include <iostream>

using namespace strata;

// The custom op's derivative, as a Function: swish(x) = x * sigmoid(beta x).
struct Swish : autograd::Function<Swish> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, double beta) {
    Tensor s = sigmoid(x * beta);
    ctx->save_for_backward({x, s});
    ctx->saved_data["beta"] = beta;
    return x * s;
  }
  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grads) {
    const tensor_list saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &s = saved[1];
    const double beta = ctx->saved_data["beta"].to_double();
    return {grads[0] * (s + x * s * (1.0 - s) * beta), Tensor()};
  }
};

STRATA_LIBRARY(demo, m) { m.def("swish(Tensor x, float beta=1.0) -> Tensor"); }
STRATA_LIBRARY_IMPL(demo, CPU, m) { m.impl("swish", [](const Tensor& x, double beta) { return x * sigmoid(x * beta); }); }
STRATA_LIBRARY_IMPL(demo, Meta, m) { m.impl("swish", [](const Tensor& x, double) { return empty_like(x); }); }
STRATA_LIBRARY_IMPL(demo, Autograd, m) { m.impl("swish", autograd::kernel<Swish>()); }

// A Function used bare: a penalty on large activations, min(x, 1)^2 with its own derivative.
struct ClampedSquare : autograd::Function<ClampedSquare> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
    Tensor c = x.clamp(std::nullopt, 1.0);
    ctx->save_for_backward({c});
    return (c * c).mean();
  }
  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grads) {
    Tensor c = ctx->get_saved_variables()[0];
    return {grads[0] * c * (2.0 / static_cast<double>(c.numel()))};
  }
};

Tensor swish(const Tensor& x, double beta) {
  static auto op = find_op("demo::swish").typed<Tensor(const Tensor&, double)>();
  return op.call(x, beta);
}

template <class Fn>
double milliseconds_per_call(Fn&& fn, int calls) {
  fn();  // warm up (and, for a compiled function, trace)
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / calls;
}

int main() {
  manual_seed(0);
  nn::Linear first(16, 32), second(32, 4);
  auto model = [&](const tensor_list& in) -> tensor_list { return {second(swish(first(in[0]), 1.5))}; };
  auto model_with_penalty = [&](const tensor_list& in) -> tensor_list {
    Tensor hidden = swish(first(in[0]), 1.5);
    return {second(hidden), ClampedSquare::apply(hidden)};
  };

  // 1. Trace and print.
  Tensor x = randn({8, 16});
  jit::Graph with_penalty = jit::trace(model_with_penalty, {x});
  std::cout << "traced model with a custom op and a bare Function:\n" << with_penalty.str() << "\n";

  // 2. Save and load (the model without the bare Function).
  const std::string path = (std::filesystem::temp_directory_path() / "strata_graph_mode.graph").string();
  try {
    with_penalty.save(path);
  } catch (const Error& error) {
    std::cout << "saving it fails, as it should:\n  " << error.what() << "\n\n";
  }
  jit::Graph graph = jit::trace(model, {x});
  graph.save(path);
  jit::Graph loaded = jit::load(path);
  const bool same_text = loaded.str() == graph.str();
  const bool same_result = equal(loaded.run({x})[0], model({x})[0]);
  std::cout << "saved to " << path << " (" << std::filesystem::file_size(path) << " bytes) and loaded: "
            << (same_text ? "same text" : "DIFFERENT TEXT") << ", " << (same_result ? "same result" : "DIFFERENT RESULT")
            << "\n\n";

  // 3. Shapes of the whole model for a large batch, on Meta: no memory, no compute.
  Tensor meta_batch = empty({4096, 16}, TensorOptions().device(kMeta));
  std::cout << "on Meta, a batch of 4096 gives an output of shape " << loaded.run({meta_batch})[0].sizes() << "\n\n";

  // 4. Training through the replayed graph: autograd records as in eager mode.
  Tensor inputs = randn({64, 16}), targets = randn({64, 4});
  optim::SGD sgd(std::vector<Tensor>{first->weight, first->bias, second->weight, second->bias}, optim::SGDOptions(0.05));
  for (int step = 0; step <= 30; ++step) {
    sgd.zero_grad();
    tensor_list out = with_penalty.run({inputs});
    Tensor loss = mse_loss(out[0], targets) + out[1] * 0.01;
    loss.backward();
    sgd.step();
    if (step % 10 == 0) std::cout << "step " << step << ": loss " << loss.item<double>() << "\n";
  }

  // 5. Compiled vs eager on an elementwise-heavy function.
  auto activation = [](const tensor_list& in) -> tensor_list {
    Tensor y = in[0];
    for (int i = 0; i < 20; ++i) y = tanh(y * 0.9 + 0.05) - y * 0.01;
    return {y};
  };
  NoGradGuard no_grad;
  Tensor big = randn({1 << 20});
  auto fast = jit::compile(activation);
  const double eager_ms = milliseconds_per_call([&] { activation({big}); }, 10);
  const double compiled_ms = milliseconds_per_call([&] { fast({big}); }, 10);
  const bool compiled_matches = equal(fast({big})[0], activation({big})[0]);
  std::cout << "\n20 x (tanh(y * 0.9 + 0.05) - y * 0.01) on 1M floats: eager " << eager_ms << " ms, compiled "
            << compiled_ms << " ms (" << fast.fused_chains({big}) << " fused chain), results "
            << (compiled_matches ? "identical" : "DIFFERENT") << "\n";

  // 6. A large chain of exactly rounded ops runs as a kernel generated for it: written out as
  // C++, compiled once by the machine's compiler and cached on disk (the first call pays it).
  auto multiply_add = [](const tensor_list& in) -> tensor_list { return {in[0] * in[1] + in[2] * in[3] - in[4]}; };
  tensor_list operands;
  for (int i = 0; i < 5; ++i) operands.push_back(rand({1 << 22}));
  auto fused = jit::compile(multiply_add);
  const double eager_sum_ms = milliseconds_per_call([&] { multiply_add(operands); }, 10);
  const double fused_sum_ms = milliseconds_per_call([&] { fused(operands); }, 10);
  const bool fused_matches = equal(fused(operands)[0], multiply_add(operands)[0]);
  std::cout << "a * b + c * d - e on 4M floats: eager " << eager_sum_ms << " ms, compiled " << fused_sum_ms
            << " ms (a generated kernel unless STRATA_JIT_CODEGEN=0), results "
            << (fused_matches ? "identical" : "DIFFERENT") << "\n";
  std::filesystem::remove(path);
  return same_text && same_result && compiled_matches && fused_matches ? 0 : 1;
}
