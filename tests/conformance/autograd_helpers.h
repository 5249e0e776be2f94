#pragma once
// Helpers shared by the ports of LibTorch's test/cpp/api/autograd.cpp (test_autograd_*.cpp).
//
// Spelling map: Variable -> Tensor, variable_list -> tensor_list, toInt()/toTensor()/toBool() ->
// to_int()/to_tensor()/to_bool(), _version() -> version(), set_requires_grad(b) ->
// requires_grad_(b), t[i] -> t.select(0, i), AutoGradMode(true) -> EnableGradGuard,
// make_variable(t.tensor_data(), true) -> t.detach().requires_grad_(), unsafeGetTensorImpl()
// equality -> is_same(). ASSERT_THROWS_WITH checks the exception class and strata's "[op]"
// prefix, not LibTorch's wording (the suite measures behaviour, error wording aside).
#include <strata/strata.h>

namespace strata::conformance {

// LibTorch's internal UndefinedGrad node (torch/csrc/autograd/functions/basic_ops.h): passes its
// input through and gives it an undefined gradient. strata has no public node of that kind; this
// Function does the same.
struct UndefinedGrad : autograd::Function<UndefinedGrad> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x.clone(); }
  static tensor_list backward(autograd::AutogradContext*, tensor_list) { return {Tensor()}; }
};

}  // namespace strata::conformance
