// custom_function: a Swish activation with a derivative of its own, written as an
// autograd::Function, checked against finite differences, then made the Autograd kernel of a
// new operator so that every call of `myops::swish` records it on the tape.
//
//   ./build/samples/custom_function
//
// What it shows:
//   1. Function<Swish>::forward saves its input and its output (save_for_backward) and a
//      non-tensor (saved_data["beta"]); backward reads them back.
//   2. autograd::gradcheck compares Swish's analytical Jacobian with finite differences in
//      float64, for the input and through a broadcast, non-contiguous view.
//   3. Saved tensors are version-checked: changing the input in place after the forward makes
//      backward throw an error that names the tensor and both versions.
//   4. autograd::kernel<Swish>() turns the Function into the Autograd kernel of a new op
//      `myops::swish`, whose CPU kernel is plain ops.
#include <strata/strata.h>

#include <iostream>

using namespace strata;

// swish(x) = x * sigmoid(beta * x);  d/dx = s + beta * x * s * (1 - s) with s = sigmoid(beta * x),
// which, with y = x * s, is  s + beta * y * (1 - s).
struct Swish : autograd::Function<Swish> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, double beta) {
    Tensor s = sigmoid(x * beta);
    Tensor y = x * s;
    ctx->save_for_backward({s, y});  // the output is saved too: its version is checked as well
    ctx->saved_data["beta"] = beta;
    return y;
  }

  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grad_outputs) {
    const tensor_list saved = ctx->get_saved_variables();
    const Tensor& s = saved[0];
    const Tensor& y = saved[1];
    const double beta = ctx->saved_data["beta"].to_double();
    Tensor grad_x = grad_outputs[0] * (s + y * (1.0 - s) * beta);
    return {grad_x, Tensor()};  // beta is a number: no gradient
  }
};

// The CPU kernel of the op: the same math with plain ops (Autograd is excluded inside
// Function::forward, so these never reach the tape twice).
Tensor swish_cpu(const Tensor& x, double beta) { return x * sigmoid(x * beta); }

STRATA_LIBRARY(myops, m) { m.def("swish(Tensor x, float beta=1.0) -> Tensor"); }
STRATA_LIBRARY_IMPL(myops, CPU, m) { m.impl("swish", swish_cpu); }
STRATA_LIBRARY_IMPL(myops, Autograd, m) { m.impl("swish", autograd::kernel<Swish>()); }

int main() {
  manual_seed(0);
  Tensor x = randn({4}, kFloat64).requires_grad_();
  Tensor y = Swish::apply(x, 1.5);
  y.sum().backward();
  std::cout << "x:\n" << x << "\nswish(x, 1.5):\n" << y << "\nd/dx sum(swish(x)):\n" << x.grad() << "\n\n";

  // 2. gradcheck: contiguous input, then a transposed (non-contiguous) one.
  auto swish_of = [](const tensor_list& in) { return tensor_list{Swish::apply(in[0], 1.5)}; };
  autograd::GradcheckResult contiguous = autograd::gradcheck(swish_of, {randn({3, 5}, kFloat64).requires_grad_()});
  Tensor transposed = randn({5, 3}, kFloat64).t().detach().requires_grad_();
  autograd::GradcheckResult strided = autograd::gradcheck(swish_of, {transposed});
  std::cout << "gradcheck, contiguous input:     " << contiguous << "\n";
  std::cout << "gradcheck, non-contiguous input: " << strided << "\n\n";

  // 3. A saved tensor changed in place: backward refuses to use the stale value.
  Tensor z = randn({3}, kFloat64).requires_grad_();
  Tensor out = Swish::apply(z * 1.0, 1.0);
  {
    NoGradGuard no_grad;
    out.mul_(2.0);  // `out` is the saved output y
  }
  try {
    out.sum().backward();
  } catch (const Error& error) {
    std::cout << "backward after an in-place change of a saved tensor:\n  " << error.what() << "\n\n";
  }

  // 4. The Function as the Autograd kernel of myops::swish.
  Tensor w = randn({4}, kFloat64).requires_grad_();
  Tensor by_op = call("myops::swish", w, 2.0).to_tensor();
  by_op.sum().backward();
  std::cout << "myops::swish recorded " << by_op.grad_fn()->name() << " on the tape; grad:\n" << w.grad() << "\n\n";
  std::cout << "dispatch table of myops::swish:\n" << dump_dispatch_table("myops::swish") << "\n";
  return (contiguous && strided) ? 0 : 1;
}
