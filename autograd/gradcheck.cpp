#include <strata/autograd/gradcheck.h>

#include <cmath>
#include <sstream>

#include <strata/autograd/engine.h>
#include <strata/autograd/grad_mode.h>
#include <strata/ops/ops.h>

namespace strata::autograd {

std::ostream& operator<<(std::ostream& out, const GradcheckResult& result) {
  return out << (result ? "gradcheck passed: " : "gradcheck failed: ") << result.message();
}

namespace {

// Address of the flat-index-th element (logical row-major order) of a float64 tensor.
double* element(const Tensor& t, int64_t flat) {
  int64_t offset = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    offset += (flat % t.size(d)) * t.stride(d);
    flat /= t.size(d);
  }
  return t.data_ptr<double>() + offset;
}

// Outputs of fn as contiguous float64 values. Grad mode stays on: fn may itself differentiate
// (gradgradcheck passes a function that calls autograd::grad).
std::vector<std::vector<double>> evaluate(const std::function<tensor_list(const tensor_list&)>& fn,
                                          const tensor_list& inputs) {
  std::vector<std::vector<double>> values;
  for (const Tensor& out : fn(inputs)) {
    if (!out.defined() || !out.is_floating_point()) {
      values.emplace_back();
      continue;
    }
    Tensor flat = out.detach().to(kFloat64).contiguous();
    values.emplace_back(flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel());
  }
  return values;
}

void check_input(const Tensor& input, size_t index) {
  STRATA_CHECK_TYPE(input.dtype() == kFloat64, "[gradcheck] input ", index, " requires grad but is ", input.dtype(),
                    "; gradcheck needs float64 inputs");
  STRATA_CHECK_VALUE(input.is_cpu(), "[gradcheck] input ", index, " must be on the CPU");
  for (int64_t d = 0; d < input.dim(); ++d)
    STRATA_CHECK_VALUE(input.stride(d) != 0 || input.size(d) <= 1, "[gradcheck] input ", index,
                       " has an expanded dim (stride 0): its elements overlap in memory");
}

struct Mismatch {
  double excess = -1;
  std::string text;
};

}  // namespace

GradcheckResult gradcheck(std::function<tensor_list(const tensor_list&)> fn, tensor_list inputs, double eps,
                          double atol, double rtol) {
  std::vector<size_t> differentiable;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) {
      check_input(inputs[i], i);
      differentiable.push_back(i);
    }
  STRATA_CHECK_VALUE(!differentiable.empty(), "[gradcheck] no input requires grad");
  tensor_list outputs = fn(inputs);
  tensor_list diff_inputs;
  for (size_t i : differentiable) diff_inputs.push_back(inputs[i]);

  Mismatch worst;
  int64_t checked = 0;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const Tensor& out = outputs[o];
    if (!out.defined() || !out.is_floating_point()) continue;
    // analytical[k][j]: d out[j] / d input k (flattened), one backward per output element.
    std::vector<std::vector<std::vector<double>>> analytical(differentiable.size());
    for (int64_t j = 0; j < out.numel(); ++j) {
      Tensor seed = zeros_like(out, {}, MemoryFormat::Contiguous);  // viewed flat below
      {
        NoGradGuard no_grad;
        Tensor flat = seed.view({-1});
        flat.data_ptr<double>()[j] = 1.0;  // zeros_like keeps out's dtype; float64 here
      }
      tensor_list grads = out.requires_grad() ? grad({out}, diff_inputs, {seed}, true, false, true)
                                              : tensor_list(diff_inputs.size());
      for (size_t k = 0; k < grads.size(); ++k) {
        Tensor g = grads[k].defined() ? grads[k].to(kFloat64).contiguous() : zeros_like(diff_inputs[k]);
        analytical[k].emplace_back(g.data_ptr<double>(), g.data_ptr<double>() + g.numel());
      }
    }
    for (size_t k = 0; k < differentiable.size(); ++k) {
      const Tensor& input = diff_inputs[k];
      for (int64_t e = 0; e < input.numel(); ++e) {
        double* x = element(input, e);
        const double original = *x;
        *x = original + eps;
        auto plus = evaluate(fn, inputs);
        *x = original - eps;
        auto minus = evaluate(fn, inputs);
        *x = original;
        for (int64_t j = 0; j < out.numel(); ++j) {
          double numerical = (plus[o][j] - minus[o][j]) / (2 * eps);
          double exact = analytical[k][j][e];
          double excess = std::abs(exact - numerical) - (atol + rtol * std::abs(numerical));
          ++checked;
          if (excess > worst.excess && excess > 0) {
            std::ostringstream text;
            text << "output " << o << ", input " << differentiable[k] << ", input element " << e << ", output element "
                 << j << ": analytical " << exact << " vs numerical " << numerical;
            worst = {excess, text.str()};
          }
        }
      }
    }
  }
  if (worst.excess > 0) return GradcheckResult(false, "Jacobian mismatch at " + worst.text);
  return GradcheckResult(true, strata::detail::str_cat(checked, " Jacobian entries within atol ", atol, " + rtol ", rtol));
}

}  // namespace strata::autograd
