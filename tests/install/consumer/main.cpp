#include <strata/strata.h>

#include <iostream>

STRATA_LIBRARY(consumer_ops, m) { m.def("twice(Tensor x) -> Tensor"); }
STRATA_LIBRARY_IMPL(consumer_ops, CPU, m) {
  m.impl("twice", [](const strata::Tensor& x) { return x + x; });
}

int main() {
  strata::Tensor x = strata::ones({2, 2});
  strata::Tensor y = strata::call("consumer_ops::twice", x).to_tensor();
  double total = y.sum().item<double>();
  std::cout << "consumer: sum = " << total << "\n";
  return total == 8.0 ? 0 : 1;
}
