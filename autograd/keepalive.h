#pragma once
// Autograd objects whose code may live in a library loaded with load_library keep it loaded.
// See Note [Code of unloaded libraries] in dispatch/load_library.cpp.
#include <memory>

#include <strata/autograd/node.h>
#include <strata/dispatch/keepalive.h>
#include <strata/tensor/small_blocks.h>

namespace strata::autograd::detail {

// A shared_ptr owning `node` whose deleter (libstrata code) lets `keepalive` go after the
// node's destructor has returned.
std::shared_ptr<Node> adopt_node_keeping(Node* node, std::shared_ptr<void> keepalive);

// A new N (a CppNode<T>) that keeps the library of T::backward loaded while it lives. The
// library is looked up once per T; the cache is a weak_ptr, so it never keeps it loaded itself.
template <class T, class N>
std::shared_ptr<N> make_function_node() {
  static const std::weak_ptr<void> code =
      strata::detail::library_keepalive_for(reinterpret_cast<const void*>(&T::backward));
  if (std::shared_ptr<void> keepalive = code.lock())
    return std::static_pointer_cast<N>(adopt_node_keeping(new N(), std::move(keepalive)));
  return std::allocate_shared<N>(strata::detail::SmallBlockAllocator<N>());  // Note [Pooled small objects]
}

}  // namespace strata::autograd::detail
