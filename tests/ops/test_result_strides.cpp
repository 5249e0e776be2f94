// Tests for the layout of elementwise results (Note [Strides of elementwise results] in
// tensor/dim_order.h): results follow their inputs' order of dims as in LibTorch, the CPU
// loops walk permuted dense operands as one block, and values and gradients are unchanged.
#include "op_test_util.h"

#include <strata/autograd/autograd.h>
#include <strata/nn/optim.h>
#include <strata/ops/elementwise.h>
#include <strata/tensor/dim_order.h>

#include <limits>
#include <utility>

using namespace strata;

namespace {
std::vector<int64_t> strides_of(const Tensor& t) { return t.strides().vec(); }

// [3, 2] with strides [1, 3]: the transpose of a contiguous [2, 3] holding 0..5.
Tensor transposed() { return arange(6, kFloat32).reshape({2, 3}).t(); }
// [2, 3, 4, 5] holding 0..119 in logical order, laid out channels last.
Tensor channels_last() { return arange(120, kFloat32).reshape({2, 3, 4, 5}).contiguous(MemoryFormat::ChannelsLast); }
}  // namespace

TEST_CASE("result strides: unary, scalar and comparison results keep a transposed input's layout") {
  const Tensor t = transposed();
  REQUIRE(strides_of(t) == std::vector<int64_t>{1, 3});
  const Tensor c = t.contiguous();
  for (const Tensor& result : {exp(t), neg(t), relu(t), sigmoid(t), abs(t), t + 1.0, t * 2.0, pow(t, 2.0),
                               clamp(t, 1.0, 4.0), t.to(kInt64) + 1}) {
    CHECK(strides_of(result) == std::vector<int64_t>{1, 3});
  }
  CHECK(strides_of(gt(t, 2.0)) == std::vector<int64_t>{1, 3});
  CHECK(strides_of(logical_not(gt(t, 2.0))) == std::vector<int64_t>{1, 3});
  CHECK(strides_of(t.to(kInt32).exp()) == std::vector<int64_t>{1, 3});  // promoted to float, same layout
  // Values do not depend on the layout.
  CHECK(equal(exp(t), exp(c)));
  CHECK(equal(clamp(t, 1.0, 4.0), clamp(c, 1.0, 4.0)));
  CHECK(equal(gt(t, 2.0), gt(c, 2.0)));
  // A non-contiguous result behaves like LibTorch's: view refuses, reshape copies.
  CHECK_FALSE(exp(t).is_contiguous());
  CHECK(equal(exp(t).reshape({6}), exp(c).reshape({6})));
}

TEST_CASE("result strides: channels-last inputs give channels-last results") {
  const Tensor x = channels_last();
  const Tensor plain = x.contiguous();
  for (const Tensor& result : {relu(x), x + x, x * 2.0, x - plain, gt(x, 3.0), where(gt(x, 3.0), x, plain), gelu(x),
                               maximum(x, plain), clamp(x, 1.0, 50.0), pow(x, plain)}) {
    CHECK(result.is_contiguous(MemoryFormat::ChannelsLast));
    CHECK_FALSE(result.is_contiguous());
  }
  CHECK(equal(relu(x) + x * 2.0, relu(plain) + plain * 2.0));
  CHECK(equal(where(gt(x, 3.0), x, plain), where(gt(plain, 3.0), plain, plain)));
}

TEST_CASE("result strides: the first input that orders a pair of dims decides, as in TensorIterator") {
  const Tensor x = channels_last();
  const Tensor plain = x.contiguous();
  // Mixed layouts follow the first input.
  CHECK((x + plain).is_contiguous(MemoryFormat::ChannelsLast));
  CHECK((plain + x).is_contiguous());
  CHECK(gt(plain, x).is_contiguous());
  // where's condition comes first.
  CHECK(where(gt(plain, 3.0), x, x).is_contiguous());
  CHECK(where(gt(x, 3.0), plain, plain).is_contiguous(MemoryFormat::ChannelsLast));
  // An input broadcast along a dim has no say about it: a per-channel bias, first or second.
  const Tensor bias = arange(3, kFloat32).reshape({3, 1, 1});
  CHECK((bias + x).is_contiguous(MemoryFormat::ChannelsLast));
  CHECK((x * bias).is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(equal(bias + x, bias + plain));
  // A row broadcast over a transposed matrix: the matrix orders the pair.
  const Tensor t = transposed();
  const Tensor row = arange(2, kFloat32);
  CHECK(strides_of(row + t) == std::vector<int64_t>{1, 3});
  CHECK(strides_of(t + row) == std::vector<int64_t>{1, 3});
  CHECK(strides_of(t + t.contiguous()) == std::vector<int64_t>{1, 3});
  CHECK(strides_of(t.contiguous() + t) == std::vector<int64_t>{2, 1});
}

TEST_CASE("result strides: non-dense, expanded and permuted inputs") {
  // A strided slice of a transposed matrix is not dense; its order of dims is kept, densely.
  const Tensor y = arange(24, kFloat32).reshape({4, 6}).t();  // [6, 4], strides [1, 6]
  const Tensor s = y.slice(0, 0, 6, 2);                        // [3, 4], strides [2, 6]
  REQUIRE(strides_of(s) == std::vector<int64_t>{2, 6});
  CHECK(strides_of(exp(s)) == std::vector<int64_t>{1, 3});
  CHECK(equal(exp(s), exp(s.contiguous())));
  // A plain slice keeps the logical order: contiguous.
  CHECK(exp(arange(24, kFloat32).reshape({4, 6}).slice(1, 0, 6, 2)).is_contiguous());
  // An expanded input orders nothing along its repeats.
  const Tensor e = arange(3, kFloat32).reshape({3, 1}).expand({3, 4});
  CHECK(strides_of(exp(e)) == std::vector<int64_t>{4, 1});
  // Any permutation of a dense tensor is kept as it is.
  const Tensor p = arange(24, kFloat32).reshape({2, 3, 4}).permute({2, 0, 1});  // [4, 2, 3], strides [1, 12, 4]
  CHECK(strides_of(neg(p)) == std::vector<int64_t>{1, 12, 4});
  CHECK(strides_of(p + p) == std::vector<int64_t>{1, 12, 4});
  CHECK(equal(neg(p), neg(p.contiguous())));
  // 0-d and 1-d results are always contiguous.
  CHECK(exp(tensor({1.0f})).is_contiguous());
  CHECK(exp(tensor(2.0)).dim() == 0);
}

TEST_CASE("result strides: size-1 dims, overlaps and three inputs, as LibTorch 1.13 lays them out") {
  // Every expectation here was printed by LibTorch 1.13 for the same tensors.
  const auto strided = [](std::vector<int64_t> sizes, std::vector<int64_t> strides) {
    return empty_strided(sizes, strides).fill_(1);
  };
  CHECK(strides_of(exp(strided({3, 1, 2}, {2, 1, 8}))) == std::vector<int64_t>{1, 1, 3});  // a gap, a size-1 dim
  CHECK(strides_of(exp(strided({2, 2}, {1, 1}))) == std::vector<int64_t>{2, 1});  // overlapping: a tie stays
  CHECK(strides_of(exp(strided({2, 3}, {1, 1}))) == std::vector<int64_t>{1, 2});  // a tie: the smaller dim inside
  CHECK(strides_of(strided({3, 1, 2}, {1, 1, 3}) + ones({3, 1, 2})) == std::vector<int64_t>{1, 1, 3});
  CHECK(strides_of(ones({4, 1}) + strided({4, 3}, {1, 4})) == std::vector<int64_t>{1, 4});
  const Tensor condition = ones({2, 3, 4}, kBool).permute({2, 1, 0});
  CHECK(strides_of(where(condition, strided({4, 3, 2}, {1, 8, 4}), ones({4, 3, 2}))) ==
        std::vector<int64_t>{1, 4, 12});
  CHECK(strides_of(exp(ones({4, 6, 5}).permute({2, 0, 1}).slice(1, 0, 4, 2))) == std::vector<int64_t>{1, 30, 5});
  // cat takes the memory format all its inputs suggest, else contiguous.
  const Tensor x = channels_last(), plain = x.contiguous();
  CHECK(strides_of(cat({x, x}, 1)) == std::vector<int64_t>{120, 1, 30, 6});
  CHECK(strides_of(cat({x, x}, 0)) == std::vector<int64_t>{60, 1, 15, 3});
  CHECK(strides_of(cat({x, x}, 3)) == std::vector<int64_t>{120, 1, 30, 3});
  CHECK(strides_of(cat({x, plain}, 1)) == std::vector<int64_t>{120, 20, 5, 1});
  CHECK(strides_of(cat({plain, x}, 1)) == std::vector<int64_t>{120, 20, 5, 1});
  CHECK(strides_of(cat({x, empty({0}), x}, 1)) == std::vector<int64_t>{120, 20, 5, 1});
  CHECK(equal(cat({x, x}, 1), cat({plain, plain}, 1)));
  CHECK(equal(cat({x, x}, 3), cat({plain, plain}, 3)));
  // Contiguous inputs with odd strides on size-1 dims give a contiguous result.
  CHECK(strides_of(exp(strided({2, 1, 3}, {3, 1, 1}))) == std::vector<int64_t>{3, 3, 1});
  CHECK(strides_of(exp(strided({3, 1, 2}, {1, 1, 3}))) == std::vector<int64_t>{1, 1, 3});
  CHECK(strides_of(exp(strided({2, 3, 1}, {1, 2, 1}))) == std::vector<int64_t>{1, 2, 1});
}

TEST_CASE("result strides: the rule on stride lists, and out= / in-place / Meta") {
  // innermost_first on plain lists: the first operand decides, stride 0 defers to the next.
  const std::vector<int64_t> sizes{2, 3, 4};
  const std::vector<int64_t> first{12, 1, 3}, second{0, 4, 1};
  const std::vector<IntArrayRef> both{first, second};
  CHECK(detail::innermost_first(sizes, both).vec() == std::vector<int64_t>{1, 2, 0});
  const std::vector<int64_t> broadcast_first{0, 0, 1}, transposed_second{1, 2, 6};
  const std::vector<IntArrayRef> deferring{broadcast_first, transposed_second};
  // Dim 2 is only ordered against dims 0 and 1 by the second operand: it goes outermost.
  CHECK(detail::innermost_first(sizes, deferring).vec() == std::vector<int64_t>{0, 1, 2});

  // An empty out= gets the result's layout; an out= of the right shape keeps its own.
  const Tensor t = transposed();
  const Tensor fresh = empty({0});
  neg_out(fresh, t);
  CHECK(strides_of(fresh) == std::vector<int64_t>{1, 3});
  const Tensor given = empty({3, 2});
  add_out(given, t, t);
  CHECK(given.is_contiguous());
  CHECK(equal(given, t.contiguous() * 2.0));
  // In-place ops write self as it is.
  const Tensor self = t.clone();
  REQUIRE(strides_of(self) == std::vector<int64_t>{1, 3});
  self.mul_(2.0);
  CHECK(strides_of(self) == std::vector<int64_t>{1, 3});
  // Meta results have the strides CPU results have (one shape function).
  const Tensor meta = empty_strided({3, 2}, {1, 3}, TensorOptions().device(kMeta));
  CHECK(strides_of(exp(meta)) == std::vector<int64_t>{1, 3});
  CHECK(strides_of(meta + empty({3, 2}, TensorOptions().device(kMeta))) == std::vector<int64_t>{1, 3});
  const Tensor meta_cl = empty({2, 3, 4, 5}, TensorOptions().device(kMeta), MemoryFormat::ChannelsLast);
  CHECK(relu(meta_cl).is_contiguous(MemoryFormat::ChannelsLast));
}

TEST_CASE("result strides: gradients through permuted results match the contiguous ones") {
  const Tensor t = transposed().to(kFloat64);
  const Tensor leaf = t.detach().requires_grad_();
  const Tensor plain = t.contiguous().detach().requires_grad_();
  (leaf.exp() * leaf + leaf.tanh()).sum().backward();
  (plain.exp() * plain + plain.tanh()).sum().backward();
  CHECK(allclose(leaf.grad(), plain.grad()));
  testing::check_gradcheck([](const tensor_list& in) { return tensor_list{sigmoid(in[0]) * in[0].t().t()}; },
                           {transposed().to(kFloat64).requires_grad_()});
  const Tensor x = channels_last().to(kFloat64) / 100.0;
  REQUIRE(x.is_contiguous(MemoryFormat::ChannelsLast));
  testing::check_gradcheck([](const tensor_list& in) { return tensor_list{relu(in[0]) * in[0] + in[0].exp()}; },
                           {x.detach().requires_grad_()});
}

TEST_CASE("result strides: the CPU loops walk operands sharing a permuted dense layout as one row") {
  using detail::make_geometry;
  // Channels last everywhere: one row of every element, stride one element.
  const Tensor x = channels_last();
  const auto one = make_geometry<2>(x.sizes(), {x.strides(), x.strides()}, {4, 4});
  CHECK(one.sizes.vec() == std::vector<int64_t>{120});
  CHECK(one.strides[0].vec() == std::vector<int64_t>{4});
  // The output orders the loop: contiguous out, transposed input...
  const Tensor t = transposed();
  const std::vector<int64_t> contiguous{2, 1};
  const auto by_out = make_geometry<2>(t.sizes(), {contiguous, t.strides()}, {4, 4});
  CHECK(by_out.sizes.vec() == std::vector<int64_t>{3, 2});
  CHECK(by_out.strides[0].vec() == std::vector<int64_t>{8, 4});
  CHECK(by_out.strides[1].vec() == std::vector<int64_t>{4, 12});
  // ...and transposed out, contiguous input: the transposed order.
  const auto by_transposed_out = make_geometry<2>(t.sizes(), {t.strides(), contiguous}, {4, 4});
  CHECK(by_transposed_out.sizes.vec() == std::vector<int64_t>{2, 3});
  CHECK(by_transposed_out.strides[0].vec() == std::vector<int64_t>{12, 4});
  CHECK(by_transposed_out.strides[1].vec() == std::vector<int64_t>{4, 8});
  // Values through every loop flavour (unary, binary, blockwise, compare, where) in that layout,
  // large enough for the thread pool and the tiled copy.
  const Tensor big = arange(3 * 40 * 50, kFloat32).reshape({3, 40, 50}).permute({2, 0, 1}) / 1000.0;
  const Tensor ref = big.contiguous();
  CHECK(equal(neg(big), neg(ref)));
  CHECK(equal(big * big + 1.0, ref * ref + 1.0));
  CHECK(allclose(exp(big), exp(ref)));
  CHECK(equal(where(gt(big, 3.0), big, ref), where(gt(ref, 3.0), ref, ref)));
  CHECK(equal((big + ref).contiguous(), ref * 2.0));
  CHECK(equal(big.to(kFloat16).to(kFloat32), ref.to(kFloat16).to(kFloat32)));
}

TEST_CASE("result strides: .grad is laid out like its leaf (LibTorch's gradient layout contract)") {
  // A channels-last leaf gets a channels-last .grad, even from a gradient that arrives
  // contiguous (the expanded ones of sum's backward times 2).
  const Tensor x = channels_last().detach().requires_grad_();
  (x * 2.0).sum().backward();
  CHECK(x.grad().is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(equal(x.grad(), full({2, 3, 4, 5}, 2.0f)));
  // A transposed leaf keeps its transposed gradient as it is.
  const Tensor t = transposed().detach().requires_grad_();
  t.exp().sum().backward();
  CHECK(strides_of(t.grad()) == std::vector<int64_t>{1, 3});
  CHECK(allclose(t.grad(), exp(t.detach())));
  // A contiguous leaf gets a contiguous .grad from a transposed gradient; a non-dense leaf too.
  const Tensor c = zeros({3, 2}).requires_grad_();
  (c * transposed()).sum().backward();
  CHECK(c.grad().is_contiguous());
  CHECK(equal(c.grad(), transposed()));
  const Tensor base = zeros({3, 4});
  const Tensor sliced = base.slice(1, 0, 4, 2).detach().requires_grad_();
  (sliced * 3.0).sum().backward();
  CHECK(sliced.grad().is_contiguous());
  // Accumulating a second backward keeps the layout.
  (x * 1.0).sum().backward();
  CHECK(x.grad().is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(equal(x.grad(), full({2, 3, 4, 5}, 3.0f)));
  // Under create_graph the copy into the leaf's layout is differentiable.
  const Tensor y = channels_last().detach().requires_grad_();
  (y * y).sum().backward({}, false, /*create_graph=*/true);
  CHECK(y.grad().is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(y.grad().requires_grad());
  CHECK(equal(y.grad().detach(), channels_last() * 2.0));
  const Tensor w = transposed().detach().requires_grad_();
  (w * ones({3, 2})).sum().backward({}, false, /*create_graph=*/true);  // a contiguous gradient
  CHECK(strides_of(w.grad()) == std::vector<int64_t>{1, 3});
  const Tensor second = autograd::grad({(w.grad() * w).sum()}, {w})[0];  // d/dw of sum(grad * w)
  CHECK(equal(second, ones({3, 2})));
  // A .grad with history refers back to its leaf (LibTorch's create_graph cycle): break it.
  y.set_grad(Tensor());
  w.set_grad(Tensor());
}

TEST_CASE("result strides: an optimizer steps a channels-last parameter in place, as a contiguous one") {
  const Tensor values = channels_last() / 100.0;
  const Tensor p = values.clone().detach().requires_grad_();
  const Tensor q = values.contiguous().detach().requires_grad_();
  REQUIRE(p.is_contiguous(MemoryFormat::ChannelsLast));
  const void* p_data = p.data_ptr();
  optim::SGD sgd_p({p}, optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD sgd_q({q}, optim::SGDOptions(0.1).momentum(0.9));
  for (int step = 0; step < 3; ++step) {
    for (const auto& [param, sgd] : {std::pair{p, &sgd_p}, std::pair{q, &sgd_q}}) {
      sgd->zero_grad();
      (param * param).sum().backward();
      sgd->step();
    }
  }
  CHECK(p.is_contiguous(MemoryFormat::ChannelsLast));
  CHECK(p.data_ptr() == p_data);
  CHECK(allclose(p, q, 1e-6, 1e-7));
}

TEST_CASE("result strides: reductions read a dense input of another layout in memory order, with the same results") {
  manual_seed(5);
  const Tensor plain = randn({4, 6, 5, 7}, kFloat64);
  const Tensor x = plain.contiguous(MemoryFormat::ChannelsLast);
  // Sums, means, products and moments may fold in memory order: equal up to rounding.
  CHECK(allclose(mean(x, {2, 3}, true), mean(plain, {2, 3}, true)));  // a global average pool
  CHECK(allclose(sum(x, {1}), sum(plain, {1})));
  CHECK(allclose(sum(x), sum(plain)));
  CHECK(allclose(sum(x, {0, 2}), sum(plain, {0, 2})));  // kept dims C, W; not one run in memory: copied
  CHECK(allclose(prod(x / 2.0 + 1.0, 1), prod(plain / 2.0 + 1.0, 1)));
  CHECK(allclose(var(x, {2, 3}), var(plain, {2, 3})));
  CHECK(sum(x, {1}).is_contiguous());
  // Positions stay row-major flat indices: max over one dim, and argmax over all dims (whose
  // memory order differs from the logical one, so that input is copied).
  const auto [values, indices] = max(x, 1);
  const auto [plain_values, plain_indices] = max(plain, 1);
  CHECK(equal(values, plain_values));
  CHECK(equal(indices, plain_indices));
  CHECK(equal(argmax(x), argmax(plain)));
  // A transposed matrix along either dim.
  const Tensor t = transposed().to(kFloat64);
  CHECK(equal(sum(t, {0}), sum(t.contiguous(), {0})));
  CHECK(equal(sum(t, {1}), sum(t.contiguous(), {1})));
  CHECK(equal(argmax(t, 0), argmax(t.contiguous(), 0)));
  // Integer sums are exact in any order.
  const Tensor ints = arange(4 * 6 * 5 * 7, kInt64).reshape({4, 6, 5, 7});
  CHECK(equal(sum(ints.contiguous(MemoryFormat::ChannelsLast)), sum(ints)));
  CHECK(equal(sum(ints.contiguous(MemoryFormat::ChannelsLast), {2, 3}), sum(ints, {2, 3})));
}

namespace {
struct ConvCase {
  std::vector<int64_t> input, weight, stride, padding, dilation;
  int64_t groups;
  bool bias;
};
}  // namespace

TEST_CASE("result strides: conv2d on channels-last tensors computes in NHWC, with the NCHW values and gradients") {
  manual_seed(21);
  const std::vector<ConvCase> cases = {
      {{2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},
      {{2, 4, 9, 8}, {6, 2, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 2, true},  // groups, stride, dilation
      {{1, 6, 5, 5}, {6, 1, 3, 3}, {1, 1}, {2, 2}, {1, 1}, 6, false},  // depthwise, wide padding
      {{3, 8, 4, 4}, {5, 8, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true},  // pointwise
      {{2, 4, 6, 6}, {4, 2, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 2, false},  // pointwise with groups
      {{1, 3, 10, 7}, {2, 3, 4, 3}, {3, 2}, {0, 1}, {2, 1}, 1, true},
  };
  for (const ConvCase& c : cases) {
    INFO("input ", IntArrayRef(c.input), " weight ", IntArrayRef(c.weight), " groups ", c.groups);
    const Tensor x = randn(c.input, kFloat64), w = randn(c.weight, kFloat64);
    const std::optional<Tensor> b = c.bias ? std::optional<Tensor>(randn({c.weight[0]}, kFloat64)) : std::nullopt;
    const Tensor expected = conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
    CHECK(expected.is_contiguous());
    for (const bool input_cl : {true, false}) {
      const Tensor xi = input_cl ? x.contiguous(MemoryFormat::ChannelsLast) : x;
      const Tensor wi = input_cl ? w : w.contiguous(MemoryFormat::ChannelsLast);  // either one decides
      const Tensor y = conv2d(xi, wi, b, c.stride, c.padding, c.dilation, c.groups);
      // A weight with one input channel or a 1x1 kernel is laid out the same either way and
      // suggests contiguous (as in LibTorch): then the input decides alone.
      const bool channels_last = xi.suggest_memory_format() == MemoryFormat::ChannelsLast ||
                                 wi.suggest_memory_format() == MemoryFormat::ChannelsLast;
      CHECK(channels_last == (input_cl || (c.weight[1] > 1 && c.weight[2] * c.weight[3] > 1)));
      CHECK(y.is_contiguous(channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous));
      CHECK(allclose(y, expected, 1e-10, 1e-12));
      // Gradients through the NHWC backward, against the NCHW one.
      const Tensor xl = xi.detach().requires_grad_(), wl = wi.detach().requires_grad_();
      const Tensor xp = x.detach().requires_grad_(), wp = w.detach().requires_grad_();
      const Tensor seed = randn(expected.sizes(), kFloat64);
      (conv2d(xl, wl, b, c.stride, c.padding, c.dilation, c.groups) * seed).sum().backward();
      (conv2d(xp, wp, b, c.stride, c.padding, c.dilation, c.groups) * seed).sum().backward();
      CHECK(allclose(xl.grad(), xp.grad(), 1e-10, 1e-12));
      CHECK(allclose(wl.grad(), wp.grad(), 1e-10, 1e-12));
      CHECK(xl.grad().is_contiguous(xl.suggest_memory_format()));  // the layout contract
      CHECK(wl.grad().is_contiguous(wl.suggest_memory_format()));
    }
  }
  // float32 through the same path, and a gradcheck of the NHWC kernels.
  const Tensor xf = randn({2, 3, 6, 5}).contiguous(MemoryFormat::ChannelsLast), wf = randn({4, 3, 3, 3});
  CHECK(allclose(conv2d(xf, wf, {}, {1, 1}, {1, 1}), conv2d(xf.contiguous(), wf, {}, {1, 1}, {1, 1}), 1e-4, 1e-5));
  testing::check_gradcheck(
      [](const tensor_list& in) { return tensor_list{conv2d(in[0], in[1], in[2], {2, 1}, {1, 1}, {1, 1}, 1)}; },
      {randn({1, 2, 5, 4}, kFloat64).contiguous(MemoryFormat::ChannelsLast).requires_grad_(),
       randn({3, 2, 3, 2}, kFloat64).requires_grad_(), randn({3}, kFloat64).requires_grad_()});
  // LibTorch 1.13's layouts: channels last when the input or the weight is.
  const Tensor x = randn({2, 3, 6, 6}), w = randn({4, 3, 3, 3});
  CHECK(strides_of(conv2d(x.contiguous(MemoryFormat::ChannelsLast), w)) == std::vector<int64_t>{64, 1, 16, 4});
  CHECK(strides_of(conv2d(x, w.contiguous(MemoryFormat::ChannelsLast))) == std::vector<int64_t>{64, 1, 16, 4});
  CHECK(strides_of(conv2d(x, w)) == std::vector<int64_t>{64, 16, 4, 1});
}

TEST_CASE("result strides: max_pool2d on channels-last input pools in NHWC, with the same values and indices") {
  manual_seed(22);
  Tensor x = randn({2, 5, 9, 8});
  x.data_ptr<float>()[17] = std::numeric_limits<float>::quiet_NaN();  // NaN wins its window
  x.data_ptr<float>()[200] = std::numeric_limits<float>::quiet_NaN();
  x.data_ptr<float>()[202] = std::numeric_limits<float>::quiet_NaN();  // two in one window row
  x.data_ptr<float>()[210] = std::numeric_limits<float>::quiet_NaN();  // and in the next row
  const Tensor cl = x.contiguous(MemoryFormat::ChannelsLast);
  struct PoolCase {
    std::vector<int64_t> kernel, stride, padding, dilation;
    bool ceil;
  };
  for (const PoolCase& c : {PoolCase{{2, 2}, {}, {0, 0}, {1, 1}, false}, PoolCase{{3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
                            PoolCase{{3, 2}, {1, 2}, {1, 0}, {2, 1}, false},
                            PoolCase{{3, 3}, {1, 1}, {0, 0}, {1, 1}, false}, PoolCase{{2, 3}, {2, 1}, {0, 0}, {1, 2}, true}}) {
    const auto [values, indices] = max_pool2d_with_indices(cl, c.kernel, c.stride, c.padding, c.dilation, c.ceil);
    const auto [plain_values, plain_indices] =
        max_pool2d_with_indices(x, c.kernel, c.stride, c.padding, c.dilation, c.ceil);
    CHECK(values.is_contiguous(MemoryFormat::ChannelsLast));
    CHECK(indices.is_contiguous(MemoryFormat::ChannelsLast));
    const auto is_nan = [](const Tensor& t) { return ne(t, t); };
    const auto without_nan = [&](const Tensor& t) { return where(is_nan(t), zeros_like(t), t); };
    CHECK(equal(is_nan(values), is_nan(plain_values)));
    CHECK(is_nan(values).sum().item<int64_t>() > 0);
    CHECK(equal(without_nan(values), without_nan(plain_values)));
    CHECK(equal(indices, plain_indices));
    const Tensor leaf = cl.detach().requires_grad_(), plain = x.detach().requires_grad_();
    const Tensor seed = randn(values.sizes());
    (max_pool2d(leaf, c.kernel, c.stride, c.padding, c.dilation, c.ceil) * seed).sum().backward();
    (max_pool2d(plain, c.kernel, c.stride, c.padding, c.dilation, c.ceil) * seed).sum().backward();
    CHECK(leaf.grad().is_contiguous(MemoryFormat::ChannelsLast));
    CHECK(allclose(leaf.grad(), plain.grad()));
  }
  // LibTorch 1.13's layout for a [2, 3, 6, 6] input pooled by 2.
  const Tensor small = randn({2, 3, 6, 6}).contiguous(MemoryFormat::ChannelsLast);
  CHECK(strides_of(max_pool2d(small, {2, 2})) == std::vector<int64_t>{27, 1, 9, 3});
}
