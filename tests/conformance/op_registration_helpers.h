#pragma once
// Helpers shared by the ports of PyTorch's aten/src/ATen/core/op_registration/op_registration_test.cpp
// (test_op_registration_*.cpp).
//
// How the legacy API maps (c10::RegisterOperators and torch::Library -> strata::Library):
//   op(schema, options().catchAllKernel(fn))   -> def(schema, fn) (CompositeImplicitAutograd)
//   op(name, fn) / m.def(name, fn)             -> def(name, fn) (schema inferred from fn)
//   options().kernel(key, fn) / m.impl(n, k, f) -> impl(name, fn, key)
//   torch::dispatch(key, fn) inside def        -> def(schema) + impl(name, fn, key)
//   registerFallback(key, boxed) / m.fallback  -> Library(ns, IMPL, key).fallback(boxed)
//   findSchema({name, ""}).has_value()         -> has_op(name); findSchemaOrThrow -> find_op
//   RAII registrar going out of scope          -> the Library's destructor
// Upstream's dummyTensor(key, requires_grad) is a tensor whose dispatch keys are `key` (plus
// its autograd key). The port gives those keys to the dispatcher directly
// (redispatch_boxed / TypedOperatorHandle::redispatch, as upstream's
// callOpUnboxedWithPrecomputedDispatchKeySet does), with a real CPU or Meta tensor as the
// argument, so a CUDA key needs no device. XLA / Lazy / PrivateUse1 (backends strata lacks) are
// played by Meta or CUDA, marked `// differs:`. Error checks compare the exception class and
// strata's "[op]" prefix, not PyTorch's wording.
#include <string>

#include <strata/strata.h>

namespace strata::conformance {

inline constexpr const char* kNs = "conf_reg";   // upstream "_test"
inline constexpr const char* kNs2 = "conf_lib";  // upstream "test"

inline std::string qualified(const char* ns, const char* name) { return std::string(ns) + "::" + name; }
inline std::string prefix(const char* ns, const char* name) { return "[" + qualified(ns, name) + "]"; }

// The dispatch keys of upstream's dummyTensor(backend, requires_grad).
inline DispatchKeySet keys_of(DispatchKey backend, bool requires_grad = false) {
  DispatchKeySet keys(backend);
  return requires_grad ? keys.add(autograd_key_of(backend)) : keys;
}

// The argument passed along with those keys: a real Meta tensor for Meta, else a CPU tensor.
inline Tensor dummy_tensor(DispatchKey backend, bool requires_grad = false) {
  Tensor t = backend == DispatchKey::Meta ? empty({1}, kMeta) : empty({1});
  if (requires_grad) t.requires_grad_(true);
  return t;
}

// callOp(op, dummyTensor(backend, requires_grad), extra...): boxed; returns the stack after.
template <class... Extra>
Stack call_op(const OperatorHandle& op, DispatchKey backend, bool requires_grad, Extra... extra) {
  Stack stack{IValue(dummy_tensor(backend, requires_grad)), IValue(extra)...};
  op.redispatch_boxed(keys_of(backend, requires_grad), stack);
  return stack;
}

inline Stack call_op(const OperatorHandle& op, DispatchKey backend) { return call_op(op, backend, false); }

inline const std::string kHello = "hello ";

inline void backend_fallback_kernel(const OperatorHandle& op, DispatchKeySet, Stack& stack) {
  stack[1] = IValue(stack[1].to_string() + op.name());
}

inline bool called_autograd = false;
inline bool called_nonautograd = false;

inline void nonautograd_kernel(const Tensor&) { called_nonautograd = true; }
inline void autograd_kernel(const Tensor&) { called_autograd = true; }

}  // namespace strata::conformance
