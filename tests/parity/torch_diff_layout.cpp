// torch_diff cases: the ops on inputs that are not contiguous (transposed, strided, expanded,
// offset, channels last), where kernels leave their fast paths; values and gradients must not
// depend on the layout.
#include "torch_diff.h"

namespace torch_diff {
namespace {

const std::vector<std::string> kLayouts = {"transposed", "strided", "expanded", "offset", "channels_last"};

// A tensor of logical sizes [2, 3, 4, 5] holding ramp values, laid out as `layout` says
// ("expanded" repeats one [2, 1, 4, 5] block along dim 1).
template <class L>
typename L::Tensor laid_out(const std::string& layout, const std::string& dtype, bool requires_grad) {
  const Shape shape = {2, 3, 4, 5};
  auto x = L::make(ramp(count(shape), -1.3, 0.41), shape, "f64").to(L::type(dtype));
  typename L::Tensor y;
  if (layout == "transposed") y = x.transpose(1, 3).contiguous().transpose(1, 3);
  else if (layout == "strided") y = stack(TensorList<L>{x, x * 0}, -1).select(-1, 0);
  else if (layout == "expanded") y = x.slice(1, 0, 1).contiguous().expand({2, 3, 4, 5});
  else if (layout == "offset") y = cat(TensorList<L>{x.flatten().slice(0, 0, 7), x.flatten()}).slice(0, 7).view(shape);
  else y = L::channels_last(x);
  y = y.detach();
  if (requires_grad) y.requires_grad_(true);
  return y;
}

// op(x) with x in each layout, and the gradient for float64.
template <class Op>
void layout_cases(const std::string& name, Op op, const std::vector<std::string>& dtypes = {"f32", "f64", "i64"}) {
  for (const std::string& layout : kLayouts) {
    for (const std::string& dtype : dtypes) {
      add_case("layout " + name + " " + layout + " " + dtype, [=](auto lib) {
        using L = decltype(lib);
        const bool grad = dtype == "f64";
        auto x = laid_out<L>(layout, dtype, grad);
        auto y = op(x);
        TensorList<L> out{y};
        if (grad && y.requires_grad()) {
          y.backward(L::make(ramp(y.numel(), 0.5, 0.25), y.sizes().vec(), "f64").to(y.dtype()));
          out.push_back(x.grad());
        }
        return out;
      });
    }
  }
}

// op(x, y) with x contiguous and y in each layout, and the reverse.
template <class Op>
void binary_layout_cases(const std::string& name, Op op) {
  for (const std::string& layout : kLayouts) {
    for (bool swap : {false, true}) {
      add_case("layout " + name + " " + layout + (swap ? " first" : " second"), [=](auto lib) {
        using L = decltype(lib);
        auto a = L::make(ramp(120, 0.7, -0.29), {2, 3, 4, 5}, "f64", true);
        auto b = laid_out<L>(layout, "f64", true);
        auto y = swap ? op(b, a) : op(a, b);
        y.backward(L::make(ramp(y.numel(), 0.5, 0.25), y.sizes().vec(), "f64"));
        return TensorList<L>{y, a.grad(), b.grad()};
      });
    }
  }
}

#define STRATA_DIFF_LAYOUT(name, expr, ...) \
  layout_cases(name, [](const auto& x) { return expr; } __VA_OPT__(, ) __VA_ARGS__)
#define STRATA_DIFF_LAYOUT2(name, expr) binary_layout_cases(name, [](const auto& x, const auto& y) { return expr; })

const std::vector<std::string> kFloating = {"f32", "f64"};

std::vector<double> gather_index() {
  std::vector<double> index(120);
  for (size_t i = 0; i < index.size(); ++i) index[i] = static_cast<double>((i * 7) % 5);
  return index;
}

}  // namespace

void register_layout_cases() {
  STRATA_DIFF_LAYOUT("neg", neg(x));
  STRATA_DIFF_LAYOUT("abs", abs(x));
  STRATA_DIFF_LAYOUT("exp", exp(x));
  STRATA_DIFF_LAYOUT("tanh", tanh(x));
  STRATA_DIFF_LAYOUT("sigmoid", sigmoid(x), kFloating);
  STRATA_DIFF_LAYOUT("relu", relu(x));
  STRATA_DIFF_LAYOUT("gelu", gelu(x), kFloating);
  STRATA_DIFF_LAYOUT("clamp", clamp(x, -0.5, 0.7));
  STRATA_DIFF_LAYOUT("pow 3", pow(x, 3));
  STRATA_DIFF_LAYOUT("x*2+1", x * 2 + 1);
  STRATA_DIFF_LAYOUT("x/3", x / 3);
  STRATA_DIFF_LAYOUT("eq", eq(x, x.select(0, 0)));
  STRATA_DIFF_LAYOUT("where", where(gt(x, 0), x, x * x));
  STRATA_DIFF_LAYOUT("masked_fill", masked_fill(x, lt(x, 0), 5));
  STRATA_DIFF_LAYOUT("clone", x.clone());
  STRATA_DIFF_LAYOUT("contiguous", x.contiguous());
  STRATA_DIFF_LAYOUT("to f64", x.to(decltype(lib_of(x))::type("f64")));
  STRATA_DIFF_LAYOUT("reshape", x.reshape({6, 20}));
  STRATA_DIFF_LAYOUT("flatten", x.flatten(1));
  STRATA_DIFF_LAYOUT("sum()", x.sum());
  STRATA_DIFF_LAYOUT("sum({1})", x.sum({1}));
  STRATA_DIFF_LAYOUT("sum({0,2})", x.sum(Shape{0, 2}));
  STRATA_DIFF_LAYOUT("sum({3},keep)", x.sum({3}, true));
  STRATA_DIFF_LAYOUT("sum({2,3})", x.sum({2, 3}));
  STRATA_DIFF_LAYOUT("mean({1,3})", x.mean({1, 3}), kFloating);
  STRATA_DIFF_LAYOUT("prod(2)", x.prod(2));
  STRATA_DIFF_LAYOUT("max()", x.max());
  STRATA_DIFF_LAYOUT("max(1)", std::get<0>(x.max(1)));
  STRATA_DIFF_LAYOUT("max(3).idx", std::get<1>(x.max(3)));
  STRATA_DIFF_LAYOUT("min(0,keep)", std::get<0>(x.min(0, true)));
  STRATA_DIFF_LAYOUT("argmax(2)", x.argmax(2));
  STRATA_DIFF_LAYOUT("argmin()", x.argmin());
  STRATA_DIFF_LAYOUT("var({1})", decltype(lib_of(x))::var(x, {1}, true, false), kFloating);
  STRATA_DIFF_LAYOUT("std({0,3})", decltype(lib_of(x))::std_(x, {0, 3}, false, true), kFloating);
  STRATA_DIFF_LAYOUT("logsumexp({2})", logsumexp(x, Shape{2}), kFloating);
  STRATA_DIFF_LAYOUT("norm()", x.norm(), kFloating);
  STRATA_DIFF_LAYOUT("softmax(1)", softmax(x, 1), kFloating);
  STRATA_DIFF_LAYOUT("softmax(3)", softmax(x, 3), kFloating);
  STRATA_DIFF_LAYOUT("log_softmax(2)", log_softmax(x, 2), kFloating);
  STRATA_DIFF_LAYOUT("layer_norm", layer_norm(x, {4, 5}), kFloating);
  STRATA_DIFF_LAYOUT("matmul", matmul(x, x.transpose(2, 3)), kFloating);
  STRATA_DIFF_LAYOUT("matmul vector", matmul(x, x.select(0, 1).select(0, 2).select(0, 3)), kFloating);
  STRATA_DIFF_LAYOUT("linear", linear(x, x.select(0, 1).select(0, 2)), kFloating);
  STRATA_DIFF_LAYOUT("conv2d", conv2d(x, x.slice(0, 0, 1).slice(2, 0, 2).slice(3, 0, 3).expand({2, 3, 2, 3}) * 1.0),
                     kFloating);
  STRATA_DIFF_LAYOUT("max_pool2d", max_pool2d(x, {2, 2}, {1, 2}, {1, 1}), kFloating);
  STRATA_DIFF_LAYOUT("index_select", x.index_select(2, decltype(lib_of(x))::make({3, 0, 3}, {3}, "i64")));
  STRATA_DIFF_LAYOUT("gather", x.gather(3, decltype(lib_of(x))::make(gather_index(), {2, 3, 4, 5}, "i64")));
  STRATA_DIFF_LAYOUT("cat", cat(TensorList<decltype(lib_of(x))>{x, x.slice(1, 0, 1)}, 1));
  STRATA_DIFF_LAYOUT("cross_entropy",
                     decltype(lib_of(x))::cross_entropy(x, decltype(lib_of(x))::make({0, 2, 1, 1, 0, 2, 2, 1, 0, 0, 1, 2,
                                                                                       1, 0, 2, 0, 1, 2, 2, 1, 0, 1, 0, 2,
                                                                                       0, 1, 1, 2, 2, 0, 1, 0, 2, 1, 0, 1,
                                                                                       2, 2, 0, 0},
                                                                                      {2, 4, 5}, "i64"),
                                                        decltype(lib_of(x))::no_tensor(), 1, -100, 0.1),
                     kFloating);
  STRATA_DIFF_LAYOUT("add_ into", [&] {
    auto y = x * 1;
    y.add_(x.select(1, 0));
    return y;
  }());
  STRATA_DIFF_LAYOUT("copy_ into", [&] {
    auto y = (x * 1).detach();
    y.copy_(y.transpose(0, 0) * 2);
    return y;
  }());

  STRATA_DIFF_LAYOUT2("add", x + y);
  STRATA_DIFF_LAYOUT2("mul", x * y);
  STRATA_DIFF_LAYOUT2("div", x / (y * y + 1));
  STRATA_DIFF_LAYOUT2("maximum", maximum(x, y));
  STRATA_DIFF_LAYOUT2("where", where(gt(x, y), x, y));
  STRATA_DIFF_LAYOUT2("mse_loss", decltype(lib_of(x))::mse_loss(x, y, 1));
  STRATA_DIFF_LAYOUT2("bce_logits", decltype(lib_of(x))::bce_logits(x, sigmoid(y), decltype(lib_of(x))::no_tensor(),
                                                                     decltype(lib_of(x))::no_tensor(), 1));
  STRATA_DIFF_LAYOUT2("matmul", matmul(x, y.transpose(2, 3)));
  STRATA_DIFF_LAYOUT2("in-place mul_ of clone", [&] {
    auto z = x.clone();
    z.mul_(y);
    return z;
  }());
  STRATA_DIFF_LAYOUT2("in-place mul_ of laid-out clone", [&] {
    auto z = y.clone();
    z.mul_(x);
    return z;
  }());
}

}  // namespace torch_diff
