// torch_diff cases: reductions, their dtypes, empty and 0-d inputs, ties and NaN, gradients.
#include "torch_diff.h"

#include <algorithm>

namespace torch_diff {
namespace {

const std::vector<std::string> kTypes = {"bool", "u8", "i32", "i64", "f16", "bf16", "f32", "f64"};
const std::vector<double> kTies = {1, 3, 3, -2, 0, 3, -2, -2, 1, 0, 0, 0};
const std::vector<double> kWithNaN = {1, kNaN, 3, -2, 0, 5, kNaN, 2, 1, 0, 4, 4};
const std::vector<double> kWithZeros = {1, 0, 3, -2, 0, 0, 2, 2, 1, 0.5, 4, -1};

bool floating(const std::string& t) { return t[0] == 'f' || t == "bf16"; }

// op(x) for x [3, 4] of `values` in every dtype, and the gradient of sum(op(x) * g) in f32/f64.
template <class Op>
void reduce_cases(const std::string& name, Op op, const std::vector<double>& values) {
  for (const std::string& dtype : kTypes) {
    add_case("reduce " + name + " " + dtype, [=](auto lib) {
      using L = decltype(lib);
      const bool grad = dtype == "f32" || dtype == "f64";
      std::vector<double> v = values;  // NaN has no integral value: cast, it is undefined behaviour
      if (!floating(dtype)) std::replace_if(v.begin(), v.end(), [](double e) { return std::isnan(e); }, 0.0);
      auto x = L::make(v, {3, 4}, dtype, grad);
      auto y = op(x);
      TensorList<L> out{y};
      if (grad && y.requires_grad()) {
        std::vector<double> g(y.numel());
        for (size_t i = 0; i < g.size(); ++i) g[i] = 1 + 0.5 * i;
        y.backward(L::make(g, y.sizes().vec(), dtype));
        out.push_back(x.grad());
      }
      return out;
    });
  }
}

// op(x) for inputs of sizes [0], [0, 3], [3, 0] and [] (0-d).
template <class Op>
void edge_cases(const std::string& name, Op op) {
  for (const Shape& shape : {Shape{0}, Shape{0, 3}, Shape{3, 0}, Shape{}}) {
    add_case("reduce-edge " + name + " " + std::to_string(shape.size()) + "d" +
                 (shape.empty() || shape[0] ? "" : "0") + (shape.size() > 1 && shape[1] == 0 ? "x0" : ""),
             [=](auto lib) {
               using L = decltype(lib);
               int64_t n = 1;
               for (int64_t s : shape) n *= s;
               std::vector<double> values(n, 2.5);
               return TensorList<L>{op(L::make(values, shape, "f32"))};
             });
  }
}

template <class T>
auto first(const T& tuple) { return std::get<0>(tuple); }
template <class T>
auto second(const T& tuple) { return std::get<1>(tuple); }

#define STRATA_DIFF_REDUCE(name, values, expr) reduce_cases(name, [](const auto& x) { return expr; }, values)
#define STRATA_DIFF_EDGE(name, expr) edge_cases(name, [](const auto& x) { return expr; })

void cases_for(const std::string& label, const std::vector<double>& v) {
  const auto reduce = [&](const std::string& name, auto op) { reduce_cases(name + " " + label, op, v); };
  reduce("sum()", [](const auto& x) { return x.sum(); });
  reduce("sum({1})", [](const auto& x) { return x.sum({1}); });
  reduce("sum({0},keep)", [](const auto& x) { return x.sum({0}, true); });
  reduce("sum({-1,0})", [](const auto& x) { return x.sum({-1, 0}); });
  reduce("mean()", [](const auto& x) { return x.mean(); });
  reduce("mean({1},keep)", [](const auto& x) { return x.mean({1}, true); });
  reduce("prod()", [](const auto& x) { return x.prod(); });
  reduce("prod(1)", [](const auto& x) { return x.prod(1); });
  reduce("prod(0,keep)", [](const auto& x) { return x.prod(0, true); });
  reduce("max()", [](const auto& x) { return x.max(); });
  reduce("min()", [](const auto& x) { return x.min(); });
  reduce("max(1)", [](const auto& x) { return first(x.max(1)); });
  reduce("max(1).idx", [](const auto& x) { return second(x.max(1)); });
  reduce("min(0,keep)", [](const auto& x) { return first(x.min(0, true)); });
  reduce("min(0,keep).idx", [](const auto& x) { return second(x.min(0, true)); });
  reduce("argmax()", [](const auto& x) { return x.argmax(); });
  reduce("argmax(1)", [](const auto& x) { return x.argmax(1); });
  reduce("argmin(0,keep)", [](const auto& x) { return x.argmin(0, true); });
  reduce("logsumexp({1})", [](const auto& x) { return logsumexp(x, Shape{1}); });
  reduce("logsumexp({0,1},keep)", [](const auto& x) { return logsumexp(x, Shape{0, 1}, true); });
  reduce("norm()", [](const auto& x) { return x.norm(); });
  reduce("norm(1)", [](const auto& x) { return x.norm(1); });
  reduce("norm(0)", [](const auto& x) { return x.norm(0); });
  reduce("norm(3)", [](const auto& x) { return x.norm(3); });
  reduce("norm(0.5)", [](const auto& x) { return x.norm(0.5); });
  reduce("norm(inf)", [](const auto& x) { return x.norm(kInf); });
  reduce("norm(-inf)", [](const auto& x) { return x.norm(-kInf); });
  reduce("softmax(1)", [](const auto& x) { return softmax(x, 1); });
  reduce("log_softmax(0)", [](const auto& x) { return log_softmax(x, 0); });
  reduce("var()", [](const auto& x) { return x.var(); });
  reduce("std()", [](const auto& x) { return x.std(); });
  reduce("var({1})", [](const auto& x) { return decltype(lib_of(x))::var(x, {1}, true, false); });
  reduce("var({1},biased,keep)", [](const auto& x) { return decltype(lib_of(x))::var(x, {1}, false, true); });
  reduce("std({0})", [](const auto& x) { return decltype(lib_of(x))::std_(x, {0}, true, false); });
  reduce("std({0,1},biased)", [](const auto& x) { return decltype(lib_of(x))::std_(x, {0, 1}, false, false); });
}

}  // namespace

void register_reduction_cases() {
  cases_for("ties", kTies);
  cases_for("nan", kWithNaN);
  cases_for("zeros", kWithZeros);

  STRATA_DIFF_EDGE("sum()", x.sum());
  STRATA_DIFF_EDGE("sum({0})", x.sum({0}));
  STRATA_DIFF_EDGE("sum({-1},keep)", x.sum({-1}, true));
  STRATA_DIFF_EDGE("mean()", x.mean());
  STRATA_DIFF_EDGE("mean({0})", x.mean({0}));
  STRATA_DIFF_EDGE("prod()", x.prod());
  STRATA_DIFF_EDGE("prod(0)", x.prod(0));
  STRATA_DIFF_EDGE("max()", x.max());
  STRATA_DIFF_EDGE("max(0)", first(x.max(0)));
  STRATA_DIFF_EDGE("max(-1)", first(x.max(-1)));
  STRATA_DIFF_EDGE("argmax()", x.argmax());
  STRATA_DIFF_EDGE("argmax(0)", x.argmax(0));
  STRATA_DIFF_EDGE("var()", x.var());
  STRATA_DIFF_EDGE("std()", x.std());
  STRATA_DIFF_EDGE("logsumexp({0})", logsumexp(x, Shape{0}));
  STRATA_DIFF_EDGE("norm()", x.norm());
  STRATA_DIFF_EDGE("norm(inf)", x.norm(kInf));
  STRATA_DIFF_EDGE("softmax(0)", softmax(x, 0));
  STRATA_DIFF_EDGE("softmax(-1)", softmax(x, -1));
  STRATA_DIFF_EDGE("log_softmax(0)", log_softmax(x, 0));

  for (const std::string& dtype : {std::string("i32"), std::string("bool"), std::string("f16")}) {
    add_case("reduce sum(dtype=f64) " + dtype, [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make(kTies, {3, 4}, dtype);
      return TensorList<L>{x.sum(L::type("f64")), x.sum({1}, false, L::type("f64")), x.mean(L::type("f32"))};
    });
  }
  add_case("reduce softmax rows of -inf", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make({-kInf, -kInf, -kInf, 1, -kInf, 2}, {2, 3}, "f32", true);
    auto y = softmax(x, 1);
    auto z = log_softmax(x, 1);
    return TensorList<L>{y, z};
  });
  add_case("reduce softmax(dtype=f64) of f32", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make({1, 2, 3, 4, 5, 6}, {2, 3}, "f32", true);
    auto y = softmax(x, 1, L::type("f64"));
    (y * L::make({1, 2, 3, 4, 5, 6}, {2, 3}, "f64")).sum().backward();
    return TensorList<L>{y, x.grad()};
  });
  add_case("reduce logsumexp of +inf and -inf", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make({kInf, 1, -kInf, -kInf, kInf, kInf}, {3, 2}, "f32");
    return TensorList<L>{logsumexp(x, Shape{1})};
  });
  add_case("reduce norm of zeros grad", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make({0, 0, 0}, {3}, "f64", true);
    auto y = x.norm();
    y.backward();
    return TensorList<L>{y, x.grad()};
  });
  add_case("reduce var 1 element", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make({2}, {1}, "f64", true);
    auto y = x.var();
    y.backward();
    return TensorList<L>{y, x.grad()};
  });
  add_case("reduce max 0-d dim 0", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make({2}, {}, "f32");
    return TensorList<L>{first(x.max(0)), second(x.max(0, true)), x.sum({0}), x.argmax(0)};
  });
  add_case("reduce sum int overflow", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make({120, 100, 50}, {3}, "i8");
    return TensorList<L>{x.sum(), x + x, x * x};
  });
}

}  // namespace torch_diff
