// torch_diff cases: elementwise chains run through jit::compile (fused: tiled interpreter for
// small tensors, generated kernels for large ones) against LibTorch's eager ops, special values
// included; and the compiled forms under grad.
#include "torch_diff.h"

namespace torch_diff {
namespace {

const std::vector<double> kValues = {-3.5, -1, -0.0, 0, 0.25, 1, 2.5, kInf, -kInf, kNaN, 1e-30, -7e3, 88.5, 710};

// x and y of `count` elements cycling through kValues (y shifted by 5), in `dtype`.
template <class L>
TensorList<L> inputs(int64_t count, const std::string& dtype, bool requires_grad) {
  std::vector<double> x(count), y(count);
  for (int64_t i = 0; i < count; ++i) {
    x[i] = kValues[i % kValues.size()];
    y[i] = kValues[(i + 5) % kValues.size()];
  }
  return {L::make(x, {count}, dtype, requires_grad), L::make(y, {count}, dtype, requires_grad)};
}

template <class Fn>
void jit_cases(const std::string& name, Fn fn) {
  for (const std::string& dtype : {std::string("f32"), std::string("f64")}) {
    for (int64_t count : {int64_t{14}, int64_t{1} << 18}) {
      add_case("jit " + name + " " + dtype + " n=" + std::to_string(count), [=](auto lib) {
        using L = decltype(lib);
        return L::compiled([fn](const TensorList<L>& in) { return TensorList<L>{fn(in[0], in[1])}; },
                           inputs<L>(count, dtype, false));
      });
    }
    add_case("jit " + name + " " + dtype + " with grad", [=](auto lib) {
      using L = decltype(lib);
      auto in = inputs<L>(14, dtype, true);
      auto out = L::compiled([fn](const TensorList<L>& v) { return TensorList<L>{fn(v[0], v[1])}; }, in);
      out[0].sum().backward();
      return TensorList<L>{out[0], in[0].grad(), in[1].grad()};
    });
  }
}

#define STRATA_DIFF_JIT(name, expr) jit_cases(name, [](const auto& x, const auto& y) { return expr; })

}  // namespace

void register_jit_cases() {
  STRATA_DIFF_JIT("relu(x*2-1)", relu(x * 2 - 1));
  STRATA_DIFF_JIT("sigmoid(tanh(x))+y", sigmoid(tanh(x)) + y);
  STRATA_DIFF_JIT("exp(-abs(x))/(x*x+1)", exp(-abs(x)) / (x * x + 1));
  STRATA_DIFF_JIT("log(sqrt(abs(x)+0.5))*sin(x)-cos(y)", log(sqrt(abs(x) + 0.5)) * sin(x) - cos(y));
  STRATA_DIFF_JIT("(x+y)*(x-y)/3", (x + y) * (x - y) / 3);
  STRATA_DIFF_JIT("relu(x)*y+neg(x)", relu(x) * y + neg(x));
  STRATA_DIFF_JIT("(x*0)/x", (x * 0) / x);
  STRATA_DIFF_JIT("sub alpha and add alpha", add(sub(x, y, 2.5), x, -0.5));
  STRATA_DIFF_JIT("scalar ops", ((x + 1.5) - 0.25) * 3 / 7);
  STRATA_DIFF_JIT("sqrt(x)+log(x)", sqrt(x) + log(x));
  STRATA_DIFF_JIT("exp(x)*sigmoid(-x)", exp(x) * sigmoid(-x));
  STRATA_DIFF_JIT("tanh(x*y)", tanh(x * y));
  STRATA_DIFF_JIT("abs(x-y)/(abs(x)+abs(y))", abs(x - y) / (abs(x) + abs(y)));
  STRATA_DIFF_JIT("relu(relu(x)-relu(y))", relu(relu(x) - relu(y)));
  STRATA_DIFF_JIT("sin(x)*sin(x)+cos(x)*cos(x)", sin(x) * sin(x) + cos(x) * cos(x));
}

}  // namespace torch_diff
