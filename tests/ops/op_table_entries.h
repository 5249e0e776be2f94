#pragma once
// The op table's entries for creation, pointwise and comparison ops (see op_table.h), grouped by
// family as in ops/; op_table_entries_2.h has the rest. Included once, by test_op_table.cpp. Every entry calls its op through its
// public free function, except var and std without dims, which have none (called boxed).
#include <cmath>
#include <limits>

#include "op_table_samples.h"

namespace strata::optable {
namespace entries {

// ---------------------------------------------------------------------------------------
// Creation (ops/creation.cpp): no tensor inputs; they create at the Env's device and dtype.

inline OpEntry factory(std::string name, std::vector<ScalarType> dtypes,
                       std::vector<std::pair<std::string, std::function<Tensor(const Env&)>>> cases,
                       Values values = Values::Deterministic) {
  OpEntry e;
  e.name = std::move(name);
  e.dtypes = std::move(dtypes);
  e.values = values;
  e.samples = [cases](ScalarType) {
    std::vector<Sample> samples;
    for (const auto& [desc, make] : cases)
      samples.push_back({desc, {}, [make](const tensor_list&, const Env& env) { return tensor_list{make(env)}; }});
    return samples;
  };
  return e;
}

// Random results: within [low, high) and, for enough values, a mean near `mean`.
inline std::function<void(const tensor_list&, const tensor_list&)> in_range(double low, double high, double mean) {
  return [=](const tensor_list&, const tensor_list& out) {
    const Tensor values = out[0].to(kFloat64);
    if (values.numel() == 0) return;
    if (out[0].dtype() == kBool) return;  // randint at bool: any draw is a valid bool
    CHECK(min(values).item<double>() >= low);
    CHECK(max(values).item<double>() < high);
    if (values.numel() >= 100) CHECK(std::abs(values.mean().item<double>() - mean) < 0.25 * (high - low));
  };
}

inline std::vector<OpEntry> creation_entries() {
  using C = std::vector<std::pair<std::string, std::function<Tensor(const Env&)>>>;
  std::vector<OpEntry> t;
  t.push_back(factory("strata::empty.memory_format", kAllTypes,
                      C{{"[]", [](const Env& e) { return empty({}, e.options()); }},
                        {"[0]", [](const Env& e) { return empty({0}, e.options()); }},
                        {"[2, 3]", [](const Env& e) { return empty({2, 3}, e.options()); }}},
                      Values::Unspecified));
  t.push_back(factory("strata::empty_strided", kAllTypes,
                      C{{"[2, 3] strides [1, 2]",
                         [](const Env& e) {
                           return empty_strided({2, 3}, {1, 2}, e.options());
                         }},
                        {"[0, 3]",
                         [](const Env& e) {
                           return empty_strided({0, 3}, {3, 1}, e.options());
                         }},
                        {"[]", [](const Env& e) { return empty_strided({}, {}, e.options()); }}},
                      Values::Unspecified));
  t.push_back(factory("strata::zeros", kAllTypes,
                      C{{"[]", [](const Env& e) { return zeros({}, e.options()); }},
                        {"[0, 2]", [](const Env& e) { return zeros({0, 2}, e.options()); }},
                        {"[2, 3]", [](const Env& e) { return zeros({2, 3}, e.options()); }}}));
  t.push_back(factory("strata::ones", kAllTypes,
                      C{{"[]", [](const Env& e) { return ones({}, e.options()); }},
                        {"[0]", [](const Env& e) { return ones({0}, e.options()); }},
                        {"[2, 3]", [](const Env& e) { return ones({2, 3}, e.options()); }}}));
  t.push_back(factory("strata::full", kAllTypes,
                      C{{"[] of 1", [](const Env& e) { return full({}, 1, e.options()); }},
                        {"[2, 3] of 1", [](const Env& e) { return full({2, 3}, 1, e.options()); }},
                        {"[0, 3] of 0", [](const Env& e) { return full({0, 3}, 0, e.options()); }}}));
  t.push_back(factory("strata::arange", kAllTypes,
                      C{{"5", [](const Env& e) { return arange(5, e.options()); }},
                        {"0", [](const Env& e) { return arange(0, e.options()); }}}));
  t.push_back(factory("strata::arange.start_step", kAllTypes,
                      C{{"1 to 7 step 2", [](const Env& e) { return arange(1, 7, 2, e.options()); }},
                        {"5 to 1 step -1", [](const Env& e) { return arange(5, 1, -1, e.options()); }},
                        {"3 to 3", [](const Env& e) { return arange(3, 3, 1, e.options()); }}}));
  t.push_back(factory("strata::linspace", kAllButBool,
                      C{{"0 to 4, 5 steps", [](const Env& e) { return linspace(0, 4, 5, e.options()); }},
                        {"-1 to 1, 1 step", [](const Env& e) { return linspace(-1, 1, 1, e.options()); }},
                        {"0 steps", [](const Env& e) { return linspace(0, 1, 0, e.options()); }}}));
  t.push_back(factory("strata::eye", kAllTypes,
                      C{{"3", [](const Env& e) { return eye(3, e.options()); }},
                        {"0", [](const Env& e) { return eye(0, e.options()); }}}));
  t.push_back(factory("strata::eye.m", kAllTypes,
                      C{{"2 x 3", [](const Env& e) { return eye(2, 3, e.options()); }},
                        {"4 x 1", [](const Env& e) { return eye(4, 1, e.options()); }}}));
  OpEntry rand_entry = factory("strata::rand", kFloating,
                               C{{"[]", [](const Env& e) { return rand({}, e.options()); }},
                                 {"[0]", [](const Env& e) { return rand({0}, e.options()); }},
                                 {"[20, 30]", [](const Env& e) { return rand({20, 30}, e.options()); }}},
                               Values::Random);
  rand_entry.check_random = in_range(0, 1, 0.5);
  t.push_back(rand_entry);
  OpEntry randn_entry = factory("strata::randn", kFloating,
                                C{{"[]", [](const Env& e) { return randn({}, e.options()); }},
                                  {"[0]", [](const Env& e) { return randn({0}, e.options()); }},
                                  {"[20, 30]", [](const Env& e) { return randn({20, 30}, e.options()); }}},
                                Values::Random);
  randn_entry.check_random = [](const tensor_list&, const tensor_list& out) {
    const Tensor values = out[0].to(kFloat64);
    if (values.numel() < 100) return;
    CHECK(std::abs(values.mean().item<double>()) < 0.2);
    CHECK(std::abs(values.std().item<double>() - 1.0) < 0.2);
  };
  t.push_back(randn_entry);
  OpEntry randint_entry = factory("strata::randint", kAllTypes,
                                  C{{"[] below 5", [](const Env& e) { return randint(5, {}, e.options()); }},
                                    {"[20, 30] below 10", [](const Env& e) { return randint(10, {20, 30}, e.options()); }}},
                                  Values::Random);
  randint_entry.check_random = in_range(0, 10, 4.5);
  t.push_back(randint_entry);
  OpEntry randint_low = factory("strata::randint.low", kAllTypes,
                                C{{"[0] in [2, 7)", [](const Env& e) { return randint(2, 7, {0}, e.options()); }},
                                  {"[20, 30] in [2, 7)", [](const Env& e) { return randint(2, 7, {20, 30}, e.options()); }}},
                                Values::Random);
  randint_low.check_random = in_range(2, 7, 4);
  t.push_back(randint_low);
  return t;
}

// ---------------------------------------------------------------------------------------
// Pointwise arithmetic (ops/pointwise.cpp), math and activations (ops/unary.cpp,
// ops/binary.cpp) and comparisons (ops/compare.cpp).

inline std::vector<OpEntry> pointwise_entries() {
  std::vector<OpEntry> t;
  const Domain nonzero{0.5, 2.0};
  t.push_back(binary_entry("strata::add.Tensor", kAllTypes, {0, 1}, [](const Tensor& x, const Tensor& y) {
    // A bool alpha needs a bool result: alpha 2 only where the result is not bool.
    if (result_type(x, y) == kBool) return tensor_list{add(x, y), add(x, y, true)};
    return tensor_list{add(x, y), add(x, y, 2)};
  }));
  t.push_back(scalar_entry("strata::add.Scalar", kAllTypes, {0}, [](const Tensor& x, const Scalar& s) { return add(x, s); }));
  t.push_back(binary_entry("strata::sub.Tensor", kAllButBool, {0, 1}, [](const Tensor& x, const Tensor& y) {
    return tensor_list{sub(x, y), sub(x, y, 3)};
  }));
  t.push_back(scalar_entry("strata::sub.Scalar", kAllButBool, {0}, [](const Tensor& x, const Scalar& s) { return sub(x, s); }));
  t.push_back(binary_entry("strata::mul.Tensor", kAllTypes, {0, 1}, b([](const Tensor& x, const Tensor& y) { return mul(x, y); })));
  t.push_back(scalar_entry("strata::mul.Scalar", kAllTypes, {0}, [](const Tensor& x, const Scalar& s) { return mul(x, s); }));
  t.push_back(binary_entry("strata::div.Tensor", kAllTypes, {0, 1},
                           b([](const Tensor& x, const Tensor& y) { return div(x, y); }), {}, nonzero));
  t.push_back(scalar_entry("strata::div.Scalar", kAllTypes, {0}, [](const Tensor& x, const Scalar& s) { return div(x, s); }));
  t.push_back(inplace_binary_entry("strata::add_.Tensor", kAllTypes, {0, 1},
                                   inplace([](const Tensor& x, const Tensor& y) { add_(x, y, 2); })));
  t.push_back(inplace_binary_entry("strata::sub_.Tensor", kAllButBool, {0, 1},
                                   inplace([](const Tensor& x, const Tensor& y) { sub_(x, y); })));
  t.push_back(inplace_binary_entry("strata::mul_.Tensor", kAllTypes, {0, 1},
                                   inplace([](const Tensor& x, const Tensor& y) { mul_(x, y); })));
  t.push_back(inplace_binary_entry("strata::div_.Tensor", kFloating, {0, 1},
                                   inplace([](const Tensor& x, const Tensor& y) { div_(x, y); }), nonzero));
  const auto inplace_scalar = [](std::string name, std::vector<ScalarType> dtypes,
                                 std::function<void(const Tensor&, const Scalar&)> f) {
    return scalar_entry(std::move(name), std::move(dtypes), {0}, [f](const Tensor& x, const Scalar& s) {
      Tensor self = x.clone();
      f(self, s);
      return self;
    });
  };
  t.push_back(inplace_scalar("strata::add_.Scalar", kAllButBool, [](const Tensor& x, const Scalar& s) { add_(x, s, 2); }));
  t.push_back(inplace_scalar("strata::sub_.Scalar", kAllButBool, [](const Tensor& x, const Scalar& s) { sub_(x, s); }));
  t.push_back(inplace_scalar("strata::mul_.Scalar", kAllButBool, [](const Tensor& x, const Scalar& s) { mul_(x, s); }));
  t.push_back(inplace_scalar("strata::div_.Scalar", kFloating, [](const Tensor& x, const Scalar& s) { div_(x, s); }));
  return t;
}

inline std::vector<OpEntry> unary_entries() {
  std::vector<OpEntry> t;
  t.push_back(unary_entry("strata::neg", kAllButBool, {0}, u([](const Tensor& x) { return neg(x); })));
  t.push_back(unary_entry("strata::abs", kAllTypes, {0}, u([](const Tensor& x) { return abs(x); }), kDistinct));
  t.push_back(unary_entry("strata::sign", kAllTypes, {0}, u([](const Tensor& x) { return sign(x); })));
  t.push_back(unary_entry("strata::exp", kAllTypes, {0}, u([](const Tensor& x) { return exp(x); })));
  t.push_back(unary_entry("strata::log", kAllTypes, {0}, u([](const Tensor& x) { return log(x); }), kPositive));
  t.push_back(unary_entry("strata::sqrt", kAllTypes, {0}, u([](const Tensor& x) { return sqrt(x); }), kPositive));
  t.push_back(unary_entry("strata::rsqrt", kAllTypes, {0}, u([](const Tensor& x) { return rsqrt(x); }), kPositive));
  t.push_back(unary_entry("strata::sin", kAllTypes, {0}, u([](const Tensor& x) { return sin(x); })));
  t.push_back(unary_entry("strata::cos", kAllTypes, {0}, u([](const Tensor& x) { return cos(x); })));
  t.push_back(unary_entry("strata::tanh", kAllTypes, {0}, u([](const Tensor& x) { return tanh(x); })));
  t.push_back(unary_entry("strata::sigmoid", kAllTypes, {0}, u([](const Tensor& x) { return sigmoid(x); })));
  t.push_back(unary_entry("strata::relu", kAllButBool, {0}, u([](const Tensor& x) { return relu(x); }), kDistinct));
  t.push_back(unary_entry("strata::silu", kFloating, {0}, u([](const Tensor& x) { return silu(x); })));
  t.push_back(unary_entry("strata::gelu", kFloating, {0},
                          [](const Tensor& x) { return tensor_list{gelu(x), gelu(x, "tanh")}; }));
  t.push_back(binary_entry("strata::gelu_backward", kFloating, {0, 1}, [](const Tensor& g, const Tensor& x) {
    return tensor_list{gelu_backward(g, x), gelu_backward(g, x, "tanh")};
  }));
  // The derivative ops reached by name (they have no free functions, as in PyTorch).
  for (const char* name : {"strata::tanh_backward", "strata::sigmoid_backward"}) {
    const auto op = find_op(name).typed<Tensor(const Tensor&, const Tensor&)>();
    t.push_back(binary_entry(name, kFloating, {0, 1},
                             [op](const Tensor& g, const Tensor& y) { return tensor_list{op.call(g, y)}; }));
  }
  t.push_back(unary_entry("strata::clamp", kAllTypes, {0}, [](const Tensor& x) {
    // Floating bounds promote an integral self.
    return tensor_list{clamp(x, -1), clamp(x, std::nullopt, 1), clamp(x, -1, 1), clamp(x, -1.5, 0.75)};
  }, kDistinct));
  t.push_back(binary_entry("strata::pow.Tensor_Tensor", kAllButBool, {0, 1},
                           b([](const Tensor& x, const Tensor& y) { return pow(x, y); }), kPositive, {0, 3}));
  OpEntry pow_scalar = unary_entry("strata::pow.Tensor_Scalar", kAllTypes, {0}, {}, kPositive);
  pow_scalar.samples = [](ScalarType dtype) {
    std::vector<Sample> samples;
    const std::vector<Scalar> exponents = is_floating_point(dtype)
                                              ? std::vector<Scalar>{2, 0, 3, 0.5, -1.0, -2.5}
                                              : std::vector<Scalar>{2, 0, 3, 0.5};
    for (const Scalar& e : exponents)
      samples = concat(std::move(samples), unary_samples(dtype, u([e](const Tensor& x) { return pow(x, e); }), kPositive,
                                                         unary_shapes(), " ** " + std::to_string(e.to_double())));
    return samples;
  };
  t.push_back(pow_scalar);
  t.push_back(binary_entry("strata::maximum", kAllTypes, {0, 1}, b([](const Tensor& x, const Tensor& y) { return maximum(x, y); }),
                           kDistinct, {-1.9, 2.1}));
  t.push_back(binary_entry("strata::minimum", kAllTypes, {0, 1}, b([](const Tensor& x, const Tensor& y) { return minimum(x, y); }),
                           kDistinct, {-1.9, 2.1}));
  t.push_back(unary_entry("strata::relu_", kAllButBool, {0}, u([](const Tensor& x) {
    Tensor self = x.clone();
    relu_(self);
    return self;
  }), kDistinct));
  t.push_back(unary_entry("strata::clamp_", kAllButBool, {0}, u([](const Tensor& x) {
    Tensor self = x.clone();
    clamp_(self, -1, 1);
    return self;
  }), kDistinct));
  // zero_ and fill_ overwrite self: its gradient is zero.
  t.push_back(unary_entry("strata::zero_", kAllTypes, {0}, u([](const Tensor& x) {
    Tensor self = x.clone();
    zero_(self);
    return self;
  })));
  t.push_back(unary_entry("strata::fill_.Scalar", kAllTypes, {0}, u([](const Tensor& x) {
    Tensor self = x.clone();
    fill_(self, 1);
    return self;
  })));
  return t;
}

inline std::vector<OpEntry> compare_entries() {
  std::vector<OpEntry> t;
  using TT = Tensor (*)(const Tensor&, const Tensor&);
  using TS = Tensor (*)(const Tensor&, const Scalar&);
  const std::vector<std::tuple<std::string, TT, TS>> ops = {
      {"eq", &eq, &eq}, {"ne", &ne, &ne}, {"lt", &lt, &lt}, {"le", &le, &le}, {"gt", &gt, &gt}, {"ge", &ge, &ge}};
  for (const auto& [name, tensor_op, scalar_op] : ops) {
    t.push_back(binary_entry("strata::" + name + ".Tensor", kAllTypes, {}, b(tensor_op), {-2, 2}, {-2, 2}));
    t.push_back(scalar_entry("strata::" + name + ".Scalar", kAllTypes, {}, scalar_op, 0.5, 1));
  }
  t.push_back(unary_entry("strata::logical_not", kAllTypes, {}, u([](const Tensor& x) { return logical_not(x); })));
  OpEntry where_entry;
  where_entry.name = "strata::where.self";
  where_entry.dtypes = kAllTypes;
  where_entry.grad_inputs = {1, 2};
  where_entry.samples = [](ScalarType dtype) {
    std::vector<Sample> samples;
    const std::vector<std::tuple<Shape, Shape, Shape>> shapes = {
        {{{}}, {{}}, {{}}},
        {{{3, 4}}, {{3, 4}}, {{3, 4}}},
        {{{3, 1}}, {{3, 4}}, {{4}}},
        {{{4}}, {{}}, {{3, 1}}},
        {{{3, 4}, Layout::Transposed}, {{3, 4}, Layout::Sliced}, {{3, 4}, Layout::Expanded}},
        {{{0, 4}}, {{4}}, {{0, 1}}},
    };
    samples.push_back(sample("[3, 4] with a 0-d float64 and [4] int64 (promotion)",
                             {make_arg({3, 4}, kBool), make_arg({}, kFloat64), make_arg({4}, kInt64)},
                             [](const tensor_list& in) { return tensor_list{where(in[0], in[1], in[2])}; }));
    samples.push_back(sample("[3, 4] with [3, 4] and a 0-d int64",
                             {make_arg({3, 4}, kBool), make_arg({3, 4}, dtype), make_arg({}, kInt64)},
                             [](const tensor_list& in) { return tensor_list{where(in[0], in[1], in[2])}; }));
    for (const auto& [c, x, y] : shapes)
      samples.push_back(sample(describe(c) + ", " + describe(x) + ", " + describe(y),
                               {make_arg(c.sizes, kBool, c.layout), make_arg(x.sizes, dtype, x.layout),
                                make_arg(y.sizes, dtype, y.layout)},
                               [](const tensor_list& in) { return tensor_list{where(in[0], in[1], in[2])}; }));
    return samples;
  };
  t.push_back(where_entry);
  return t;
}

}  // namespace entries
}  // namespace strata::optable
