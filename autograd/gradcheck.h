#pragma once
// gradcheck: analytical Jacobians (from autograd) against central finite differences.
#include <functional>
#include <ostream>
#include <string>

#include <strata/tensor/tensor.h>

namespace strata::autograd {

class GradcheckResult {
 public:
  GradcheckResult(bool ok, std::string message) : ok_(ok), message_(std::move(message)) {}
  explicit operator bool() const { return ok_; }
  // The worst mismatch (output, input, index, both values), or a summary on success.
  const std::string& message() const { return message_; }

 private:
  bool ok_;
  std::string message_;
};
std::ostream& operator<<(std::ostream& out, const GradcheckResult& result);

// Inputs that require grad must be float64 and must not overlap in memory (no expanded
// dims). Every floating-point output is checked against every input that requires grad.
GradcheckResult gradcheck(std::function<tensor_list(const tensor_list&)> fn, tensor_list inputs, double eps = 1e-6,
                          double atol = 1e-5, double rtol = 1e-3);

}  // namespace strata::autograd
