// torch_diff cases: pointwise ops, type promotion with scalars, their gradients.
#include "torch_diff.h"

#include <variant>

namespace torch_diff {

namespace {

const std::vector<double> kSpecial = {-3.5, -1, -0.0, 0, 0.25, 1, 2.5, kInf, -kInf, kNaN};
const std::vector<double> kSmooth = {-2.5, -1.25, -0.5, 0.3, 0.75, 1.5};
const std::vector<double> kInts = {-3, -1, 0, 1, 2, 7};
// Near the thresholds of exp, tanh, sigmoid... in float32 and float64.
const std::vector<double> kExtreme = {88.5, -88.5,  88.72, -87.5, 89,  -104, 709.5, -745, 1e-38, 1e-45, 3e38,
                                      -3e38, 20,    -20,   45,   -45, 1e10, -1e10, 1e-300, 5e-324, 15.5, -9.25};

// `values` repeated to 1024 elements, so that the kernels' vectorised loops see them.
std::vector<double> tiled(const std::vector<double>& values) {
  std::vector<double> out(1024);
  for (size_t i = 0; i < out.size(); ++i) out[i] = values[i % values.size()];
  return out;
}
const std::vector<std::string> kAllTypes = {"bool", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"};
const std::vector<std::string> kFloatTypes = {"f16", "bf16", "f32", "f64"};

// y = op(x) and, for floating x, x's gradient of sum(y * g) with g = 1..n.
template <class Op>
void unary_cases(const std::string& name, Op op) {
  for (const std::string& dtype : kAllTypes) {
    const bool floating = dtype[0] == 'f' || dtype[0] == 'b' && dtype[1] == 'f';
    add_case("unary " + name + " " + dtype + " ints", [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make(dtype == "u8" ? std::vector<double>{0, 1, 2, 3, 7, 200} : kInts, {2, 3}, dtype);
      return std::vector<typename L::Tensor>{op(x)};
    });
    if (!floating) continue;
    for (const auto& [label, values] : {std::pair{"special", kSpecial}, std::pair{"smooth", kSmooth},
                                        std::pair{"extreme", kExtreme}, std::pair{"extreme-vectorised", tiled(kExtreme)},
                                        std::pair{"special-vectorised", tiled(kSpecial)}}) {
      add_case("unary " + name + " " + dtype + " " + label, [=, values = values](auto lib) {
        using L = decltype(lib);
        auto x = L::make(values, {static_cast<int64_t>(values.size())}, dtype, true);
        auto y = op(x);
        std::vector<typename L::Tensor> out{y};
        if (y.requires_grad() && (dtype == "f32" || dtype == "f64")) {
          std::vector<double> g(values.size());
          for (size_t i = 0; i < g.size(); ++i) g[i] = 1 + 0.5 * i;
          y.backward(L::make(g, {static_cast<int64_t>(g.size())}, dtype));
          out.push_back(x.grad());
        }
        return out;
      });
    }
  }
}

// op(x, y) and, when asked and it requires grad, the gradients of its sum for x and y.
template <class Op, class T>
std::vector<T> with_both_grads(const Op& op, const T& x, const T& y, bool with_grad) {
  T z = op(x, y);
  std::vector<T> out{z};
  if (with_grad && z.requires_grad()) {
    z.sum().backward();
    out.push_back(x.grad());
    out.push_back(y.grad());
  }
  return out;
}

template <class Op>
void binary_cases(const std::string& name, Op op, bool with_grad = true) {
  const std::vector<double> a = {-3, -1.5, 0, 0, 2, 4, kNaN, 1};
  const std::vector<double> b = {2, -1.5, 0, -2, 2, -0.5, 1, kInf};
  for (const std::string& ta : kAllTypes) {
    for (const std::string& tb : {std::string("bool"), std::string("u8"), std::string("i32"), std::string("i64"),
                                  std::string("f16"), std::string("bf16"), std::string("f32"), std::string("f64")}) {
      add_case("binary " + name + " " + ta + "," + tb, [=](auto lib) {
        using L = decltype(lib);
        auto x = L::make({-3, -1, 0, 2, 4, 1}, {2, 3}, ta);
        auto y = L::make({2, -1, 3}, {3}, tb);
        return std::vector<typename L::Tensor>{op(x, y)};
      });
    }
  }
  for (const std::string& dtype : {std::string("f32"), std::string("f64")}) {
    add_case("binary " + name + " " + dtype + " special+grad", [=](auto lib) {
      using L = decltype(lib);
      return with_both_grads(op, L::make(a, {2, 4}, dtype, true), L::make(b, {2, 4}, dtype, true), with_grad);
    });
    add_case("binary " + name + " " + dtype + " broadcast grad", [=](auto lib) {
      using L = decltype(lib);
      return with_both_grads(op, L::make({0.5, -1, 2, 3, -0.25, 1.5}, {2, 1, 3}, dtype, true),
                             L::make({1.5, 2, -0.5, 0.75}, {4, 1}, dtype, true), with_grad);
    });
  }
}

// x op scalar for tensor dtypes and scalar kinds: type promotion with wrapped numbers.
template <class Op>
void scalar_cases(const std::string& name, Op op) {
  // The second operand of each case, by label: a Scalar or a 0-d tensor.
  const auto operand = [](const std::string& kind, auto lib) {
    using L = decltype(lib);
    using Operand = std::variant<int64_t, double, bool, typename L::Tensor>;
    if (kind == "int") return Operand(int64_t{2});
    if (kind == "double") return Operand(2.5);
    if (kind == "bool") return Operand(true);
    return Operand(L::scalar_tensor(kind == "0-d f64 tensor" ? 2.5 : 3, kind == "0-d f64 tensor" ? "f64" : "i64"));
  };
  for (const std::string& dtype : kAllTypes) {
    for (const std::string& kind : {"int", "double", "bool", "0-d f64 tensor", "0-d i64 tensor"}) {
      add_case("scalar " + name + " " + dtype + " " + kind, [=](auto lib) {
        using L = decltype(lib);
        auto x = L::make({-3, -1, 0, 2, 4, 1}, {6}, dtype);
        return std::visit([&](const auto& s) { return std::vector<typename L::Tensor>{op(x, s)}; }, operand(kind, lib));
      });
    }
  }
}

#define STRATA_DIFF_UNARY(name, expr) unary_cases(name, [](const auto& x) { return expr; })
#define STRATA_DIFF_BINARY(name, expr, ...) \
  binary_cases(name, [](const auto& x, const auto& y) { return expr; } __VA_OPT__(, ) __VA_ARGS__)
#define STRATA_DIFF_SCALAR(name, expr) scalar_cases(name, [](const auto& x, const auto& s) { return expr; })

void pointwise_cases() {
  STRATA_DIFF_UNARY("neg", neg(x));
  STRATA_DIFF_UNARY("abs", abs(x));
  STRATA_DIFF_UNARY("sign", sign(x));
  STRATA_DIFF_UNARY("exp", exp(x));
  STRATA_DIFF_UNARY("log", log(x));
  STRATA_DIFF_UNARY("sqrt", sqrt(x));
  STRATA_DIFF_UNARY("rsqrt", rsqrt(x));
  STRATA_DIFF_UNARY("sin", sin(x));
  STRATA_DIFF_UNARY("cos", cos(x));
  STRATA_DIFF_UNARY("tanh", tanh(x));
  STRATA_DIFF_UNARY("sigmoid", sigmoid(x));
  STRATA_DIFF_UNARY("relu", relu(x));
  STRATA_DIFF_UNARY("silu", silu(x));
  STRATA_DIFF_UNARY("gelu", gelu(x));
  STRATA_DIFF_UNARY("gelu_tanh", gelu(x, "tanh"));
  STRATA_DIFF_UNARY("clamp(-1,1)", clamp(x, -1, 1));
  STRATA_DIFF_UNARY("clamp(0.25,)", clamp(x, 0.25));
  STRATA_DIFF_UNARY("clamp(2,-1)", clamp(x, 2, -1));
  STRATA_DIFF_UNARY("clamp(-1.5,2.5)", clamp(x, -1.5, 2.5));
  STRATA_DIFF_UNARY("pow2", pow(x, 2));
  STRATA_DIFF_UNARY("pow0.5", pow(x, 0.5));
  STRATA_DIFF_UNARY("pow-1", pow(x, -1));
  STRATA_DIFF_UNARY("pow0", pow(x, 0));
  STRATA_DIFF_UNARY("pow3", pow(x, 3));
  STRATA_DIFF_UNARY("pow-2.0", pow(x, -2.0));
  STRATA_DIFF_UNARY("pow-3.0", pow(x, -3.0));
  STRATA_DIFF_UNARY("pow5.0", pow(x, 5.0));
  STRATA_DIFF_UNARY("pow-3", pow(x, -3));
  STRATA_DIFF_UNARY("pow1.5", pow(x, 1.5));
  STRATA_DIFF_UNARY("pow-0.5", pow(x, -0.5));
  STRATA_DIFF_UNARY("logical_not", logical_not(x));
  STRATA_DIFF_UNARY("neg_op", -x);
  STRATA_DIFF_UNARY("x*x", x * x);
  STRATA_DIFF_UNARY("x/x", x / x);
  STRATA_DIFF_UNARY("x-x", x - x);
  STRATA_DIFF_UNARY("where(x>0,x,0)", where(gt(x, 0), x, x * 0));
  STRATA_DIFF_UNARY("eq0", eq(x, 0));
  STRATA_DIFF_UNARY("clone", x.clone());
  STRATA_DIFF_UNARY("masked_fill", masked_fill(x, lt(x, 0), 9));
  STRATA_DIFF_UNARY("masked_fill_nan", masked_fill(x, lt(x, 0), kNaN));

  STRATA_DIFF_BINARY("add", add(x, y));
  STRATA_DIFF_BINARY("add_alpha2", add(x, y, 2));
  STRATA_DIFF_BINARY("sub", sub(x, y));
  STRATA_DIFF_BINARY("mul", mul(x, y));
  STRATA_DIFF_BINARY("div", div(x, y));
  STRATA_DIFF_BINARY("pow", pow(x, y));
  STRATA_DIFF_BINARY("maximum", maximum(x, y));
  STRATA_DIFF_BINARY("minimum", minimum(x, y));
  STRATA_DIFF_BINARY("eq", eq(x, y));
  STRATA_DIFF_BINARY("lt", lt(x, y));
  STRATA_DIFF_BINARY("ge", ge(x, y));
  STRATA_DIFF_BINARY("where", where(gt(x, y), x, y));

  STRATA_DIFF_SCALAR("add", add(x, s));
  STRATA_DIFF_SCALAR("sub", sub(x, s));
  STRATA_DIFF_SCALAR("mul", mul(x, s));
  STRATA_DIFF_SCALAR("div", div(x, s));
  STRATA_DIFF_SCALAR("pow", pow(x, s));
  STRATA_DIFF_SCALAR("eq", eq(x, s));
  STRATA_DIFF_SCALAR("gt", gt(x, s));
}

}  // namespace

void register_pointwise_cases() { pointwise_cases(); }

}  // namespace torch_diff
