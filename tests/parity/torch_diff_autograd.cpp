// torch_diff cases: autograd semantics. In-place ops on views of non-leaves (gradients reaching
// the base and the other operand), the errors for in-place changes autograd cannot follow,
// requires_grad and is_leaf of results, hooks and retain_grad, gradient accumulation, backward's
// arguments. Custom Functions are in torch_diff_function.cpp.
#include "torch_diff.h"

namespace torch_diff {
namespace {

// autograd::grad of one output with a given gradient, in either library.
std::vector<strata::Tensor> grad_with(const strata::Tensor& output, const strata::Tensor& input,
                                      const strata::Tensor& grad_output) {
  return strata::autograd::grad({output}, {input}, {grad_output});
}
std::vector<torch::Tensor> grad_with(const torch::Tensor& output, const torch::Tensor& input,
                                     const torch::Tensor& grad_output) {
  return torch::autograd::grad({output}, {input}, {grad_output});
}

// ---- in-place ops on views ----------------------------------------------------------------------

void view_inplace_cases() {
  add_case("autograd view mul_ on transposed view of a non-leaf", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto w = L::make(ramp(6, 0.4), {3, 2}, "f64", true);
    auto y = x * 1;
    y.t().mul_(w);
    return with_grads<L>(y, {x, w});
  });
  add_case("autograd view mul_ on a view of a view", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(12), {4, 3}, "f64", true);
    auto s = L::make({2.0, -3.0}, {2}, "f64", true);
    auto y = x * 1;
    auto v = y.slice(0, 1, 3);
    v.select(1, 0).mul_(s);
    return with_grads<L>(y, {x, s});
  });
  add_case("autograd view of a view modified, the outer view used", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(12), {3, 4}, "f64", true);
    auto k = L::make(ramp(6, 0.7), {2, 3}, "f64", true);
    auto y = x * 1;
    auto v = y.narrow(1, 1, 2);
    v.t().mul_(k);
    return with_grads<L>(v, {x, k});
  });
  add_case("autograd view used after its base is modified", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto w = L::make({0.5, -2.0, 3.0}, {3}, "f64", true);
    auto y = x * 1;
    auto v = y.select(0, 0);
    y.mul_(w);
    return with_grads<L>(v * 3, {x, w});
  });
  add_case("autograd view modified by another row of its base", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto y = x * 1;
    y.select(0, 1).mul_(y.select(0, 0));
    return with_grads<L>(y, {x});
  });
  add_case("autograd view multiplied by itself in place", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto y = x * 1;
    auto v = y.select(0, 0);
    v.mul_(v);
    return with_grads<L>(y, {x});
  });
  add_case("autograd view two in-place ops on overlapping views", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(12), {3, 4}, "f64", true);
    auto y = x.exp();
    y.slice(0, 0, 2).mul_(2);
    y.slice(1, 1, 3).add_(y.slice(1, 2, 4).detach());
    y.select(1, 3).div_(x.select(1, 0));
    return with_grads<L>(y, {x});
  });
  add_case("autograd view in-place on a view of a leaf", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    x.select(0, 0).mul_(2);
    return TensorList<L>{x};
  });
  add_case("autograd view in-place on a split output", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {6}, "f64", true);
    auto y = x * 1;
    auto parts = y.split(2);
    parts[1].mul_(2);
    return with_grads<L>(y, {x});
  });
  add_case("autograd view in-place on a chunk output", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {6}, "f64", true);
    auto parts = (x * 1).chunk(3);
    parts[0].add_(1);
    return with_grads<L>(parts[0], {x});
  });
  add_case("autograd view made under no_grad modified with grad on", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto y = x * 1;
    typename L::Tensor v;
    {
      typename L::NoGrad no_grad;
      v = y.select(0, 0);
    }
    v.mul_(2);
    return with_grads<L>(y, {x});
  });
  add_case("autograd view made under no_grad of a leaf used with grad on", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto w = L::make(ramp(6, 0.5), {3, 2}, "f64", true);
    typename L::Tensor v;
    {
      typename L::NoGrad no_grad;
      v = x.t();
    }
    auto f = flags<L>({v.requires_grad(), v.is_leaf()});
    auto out = with_grads<L>(v * w, {x, w});
    out.push_back(f);
    return out;
  });
  add_case("autograd view made under no_grad of a non-leaf used with grad on", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto y = x * 2;
    typename L::Tensor v;
    {
      typename L::NoGrad no_grad;
      v = y.select(0, 1);
    }
    auto f = flags<L>({v.requires_grad(), v.is_leaf()});
    auto out = with_grads<L>(v * 3 + y.select(0, 0), {x});
    out.push_back(f);
    return out;
  });
  add_case("autograd view made and changed under no_grad used with grad on", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto y = x * 2;
    typename L::Tensor v;
    {
      typename L::NoGrad no_grad;
      v = y.view({6});
      v.mul_(3);
    }
    auto f = flags<L>({v.requires_grad(), v.is_leaf()});
    auto out = with_grads<L>(v * 2, {x});
    out.push_back(f);
    return out;
  });
  add_case("autograd view of a view made under no_grad", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto y = x * 2;
    typename L::Tensor v;
    {
      typename L::NoGrad no_grad;
      v = y.t();
    }
    auto u = v.select(0, 1);
    auto f = flags<L>({u.requires_grad(), u.is_leaf()});
    auto out = with_grads<L>(u * 3 + y.sum(), {x});
    out.push_back(f);
    return out;
  });
  add_case("autograd view taken before the base required grad", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64").clone();
    auto v = x.select(0, 1);
    x.requires_grad_(true);
    auto f = flags<L>({v.requires_grad(), v.is_leaf()});
    auto out = with_grads<L>(v * 3, {x});
    out.push_back(f);
    return out;
  });
  add_case("autograd view in-place on an expanded view of a non-leaf", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(3), {1, 3}, "f64", true);
    auto y = x * 1;
    y.expand({2, 3}).add_(1);
    return with_grads<L>(y, {x});
  });
  add_case("autograd view reshape of a contiguous non-leaf modified", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto w = L::make(ramp(6, 0.3), {3, 2}, "f64", true);
    auto y = x.sin();
    y.reshape({3, 2}).mul_(w);  // a view: y is contiguous
    return with_grads<L>(y, {x, w});
  });
  add_case("autograd view flags of views and results", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto t = x.t();
    auto d = x.detach();
    auto e = x.select(0, 0).detach();
    auto y = x * 2;
    auto v = y.view({3, 2});
    return TensorList<L>{flags<L>({t.requires_grad(), t.is_leaf(), has_grad_fn(t), d.requires_grad(), d.is_leaf(),
                                   e.requires_grad(), y.is_leaf(), v.requires_grad(), v.is_leaf(),
                                   has_grad_fn(v)})};
  });
}

// ---- in-place changes autograd must refuse or follow ----------------------------------------------

void version_cases() {
  add_case("autograd version saved result changed through detach", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {6}, "f64", true);
    auto y = x.exp();
    y.detach().zero_();
    return with_grads<L>(y, {x});
  });
  add_case("autograd version saved input changed", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {6}, "f64", true);
    auto y = x * 1;
    auto z = y.pow(2);
    y.add_(1);
    return with_grads<L>(z, {x});
  });
  add_case("autograd version saved leaf changed through a view of detach", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {6}, "f64", true);
    auto z = x * x;
    x.detach().slice(0, 0, 2).mul_(2);
    return with_grads<L>(z, {x});
  });
  add_case("autograd version unsaved input changed", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {6}, "f64", true);
    auto w = L::make(ramp(6, 0.2), {6}, "f64", true);
    auto y = x * 1;
    auto z = y + w;
    y.mul_(2);
    return with_grads<L>(z, {x, w});
  });
  add_case("autograd version in-place into a plain tensor", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(3), {3}, "f64", true);
    auto a = L::make({1, 2, 3}, {3}, "f64");
    a.add_(x);
    auto f = flags<L>({a.requires_grad(), a.is_leaf(), has_grad_fn(a)});
    auto out = with_grads<L>(a * a, {x});
    out.push_back(f);
    return out;
  });
  add_case("autograd version copy_ into a row of a plain tensor", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(3), {3}, "f64", true);
    auto a = L::make(ramp(6, 2.0), {2, 3}, "f64").clone();  // not a view (LibTorch's make reshapes)
    a.select(0, 1).copy_(x);
    auto f = flags<L>({a.requires_grad(), a.is_leaf()});
    auto out = with_grads<L>(a.exp(), {x});
    out.push_back(f);
    return out;
  });
  add_case("autograd version in-place on the input of a finished backward", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = x * 1;
    auto z = y * y;
    z.sum().backward();
    y.add_(1);  // the graph was freed: nothing to check
    return TensorList<L>{x.grad(), y};
  });
}

// ---- hooks, retain_grad, accumulation, backward's arguments ----------------------------------------

void engine_cases() {
  add_case("autograd hook on a non-leaf", [](auto lib) {
    using L = decltype(lib);
    using T = typename L::Tensor;
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = x * 3;
    y.register_hook([](const T& g) { return g * 2; });
    return with_grads<L>(y * y, {x});
  });
  add_case("autograd hooks on a leaf run in order", [](auto lib) {
    using L = decltype(lib);
    using T = typename L::Tensor;
    auto x = L::make(ramp(4), {4}, "f64", true);
    x.register_hook([](const T& g) { return g * 2; });
    x.register_hook([](const T& g) { return g + 1; });
    return with_grads<L>(x.sin(), {x});
  });
  add_case("autograd hook removed", [](auto lib) {
    using L = decltype(lib);
    using T = typename L::Tensor;
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = x * 3;
    const auto h = y.register_hook([](const T& g) { return g * 100; });
    y.remove_hook(h);
    return with_grads<L>(y * y, {x});
  });
  add_case("autograd hook sees the summed gradient of a tensor used twice", [](auto lib) {
    using L = decltype(lib);
    using T = typename L::Tensor;
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = x * 3;
    auto seen = L::make({0, 0, 0, 0}, {4}, "f64");
    y.register_hook([seen](const T& g) {
      seen.copy_(g);
      return g;
    });
    auto out = with_grads<L>(y * 2 + y.exp(), {x});
    out.push_back(seen);
    return out;
  });
  add_case("autograd retain_grad", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = x * 2;
    y.retain_grad();
    auto z = y.pow(3);
    auto out = with_grads<L>(z, {x});
    out.push_back(y.grad());
    return out;
  });
  add_case("autograd non-leaf grad without retain_grad", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = x * 2;
    (y * y).sum().backward();
    return TensorList<L>{flags<L>({y.grad().defined(), x.grad().defined()})};
  });
  add_case("autograd accumulation over two backward calls", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = (x * x).sum();
    y.backward({}, /*retain_graph=*/true);
    auto first = x.grad().clone();
    y.backward();
    return TensorList<L>{first, x.grad()};
  });
  add_case("autograd accumulation into a held gradient handle", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    (x * x).sum().backward();
    auto held = x.grad();
    (x * 3).sum().backward();
    return TensorList<L>{held, x.grad()};
  });
  add_case("autograd accumulation after the gradient is zeroed in place", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    (x * x).sum().backward();
    x.grad().zero_();
    (x * 3).sum().backward();
    return TensorList<L>{x.grad()};
  });
  add_case("autograd second backward through a freed graph that saved tensors", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = (x * x).sum();
    y.backward();
    y.backward();
    return TensorList<L>{x.grad()};
  });
  add_case("autograd second backward through a freed graph that saved nothing", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = (x + 1).sum();
    y.backward();
    y.backward();
    return TensorList<L>{x.grad()};
  });
  add_case("autograd backward of a non-scalar without a gradient", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    (x * 2).backward();
    return TensorList<L>{x.grad()};
  });
  add_case("autograd backward with a gradient of the wrong shape", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    (x * 2).backward(L::make({1, 2}, {2}, "f64"));
    return TensorList<L>{x.grad()};
  });
  add_case("autograd backward with a gradient of another dtype", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f32", true);
    (x * 2).backward(L::make({1, 2, 3, 4}, {4}, "f64"));
    return TensorList<L>{x.grad()};
  });
  add_case("autograd backward of a tensor that does not require grad", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64");
    (x * 2).sum().backward();
    return TensorList<L>{x};
  });
  add_case("autograd grad of an unused input", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto u = L::make(ramp(4), {4}, "f64", true);
    return L::grad({(x * x).sum()}, {x, u}, false);
  });
  add_case("autograd grad of an unused input allowed", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto u = L::make(ramp(4), {4}, "f64", true);
    return L::grad_allow_unused({(x * x).sum()}, {x, u});
  });
  add_case("autograd grad leaves .grad alone", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto g = L::grad({(x * x).sum()}, {x}, false);
    g.push_back(flags<L>({x.grad().defined()}));
    return g;
  });
  add_case("autograd requires_grad of integer and comparison results", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto [values, indices] = x.max(1);
    auto n = L::make({1, 2}, {2}, "i64");
    return TensorList<L>{flags<L>({values.requires_grad(), indices.requires_grad(), x.argmax().requires_grad(),
                                   x.gt(0).requires_grad(), (x * 2).to(L::type("i32")).requires_grad(),
                                   (x * 2).to(L::type("f32")).requires_grad(), (n * 2).requires_grad()})};
  });
  add_case("autograd requires_grad under no_grad", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    typename L::NoGrad no_grad;
    auto y = x * 2;
    auto v = x.t();
    return TensorList<L>{flags<L>({y.requires_grad(), y.is_leaf(), v.requires_grad(), v.is_leaf()})};
  });
  add_case("autograd requires_grad_ on an integer tensor", [](auto lib) {
    using L = decltype(lib);
    auto n = L::make({1, 2}, {2}, "i64");
    n.requires_grad_(true);
    return TensorList<L>{n};
  });
  add_case("autograd requires_grad_(false) on a non-leaf", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = x * 2;
    y.requires_grad_(false);
    return TensorList<L>{y};
  });
  add_case("autograd gradient of a transposed leaf keeps its layout", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64").t();
    x.requires_grad_(true);
    return with_grads<L>(x * 2, {x});
  });
  add_case("autograd backward with inputs", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto w = L::make(ramp(4, 0.5), {4}, "f64", true);
    (x * w).sum().backward({}, false, false, {w});
    return TensorList<L>{flags<L>({x.grad().defined()}), w.grad()};
  });
  add_case("autograd grad with grad_outputs", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = x * x;
    return grad_with(y, x, L::make({1, -2, 0.5, 3}, {4}, "f64"));
  });
  add_case("autograd grad of a non-leaf input", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto h = x.exp();
    auto out = L::grad({(h * h).sum()}, {h, x}, false);
    out.push_back(flags<L>({x.grad().defined()}));
    return out;
  });
  add_case("autograd detach_ cuts a non-leaf off", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = x * 2;
    y.detach_();
    auto w = L::make(ramp(4, 0.5), {4}, "f64", true);
    auto out = with_grads<L>(y * w, {w});
    out.push_back(flags<L>({y.requires_grad(), y.is_leaf(), x.grad().defined()}));
    return out;
  });
  add_case("autograd hook on a tensor changed in place afterwards", [](auto lib) {
    using L = decltype(lib);
    using T = typename L::Tensor;
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = x * 2;
    y.register_hook([](const T& g) { return g * 10; });
    y.mul_(3);
    return with_grads<L>(y, {x});
  });
  add_case("autograd hook on a view's base", [](auto lib) {
    using L = decltype(lib);
    using T = typename L::Tensor;
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto y = x * 2;
    y.register_hook([](const T& g) { return g + 1; });
    auto v = y.select(0, 1);
    return with_grads<L>(v.exp(), {x});
  });
  add_case("autograd retain_grad then in-place", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = x * 2;
    y.retain_grad();
    y.mul_(y.detach());
    auto out = with_grads<L>(y * 3, {x});
    out.push_back(y.grad());
    return out;
  });
  add_case("autograd double backward with a hook", [](auto lib) {
    using L = decltype(lib);
    using T = typename L::Tensor;
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = x * x * x;
    y.register_hook([](const T& g) { return g * 2; });
    auto g = L::grad({y.sum()}, {x}, true)[0];
    auto gg = L::grad({g.sum()}, {x}, false);
    return TensorList<L>{g.detach(), gg[0]};
  });
  add_case("autograd gradient reaching a leaf through to(dtype) and clone", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f32", true);
    auto y = x.to(L::type("f64")).clone().t().contiguous();
    return with_grads<L>(y * y, {x});
  });
  add_case("autograd set_data keeps the leaf", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    x.set_data(L::make({1, 2, 3}, {3}, "f64"));
    auto out = with_grads<L>(x * x, {x});
    out.push_back(flags<L>({x.requires_grad(), x.is_leaf()}));
    return out;
  });
  add_case("autograd optimizer zero_grad", [](auto lib) {
    using L = decltype(lib);
    auto w = L::make(ramp(4), {4}, "f64", true);
    typename L::SGD sgd(TensorList<L>{w}, typename L::SGDOptions(0.1));
    (w * w).sum().backward();
    sgd.zero_grad();
    (w * 3).sum().backward();
    return TensorList<L>{w.grad()};
  });
  add_case("autograd gradient of an expanded leaf", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(3), {3}, "f64", true);
    auto w = L::make(ramp(6, 0.5), {2, 3}, "f64", true);
    return with_grads<L>(x.expand({2, 3}) * w, {x, w});
  });
}

}  // namespace

void register_autograd_cases() {
  view_inplace_cases();
  version_cases();
  engine_cases();
}

}  // namespace torch_diff
