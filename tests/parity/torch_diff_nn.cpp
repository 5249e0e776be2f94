// torch_diff cases: losses, nn functions, linear algebra, shape and indexing ops, in-place ops,
// with their gradients.
#include "torch_diff.h"

namespace torch_diff {
namespace {

void loss_cases() {
  for (int reduction : {0, 1, 2}) {
    const std::string r = " r" + std::to_string(reduction);
    add_case("loss cross_entropy" + r, [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make(ramp(12), {4, 3}, "f64", true);
      auto t = L::make({0, 2, 1, 2}, {4}, "i64");
      return with_grads<L>(L::cross_entropy(x, t, L::no_tensor(), reduction, -100, 0.0), {x});
    });
    add_case("loss cross_entropy weight ignore smoothing" + r, [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make(ramp(12), {4, 3}, "f64", true);
      auto t = L::make({0, 2, -1, 2}, {4}, "i64");
      auto w = L::make({0.5, 2, 1.5}, {3}, "f64");
      return with_grads<L>(L::cross_entropy(x, t, w, reduction, -1, 0.2), {x});
    });
    add_case("loss cross_entropy smoothing no weight" + r, [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make(ramp(12), {4, 3}, "f64", true);
      auto t = L::make({0, 2, 1, 1}, {4}, "i64");
      return with_grads<L>(L::cross_entropy(x, t, L::no_tensor(), reduction, -100, 0.3), {x});
    });
    add_case("loss cross_entropy weight smoothing no ignore" + r, [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make(ramp(12), {4, 3}, "f64", true);
      auto t = L::make({0, 2, 1, 1}, {4}, "i64");
      auto w = L::make({0.5, 2, 1.5}, {3}, "f64");
      return with_grads<L>(L::cross_entropy(x, t, w, reduction, -100, 0.3), {x});
    });
    add_case("loss cross_entropy probabilities" + r, [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make(ramp(12), {4, 3}, "f64", true);
      auto t = L::make({0.2, 0.3, 0.5, 1, 0, 0, 0.1, 0.1, 0.8, 0.3, 0.3, 0.4}, {4, 3}, "f64");
      auto w = L::make({0.5, 2, 1.5}, {3}, "f64");
      return with_grads<L>(L::cross_entropy(x, t, w, reduction, -100, 0.1), {x});
    });
    add_case("loss cross_entropy spatial" + r, [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make(ramp(24), {2, 3, 2, 2}, "f64", true);
      auto t = L::make({0, 2, 1, 2, 1, 1, 0, -100}, {2, 2, 2}, "i64");
      return with_grads<L>(L::cross_entropy(x, t, L::no_tensor(), reduction, -100, 0.0), {x});
    });
    add_case("loss cross_entropy unbatched" + r, [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make(ramp(3), {3}, "f64", true);
      auto t = L::make({1}, {}, "i64");
      return with_grads<L>(L::cross_entropy(x, t, L::no_tensor(), reduction, -100, 0.0), {x});
    });
    add_case("loss nll_loss all ignored" + r, [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make(ramp(6), {2, 3}, "f64", true);
      auto t = L::make({-100, -100}, {2}, "i64");
      return with_grads<L>(L::nll_loss(x, t, L::no_tensor(), reduction, -100), {x});
    });
    add_case("loss nll_loss weight" + r, [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make(ramp(6), {2, 3}, "f32", true);
      auto t = L::make({2, 0}, {2}, "i64");
      auto w = L::make({0.5, 2, 1.5}, {3}, "f32");
      return with_grads<L>(L::nll_loss(x, t, w, reduction, -100), {x});
    });
    add_case("loss mse_loss broadcast" + r, [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make(ramp(6), {2, 3}, "f64", true);
      auto t = L::make({1, 2, 3}, {3}, "f64", true);
      return with_grads<L>(L::mse_loss(x, t, reduction), {x, t});
    });
    add_case("loss bce_logits weight pos_weight" + r, [=](auto lib) {
      using L = decltype(lib);
      auto x = L::make({-100, -2, 0, 1, 3, 100}, {2, 3}, "f64", true);
      auto t = L::make({0, 1, 0.5, 1, 0, 1}, {2, 3}, "f64", true);
      auto w = L::make({1, 2}, {2, 1}, "f64");
      auto pw = L::make({3, 1, 0.5}, {3}, "f64");
      return with_grads<L>(L::bce_logits(x, t, w, pw, reduction), {x, t});
    });
  }
  add_case("loss cross_entropy target out of range", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{L::cross_entropy(L::make(ramp(6), {2, 3}, "f32"), L::make({0, 3}, {2}, "i64"),
                                          L::no_tensor(), 1, -100, 0.0)};
  });
  add_case("loss cross_entropy int32 target", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{L::cross_entropy(L::make(ramp(6), {2, 3}, "f32"), L::make({0, 2}, {2}, "i32"),
                                          L::no_tensor(), 1, -100, 0.0)};
  });
}

void nn_function_cases() {
  add_case("nn layer_norm affine", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(24), {2, 3, 4}, "f64", true);
    auto w = L::make(ramp(12, 0.5, 0.1), {3, 4}, "f64", true);
    auto b = L::make(ramp(12, -0.5, 0.2), {3, 4}, "f64", true);
    return with_grads<L>(layer_norm(x, {3, 4}, w, b, 1e-5), {x, w, b});
  });
  add_case("nn layer_norm plain f32", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(24), {2, 3, 4}, "f32", true);
    return with_grads<L>(layer_norm(x, {4}), {x});
  });
  add_case("nn layer_norm constant rows", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make({1, 1, 1, 1, 2, 3, 4, 5}, {2, 4}, "f64", true);
    return with_grads<L>(layer_norm(x, {4}), {x});
  });
  add_case("nn embedding padding repeated", [](auto lib) {
    using L = decltype(lib);
    auto w = L::make(ramp(15), {5, 3}, "f64", true);
    auto i = L::make({0, 2, 2, 4, 0, 1}, {2, 3}, "i64");
    return with_grads<L>(embedding(w, i, 2), {w});
  });
  add_case("nn embedding negative padding_idx", [](auto lib) {
    using L = decltype(lib);
    auto w = L::make(ramp(15), {5, 3}, "f64", true);
    auto i = L::make({0, 4, 4, 1}, {4}, "i64");
    return with_grads<L>(embedding(w, i, -1), {w});
  });
  add_case("nn embedding scale_grad_by_freq", [](auto lib) {
    using L = decltype(lib);
    auto w = L::make(ramp(15), {5, 3}, "f64", true);
    auto i = L::make({0, 4, 4, 1, 4}, {5}, "i64");
    return with_grads<L>(embedding(w, i, -1, true), {w});
  });
  add_case("nn embedding index out of range", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{embedding(L::make(ramp(15), {5, 3}, "f64"), L::make({5}, {1}, "i64"))};
  });
  struct Conv {
    Shape input, weight;
    Shape stride, padding, dilation;
    int64_t groups;
  };
  const std::vector<Conv> convs = {
      {{2, 3, 5, 5}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1},
      {{1, 4, 6, 5}, {6, 2, 3, 2}, {2, 1}, {1, 2}, {1, 2}, 2},
      {{2, 2, 7, 7}, {2, 1, 3, 3}, {2, 2}, {1, 1}, {2, 2}, 2},
      {{3, 5, 5}, {2, 3, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},
      {{1, 2, 3, 3}, {1, 2, 4, 4}, {1, 1}, {0, 0}, {1, 1}, 1},
  };
  for (size_t k = 0; k < convs.size(); ++k) {
    const Conv c = convs[k];
    for (bool cl : {false, true}) {
      add_case("nn conv2d #" + std::to_string(k) + (cl ? " channels_last" : ""), [=](auto lib) {
        using L = decltype(lib);
        auto x = L::make(ramp(count(c.input)), c.input, "f64");
        if (cl && c.input.size() == 4) x = L::channels_last(x);
        x.requires_grad_(true);
        auto w = L::make(ramp(count(c.weight), 0.3, -0.17), c.weight, "f64", true);
        auto b = L::make(ramp(c.weight[0], 0.1, 0.2), {c.weight[0]}, "f64", true);
        return with_grads<L>(conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups), {x, w, b});
      });
    }
  }
  struct Pool {
    Shape input, kernel, stride, padding, dilation;
    bool ceil;
  };
  const std::vector<Pool> pools = {
      {{1, 2, 5, 5}, {2, 2}, {}, {0, 0}, {1, 1}, false},
      {{1, 2, 5, 5}, {2, 2}, {}, {0, 0}, {1, 1}, true},
      {{2, 1, 6, 7}, {3, 2}, {2, 1}, {1, 1}, {1, 1}, false},
      {{1, 1, 7, 7}, {3, 3}, {2, 2}, {1, 0}, {2, 1}, true},
      {{2, 5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, false},
      {{1, 1, 4, 4}, {2, 2}, {3, 3}, {1, 1}, {1, 1}, true},
  };
  for (size_t k = 0; k < pools.size(); ++k) {
    const Pool p = pools[k];
    for (const std::string& values : {std::string("ramp"), std::string("ties"), std::string("nan")}) {
      add_case("nn max_pool2d #" + std::to_string(k) + " " + values, [=](auto lib) {
        using L = decltype(lib);
        std::vector<double> v = ramp(count(p.input));
        if (values == "ties") for (double& e : v) e = std::round(e);
        if (values == "nan") v[3] = kNaN;
        auto x = L::make(v, p.input, "f64", true);
        return with_grads<L>(max_pool2d(x, p.kernel, p.stride, p.padding, p.dilation, p.ceil), {x});
      });
    }
  }
  add_case("nn dropout eval and p=0", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f32");
    return TensorList<L>{dropout(x, 0.5, false), dropout(x, 0.0, true)};
  });
  add_case("nn dropout p=1", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {2, 3}, "f32", true);
    return with_grads<L>(dropout(x, 1.0, true), {x});
  });
  add_case("nn dropout p=1.5", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{dropout(L::make(ramp(6), {2, 3}, "f32"), 1.5, true)};
  });
}

void linalg_cases() {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3}, {3}},          {{3}, {3, 2}},        {{2, 3}, {3}},       {{2, 3}, {3, 4}},
      {{2, 2, 3}, {3, 4}}, {{3}, {2, 3, 4}},     {{2, 1, 2, 3}, {3, 3, 2}}, {{4, 2, 3}, {1, 3, 2}},
      {{0, 3}, {3, 2}},    {{2, 0}, {0, 3}},     {{2, 3}, {4, 3}},
  };
  for (const auto& [a, b] : shapes) {
    add_case("linalg matmul " + std::to_string(a.size()) + "d@" + std::to_string(b.size()) + "d " +
                 std::to_string(count(a)) + "," + std::to_string(count(b)),
             [=](auto lib) {
               using L = decltype(lib);
               auto x = L::make(ramp(count(a)), a, "f64", true);
               auto y = L::make(ramp(count(b), 0.2, 0.3), b, "f64", true);
               return with_grads<L>(matmul(x, y), {x, y});
             });
  }
  for (const std::string& dtype : {std::string("i64"), std::string("i32"), std::string("f16"), std::string("bf16")}) {
    add_case("linalg matmul " + dtype, [=](auto lib) {
      using L = decltype(lib);
      return TensorList<L>{matmul(L::make({1, 2, 3, 4, 5, 6}, {2, 3}, dtype), L::make({1, 0, -1, 2, 3, 1}, {3, 2}, dtype))};
    });
  }
  add_case("linalg matmul mixed dtypes", [](auto lib) {
    using L = decltype(lib);
    return TensorList<L>{matmul(L::make({1, 2, 3, 4}, {2, 2}, "f32"), L::make({1, 0, -1, 2}, {2, 2}, "f64"))};
  });
  add_case("linalg linear 1d input", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(3), {3}, "f64", true);
    auto w = L::make(ramp(6, 0.2), {2, 3}, "f64", true);
    auto b = L::make({0.5, -0.5}, {2}, "f64", true);
    return with_grads<L>(linear(x, w, b), {x, w, b});
  });
  add_case("linalg linear 3d input no bias", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(12), {2, 2, 3}, "f64", true);
    auto w = L::make(ramp(6, 0.2), {2, 3}, "f64", true);
    return with_grads<L>(linear(x, w), {x, w});
  });
  add_case("linalg mm transposed grads", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(6), {3, 2}, "f64", true);
    auto y = L::make(ramp(8, 0.2), {4, 2}, "f64", true);
    return with_grads<L>(mm(x.t(), y.t()), {x, y});
  });
  add_case("linalg bmm", [](auto lib) {
    using L = decltype(lib);
    auto x = L::make(ramp(12), {2, 2, 3}, "f64", true);
    auto y = L::make(ramp(12, 0.2), {2, 3, 2}, "f64", true);
    return with_grads<L>(bmm(x, y), {x, y});
  });
}

}  // namespace

void register_shape_cases();

void register_nn_cases() {
  loss_cases();
  nn_function_cases();
  linalg_cases();
  register_shape_cases();
}

}  // namespace torch_diff
