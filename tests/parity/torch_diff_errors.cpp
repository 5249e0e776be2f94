// torch_diff cases: bad input. Each case is a call LibTorch refuses (or, where noted, accepts at
// an edge); strata must refuse it too rather than compute something from it. Both throwing
// counts as agreement (the wording is not compared), so a TORCH-THROWS here is strata
// accepting an input LibTorch rejects, and is looked into.
#include "torch_diff.h"

namespace torch_diff {
namespace {

// x: float32 [2, 3, 4]; m: float32 [3, 5]; i: int64 indices [2]; b: bool [2, 3, 4].
#define STRATA_DIFF_BAD(name, expr)                                       \
  add_case("bad " name, [](auto lib) {                                    \
    using L = decltype(lib);                                              \
    auto x = L::make(ramp(24), {2, 3, 4}, "f32");                         \
    auto m = L::make(ramp(15), {3, 5}, "f32");                            \
    auto i = L::make({0, 2}, {2}, "i64");                                 \
    auto b = x.gt(0);                                                     \
    (void)x, (void)m, (void)i, (void)b;                                   \
    return TensorList<L>{expr};                                           \
  })

void shape_errors() {
  STRATA_DIFF_BAD("view wrong numel", x.view({5, 5}));
  STRATA_DIFF_BAD("view two -1", x.view({-1, -1}));
  STRATA_DIFF_BAD("view of a transpose across dims", x.transpose(1, 2).view({24}));
  STRATA_DIFF_BAD("reshape wrong numel", x.reshape({7, -1}));
  STRATA_DIFF_BAD("permute repeated dim", x.permute({0, 1, 1}));
  STRATA_DIFF_BAD("permute too few dims", x.permute({0, 1}));
  STRATA_DIFF_BAD("transpose dim out of range", x.transpose(0, 3));
  STRATA_DIFF_BAD("select index out of range", x.select(1, 3));
  STRATA_DIFF_BAD("select negative index out of range", x.select(1, -4));
  STRATA_DIFF_BAD("select dim out of range", x.select(3, 0));
  STRATA_DIFF_BAD("narrow past the end", x.narrow(2, 2, 3));
  STRATA_DIFF_BAD("narrow negative length", x.narrow(2, 1, -1));
  STRATA_DIFF_BAD("slice step 0", x.slice(2, 0, 4, 0));
  STRATA_DIFF_BAD("slice negative step", x.slice(2, 0, 4, -1));
  STRATA_DIFF_BAD("expand smaller size", x.expand({2, 2, 4}));
  STRATA_DIFF_BAD("expand fewer dims", x.expand({3, 4}));
  STRATA_DIFF_BAD("unsqueeze dim out of range", x.unsqueeze(4));
  STRATA_DIFF_BAD("squeeze dim out of range", x.squeeze(3));
  STRATA_DIFF_BAD("flatten start after end", x.flatten(2, 0));
  STRATA_DIFF_BAD("split size 0", x.split(0, 1)[0]);
  STRATA_DIFF_BAD("chunk 0", x.chunk(0, 1)[0]);
  STRATA_DIFF_BAD("cat mismatched sizes", cat(TensorList<L>{x, m}, 0));
  STRATA_DIFF_BAD("cat dim out of range", cat(TensorList<L>{x, x}, 3));
  STRATA_DIFF_BAD("cat empty list", cat(TensorList<L>{}, 0));
  STRATA_DIFF_BAD("stack mismatched shapes", stack(TensorList<L>{x, x.transpose(1, 2)}, 0));
  STRATA_DIFF_BAD("stack dim out of range", stack(TensorList<L>{x, x}, 4));
}

void op_errors() {
  STRATA_DIFF_BAD("add broadcast mismatch", x + m);
  STRATA_DIFF_BAD("add_ into a smaller self", m.select(0, 0).add_(m));
  STRATA_DIFF_BAD("mul_ of int by float", i.mul_(1.5));
  STRATA_DIFF_BAD("matmul inner mismatch", matmul(m, m));
  STRATA_DIFF_BAD("mm of 3-d", mm(x, m));
  STRATA_DIFF_BAD("bmm batch mismatch", bmm(x, L::make(ramp(60), {3, 4, 5}, "f32")));
  STRATA_DIFF_BAD("matmul of 0-d", matmul(L::scalar_tensor(2, "f32"), m));
  STRATA_DIFF_BAD("matmul dtype mismatch", matmul(m.t(), m.to(L::type("f64"))));
  STRATA_DIFF_BAD("sum dim out of range", x.sum(std::vector<int64_t>{3}));
  STRATA_DIFF_BAD("sum repeated dim", x.sum(std::vector<int64_t>{1, 1}));
  STRATA_DIFF_BAD("max of an empty tensor", L::make({}, {0}, "f32").max());
  STRATA_DIFF_BAD("argmax dim out of range", x.argmax(5));
  STRATA_DIFF_BAD("softmax dim out of range", softmax(x, 3));
  STRATA_DIFF_BAD("index_select index out of range", x.index_select(1, L::make({0, 3}, {2}, "i64")));
  STRATA_DIFF_BAD("index_select float index", x.index_select(1, L::make({0, 1}, {2}, "f32")));
  STRATA_DIFF_BAD("index_select 2-d index", x.index_select(1, L::make({0, 1}, {1, 2}, "i64")));
  STRATA_DIFF_BAD("gather index dims mismatch", m.gather(1, i));
  STRATA_DIFF_BAD("gather negative index", m.gather(1, L::make({-1}, {1, 1}, "i64")));
  STRATA_DIFF_BAD("masked_fill mask not broadcastable", m.masked_fill(b, 0.0));
  STRATA_DIFF_BAD("where condition not broadcastable", where(b, m, m));
  STRATA_DIFF_BAD("clamp of bool", b.clamp(0, 1));
  STRATA_DIFF_BAD("pow of int by negative int", pow(i, -1));
  STRATA_DIFF_BAD("requires_grad on int", i.requires_grad_(true));
  STRATA_DIFF_BAD("item of several elements", L::scalar_tensor(x.sum().template item<double>() + x.template item<double>(), "f64"));
}

void nn_errors() {
  STRATA_DIFF_BAD("cross_entropy target out of range", L::cross_entropy(m, L::make({0, 5, 1}, {3}, "i64"), L::no_tensor(), 1, -100, 0.0));
  STRATA_DIFF_BAD("cross_entropy negative target", L::cross_entropy(m, L::make({0, -2, 1}, {3}, "i64"), L::no_tensor(), 1, -100, 0.0));
  STRATA_DIFF_BAD("cross_entropy batch mismatch", L::cross_entropy(m, i, L::no_tensor(), 1, -100, 0.0));
  STRATA_DIFF_BAD("cross_entropy float target of wrong shape", L::cross_entropy(m, x, L::no_tensor(), 1, -100, 0.0));
  STRATA_DIFF_BAD("cross_entropy weight of wrong size", L::cross_entropy(m, L::make({0, 4, 1}, {3}, "i64"), L::make({1, 1}, {2}, "f32"), 1, -100, 0.0));
  STRATA_DIFF_BAD("cross_entropy label_smoothing above 1", L::cross_entropy(m, L::make({0, 4, 1}, {3}, "i64"), L::no_tensor(), 1, -100, 1.5));
  STRATA_DIFF_BAD("nll_loss 3-d target mismatch", L::nll_loss(x, L::make({0, 1}, {2}, "i64"), L::no_tensor(), 1, -100));
  STRATA_DIFF_BAD("mse_loss shapes not broadcastable", L::mse_loss(m, x, 1));
  STRATA_DIFF_BAD("bce_with_logits shape mismatch", L::bce_logits(m, x, L::no_tensor(), L::no_tensor(), 1));
  STRATA_DIFF_BAD("embedding index out of range", embedding(m, L::make({0, 3}, {2}, "i64")));
  STRATA_DIFF_BAD("embedding float indices", embedding(m, L::make({0, 1}, {2}, "f32")));
  STRATA_DIFF_BAD("layer_norm shape mismatch", layer_norm(x, std::vector<int64_t>{3}));
  STRATA_DIFF_BAD("dropout p above 1", dropout(x, 1.5, true));
  STRATA_DIFF_BAD("dropout negative p", dropout(x, -0.1, true));
  STRATA_DIFF_BAD("conv2d channel mismatch",
                  conv2d(L::make(ramp(32), {1, 2, 4, 4}, "f32"), L::make(ramp(27), {1, 3, 3, 3}, "f32")));
  STRATA_DIFF_BAD("conv2d kernel larger than input",
                  conv2d(L::make(ramp(8), {1, 2, 2, 2}, "f32"), L::make(ramp(18), {1, 2, 3, 3}, "f32")));
  STRATA_DIFF_BAD("conv2d groups not dividing channels",
                  conv2d(L::make(ramp(48), {1, 3, 4, 4}, "f32"), L::make(ramp(18), {2, 1, 3, 3}, "f32"), L::no_tensor(),
                         std::vector<int64_t>{1, 1}, std::vector<int64_t>{0, 0}, std::vector<int64_t>{1, 1}, 2));
  STRATA_DIFF_BAD("conv2d zero stride",
                  conv2d(L::make(ramp(32), {1, 2, 4, 4}, "f32"), L::make(ramp(18), {1, 2, 3, 3}, "f32"), L::no_tensor(),
                         std::vector<int64_t>{0, 1}));
  STRATA_DIFF_BAD("conv2d 3-d weight",
                  conv2d(L::make(ramp(32), {1, 2, 4, 4}, "f32"), L::make(ramp(18), {2, 3, 3}, "f32")));
  STRATA_DIFF_BAD("max_pool2d kernel larger than input", max_pool2d(L::make(ramp(8), {1, 2, 2, 2}, "f32"),
                                                                  std::vector<int64_t>{3, 3}));
  STRATA_DIFF_BAD("max_pool2d padding above half the kernel",
                  max_pool2d(L::make(ramp(32), {1, 2, 4, 4}, "f32"), std::vector<int64_t>{2, 2},
                             std::vector<int64_t>{2, 2}, std::vector<int64_t>{2, 2}));
  STRATA_DIFF_BAD("max_pool2d zero stride", max_pool2d(L::make(ramp(32), {1, 2, 4, 4}, "f32"),
                                                       std::vector<int64_t>{2, 2}, std::vector<int64_t>{0, 1}));
}

}  // namespace

void register_error_cases() {
  shape_errors();
  op_errors();
  nn_errors();
}

}  // namespace torch_diff
