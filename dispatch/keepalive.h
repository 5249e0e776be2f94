#pragma once
// Keeping the code of a library loaded with load_library mapped while objects made from it
// live. See Note [Code of unloaded libraries] in load_library.cpp.
#include <functional>
#include <memory>

namespace strata::detail {

// A token that keeps the library holding `code_address` mapped while it lives; null when the
// address lies in no library loaded through load_library (the program, libstrata, ...).
std::shared_ptr<void> library_keepalive_for(const void* code_address);

// The code a std::function runs: the function it points to, or (for a lambda or functor) its
// type's type_info, which the compiler emits in the library that defines the type.
template <class R, class... Args>
const void* code_address_of(const std::function<R(Args...)>& fn) {
  if (auto* pointer = fn.template target<R (*)(Args...)>()) return reinterpret_cast<const void*>(*pointer);
  return &fn.target_type();
}

// Wraps `fn` so that it keeps its library mapped until the wrapper is destroyed; `fn` itself
// unchanged when its code lies in no loaded library. The wrapper destroys `fn` before it lets
// the library go, from libstrata's code.
template <class R, class... Args>
std::function<R(Args...)> keep_code_alive(std::function<R(Args...)> fn);

}  // namespace strata::detail
