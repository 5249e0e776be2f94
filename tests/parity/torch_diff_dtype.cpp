// torch_diff cases: casts between dtypes (rounding, overflow to inf), low-precision reductions,
// integral powers, and the statistics of random numbers and of the layers' initial parameters.
#include "torch_diff.h"

namespace torch_diff {
namespace {

const std::vector<std::string> kTypes = {"bool", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"};

// Values every dtype can hold after truncation, so that each cast is defined in C++.
const std::vector<double> kPortable = {0, 1, 2.5, 3.7, 100.2, 127.9, 0.49};
// Values that round, overflow or go subnormal in float16/bfloat16.
const std::vector<double> kRounding = {1.0 / 3, 3.0001, 2049, 65504, 65519, 65520, 1e5, 6e-8, 1e-40, -2.5e-8,
                                       256.5, 257.5, 1.00390625, 1.01171875, 3.4e38};

// Booleans of a statistic within [low, high].
template <class T>
T within(const T& statistic, double low, double high) {
  return ge(statistic, low) * le(statistic, high);
}

}  // namespace

void register_dtype_cases() {
  for (const std::string& from : kTypes) {
    for (const std::string& to : kTypes) {
      add_case("cast " + from + " -> " + to, [=](auto lib) {
        using L = decltype(lib);
        return TensorList<L>{L::make(kPortable, {7}, from).to(L::type(to))};
      });
    }
  }
  for (const std::string& to : {std::string("f16"), std::string("bf16"), std::string("f32")}) {
    add_case("cast rounding f64 -> " + to, [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make(kRounding, {static_cast<int64_t>(kRounding.size())}, "f64");
      return TensorList<L>{x.to(L::type(to)), (-x).to(L::type(to)), x.to(L::type("f32")).to(L::type(to))};
    });
  }
  add_case("cast float to bool", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{L::make({0.1, -0.0, 0, kNaN, -kInf, 1e-40}, {6}, "f64").to(L::type("bool"))};
  });
  add_case("cast float to int truncates", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{L::make({-2.7, -0.5, 0.5, 2.7, -1e9, 1e9}, {6}, "f64").to(L::type("i64")),
                         L::make({-2.7, -0.5, 0.5, 2.7}, {4}, "f32").to(L::type("i32")),
                         L::make({-2.7, -0.5, 0.5, 2.7}, {4}, "f16").to(L::type("i8"))};
  });
  for (const std::string& dtype : {std::string("f16"), std::string("bf16")}) {
    add_case("precision sum and mean of 10000 " + dtype, [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make(std::vector<double>(10000, 0.1), {100, 100}, dtype);
      return TensorList<L>{x.sum(), x.mean(), x.sum({1}), x.mean({0})};
    });
    add_case("precision norm of 10000 " + dtype, [=](auto lib) {
      using L = decltype(lib);
      return TensorList<L>{L::make(std::vector<double>(10000, 0.1), {100, 100}, dtype).norm()};
    });
    add_case("precision matmul " + dtype, [=](auto lib) {
      using L = decltype(lib);
      auto a = L::make(std::vector<double>(2 * 3000, 0.1), {2, 3000}, dtype);
      auto b = L::make(std::vector<double>(3000 * 2, 0.1), {3000, 2}, dtype);
      return TensorList<L>{matmul(a, b)};
    });
    add_case("precision add and mul of " + dtype, [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make(kRounding, {static_cast<int64_t>(kRounding.size())}, dtype);
      return TensorList<L>{x + 1, x * 3, x / 7, x - x / 3};
    });
  }
  for (const std::string& dtype : {std::string("i64"), std::string("i32"), std::string("u8")}) {
    add_case("integral pow negative exponent " + dtype, [=](auto lib) {
      using L = decltype(lib);
      return TensorList<L>{pow(L::make({1, 2, 3}, {3}, dtype), -1)};
    });
    add_case("integral pow tensor exponent " + dtype, [=](auto lib) {
      using L = decltype(lib);
      return TensorList<L>{pow(L::make({1, 2, 3, 0}, {4}, dtype), L::make({2, 0, 3, 0}, {4}, dtype))};
    });
  }
  add_case("random rand randn randint statistics", [](auto lib) {
    using L = decltype(lib);
    L::manual_seed(3);
    auto u = L::rand({100000});
    auto n = L::randn({100000});
    auto i = L::randint(-3, 5, {100000});
    return TensorList<L>{within(u.min(), 0, 0.001),        within(u.max(), 0.999, 0.99999999),
                         within(u.mean(), 0.49, 0.51),      within(n.mean(), -0.02, 0.02),
                         within(L::std_(n, {}, true, false), 0.98, 1.02), i.min(), i.max(),
                         within(i.to(L::type("f64")).mean(), 0.45, 0.55), L::make({double(i.dtype() == L::type("i64"))}, {}, "bool")};
  });
  add_case("random dropout statistics", [](auto lib) {
    using L = decltype(lib);
    L::manual_seed(4);
    auto x = L::make(std::vector<double>(100000, 1.0), {100000}, "f32", true);
    auto y = dropout(x, 0.3, true);
    y.sum().backward();
    auto kept = ne(y, 0).to(L::type("f64")).mean();
    return TensorList<L>{within(kept, 0.69, 0.71), within(y.max(), 1 / 0.7 - 1e-6, 1 / 0.7 + 1e-6),
                         eq(x.grad(), y).to(L::type("f64")).min()};
  });
  add_case("init Linear bounds", [](auto lib) {
    using L = decltype(lib);
    L::manual_seed(5);
    auto layer = L::linear_module(400, 300);
    const double bound = 1 / std::sqrt(400.0);
    return TensorList<L>{within(layer->weight.abs().max(), 0.99 * bound, bound),
                         within(L::std_(layer->weight, {}, true, false), 0.98 * bound / std::sqrt(3.0),
                                1.02 * bound / std::sqrt(3.0)),
                         within(layer->bias.abs().max(), 0.9 * bound, bound), L::make({double(layer->weight.requires_grad())}, {}, "bool")};
  });
  add_case("init Conv2d bounds", [](auto lib) {
    using L = decltype(lib);
    L::manual_seed(6);
    auto layer = L::conv2d_module(16, 64, 3);
    const double bound = 1 / std::sqrt(16.0 * 9);
    return TensorList<L>{within(layer->weight.abs().max(), 0.99 * bound, bound),
                         within(L::std_(layer->weight, {}, true, false), 0.97 * bound / std::sqrt(3.0),
                                1.03 * bound / std::sqrt(3.0)),
                         within(layer->bias.abs().max(), 0.8 * bound, bound)};
  });
  add_case("init Embedding and LayerNorm", [](auto lib) {
    using L = decltype(lib);
    L::manual_seed(7);
    auto embedding_layer = L::embedding_module(1000, 64);
    auto norm = L::layer_norm_module(5);
    return TensorList<L>{within(L::std_(embedding_layer->weight, {}, true, false), 0.98, 1.02),
                         within(embedding_layer->weight.mean(), -0.02, 0.02), norm->weight, norm->bias};
  });
}

}  // namespace torch_diff
