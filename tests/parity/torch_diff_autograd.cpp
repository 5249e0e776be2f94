// torch_diff cases: autograd semantics. In-place ops on views of non-leaves (gradients reaching
// the base and the other operand), the errors for in-place changes autograd cannot follow,
// requires_grad and is_leaf of results, hooks and retain_grad, gradient accumulation, backward's
// arguments, and custom Functions (saved tensors and data, mark_dirty, mark_non_differentiable,
// set_materialize_grads, needs_input_grad, what backward may return).
#include "torch_diff.h"

namespace torch_diff {
namespace {

// Booleans as a float64 tensor, so that flags (requires_grad, is_leaf, ...) compare as values.
template <class L>
typename L::Tensor flags(std::initializer_list<bool> values) {
  std::vector<double> v;
  for (bool b : values) v.push_back(b ? 1.0 : 0.0);
  return L::make(v, {static_cast<int64_t>(v.size())}, "f64");
}

template <class T>
bool has_grad_fn(const T& t) {
  return t.grad_fn() != nullptr;
}

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

// ---- custom Functions ------------------------------------------------------------------------------

// k * x^2 with x saved and k in saved_data; its backward is differentiable (double backward).
template <class L>
struct ScaledSquare : L::template Function<ScaledSquare<L>> {
  using T = typename L::Tensor;
  static T forward(typename L::Ctx* ctx, const T& x, double k) {
    ctx->save_for_backward({x});
    ctx->saved_data["k"] = k;
    return x * x * k;
  }
  static TensorList<L> backward(typename L::Ctx* ctx, TensorList<L> grads) {
    const T x = ctx->get_saved_variables()[0];
    const double k = L::to_double(ctx->saved_data["k"]);
    return {grads[0] * x * (2 * k), T()};
  }
};

// Doubles its input in place.
template <class L>
struct DoubleInPlace : L::template Function<DoubleInPlace<L>> {
  using T = typename L::Tensor;
  static T forward(typename L::Ctx* ctx, const T& x) {
    x.mul_(2);
    ctx->mark_dirty({x});
    return x;
  }
  static TensorList<L> backward(typename L::Ctx*, TensorList<L> grads) { return {grads[0] * 2}; }
};

// (2x, x > 0 as float64) with the second output marked non-differentiable.
template <class L>
struct WithMask : L::template Function<WithMask<L>> {
  using T = typename L::Tensor;
  static TensorList<L> forward(typename L::Ctx* ctx, const T& x) {
    T mask = x.gt(0).to(L::type("f64"));
    ctx->mark_non_differentiable({mask});
    return {x * 2, mask};
  }
  static TensorList<L> backward(typename L::Ctx*, TensorList<L> grads) { return {grads[0] * 2}; }
};

// (2x, 3x); records whether backward received a defined gradient for the second output.
template <class L, bool Materialize>
struct TwoOutputs : L::template Function<TwoOutputs<L, Materialize>> {
  using T = typename L::Tensor;
  static inline std::vector<double> seen;
  static TensorList<L> forward(typename L::Ctx* ctx, const T& x) {
    ctx->set_materialize_grads(Materialize);
    return {x * 2, x * 3};
  }
  static TensorList<L> backward(typename L::Ctx*, TensorList<L> grads) {
    seen.push_back(grads[0].defined());
    seen.push_back(grads[1].defined());
    if (!grads[1].defined()) return {grads[0] * 2};
    return {grads[0] * 2 + grads[1] * 3};
  }
};

// a * b; records needs_input_grad for both slots.
template <class L>
struct Product : L::template Function<Product<L>> {
  using T = typename L::Tensor;
  static inline std::vector<double> seen;
  static T forward(typename L::Ctx* ctx, const T& a, const T& b) {
    ctx->save_for_backward({a, b});
    return a * b;
  }
  static TensorList<L> backward(typename L::Ctx* ctx, TensorList<L> grads) {
    seen.push_back(ctx->needs_input_grad(0));
    seen.push_back(ctx->needs_input_grad(1));
    const auto saved = ctx->get_saved_variables();
    return {ctx->needs_input_grad(0) ? grads[0] * saved[1] : T(), ctx->needs_input_grad(1) ? grads[0] * saved[0] : T()};
  }
};

// Returns its input unchanged, without mark_dirty.
template <class L>
struct Identity : L::template Function<Identity<L>> {
  using T = typename L::Tensor;
  static T forward(typename L::Ctx*, const T& x) { return x; }
  static TensorList<L> backward(typename L::Ctx*, TensorList<L> grads) { return {grads[0] * 5}; }
};

// A backward returning what `Kind` says: a gradient of the wrong shape, too few gradients, too
// many, or one of another dtype.
enum class BadGradient { shape, too_few, too_many, dtype };
template <class L, BadGradient Kind>
struct Misbehaving : L::template Function<Misbehaving<L, Kind>> {
  using T = typename L::Tensor;
  static T forward(typename L::Ctx*, const T& x, const T& y) { return x * y; }
  static TensorList<L> backward(typename L::Ctx*, TensorList<L> grads) {
    const T g = grads[0];
    if constexpr (Kind == BadGradient::shape) return {g.sum(), g};
    else if constexpr (Kind == BadGradient::too_few) return {g};
    else if constexpr (Kind == BadGradient::too_many) return {g, g, g};
    else return {g.to(L::type("f64")), g};
  }
};

// Returns a view of its input (x transposed).
template <class L>
struct TransposeView : L::template Function<TransposeView<L>> {
  using T = typename L::Tensor;
  static T forward(typename L::Ctx*, const T& x) { return x.t(); }
  static TensorList<L> backward(typename L::Ctx*, TensorList<L> grads) { return {grads[0].t() * 2}; }
};

// What a Function recorded during backward, as a float64 tensor.
template <class L>
typename L::Tensor recorded(const std::vector<double>& seen) {
  return L::make(seen, {static_cast<int64_t>(seen.size())}, "f64");
}

// TwoOutputs<Materialize> with only its first output used: the gradients, and whether backward
// saw defined gradients for both outputs.
template <bool Materialize>
void materialize_case(const char* name) {
  add_case(name, [](auto lib) {
    using L = decltype(lib);
    using F = TwoOutputs<L, Materialize>;
    auto x = L::make(ramp(4), {4}, "f64", true);
    F::seen.clear();
    auto out = with_grads<L>(F::apply(x)[0], {x});
    out.push_back(recorded<L>(F::seen));
    return out;
  });
}

// Gradients through Misbehaving<Kind> of two inputs of `dtype`.
template <BadGradient Kind>
void misbehaving_case(const char* name, const char* dtype) {
  add_case(name, [dtype](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, dtype, true);
    auto y = L::make(ramp(4, 0.5), {4}, dtype, true);
    return with_grads<L>(Misbehaving<L, Kind>::apply(x, y), {x, y});
  });
}

void function_cases() {
  add_case("autograd Function returning a view of its input", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto y = x * 1;
    auto v = TransposeView<L>::apply(y);
    auto f = flags<L>({v.requires_grad(), v.is_leaf()});
    auto out = with_grads<L>(v * v, {x});
    out.push_back(f);
    return out;
  });
  add_case("autograd Function returning a view, changed in place", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto y = x * 1;
    auto v = TransposeView<L>::apply(y);
    v.mul_(2);
    return with_grads<L>(y, {x});
  });
  add_case("autograd Function saved tensor and data", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    return with_grads<L>(ScaledSquare<L>::apply(x, 1.5), {x});
  });
  add_case("autograd Function double backward", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto g = L::grad({ScaledSquare<L>::apply(x, 1.5).sum()}, {x}, true)[0];
    auto gg = L::grad({(g * g).sum()}, {x}, false);
    return TensorList<L>{g.detach(), gg[0]};
  });
  add_case("autograd Function saved input changed after apply", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = x * 1;
    auto z = ScaledSquare<L>::apply(y, 2.0);
    y.add_(1);
    return with_grads<L>(z, {x});
  });
  add_case("autograd Function mark_dirty", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = x.exp();
    auto z = DoubleInPlace<L>::apply(y);
    auto f = flags<L>({z.is_same(y), y.requires_grad(), y.is_leaf()});
    auto out = with_grads<L>(z * y, {x});
    out.push_back(f);
    return out;
  });
  add_case("autograd Function mark_dirty on a leaf", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    return TensorList<L>{DoubleInPlace<L>::apply(x)};
  });
  add_case("autograd Function mark_dirty on a view of a non-leaf", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto y = x * 1;
    DoubleInPlace<L>::apply(y.select(0, 1));
    return with_grads<L>(y, {x});
  });
  add_case("autograd Function mark_non_differentiable", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto outs = WithMask<L>::apply(x);
    auto f = flags<L>({outs[0].requires_grad(), outs[1].requires_grad()});
    auto out = with_grads<L>(outs[0] * outs[1], {x});
    out.push_back(outs[1]);
    out.push_back(f);
    return out;
  });
  materialize_case<true>("autograd Function materialized gradients");
  materialize_case<false>("autograd Function set_materialize_grads(false)");
  add_case("autograd Function needs_input_grad", [](auto lib) {
    using L = decltype(lib);
    using F = Product<L>;
    auto a = L::make(ramp(4), {4}, "f64", true);
    auto b = L::make(ramp(4, 0.5), {4}, "f64");
    auto c = L::make(ramp(4, 0.9), {4}, "f64", true);
    F::seen.clear();
    auto out = with_grads<L>(F::apply(a, b), {a});
    (void)L::grad({F::apply(a, c).sum()}, {c}, false);  // only c's slot is wanted here
    out.push_back(recorded<L>(F::seen));
    return out;
  });
  add_case("autograd Function returning its input unchanged", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(4), {4}, "f64", true);
    auto y = Identity<L>::apply(x);
    auto f = flags<L>({y.requires_grad(), y.is_leaf(), has_grad_fn(y)});
    auto out = with_grads<L>(y, {x});
    out.push_back(f);
    return out;
  });
  misbehaving_case<BadGradient::shape>("autograd Function backward gradient of the wrong shape", "f64");
  misbehaving_case<BadGradient::too_few>("autograd Function backward returning too few gradients", "f64");
  misbehaving_case<BadGradient::too_many>("autograd Function backward returning too many gradients", "f64");
  misbehaving_case<BadGradient::dtype>("autograd Function backward gradient of another dtype", "f32");
}

}  // namespace

void register_autograd_cases() {
  view_inplace_cases();
  version_cases();
  engine_cases();
  function_cases();
}

}  // namespace torch_diff
