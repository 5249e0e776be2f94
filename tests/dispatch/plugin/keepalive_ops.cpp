// A .so whose objects outlive its unloading: an autograd Function, a gradient hook and a
// storage deleter, all with code in the .so. See Note [Code of unloaded libraries].
#include <strata/strata.h>

using namespace strata;

namespace {

struct PluginTriple : autograd::Function<PluginTriple> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * 3.0; }
  static tensor_list backward(autograd::AutogradContext*, tensor_list grads) { return {grads[0] * 3.0}; }
};

Tensor triple_cpu(const Tensor& x) { return x * 3.0; }

// A hook that doubles the gradient reaching x.
void double_gradient(const Tensor& x) {
  x.register_hook([](const Tensor& grad) { return grad * 2.0; });
}

// A tensor over memory the .so owns and frees.
Tensor owned_blob(int64_t n) {
  auto* data = new float[static_cast<size_t>(n)]();
  auto storage = make_intrusive<StorageImpl>(data, static_cast<size_t>(n) * sizeof(float), Device(kCPU),
                                             [](void* p) { delete[] static_cast<float*>(p); });
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), kFloat32, std::vector<int64_t>{n}));
}

}  // namespace

STRATA_LIBRARY(keepalive_ops, m) {
  m.def("triple(Tensor x) -> Tensor");
  m.def("double_gradient(Tensor x) -> ()", double_gradient);
  m.def("owned_blob(int n) -> Tensor", owned_blob);
}
STRATA_LIBRARY_IMPL(keepalive_ops, CPU, m) { m.impl("triple", triple_cpu); }
STRATA_LIBRARY_IMPL(keepalive_ops, Autograd, m) { m.impl("triple", autograd::kernel<PluginTriple>()); }
