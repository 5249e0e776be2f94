// A survey of common ops, each timed through strata and through LibTorch in the same run, to
// find where strata's CPU kernels are slower than LibTorch's. Each case is written once, as a
// template over a small table of the two libraries' spellings (StrataApi, TorchApi), at the
// sizes of a small model's layer (tens of thousands to a million elements): forward alone, or
// forward and backward ("+bwd"). Without LibTorch only strata's side runs.
// Run pinned: OMP_NUM_THREADS=1 taskset -c 0 ./build/bench/bench_survey
//   (add --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true on a busy machine)
#include <strata/strata.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"

#ifdef STRATA_BENCH_WITH_TORCH
#include <torch/torch.h>
#endif

namespace {

using Sizes = std::vector<int64_t>;

struct StrataApi {
  using Tensor = strata::Tensor;
  static constexpr const char* kName = "strata";
  static void setup() { strata::manual_seed(0); }
  static Tensor randn(const Sizes& s) { return strata::randn(s); }
  static Tensor randint(int64_t high, const Sizes& s) { return strata::randint(0, high, s); }
  static Tensor ones(const Sizes& s) { return strata::ones(s); }
  static void clear_grad(const Tensor& t) { t.set_grad(Tensor()); }
  static Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b) {
    return strata::layer_norm(x, {x.size(-1)}, w, b);
  }
  static Tensor log_softmax(const Tensor& x) { return strata::log_softmax(x, 1); }
  static Tensor softmax(const Tensor& x) { return strata::softmax(x, 1); }
  static Tensor gelu(const Tensor& x) { return strata::gelu(x); }
  static Tensor embedding(const Tensor& w, const Tensor& i) { return strata::embedding(w, i); }
  static Tensor max_pool2d(const Tensor& x) { return strata::max_pool2d(x, {2, 2}); }
  static Tensor mse_loss(const Tensor& a, const Tensor& b) { return strata::mse_loss(a, b); }
  static Tensor bce_with_logits(const Tensor& a, const Tensor& b) {
    return strata::binary_cross_entropy_with_logits(a, b);
  }
  static Tensor cross_entropy(const Tensor& a, const Tensor& t) { return strata::cross_entropy(a, t); }
  static Tensor dropout(const Tensor& x) { return strata::dropout(x, 0.5, true); }
  static Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) { return strata::linear(x, w, b); }
  static Tensor cat(const std::vector<Tensor>& ts, int64_t dim) { return strata::cat(ts, dim); }
  static Tensor stack(const std::vector<Tensor>& ts, int64_t dim) { return strata::stack(ts, dim); }
  static Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) { return strata::where(c, a, b); }
  static Tensor clamp(const Tensor& x) { return strata::clamp(x, -0.5, 0.5); }
  static Tensor var(const Tensor& x) { return x.var({1}); }
};

#ifdef STRATA_BENCH_WITH_TORCH
struct TorchApi {
  using Tensor = torch::Tensor;
  static constexpr const char* kName = "torch";
  static void setup() {
    torch::set_num_threads(1);
    torch::manual_seed(0);
  }
  static Tensor randn(const Sizes& s) { return torch::randn(s); }
  static Tensor randint(int64_t high, const Sizes& s) { return torch::randint(0, high, s); }
  static Tensor ones(const Sizes& s) { return torch::ones(s); }
  static void clear_grad(Tensor t) { t.mutable_grad() = Tensor(); }
  static Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b) {
    return torch::layer_norm(x, {x.size(-1)}, w, b);
  }
  static Tensor log_softmax(const Tensor& x) { return torch::log_softmax(x, 1); }
  static Tensor softmax(const Tensor& x) { return torch::softmax(x, 1); }
  static Tensor gelu(const Tensor& x) { return torch::gelu(x); }
  static Tensor embedding(const Tensor& w, const Tensor& i) { return torch::embedding(w, i); }
  static Tensor max_pool2d(const Tensor& x) { return torch::max_pool2d(x, {2, 2}); }
  static Tensor mse_loss(const Tensor& a, const Tensor& b) { return torch::mse_loss(a, b); }
  static Tensor bce_with_logits(const Tensor& a, const Tensor& b) {
    return torch::binary_cross_entropy_with_logits(a, b);
  }
  static Tensor cross_entropy(const Tensor& a, const Tensor& t) { return torch::nn::functional::cross_entropy(a, t); }
  static Tensor dropout(const Tensor& x) { return torch::dropout(x, 0.5, true); }
  static Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) { return torch::linear(x, w, b); }
  static Tensor cat(const std::vector<Tensor>& ts, int64_t dim) { return torch::cat(ts, dim); }
  static Tensor stack(const std::vector<Tensor>& ts, int64_t dim) { return torch::stack(ts, dim); }
  static Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) { return torch::where(c, a, b); }
  static Tensor clamp(const Tensor& x) { return torch::clamp(x, -0.5, 0.5); }
  static Tensor var(const Tensor& x) { return x.var({1}); }
};
#endif

// A forward alone: `make` builds the inputs once, `op` runs on them each iteration.
template <class A, class Make, class Op>
void forward(benchmark::State& state, Make make, Op op) {
  A::setup();
  auto inputs = make();
  for (auto _ : state) benchmark::DoNotOptimize(std::apply(op, inputs));
}

// Forward and backward, seeded with ones: `grads` are the tensors whose .grad is reset each time.
template <class A, class Op, class... T>
void forward_backward(benchmark::State& state, Op op, std::vector<typename A::Tensor> grads, T... inputs) {
  auto seed = A::ones(op(inputs...).sizes().vec());
  for (auto _ : state) {
    for (auto& g : grads) A::clear_grad(g);
    op(inputs...).backward(seed);
  }
  benchmark::DoNotOptimize(grads[0].grad().data_ptr());
}

template <class A>
struct Cases {
  using T = typename A::Tensor;
  static T leaf(const Sizes& s) { return A::randn(s).requires_grad_(); }

  static void layer_norm(benchmark::State& st) {
    A::setup();
    T x = A::randn({64, 1024}), w = A::randn({1024}), b = A::randn({1024});
    for (auto _ : st) benchmark::DoNotOptimize(A::layer_norm(x, w, b));
  }
  static void layer_norm_bwd(benchmark::State& st) {
    A::setup();
    T x = leaf({64, 1024}), w = leaf({1024}), b = leaf({1024});
    forward_backward<A>(st, [](T x, T w, T b) { return A::layer_norm(x, w, b); }, {x, w, b}, x, w, b);
  }
  static void log_softmax_bwd(benchmark::State& st) {
    A::setup();
    T x = leaf({64, 1000});
    forward_backward<A>(st, [](T x) { return A::log_softmax(x); }, {x}, x);
  }
  static void softmax_bwd(benchmark::State& st) {
    A::setup();
    T x = leaf({64, 1000});
    forward_backward<A>(st, [](T x) { return A::softmax(x); }, {x}, x);
  }
  static void gelu(benchmark::State& st) {
    forward<A>(st, [] { return std::make_tuple(A::randn({1 << 18})); }, [](T x) { return A::gelu(x); });
  }
  static void gelu_bwd(benchmark::State& st) {
    A::setup();
    T x = leaf({1 << 18});
    forward_backward<A>(st, [](T x) { return A::gelu(x); }, {x}, x);
  }
  static void embedding_bwd(benchmark::State& st) {
    A::setup();
    T w = leaf({10000, 128});
    T idx = A::randint(10000, {32, 64});
    forward_backward<A>(st, [](T w, T i) { return A::embedding(w, i); }, {w}, w, idx);
  }
  static void index_select(benchmark::State& st) {
    A::setup();
    T w = A::randn({10000, 128}), idx = A::randint(10000, {2048});
    for (auto _ : st) benchmark::DoNotOptimize(w.index_select(0, idx));
  }
  static void gather(benchmark::State& st) {
    A::setup();
    T x = A::randn({256, 1000}), idx = A::randint(1000, {256, 16});
    for (auto _ : st) benchmark::DoNotOptimize(x.gather(1, idx));
  }
  static void cat(benchmark::State& st) {
    A::setup();
    std::vector<T> parts;
    for (int i = 0; i < 8; ++i) parts.push_back(A::randn({64, 512}));
    for (auto _ : st) benchmark::DoNotOptimize(A::cat(parts, 1));
  }
  static void stack(benchmark::State& st) {
    A::setup();
    std::vector<T> parts;
    for (int i = 0; i < 8; ++i) parts.push_back(A::randn({64, 512}));
    for (auto _ : st) benchmark::DoNotOptimize(A::stack(parts, 1));
  }
  static void max_pool2d_bwd(benchmark::State& st) {
    A::setup();
    T x = leaf({8, 32, 32, 32});
    forward_backward<A>(st, [](T x) { return A::max_pool2d(x); }, {x}, x);
  }
  static void transpose_contiguous(benchmark::State& st) {
    A::setup();
    T x = A::randn({512, 512});
    for (auto _ : st) benchmark::DoNotOptimize(x.t().contiguous());
  }
  static void var_dim(benchmark::State& st) {
    A::setup();
    T x = A::randn({256, 1024});
    for (auto _ : st) benchmark::DoNotOptimize(A::var(x));
  }
  static void sum_dim0(benchmark::State& st) {
    A::setup();
    T x = A::randn({512, 512});
    for (auto _ : st) benchmark::DoNotOptimize(x.sum({0}));
  }
  static void logsumexp(benchmark::State& st) {
    A::setup();
    T x = A::randn({64, 1000});
    for (auto _ : st) benchmark::DoNotOptimize(x.logsumexp({1}));
  }
  static void norm(benchmark::State& st) {
    A::setup();
    T x = A::randn({1 << 18});
    for (auto _ : st) benchmark::DoNotOptimize(x.norm());
  }
  static void argmax(benchmark::State& st) {
    A::setup();
    T x = A::randn({256, 1024});
    for (auto _ : st) benchmark::DoNotOptimize(x.argmax(1));
  }
  static void masked_fill(benchmark::State& st) {
    A::setup();
    T x = A::randn({1 << 18});
    T mask = x.gt(0);
    for (auto _ : st) benchmark::DoNotOptimize(x.masked_fill(mask, 0.0));
  }
  static void where(benchmark::State& st) {
    A::setup();
    T x = A::randn({1 << 18}), y = A::randn({1 << 18});
    T cond = x.gt(y);
    for (auto _ : st) benchmark::DoNotOptimize(A::where(cond, x, y));
  }
  static void clamp(benchmark::State& st) {
    A::setup();
    T x = A::randn({1 << 18});
    for (auto _ : st) benchmark::DoNotOptimize(A::clamp(x));
  }
  static void pow_scalar(benchmark::State& st) {
    A::setup();
    T x = A::randn({1 << 18}).abs();
    for (auto _ : st) benchmark::DoNotOptimize(x.pow(2.5));
  }
  static void mul_broadcast(benchmark::State& st) {
    A::setup();
    T a = A::randn({64, 1, 256}), b = A::randn({1, 64, 256});
    for (auto _ : st) benchmark::DoNotOptimize(a * b);
  }
  static void mse_loss_bwd(benchmark::State& st) {
    A::setup();
    T x = leaf({64, 1024});
    T y = A::randn({64, 1024});
    forward_backward<A>(st, [](T x, T y) { return A::mse_loss(x, y); }, {x}, x, y);
  }
  static void bce_with_logits_bwd(benchmark::State& st) {
    A::setup();
    T x = leaf({64, 1024});
    T y = A::randn({64, 1024}).gt(0).to(x.dtype());
    forward_backward<A>(st, [](T x, T y) { return A::bce_with_logits(x, y); }, {x}, x, y);
  }
  static void cross_entropy_bwd(benchmark::State& st) {
    A::setup();
    T x = leaf({64, 1000});
    T t = A::randint(1000, {64});
    forward_backward<A>(st, [](T x, T t) { return A::cross_entropy(x, t); }, {x}, x, t);
  }
  static void dropout(benchmark::State& st) {
    A::setup();
    T x = A::randn({1 << 18});
    for (auto _ : st) benchmark::DoNotOptimize(A::dropout(x));
  }
  static void linear_bwd(benchmark::State& st) {
    A::setup();
    T x = leaf({64, 512}), w = leaf({512, 512}), b = leaf({512});
    forward_backward<A>(st, [](T x, T w, T b) { return A::linear(x, w, b); }, {x, w, b}, x, w, b);
  }
  static void bmm(benchmark::State& st) {
    A::setup();
    T a = A::randn({32, 64, 64}), b = A::randn({32, 64, 64});
    for (auto _ : st) benchmark::DoNotOptimize(a.bmm(b));
  }
  static void mlp_step(benchmark::State& st) {
    // relu(x W1^T + b1) W2^T + b2, its mean squared, and the backward: a small training step.
    A::setup();
    T x = A::randn({64, 256});
    T w1 = leaf({256, 256}), b1 = leaf({256}), w2 = leaf({64, 256}), b2 = leaf({64});
    forward_backward<A>(
        st, [](T x, T w1, T b1, T w2, T b2) { return (A::linear(A::linear(x, w1, b1).relu(), w2, b2)).pow(2).mean(); },
        {w1, b1, w2, b2}, x, w1, b1, w2, b2);
  }
};

struct Entry {
  const char* name;
  void (*strata_fn)(benchmark::State&);
#ifdef STRATA_BENCH_WITH_TORCH
  void (*torch_fn)(benchmark::State&);
#endif
};

#ifdef STRATA_BENCH_WITH_TORCH
#define SURVEY(name) Entry{#name, &Cases<StrataApi>::name, &Cases<TorchApi>::name}
#else
#define SURVEY(name) Entry{#name, &Cases<StrataApi>::name}
#endif

const Entry kEntries[] = {
    SURVEY(layer_norm),     SURVEY(layer_norm_bwd),     SURVEY(log_softmax_bwd), SURVEY(softmax_bwd),
    SURVEY(gelu),           SURVEY(gelu_bwd),           SURVEY(embedding_bwd),   SURVEY(index_select),
    SURVEY(gather),         SURVEY(cat),                SURVEY(stack),           SURVEY(max_pool2d_bwd),
    SURVEY(transpose_contiguous), SURVEY(var_dim),      SURVEY(sum_dim0),        SURVEY(logsumexp),
    SURVEY(norm),           SURVEY(argmax),             SURVEY(masked_fill),     SURVEY(where),
    SURVEY(clamp),          SURVEY(pow_scalar),         SURVEY(mul_broadcast),   SURVEY(mse_loss_bwd),
    SURVEY(bce_with_logits_bwd), SURVEY(cross_entropy_bwd), SURVEY(dropout),     SURVEY(linear_bwd),
    SURVEY(bmm),            SURVEY(mlp_step),
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const Entry& e : kEntries) {
    const std::string name = e.name;
    benchmark::RegisterBenchmark(("strata/" + name).c_str(), e.strata_fn)->Unit(benchmark::kMicrosecond);
#ifdef STRATA_BENCH_WITH_TORCH
    benchmark::RegisterBenchmark(("torch/" + name).c_str(), e.torch_fn)->Unit(benchmark::kMicrosecond);
#endif
    pairs.emplace_back("strata/" + name, "torch/" + name);
  }
  return strata::bench::run_with_ratios(argc, argv, std::move(pairs));
}
