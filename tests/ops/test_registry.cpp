// Every built-in operator has kernels for CPU, Meta and Autograd (directly or through a
// composite key), except the ones listed here as having no derivative.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include <strata/strata.h>
#include <strata/tensor/device_hooks.h>

using namespace strata;

namespace {

// Ops whose outputs never carry gradients: factories, comparisons, indices.
const std::set<std::string> kNotDifferentiable = {
    "strata::empty.memory_format", "strata::empty_strided", "strata::zeros", "strata::ones", "strata::full", "strata::arange",
    "strata::arange.start_step",
    "strata::rand", "strata::randn", "strata::randint", "strata::randint.low", "strata::linspace", "strata::eye",
    "strata::eye.m", "strata::eq.Tensor", "strata::eq.Scalar", "strata::ne.Tensor", "strata::ne.Scalar",
    "strata::lt.Tensor", "strata::lt.Scalar", "strata::le.Tensor", "strata::le.Scalar", "strata::gt.Tensor",
    "strata::gt.Scalar", "strata::ge.Tensor", "strata::ge.Scalar", "strata::logical_not", "strata::argmax",
    "strata::argmin", "strata::zero_", "strata::fill_.Scalar",
};

// Backward helper ops (softmax's backward, say) compute first derivatives; a second derivative
// through them is not claimed, and reaching one throws NotImplementedError naming it.
bool is_backward_helper(const std::string& name) { return name.find("_backward") != std::string::npos; }

bool has_any(const OperatorHandle& op, std::initializer_list<DispatchKey> keys) {
  for (DispatchKey key : keys)
    if (op.has_kernel_for(key)) return true;
  return false;
}

}  // namespace

TEST_CASE("registry: every strata op has CPU, Meta and Autograd (or composite) kernels") {
  int checked = 0;
  for (const std::string& name : registered_ops()) {
    if (name.rfind("strata::", 0) != 0) continue;
    OperatorHandle op = find_op(name);
    INFO("op: " << name);
    const bool implicit = op.has_kernel_for(DispatchKey::CompositeImplicitAutograd);
    CHECK(has_any(op, {DispatchKey::CPU, DispatchKey::CompositeExplicitAutograd, DispatchKey::CompositeImplicitAutograd}));
    CHECK(has_any(op, {DispatchKey::Meta, DispatchKey::CompositeExplicitAutograd, DispatchKey::CompositeImplicitAutograd}));
    if (!kNotDifferentiable.count(name) && !is_backward_helper(name)) CHECK((implicit || op.has_kernel_for(DispatchKey::Autograd)));
    ++checked;
  }
  CHECK(checked >= 30);
}

// With the CUDA backend built, each op with a CPU kernel has a CUDA one (or a composite serves
// every backend), so "every op in API.md runs on CUDA" is checked on machines without a GPU too.
TEST_CASE("registry: with the CUDA backend, every strata op with a CPU kernel has a CUDA kernel" *
          doctest::skip(detail::device_hooks(kCUDA) == nullptr)) {
  int checked = 0;
  for (const std::string& name : registered_ops()) {
    if (name.rfind("strata::", 0) != 0) continue;
    OperatorHandle op = find_op(name);
    if (!op.has_kernel_for(DispatchKey::CPU)) continue;
    INFO("op: " << name);
    const bool cuda_kernel = op.has_kernel_for(DispatchKey::CUDA);
    CHECK((cuda_kernel || op.has_kernel_for(DispatchKey::CompositeExplicitAutograd)));
    if (cuda_kernel) CHECK(dump_dispatch_table(name).find("cuda/") != std::string::npos);
    ++checked;
  }
  CHECK(checked >= 130);
}

TEST_CASE("registry: dump_dispatch_table shows each key's kernel and where it was registered") {
  std::string table = dump_dispatch_table("strata::mul.Tensor");
  CHECK(table.find("ops/pointwise.cpp") != std::string::npos);
  CHECK(table.find("AutogradCPU: kernel") != std::string::npos);  // via the Autograd alias
  CHECK(table.find("CPU: kernel") != std::string::npos);
  CHECK(table.find("Meta: kernel") != std::string::npos);
}
