#pragma once
// Kernels: any callable, stored once with two entry points made from its signature.
//   unboxed: a thunk taking the schema's canonical C++ argument types (the typed fast path);
//   boxed:   a thunk popping IValues from a Stack and pushing the results.
// Both take the DispatchKeySet the call dispatched with. See Note [Canonical C++ types] in
// kernel_types.h and Note [Kernels that take the key set] below.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <strata/tensor/dispatch_key.h>
#include <strata/dispatch/ivalue.h>
#include <strata/dispatch/kernel_types.h>
#include <strata/dispatch/schema.h>

namespace strata {

class OperatorHandle;
using BoxedKernel = std::function<void(const OperatorHandle&, Stack&)>;
// A boxed kernel or fallback that also receives the key set its call dispatched with.
using BoxedKernelWithKeys = std::function<void(const OperatorHandle&, DispatchKeySet, Stack&)>;

// Note [Kernels that take the key set]
// As in PyTorch, a kernel whose first parameter is a DispatchKeySet receives the keys the call
// dispatched with, and can pass on what lies below its own key:
//   Tensor my_autograd(DispatchKeySet keys, const Tensor& x) {
//     return op.redispatch(keys & DispatchKeySet(DispatchKeySet::FULL_AFTER, DispatchKey::AutogradCPU), x);
//   }
// The schema check ignores that leading parameter. Every thunk takes the key set (one more
// register argument on the typed path); kernels without the parameter drop it.

// See Note [Canonical C++ types] in kernel_types.h.
struct KernelFunction {
  using BoxedFunction = void (*)(void* functor, const OperatorHandle& op, DispatchKeySet keys, Stack& stack);
  void* unboxed = nullptr;        // CanonicalReturn (*)(void* functor, DispatchKeySet keys, CanonicalArgs...)
  BoxedFunction boxed = nullptr;  // null for fallthrough
  void* functor = nullptr;        // state of the callable (owned by its registration)
  bool fallthrough = false;       // skip this key, go on to the next one

  bool valid() const { return boxed != nullptr || fallthrough; }
};

namespace detail {

// What impl() checks against the schema: the kernel's argument and return types in schema
// terms, with C++ spellings for messages.
struct KernelSignature {
  std::vector<std::optional<SchemaType>> arguments;  // nullopt: C++ type with no schema type
  std::optional<std::vector<SchemaType>> returns;    // nullopt: unsupported return type
  std::vector<std::string> argument_cpp_names;
  std::string return_cpp_name;
};

std::string demangle(const char* mangled);

template <class R, class... Params>
KernelSignature make_kernel_signature() {
  KernelSignature signature;
  auto add_argument = [&]<class P>() {
    if constexpr (arg_supported<P>) signature.arguments.push_back(ArgTraits<std::remove_cvref_t<P>>::type());
    else signature.arguments.push_back(std::nullopt);
    signature.argument_cpp_names.push_back(demangle(typeid(P).name()) +
                                           (std::is_reference_v<P> ? "&" : ""));
  };
  (add_argument.template operator()<Params>(), ...);
  if constexpr (return_supported<R>) signature.returns = ReturnTraits<std::remove_cvref_t<R>>::types();
  if constexpr (std::is_void_v<R>) signature.return_cpp_name = "void";
  else signature.return_cpp_name = demangle(typeid(R).name());
  return signature;
}

// Function traits for function pointers, lambdas and functors.
template <class F>
struct FunctionTraits : FunctionTraits<decltype(&F::operator())> {};
template <class R, class... Params>
struct FunctionTraits<R (*)(Params...)> {
  using return_type = R;
  using params = std::tuple<Params...>;
};
template <class R, class... Params>
struct FunctionTraits<R(Params...)> : FunctionTraits<R (*)(Params...)> {};
template <class C, class R, class... Params>
struct FunctionTraits<R (C::*)(Params...) const> : FunctionTraits<R (*)(Params...)> {};
template <class C, class R, class... Params>
struct FunctionTraits<R (C::*)(Params...)> : FunctionTraits<R (*)(Params...)> {};
template <class C, class R, class... Params>
struct FunctionTraits<R (C::*)(Params...) const noexcept> : FunctionTraits<R (*)(Params...)> {};
template <class R, class... Params>
struct FunctionTraits<R (*)(Params...) noexcept> : FunctionTraits<R (*)(Params...)> {};

// Whether a kernel's parameter list starts with DispatchKeySet, and the parameters after it.
template <class Params>
struct LeadingKeySet {
  static constexpr bool value = false;
  using rest = Params;
};
template <class First, class... Rest>
struct LeadingKeySet<std::tuple<First, Rest...>> {
  static constexpr bool value = std::is_same_v<std::remove_cvref_t<First>, DispatchKeySet>;
  using rest = std::conditional_t<value, std::tuple<Rest...>, std::tuple<First, Rest...>>;
};

template <class F>
concept DeducibleCallable = requires { &F::operator(); } || std::is_function_v<std::remove_pointer_t<F>>;

// Calls the functor stored in a KernelFunction.
template <class Functor, class... Args>
decltype(auto) invoke_functor(void* functor, Args&&... args) {
  if constexpr (std::is_pointer_v<Functor>) return reinterpret_cast<Functor>(functor)(std::forward<Args>(args)...);
  else if constexpr (std::is_empty_v<Functor> && std::is_default_constructible_v<Functor>)
    return Functor{}(std::forward<Args>(args)...);
  else return (*static_cast<Functor*>(functor))(std::forward<Args>(args)...);
}

void check_boxed_arity(const OperatorHandle& op, const Stack& stack, size_t count);

// TakesKeys: the functor's first parameter is a DispatchKeySet (not among Params).
template <class Functor, bool TakesKeys, class R, class... Params>
struct KernelThunk {
  using Return = canonical_return_t<R>;

  static Return unboxed(void* functor, DispatchKeySet keys, canonical_arg_t<Params>... args) {
    if constexpr (TakesKeys) {
      if constexpr (std::is_void_v<Return>) invoke_functor<Functor>(functor, keys, to_param<Params>(args)...);
      else return Return(invoke_functor<Functor>(functor, keys, to_param<Params>(args)...));
    } else {
      if constexpr (std::is_void_v<Return>) invoke_functor<Functor>(functor, to_param<Params>(args)...);
      else return Return(invoke_functor<Functor>(functor, to_param<Params>(args)...));
    }
  }

  static void boxed(void* functor, const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
    constexpr size_t count = sizeof...(Params);
    check_boxed_arity(op, stack, count);
    const size_t first = stack.size() - count;
    auto run = [&]<size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
      return unboxed(functor, keys, from_ivalue<canonical_arg_t<Params>>(stack[first + I])...);
    };
    if constexpr (std::is_void_v<Return>) {
      run(std::index_sequence_for<Params...>{});
      stack.resize(first);
    } else {
      Return result = run(std::index_sequence_for<Params...>{});
      stack.resize(first);
      push_results(stack, std::move(result));
    }
  }
};

// A kernel ready to register: entry points, the owner of its state, and its signature.
struct KernelBundle {
  KernelFunction function;
  std::shared_ptr<void> owner;
  std::optional<KernelSignature> signature;  // nullopt for boxed kernels: checked at call time
};

template <class Functor, class R, bool TakesKeys = false, class... Params>
KernelBundle make_kernel_bundle(void* functor, std::shared_ptr<void> owner, std::tuple<Params...>*) {
  KernelBundle bundle;
  bundle.signature = make_kernel_signature<R, Params...>();
  bundle.owner = std::move(owner);
  bundle.function.functor = functor;
  if constexpr ((arg_supported<Params> && ...) && return_supported<R>) {
    using Thunk = KernelThunk<Functor, TakesKeys, R, Params...>;
    bundle.function.unboxed = reinterpret_cast<void*>(&Thunk::unboxed);
    bundle.function.boxed = &Thunk::boxed;
  }
  // Otherwise no entry points: impl() rejects the signature before anything is registered.
  return bundle;
}

KernelBundle make_boxed_kernel_bundle(BoxedKernel kernel);
KernelBundle make_boxed_kernel_bundle(BoxedKernelWithKeys kernel);
KernelBundle make_fallthrough_bundle();

// Any callable -> KernelBundle. Function pointers and captureless lambdas need no state.
template <class F>
KernelBundle make_kernel(F&& callable) {
  using Decayed = std::decay_t<F>;
  if constexpr (std::is_same_v<Decayed, KernelBundle>) {
    return std::forward<F>(callable);
  } else if constexpr (std::is_same_v<Decayed, BoxedKernel> || std::is_same_v<Decayed, BoxedKernelWithKeys>) {
    return make_boxed_kernel_bundle(std::forward<F>(callable));
  } else {
    static_assert(DeducibleCallable<Decayed>,
                  "strata: a kernel must have one call signature (no generic lambdas or overloaded functors)");
    using Traits = FunctionTraits<Decayed>;
    using R = typename Traits::return_type;
    using Leading = LeadingKeySet<typename Traits::params>;  // See Note [Kernels that take the key set]
    constexpr bool takes_keys = Leading::value;
    typename Leading::rest* tag = nullptr;
    if constexpr (std::is_pointer_v<Decayed>) {
      STRATA_CHECK_VALUE(callable != nullptr, "[impl] kernel function pointer is null");
      return make_kernel_bundle<Decayed, R, takes_keys>(reinterpret_cast<void*>(callable), nullptr, tag);
    } else if constexpr (std::is_empty_v<Decayed> && std::is_default_constructible_v<Decayed>) {
      return make_kernel_bundle<Decayed, R, takes_keys>(nullptr, nullptr, tag);
    } else {
      auto state = std::make_shared<Decayed>(std::forward<F>(callable));
      void* raw = state.get();
      return make_kernel_bundle<Decayed, R, takes_keys>(raw, std::move(state), tag);
    }
  }
}

}  // namespace detail

// A kernel that skips its key: the call goes on to the next key in the set.
inline detail::KernelBundle fallthrough_kernel() { return detail::make_fallthrough_bundle(); }

}  // namespace strata
