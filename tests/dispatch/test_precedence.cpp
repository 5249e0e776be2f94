// Per-backend autograd keys, the Autograd alias, PyTorch's precedence between kernels of
// alias and runtime keys, and kernels that receive the dispatch key set.
#include <doctest/doctest.h>

#include <atomic>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::scalar_tensor;

namespace {

// Which kernel served the last call.
std::string last_kernel;

Tensor composite_kernel(const Tensor& x) {
  last_kernel = "composite";
  return mul(x, 2.0);
}
Tensor cpu_kernel(const Tensor& x) {
  last_kernel = "cpu";
  return scalar_tensor(x.item<float>() * 2);
}
struct Doubling : autograd::Function<Doubling> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) {
    last_kernel = "autograd alias";
    return find_op("prec_ops::twice").typed<Tensor(const Tensor&)>().call(x);
  }
  static tensor_list backward(autograd::AutogradContext*, tensor_list grads) { return {mul(grads[0], 2.0)}; }
};

Tensor call_twice(const Tensor& x) { return find_op("prec_ops::twice").typed<Tensor(const Tensor&)>().call(x); }

}  // namespace

TEST_CASE("precedence: a tensor that requires grad carries the autograd key of its backend") {
  Tensor cpu = scalar_tensor(1).requires_grad_();
  CHECK(cpu.impl()->key_set() == DispatchKeySet(DispatchKey::CPU).add(DispatchKey::AutogradCPU));
  Tensor meta = detail::make_empty({2}, kFloat32, kMeta).requires_grad_();
  CHECK(meta.impl()->key_set() == DispatchKeySet(DispatchKey::Meta).add(DispatchKey::AutogradMeta));
  cpu.requires_grad_(false);
  CHECK(cpu.impl()->key_set() == DispatchKeySet(DispatchKey::CPU));
  // The alias stands for its runtime keys in key sets and guards.
  CHECK(DispatchKeySet(DispatchKey::Autograd) ==
        DispatchKeySet(DispatchKey::AutogradCPU).add(DispatchKey::AutogradCUDA).add(DispatchKey::AutogradMeta));
  {
    NoGradGuard no_grad;
    CHECK(detail::local_dispatch_keys().excluded.has(DispatchKey::AutogradCUDA));
    CHECK_FALSE(is_grad_enabled());
  }
  ExcludeDispatchKeyGuard below(DispatchKey::Autograd);
  CHECK(detail::local_dispatch_keys().excluded.has(DispatchKey::AutogradMeta));
  CHECK_FALSE(is_grad_enabled());
}

TEST_CASE("precedence: key names and the keys below a key") {
  CHECK(dispatch_key_name(DispatchKey::AutogradCPU) == "AutogradCPU");
  CHECK(dispatch_key_name(DispatchKey::AutogradCUDA) == "AutogradCUDA");
  CHECK(dispatch_key_name(DispatchKey::AutogradMeta) == "AutogradMeta");
  CHECK(DispatchKeySet(DispatchKeySet::FULL_AFTER, DispatchKey::AutogradCPU) ==
        DispatchKeySet(DispatchKey::AutogradMeta).add(DispatchKey::CUDA).add(DispatchKey::CPU).add(DispatchKey::Meta));
  CHECK(DispatchKeySet::full_after(DispatchKey::Autograd) == DispatchKeySet(DispatchKey::CompositeExplicitAutograd));
  CHECK(DispatchKeySet::full_after(DispatchKey::Meta).empty());
  DispatchKeySet keys = DispatchKeySet(DispatchKey::Tracer).add(DispatchKey::AutogradCPU).add(DispatchKey::CPU);
  CHECK((keys & DispatchKeySet::full_after(DispatchKey::AutogradCPU)).highest() == DispatchKey::CPU);
}

TEST_CASE("precedence: a CPU kernel beats a composite for CPU tensors that require grad") {
  Library def("prec_ops", Library::DEF);
  def.def("twice(Tensor x) -> Tensor", composite_kernel);
  Library cpu("prec_ops", Library::IMPL, DispatchKey::CPU);
  cpu.impl("twice", cpu_kernel);

  Tensor x = scalar_tensor(3).requires_grad_();
  Tensor y = call_twice(x);
  CHECK(last_kernel == "cpu");  // not the composite: the not-implemented node records it
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->name().find("NotImplemented") != std::string::npos);

  Tensor on_meta = detail::make_empty({2}, kFloat32, kMeta).requires_grad_();
  call_twice(on_meta);  // no Meta kernel: the composite serves Meta and AutogradMeta
  CHECK(last_kernel == "composite");

  Library derivative("prec_ops", Library::IMPL, DispatchKey::Autograd);
  const int registered_at = __LINE__ + 1;
  derivative.impl("twice", autograd::kernel<Doubling>());
  Tensor z = call_twice(x);
  CHECK(last_kernel == "cpu");  // Doubling's forward redispatched to the CPU kernel
  z.backward();
  CHECK(x.grad().item<float>() == 2.0f);
  call_twice(on_meta);  // AutogradMeta: the composite outranks the Autograd alias
  CHECK(last_kernel == "composite");

  std::string dump = dump_dispatch_table("prec_ops::twice");
  INFO(dump);
  CHECK(dump.find("AutogradCPU: kernel registered at tests/dispatch/test_precedence.cpp") != std::string::npos);
  CHECK(dump.find("(via Autograd)") != std::string::npos);
  CHECK(dump.find("AutogradMeta: kernel registered at") != std::string::npos);
  CHECK(dump.find("(via CompositeImplicitAutograd)") != std::string::npos);
  CHECK(dump.find("Autograd: tests/dispatch/test_precedence.cpp") != std::string::npos);
  CHECK(dump.find(detail::str_cat("Autograd: tests/dispatch/test_precedence.cpp:", registered_at,
                                  " (active for AutogradCPU);")) != std::string::npos);
}

TEST_CASE("precedence: CompositeImplicitAutograd outranks an Autograd alias registration") {
  Library def("prec_ops2", Library::DEF);
  def.def("twice(Tensor x) -> Tensor", composite_kernel);
  int alias_calls = 0;
  Library derivative("prec_ops2", Library::IMPL, DispatchKey::Autograd);
  derivative.impl("twice", [&alias_calls](const Tensor& x) {
    ++alias_calls;
    return x;
  });
  Tensor x = scalar_tensor(3).requires_grad_();
  Tensor y = find_op("prec_ops2::twice").typed<Tensor(const Tensor&)>().call(x);
  CHECK(alias_calls == 0);
  CHECK(last_kernel == "composite");
  y.backward();
  CHECK(x.grad().item<float>() == 2.0f);  // the composite's autograd comes from mul
  std::string dump = dump_dispatch_table("prec_ops2::twice");
  INFO(dump);
  CHECK(dump.find("(shadowed") != std::string::npos);
}

TEST_CASE("precedence: a kernel registered to AutogradCPU beats the Autograd alias for CPU only") {
  Library def("prec_ops3", Library::DEF);
  def.def("f(Tensor x) -> Tensor");
  Library cpu("prec_ops3", Library::IMPL, DispatchKey::CPU);
  cpu.impl("f", [](const Tensor& x) { return x; });
  Library meta("prec_ops3", Library::IMPL, DispatchKey::Meta);
  meta.impl("f", [](const Tensor& x) { return x; });
  std::string served;
  Library alias("prec_ops3", Library::IMPL, DispatchKey::Autograd);
  alias.impl("f", [&served](DispatchKeySet keys, const Tensor& x) {
    served = "alias";
    static const auto op = find_op("prec_ops3::f").typed<Tensor(const Tensor&)>();
    return op.redispatch(keys & DispatchKeySet(DispatchKeySet::FULL_AFTER, DispatchKey::Autograd), x);
  });
  Library direct("prec_ops3", Library::IMPL, DispatchKey::AutogradCPU);
  direct.impl("f", [&served](const Tensor& x) {
    served = "AutogradCPU";
    return x;
  });
  auto op = find_op("prec_ops3::f").typed<Tensor(const Tensor&)>();
  op.call(scalar_tensor(1).requires_grad_());
  CHECK(served == "AutogradCPU");
  op.call(detail::make_empty({1}, kFloat32, kMeta).requires_grad_());
  CHECK(served == "alias");
}

TEST_CASE("precedence: a fallback for the Autograd alias serves every autograd key") {
  Library def("prec_ops4", Library::DEF);
  def.def("f(Tensor x) -> Tensor");
  Library cpu("prec_ops4", Library::IMPL, DispatchKey::CPU);
  cpu.impl("f", [](const Tensor& x) { return x; });
  Library meta("prec_ops4", Library::IMPL, DispatchKey::Meta);
  meta.impl("f", [](const Tensor& x) { return x; });
  std::vector<DispatchKey> seen;
  {
    Library fallback("_", Library::IMPL, DispatchKey::Autograd);
    fallback.fallback([&seen](const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
      seen.push_back(keys.highest());
      op.redispatch_boxed(keys - DispatchKeySet(DispatchKey::Autograd), stack);
    });
    auto op = find_op("prec_ops4::f").typed<Tensor(const Tensor&)>();
    op.call(scalar_tensor(1).requires_grad_());
    op.call(detail::make_empty({1}, kFloat32, kMeta).requires_grad_());
    op.call(scalar_tensor(1));  // no autograd key: no fallback
    std::string dump = dump_dispatch_table("prec_ops4::f");
    INFO(dump);
    CHECK(dump.find("AutogradCUDA: [backend fallback] registered at tests/dispatch/test_precedence.cpp") !=
          std::string::npos);
  }
  CHECK(seen == std::vector<DispatchKey>{DispatchKey::AutogradCPU, DispatchKey::AutogradMeta});
  // Gone with its Library: the not-implemented fallback is back.
  Tensor y = find_op("prec_ops4::f").typed<Tensor(const Tensor&)>().call(scalar_tensor(1).requires_grad_());
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->name().find("NotImplemented") != std::string::npos);
}

TEST_CASE("key sets: a kernel whose first parameter is DispatchKeySet receives the call's keys") {
  Library def("keyset_ops", Library::DEF);
  def.def("f(Tensor x, float beta) -> Tensor");  // the schema check ignores the leading DispatchKeySet
  DispatchKeySet received;
  Library cpu("keyset_ops", Library::IMPL, DispatchKey::CPU);
  cpu.impl("f", [&received](DispatchKeySet keys, const Tensor& x, double beta) {
    received = keys;
    return scalar_tensor(x.item<float>() + static_cast<float>(beta));
  });
  auto op = find_op("keyset_ops::f").typed<Tensor(const Tensor&, double)>();
  CHECK(op.call(scalar_tensor(1), 2.0).item<float>() == 3.0f);
  CHECK(received == DispatchKeySet(DispatchKey::CPU));
  IValue boxed = call("keyset_ops::f", scalar_tensor(1), 1.0);  // boxed calls pass them too
  CHECK(boxed.to_tensor().item<float>() == 2.0f);
  CHECK(received == DispatchKeySet(DispatchKey::CPU));

  Library autograd_cpu("keyset_ops", Library::IMPL, DispatchKey::AutogradCPU);
  autograd_cpu.impl("f", [](DispatchKeySet keys, const Tensor& x, double beta) {
    CHECK(keys.has(DispatchKey::AutogradCPU));
    static const auto inner = find_op("keyset_ops::f").typed<Tensor(const Tensor&, double)>();
    return inner.redispatch(keys & DispatchKeySet(DispatchKeySet::FULL_AFTER, DispatchKey::AutogradCPU), x, beta * 10);
  });
  CHECK(op.call(scalar_tensor(1).requires_grad_(), 2.0).item<float>() == 21.0f);
  CHECK(received == DispatchKeySet(DispatchKey::CPU));

  testing::expect_error<TypeError>(
      [&] { cpu.impl("f", [](DispatchKeySet, const Tensor& x) { return x; }); }, "[keyset_ops::f]");
}

TEST_CASE("key sets: a boxed fallback that takes the key set receives them") {
  Library def("keyset_ops2", Library::DEF);
  def.def("f(Tensor x) -> Tensor");
  Library cpu("keyset_ops2", Library::IMPL, DispatchKey::CPU);
  cpu.impl("f", [](const Tensor& x) { return x; });
  DispatchKeySet received;
  Library tracer("_", Library::IMPL, DispatchKey::Tracer);
  tracer.fallback([&received](const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
    received = keys;
    op.redispatch_boxed(keys & DispatchKeySet::full_after(DispatchKey::Tracer), stack);
  });
  auto op = find_op("keyset_ops2::f").typed<Tensor(const Tensor&)>();
  Tensor x = scalar_tensor(4), y;
  {
    IncludeDispatchKeyGuard trace(DispatchKey::Tracer);
    y = op.call(x);
    CHECK(received == DispatchKeySet(DispatchKey::Tracer).add(DispatchKey::CPU));
  }
  CHECK(y.item<float>() == 4.0f);
}

TEST_CASE("stale handles: a typed handle to an op redefined with another schema throws TypeError") {
  auto define = [](const char* schema) {
    Library def("stale_ops", Library::DEF);
    def.def(schema);
    return def;
  };
  TypedOperatorHandle<Tensor(const Tensor&)> old_handle;
  {
    Library def = define("f(Tensor x) -> Tensor");
    Library cpu("stale_ops", Library::IMPL, DispatchKey::CPU);
    cpu.impl("f", [](const Tensor& x) { return x; });
    old_handle = find_op("stale_ops::f").typed<Tensor(const Tensor&)>();
    CHECK(old_handle.call(scalar_tensor(1)).item<float>() == 1.0f);
  }
  {
    Library def = define("f(Tensor x, int n) -> Tensor");
    Library cpu("stale_ops", Library::IMPL, DispatchKey::CPU);
    cpu.impl("f", [](const Tensor& x, int64_t n) { return scalar_tensor(x.item<float>() * static_cast<float>(n)); });
    testing::expect_error<TypeError>([&] { old_handle.call(scalar_tensor(1)); }, "[stale_ops::f]",
                                     {"stale_ops::f(Tensor x) -> Tensor", "stale_ops::f(Tensor x, int n) -> Tensor"});
    auto fresh = find_op("stale_ops::f").typed<Tensor(const Tensor&, int64_t)>();
    CHECK(fresh.call(scalar_tensor(2), 3).item<float>() == 6.0f);
  }
  {
    Library def = define("f(Tensor x) -> Tensor");  // the same schema as the handle's: it works again
    Library cpu("stale_ops", Library::IMPL, DispatchKey::CPU);
    cpu.impl("f", [](const Tensor& x) { return scalar_tensor(x.item<float>() + 1); });
    CHECK(old_handle.call(scalar_tensor(1)).item<float>() == 2.0f);
  }
}
