// torch_diff cases: custom autograd Functions, written once against both libraries' Function<T>
// and AutogradContext: saved tensors and data, double backward, mark_dirty,
// mark_non_differentiable, set_materialize_grads, needs_input_grad, views a Function returns,
// and what backward may return.
#include "torch_diff.h"

namespace torch_diff {
namespace {

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

// f() run under no_grad: a view it takes of a tensor that requires grad is made without grad.
template <class L, class F>
typename L::Tensor without_grad(const F& f) {
  typename L::NoGrad no_grad;
  return f();
}

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
  add_case("autograd Function returning a view, a view of it changed in place", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto y = x * 1;
    auto v = TransposeView<L>::apply(y).select(0, 1);
    v.mul_(2);
    return with_grads<L>(y, {x});
  });
  add_case("autograd Function returning a view, a view of it taken under no_grad", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto v = TransposeView<L>::apply(x * 1);
    auto u = without_grad<L>([&] { return v.select(0, 1); });
    auto f = flags<L>({u.requires_grad(), u.is_leaf()});
    auto out = with_grads<L>(u * 3 + v.sum(), {x, u});
    out.push_back(f);
    return out;
  });
  add_case("autograd Function given a view made under no_grad", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto y = x * 1;
    auto v = without_grad<L>([&] { return y.view({3, 2}); });
    auto u = TransposeView<L>::apply(v);
    auto f = flags<L>({u.requires_grad(), u.is_leaf(), has_grad_fn(u)});
    auto out = with_grads<L>(u * u, {x, v});
    out.push_back(f);
    return out;
  });
  add_case("autograd Function given a view made under no_grad, its output changed in place", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f64", true);
    auto y = x * 1;
    auto v = without_grad<L>([&] { return y.view({3, 2}); });
    auto u = TransposeView<L>::apply(v);
    u.mul_(2);
    return with_grads<L>(u, {x, v});
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

void register_function_cases() { function_cases(); }

}  // namespace torch_diff
