// torch_diff cases: shape ops and views, indexing, in-place ops, with their gradients.
#include "torch_diff.h"

namespace torch_diff {
namespace {

#define STRATA_DIFF_VIEW(name, shape, expr)                          \
  add_case("shape " name, [](auto lib) {                             \
    using L = decltype(lib);                                         \
    auto x = L::make(ramp(count(shape)), shape, "f64", true);       \
    return with_grads<L>(expr, {x});                                 \
  })

void view_cases() {
  static const Shape s234 = {2, 3, 4};
  STRATA_DIFF_VIEW("view(-1,4)", s234, x.view({-1, 4}));
  STRATA_DIFF_VIEW("view(-1)", s234, x.view({-1}));
  STRATA_DIFF_VIEW("view(2,-1,-1)", s234, x.view({2, -1, -1}));
  STRATA_DIFF_VIEW("view(5,-1)", s234, x.view({5, -1}));
  STRATA_DIFF_VIEW("reshape of transpose", s234, x.transpose(0, 2).reshape({4, 6}));
  STRATA_DIFF_VIEW("view of transpose", s234, x.transpose(0, 2).view({4, 6}));
  STRATA_DIFF_VIEW("flatten(1)", s234, x.flatten(1));
  STRATA_DIFF_VIEW("flatten(0,-2)", s234, x.flatten(0, -2));
  STRATA_DIFF_VIEW("flatten(2,1)", s234, x.flatten(2, 1));
  STRATA_DIFF_VIEW("squeeze()", (Shape{1, 3, 1}), x.squeeze());
  STRATA_DIFF_VIEW("squeeze(0)", (Shape{1, 3, 1}), x.squeeze(0));
  STRATA_DIFF_VIEW("squeeze(1) not 1", (Shape{1, 3, 1}), x.squeeze(1));
  STRATA_DIFF_VIEW("squeeze(-1)", (Shape{1, 3, 1}), x.squeeze(-1));
  STRATA_DIFF_VIEW("unsqueeze(-1)", s234, x.unsqueeze(-1));
  STRATA_DIFF_VIEW("unsqueeze(3)", s234, x.unsqueeze(3));
  STRATA_DIFF_VIEW("unsqueeze(4)", s234, x.unsqueeze(4));
  STRATA_DIFF_VIEW("unsqueeze(-4)", s234, x.unsqueeze(-4));
  STRATA_DIFF_VIEW("permute(2,0,1)", s234, x.permute({2, 0, 1}));
  STRATA_DIFF_VIEW("permute(-1,0,1)", s234, x.permute({-1, 0, 1}));
  STRATA_DIFF_VIEW("permute repeated", s234, x.permute({0, 0, 1}));
  STRATA_DIFF_VIEW("transpose(-1,0)", s234, x.transpose(-1, 0));
  STRATA_DIFF_VIEW("t() 2d", (Shape{2, 3}), x.t());
  STRATA_DIFF_VIEW("t() 1d", (Shape{3}), x.t());
  STRATA_DIFF_VIEW("t() 3d", s234, x.t());
  STRATA_DIFF_VIEW("expand(-1,3)", (Shape{2, 1}), x.expand({-1, 3}));
  STRATA_DIFF_VIEW("expand(2,2,3) new dim", (Shape{2, 1}), x.expand({2, 2, 3}));
  STRATA_DIFF_VIEW("expand bad", (Shape{2, 1}), x.expand({3, 3}));
  STRATA_DIFF_VIEW("expand -1 new dim", (Shape{2, 1}), x.expand({-1, 2, 1}));
  STRATA_DIFF_VIEW("slice(1,1,3)", s234, x.slice(1, 1, 3));
  STRATA_DIFF_VIEW("slice(2,-3,100,2)", s234, x.slice(2, -3, 100, 2));
  STRATA_DIFF_VIEW("slice(0,5,1)", s234, x.slice(0, 5, 1));
  STRATA_DIFF_VIEW("slice(0,-100,-50)", s234, x.slice(0, -100, -50));
  STRATA_DIFF_VIEW("slice step 0", s234, x.slice(0, 0, 2, 0));
  STRATA_DIFF_VIEW("slice step -1", s234, x.slice(0, 0, 2, -1));
  STRATA_DIFF_VIEW("select(1,-1)", s234, x.select(1, -1));
  STRATA_DIFF_VIEW("select(1,3)", s234, x.select(1, 3));
  STRATA_DIFF_VIEW("narrow(2,-2,2)", s234, x.narrow(2, -2, 2));
  STRATA_DIFF_VIEW("narrow(2,3,2)", s234, x.narrow(2, 3, 2));
  STRATA_DIFF_VIEW("chunk(3,2)", s234, cat(x.chunk(3, 2), 0));
  STRATA_DIFF_VIEW("chunk(5,2) count", s234, L::make({static_cast<double>(x.chunk(5, 2).size())}, {}, "f64"));
  STRATA_DIFF_VIEW("chunk(4,1) count", (Shape{2, 6}), L::make({static_cast<double>(x.chunk(4, 1).size())}, {}, "f64"));
  STRATA_DIFF_VIEW("split(3,2)", s234, x.split(3, 2)[1]);
  STRATA_DIFF_VIEW("split(0,1) error", s234, x.split(0, 1)[0]);
  STRATA_DIFF_VIEW("split_with_sizes", s234, cat(x.split_with_sizes({1, 3}, 2), 1));
  STRATA_DIFF_VIEW("stack dim -1", s234, stack(TensorList<L>{x, x * 2}, -1));
  STRATA_DIFF_VIEW("stack dim 3", s234, stack(TensorList<L>{x, x * 2}, 3));
  STRATA_DIFF_VIEW("cat dim -1", s234, cat(TensorList<L>{x, x.slice(2, 0, 1)}, -1));
  STRATA_DIFF_VIEW("cat skips [0]", s234, cat(TensorList<L>{x.flatten(), L::make({}, {0}, "f64")}, 0));
  STRATA_DIFF_VIEW("cat rank mismatch", s234, cat(TensorList<L>{x, x.flatten()}, 0));
  STRATA_DIFF_VIEW("view then in-place", s234, [&] {
    auto y = x * 1;
    y.view({-1}).narrow(0, 2, 3).mul_(2);
    return y;
  }());
  STRATA_DIFF_VIEW("transpose then in-place add_", s234, [&] {
    auto y = x.clone();
    y.transpose(0, 1).select(0, 1).add_(y.select(1, 0));
    return y;
  }());
  STRATA_DIFF_VIEW("as_strided overlapping", (Shape{6}), as_strided(x, {3, 3}, {1, 1}));
}

void index_cases() {
  add_case("index index_select negative index", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{L::make(ramp(6), {2, 3}, "f64").index_select(1, L::make({-1}, {1}, "i64"))};
  });
  add_case("index index_select repeated grad", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(12), {3, 4}, "f64", true);
    return with_grads<L>(x.index_select(1, L::make({3, 0, 3, 3}, {4}, "i64")), {x});
  });
  add_case("index index_select int32 index", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(12), {3, 4}, "f64", true);
    return with_grads<L>(x.index_select(0, L::make({2, 0}, {2}, "i32")), {x});
  });
  add_case("index index_select 0-d index", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(12), {3, 4}, "f64", true);
    return with_grads<L>(x.index_select(0, L::make({2}, {}, "i64")), {x});
  });
  add_case("index gather", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(12), {3, 4}, "f64", true);
    return with_grads<L>(x.gather(1, L::make({0, 0, 3, 1, 2, 2}, {3, 2}, "i64")), {x});
  });
  add_case("index gather smaller index", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(12), {3, 4}, "f64", true);
    return with_grads<L>(x.gather(0, L::make({2, 1, 0}, {1, 3}, "i64")), {x});
  });
  add_case("index gather out of range", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{L::make(ramp(12), {3, 4}, "f64").gather(1, L::make({4}, {1, 1}, "i64"))};
  });
  add_case("index scatter_add", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(12), {3, 4}, "f64", true);
    auto src = L::make(ramp(6, 2), {2, 3}, "f64", true);
    auto i = L::make({0, 1, 0, 2, 2, 2}, {2, 3}, "i64");
    return with_grads<L>(x.scatter_add(0, i, src), {x, src});
  });
  add_case("index index_add alpha", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(12), {3, 4}, "f64", true);
    auto src = L::make(ramp(6, 2), {3, 2}, "f64", true);
    auto i = L::make({3, 3}, {2}, "i64");
    return with_grads<L>(x.index_add(1, i, src, 2.5), {x, src});
  });
  add_case("index masked_fill broadcast mask", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(12), {3, 4}, "f64", true);
    auto m = L::make({1, 0, 0, 1}, {4}, "bool");
    return with_grads<L>(x.masked_fill(m, -kInf), {x});
  });
  add_case("index masked_fill tensor value grad", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(12), {3, 4}, "f64", true);
    auto v = L::make({2.5}, {}, "f64", true);
    auto m = L::make({1, 0, 0, 1}, {4}, "bool");
    return with_grads<L>(x.masked_fill(m, v), {x, v});
  });
  add_case("index masked_fill int mask", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{L::make(ramp(4), {4}, "f64").masked_fill(L::make({1, 0, 0, 1}, {4}, "u8"), 1)};
  });
  add_case("index masked_fill float value into int", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{L::make({1, 2, 3, 4}, {4}, "i64").masked_fill(L::make({1, 0, 0, 1}, {4}, "bool"), 2.7)};
  });
  add_case("index where scalar-ish promotion", [](auto lib) {
    using L = decltype(lib);
    auto c = L::make({1, 0, 1}, {3}, "bool");
    return TensorList<L>{where(c, L::make({1, 2, 3}, {3}, "i32"), L::make({0.5}, {}, "f64")),
                         where(c, L::make({1, 2, 3}, {3}, "f16"), L::make({7, 8, 9}, {3}, "i64"))};
  });
  add_case("index where non-bool condition", [](auto lib) {
    using L = decltype(lib);
    auto c = L::make({1, 0, 2}, {3}, "u8");
    return TensorList<L>{where(c, L::make({1, 2, 3}, {3}, "f32"), L::make({4, 5, 6}, {3}, "f32"))};
  });
}

void inplace_cases() {
  add_case("inplace add_ float into int", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make({1, 2, 3}, {3}, "i64");
    x.add_(L::make({0.5, 0.5, 0.5}, {3}, "f32"));
    return TensorList<L>{x};
  });
  add_case("inplace add_ float scalar into int", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make({1, 2, 3}, {3}, "i64");
    x.add_(1.5);
    return TensorList<L>{x};
  });
  add_case("inplace mul_ int into float16", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make({1, 2, 3}, {3}, "f16");
    x.mul_(L::make({2, 3, 4}, {3}, "i64"));
    return TensorList<L>{x};
  });
  add_case("inplace div_ int by int", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make({1, 2, 3}, {3}, "i64");
    x.div_(2);
    return TensorList<L>{x};
  });
  add_case("inplace add_ broadcast into smaller self", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make({1, 2, 3}, {3}, "f32");
    x.add_(L::make(ramp(6), {2, 3}, "f32"));
    return TensorList<L>{x};
  });
  add_case("inplace add_ on expanded self", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make({1, 2, 3}, {3}, "f32").expand({2, 3});
    x.add_(L::make(ramp(6), {2, 3}, "f32"));
    return TensorList<L>{x};
  });
  add_case("inplace add_ overlapping self and other", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make({1, 2, 3, 4, 5}, {5}, "f32");
    x.slice(0, 1, 5).add_(x.slice(0, 0, 4));
    return TensorList<L>{x};
  });
  add_case("inplace relu_ clamp_ grad through clone", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {6}, "f64", true);
    auto y = x.clone();
    y.relu_();
    y.clamp_(L::none(), 0.3);
    return with_grads<L>(y, {x});
  });
  add_case("inplace on leaf requiring grad", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {6}, "f64", true);
    x.mul_(2);
    return TensorList<L>{x};
  });
  add_case("inplace fill_ zero_ with grad", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {6}, "f64", true);
    auto y = x * 2;
    y.slice(0, 0, 2).zero_();
    y.slice(0, 4, 6).fill_(3);
    return with_grads<L>(y, {x});
  });
  add_case("inplace fill_ with 0-d tensor grad", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {6}, "f64", true);
    auto y = x * 2;
    y.slice(0, 4, 6).fill_(3.5);
    y.slice(0, 0, 1).fill_(kNaN);
    return with_grads<L>(y, {x});
  });
  add_case("inplace copy_ broadcast and dtype", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f32");
    x.copy_(L::make({1, 2, 3}, {3}, "i64"));
    return TensorList<L>{x};
  });
  add_case("inplace copy_ grad", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto s = L::make({1, 2, 3}, {3}, "f32", true);
    auto y = x * 1;
    y.select(0, 1).copy_(s);
    return with_grads<L>(y, {x, s});
  });
}

}  // namespace

void register_shape_cases() {
  view_cases();
  index_cases();
  inplace_cases();
}

}  // namespace torch_diff
