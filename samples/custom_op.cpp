// custom_op: define an operator by schema, give it CPU and Meta kernels, call it, then
// replace a built-in operator's CPU kernel inside a scope and watch the original come back.
//
//   ./build/samples/custom_op
//
// What it shows:
//   1. STRATA_LIBRARY declares `myops::swish(Tensor x, float beta=1.0) -> Tensor`.
//   2. STRATA_LIBRARY_IMPL gives it a CPU kernel (math on the data) and a Meta kernel
//      (shape only: runs on tensors that have no data at all).
//   3. It is called through a typed handle and by name (boxed, with beta from its default).
//   4. A run-time Library replaces the CPU kernel of the built-in `strata::add.Tensor`; the
//      dispatch table shows the user kernel on top; when the Library goes out of scope the
//      built-in kernel is active again.
#include <strata/strata.h>

#include <cmath>
#include <iostream>

using namespace strata;

namespace {

// swish(x) = x * sigmoid(beta * x), written directly on the data.
Tensor swish_cpu(const Tensor& x, double beta) {
  Tensor input = x.to(kFloat32).contiguous();
  Tensor out = empty(input.sizes());
  const float* in = input.data_ptr<float>();
  float* result = out.data_ptr<float>();
  for (int64_t i = 0; i < input.numel(); ++i)
    result[i] = in[i] / (1.0f + std::exp(-static_cast<float>(beta) * in[i]));
  return out;
}

// The Meta kernel only says what the output looks like.
Tensor swish_meta(const Tensor& x, double) { return empty(x.sizes(), TensorOptions(kFloat32).device(kMeta)); }

}  // namespace

STRATA_LIBRARY(myops, m) { m.def("swish(Tensor x, float beta=1.0) -> Tensor"); }
STRATA_LIBRARY_IMPL(myops, CPU, m) { m.impl("swish", swish_cpu); }
STRATA_LIBRARY_IMPL(myops, Meta, m) { m.impl("swish", swish_meta); }

int main() {
  Tensor x = tensor({-2.0f, -1.0f, 0.0f, 1.0f, 2.0f});

  // A typed handle: looked up once, then each call is one table lookup.
  auto swish = find_op("myops::swish").typed<Tensor(const Tensor&, double)>();
  std::cout << "swish(x, beta=1) by handle:\n" << swish.call(x, 1.0) << "\n\n";

  // By name, boxed: beta comes from the schema's default.
  std::cout << "swish(x) by name:\n" << call("myops::swish", x).to_tensor() << "\n\n";

  // On Meta tensors only the shape is computed.
  Tensor big = empty({1024, 1024}, TensorOptions().device(kMeta));
  std::cout << "swish on a Meta tensor:\n" << swish.call(big, 1.0) << "\n\n";

  std::cout << "dispatch table of myops::swish:\n" << dump_dispatch_table("myops::swish") << "\n";

  Tensor a = tensor({1.0f, 2.0f, 3.0f});
  Tensor b = tensor({10.0f, 20.0f, 30.0f});
  std::cout << "built-in add: " << a + b << "\n\n";
  {
    // Replace add's CPU kernel for this scope: this one also counts its calls.
    int calls = 0;
    Library replace("strata", Library::IMPL, DispatchKey::CPU);
    replace.impl("add.Tensor", [&calls](const Tensor& self, const Tensor& other, const Scalar& alpha) {
      ++calls;
      STRATA_CHECK(self.sizes() == other.sizes() && self.dtype() == kFloat32 && other.dtype() == kFloat32 &&
                       self.is_contiguous() && other.is_contiguous(),
                   "[add] this sample kernel handles contiguous float32 tensors of equal shape only");
      Tensor out = empty(self.sizes());
      for (int64_t i = 0; i < self.numel(); ++i)
        out.data_ptr<float>()[i] = self.data_ptr<float>()[i] + alpha.to<float>() * other.data_ptr<float>()[i] + 1000;
      return out;
    });
    std::cout << "dispatch table of strata::add.Tensor with the user kernel:\n"
              << dump_dispatch_table("strata::add.Tensor") << "\n";
    std::cout << "replaced add (adds 1000): " << a + b << "\n(user kernel called " << calls << " time)\n\n";
  }
  std::cout << "dispatch table of strata::add.Tensor after the scope:\n" << dump_dispatch_table("strata::add.Tensor")
            << "\n";
  std::cout << "built-in add again: " << a + b << "\n";
  return 0;
}
