// replace_op: replace a built-in operator's CPU kernel and its derivative with your own code,
// see the dispatch table before, during and after, and watch the built-ins come back when the
// replacing Library goes out of scope.
//
//   ./build/samples/replace_op
//
// What it shows:
//   1. dump_dispatch_table("strata::relu") lists each key's kernel and where it was registered.
//   2. A run-time Library("strata", IMPL, CPU) swaps relu's CPU kernel for a user loop (which
//      also counts its calls); a second Library swaps its Autograd kernel for a user Function
//      that saves the output instead of the input.
//   3. Every path that reaches relu goes through the user code: direct calls, calls by name,
//      and the backward pass.
//   4. Destroying the Libraries restores the built-in kernels (same results, old table).
#include <strata/strata.h>

#include <atomic>
#include <iostream>

using namespace strata;

namespace {

std::atomic<int> user_kernel_calls{0};

// relu's CPU kernel, by hand: float32 only, any shape; other dtypes get a clear error.
Tensor my_relu_cpu(const Tensor& self) {
  STRATA_CHECK(self.dtype() == kFloat32, "[relu] this user kernel handles float32 only, got ", self.dtype());
  ++user_kernel_calls;
  Tensor input = self.contiguous();
  Tensor out = empty(input.sizes());
  const float* in = input.data_ptr<float>();
  float* result = out.data_ptr<float>();
  parallel_for(0, input.numel(), 32768, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) result[i] = in[i] > 0.0f ? in[i] : 0.0f;
  });
  return out;
}

// relu's derivative, by hand: saves the output (the gradient passes where it is positive).
struct MyRelu : autograd::Function<MyRelu> {
  static constexpr const char* name() { return "MyRelu"; }
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& self) {
    Tensor out = relu(self);  // Autograd is excluded here: this reaches the CPU kernel
    ctx->save_for_backward({out});
    return out;
  }
  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grad_outputs) {
    Tensor out = ctx->get_saved_variables()[0];
    return {where(gt(out, 0.0), grad_outputs[0], zeros_like(grad_outputs[0]))};
  }
};

void show(const char* title) {
  std::cout << "---- " << title << "\n" << dump_dispatch_table("strata::relu") << "\n";
}

}  // namespace

int main() {
  Tensor x = tensor({-2.0f, -0.5f, 0.0f, 1.5f, 3.0f}).requires_grad_();
  show("built-in relu");
  {
    Library cpu("strata", Library::IMPL, DispatchKey::CPU);
    cpu.impl("relu", my_relu_cpu);
    Library derivative("strata", Library::IMPL, DispatchKey::Autograd);
    derivative.impl("relu", autograd::kernel<MyRelu>());
    show("relu with the user's CPU kernel and derivative");

    Tensor y = relu(x);
    y.sum().backward();
    std::cout << "relu(x) = " << y << "\nrecorded on the tape as " << y.grad_fn()->name()
              << "; d/dx sum(relu(x)) = " << x.grad() << "\n";
    std::cout << "by name: " << call("strata::relu", x.detach()).to_tensor() << "\n";
    try {
      relu(tensor({1.0, -1.0}, kFloat64));  // float64: the user kernel refuses it with a clear message
    } catch (const Error& error) {
      std::cout << "float64 input: " << error.what() << "\n";
    }
    std::cout << "user kernel called " << user_kernel_calls << " times\n\n";
  }
  show("after the Libraries are destroyed: the built-ins are back");
  x.grad().zero_();
  Tensor y = relu(x);
  y.sum().backward();
  std::cout << "relu(x) = " << y << "\nrecorded as " << y.grad_fn()->name() << "; grad " << x.grad() << "\n";
  std::cout << "user kernel calls still " << user_kernel_calls << "\n";
  return 0;
}
