#pragma once
// The dispatcher: operator handles, typed and boxed calls, thread-local key guards.
// See Note [The path of one call] in dispatcher.cpp.
#include <atomic>
#include <string>
#include <string_view>

#include <strata/dispatch/dispatch_key.h>
#include <strata/dispatch/ivalue.h>
#include <strata/dispatch/kernel.h>
#include <strata/dispatch/schema.h>

namespace strata {

// Keys added to / removed from every call on this thread.
struct LocalDispatchKeySet {
  DispatchKeySet included;
  DispatchKeySet excluded;
};
namespace detail {
LocalDispatchKeySet& local_dispatch_keys();
}

// Adds keys to the thread's include set for a scope (e.g. Tracer inside a tracing scope).
class IncludeDispatchKeyGuard {
 public:
  explicit IncludeDispatchKeyGuard(DispatchKeySet keys);
  explicit IncludeDispatchKeyGuard(DispatchKey key) : IncludeDispatchKeyGuard(DispatchKeySet(key)) {}
  ~IncludeDispatchKeyGuard();
  IncludeDispatchKeyGuard(const IncludeDispatchKeyGuard&) = delete;
  IncludeDispatchKeyGuard& operator=(const IncludeDispatchKeyGuard&) = delete;

 private:
  DispatchKeySet previous_;
};

// Removes keys from every call on this thread for a scope (NoGradGuard excludes Autograd).
class ExcludeDispatchKeyGuard {
 public:
  explicit ExcludeDispatchKeyGuard(DispatchKeySet keys);
  explicit ExcludeDispatchKeyGuard(DispatchKey key) : ExcludeDispatchKeyGuard(DispatchKeySet(key)) {}
  ~ExcludeDispatchKeyGuard();
  ExcludeDispatchKeyGuard(const ExcludeDispatchKeyGuard&) = delete;
  ExcludeDispatchKeyGuard& operator=(const ExcludeDispatchKeyGuard&) = delete;

 private:
  DispatchKeySet previous_;
};

namespace detail {

// The kernels a call can reach, one per runtime key. Published atomically; never changed.
struct DispatchTable {
  KernelFunction kernels[kNumRuntimeKeys];
};

class OperatorEntry;
// The hot part of an OperatorEntry, read without a lock by every call.
struct OperatorCore {
  std::atomic<const DispatchTable*> table{nullptr};
};

// Non-zero while static library blocks wait to run; read with acquire.
// See Note [Flushing while other threads call] in load_library.cpp.
extern std::atomic<int> pending_library_blocks;
void flush_pending_library_blocks();
// What every lookup, call and registration does first: run the pending blocks, if any.
inline void flush_if_blocks_pending() {
  if (pending_library_blocks.load(std::memory_order_acquire) != 0) [[unlikely]]
    flush_pending_library_blocks();
}

const KernelFunction& lookup_kernel_slow(const OperatorHandle& op, DispatchKeySet keys, DispatchKeySet* chosen);

inline void gather_keys(DispatchKeySet&) {}
template <class T, class... Rest>
inline void gather_keys(DispatchKeySet& keys, const T& first, const Rest&... rest) {
  using D = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<D, Tensor>) {
    if (first.defined()) keys = keys | first.impl()->key_set();
  } else if constexpr (std::is_same_v<D, std::optional<Tensor>>) {
    if (first && first->defined()) keys = keys | (*first).impl()->key_set();
  } else if constexpr (std::is_same_v<D, tensor_list>) {
    for (const Tensor& t : first)
      if (t.defined()) keys = keys | t.impl()->key_set();
  } else if constexpr (std::is_same_v<D, optional_tensor_list>) {
    for (const auto& t : first)
      if (t && t->defined()) keys = keys | t->impl()->key_set();
  } else if constexpr (std::is_same_v<D, Device>) {
    keys = keys.add(backend_key(first.type()));
  } else if constexpr (std::is_same_v<D, std::optional<Device>>) {
    if (first) keys = keys.add(backend_key(first->type()));
  }
  gather_keys(keys, rest...);
}

// The keys a call dispatches on: its arguments' keys (CPU when none names a backend),
// plus the thread's included keys, minus its excluded keys.
inline DispatchKeySet apply_local_keys(DispatchKeySet keys) {
  constexpr DispatchKeySet backends = DispatchKeySet(DispatchKey::CPU).add(DispatchKey::CUDA).add(DispatchKey::Meta);
  if ((keys & backends).empty()) keys = keys.add(DispatchKey::CPU);
  const LocalDispatchKeySet& local = local_dispatch_keys();
  return (keys | local.included) - local.excluded;
}

}  // namespace detail

template <class Signature>
class TypedOperatorHandle;

// A handle to an operator: valid for the life of the process, cheap to copy.
class OperatorHandle {
 public:
  OperatorHandle() = default;

  // "ns::name.overload"
  const std::string& name() const;
  // Throws NotImplementedError when the operator has no schema (its def was undone).
  const FunctionSchema& schema() const;
  bool has_schema() const;
  bool has_kernel_for(DispatchKey key) const;

  // Checks Signature against the schema (TypeError on mismatch) and returns a typed handle.
  template <class Signature>
  TypedOperatorHandle<Signature> typed() const;

  // The stack holds the arguments (trailing ones with schema defaults may be left out); they
  // are replaced by the results. Wrong counts or kinds throw TypeError naming the argument.
  void call_boxed(Stack& stack) const;
  // Calls the kernel for the highest key of `keys` (no thread-local keys applied).
  void redispatch_boxed(DispatchKeySet keys, Stack& stack) const;

  detail::OperatorEntry* entry() const { return entry_; }
  bool operator==(const OperatorHandle& other) const { return entry_ == other.entry_; }

 private:
  friend class detail::OperatorEntry;
  template <class Signature>
  friend class TypedOperatorHandle;
  explicit OperatorHandle(detail::OperatorEntry* entry, detail::OperatorCore* core) : entry_(entry), core_(core) {}
  void check_typed_signature(const detail::KernelSignature& signature) const;

  detail::OperatorEntry* entry_ = nullptr;
  detail::OperatorCore* core_ = nullptr;
};

template <class R, class... Args>
class TypedOperatorHandle<R(Args...)> {
  static_assert((detail::arg_supported<Args> && ...),
                "strata: typed<Sig>() argument types must be schema types (see Note [Canonical C++ types])");
  static_assert(detail::return_supported<R>, "strata: typed<Sig>() return type must be a schema return type");

 public:
  using Return = detail::canonical_return_t<R>;
  TypedOperatorHandle() = default;

  Return call(detail::canonical_arg_t<Args>... args) const {
    DispatchKeySet keys;
    detail::gather_keys(keys, args...);
    return redispatch(detail::apply_local_keys(keys), args...);
  }

  // Calls the kernel for the highest key of `keys` as given.
  Return redispatch(DispatchKeySet keys, detail::canonical_arg_t<Args>... args) const {
    detail::flush_if_blocks_pending();
    const detail::DispatchTable* table = handle_.core_->table.load(std::memory_order_acquire);
    const KernelFunction* kernel = keys.empty() ? nullptr : &table->kernels[static_cast<int>(keys.highest())];
    if (kernel == nullptr || kernel->unboxed == nullptr) [[unlikely]]
      kernel = &detail::lookup_kernel_slow(handle_, keys, nullptr);
    if (kernel->unboxed != nullptr) [[likely]] {
      using Thunk = Return (*)(void*, detail::canonical_arg_t<Args>...);
      return reinterpret_cast<Thunk>(kernel->unboxed)(kernel->functor, args...);
    }
    return call_through_boxed(*kernel, args...);
  }

  const OperatorHandle& handle() const { return handle_; }

 private:
  friend class OperatorHandle;
  explicit TypedOperatorHandle(OperatorHandle handle) : handle_(handle) {}

  Return call_through_boxed(const KernelFunction& kernel, detail::canonical_arg_t<Args>... args) const {
    Stack stack;
    stack.reserve(sizeof...(Args));
    (stack.emplace_back(args), ...);
    kernel.boxed(kernel.functor, handle_, stack);
    return pop_results(stack);
  }
  Return pop_results(Stack& stack) const {
    if constexpr (std::is_void_v<Return>) {
      return;
    } else if constexpr (requires { std::tuple_size<Return>::value; }) {
      constexpr size_t count = std::tuple_size_v<Return>;
      STRATA_CHECK_TYPE(stack.size() >= count, "[", handle_.name(), "] boxed kernel returned ", stack.size(),
                        " values, expected ", count);
      const size_t first = stack.size() - count;
      return [&]<size_t... I>(std::index_sequence<I...>) {
        return Return(detail::from_ivalue<std::tuple_element_t<I, Return>>(stack[first + I])...);
      }(std::make_index_sequence<count>{});
    } else {
      STRATA_CHECK_TYPE(!stack.empty(), "[", handle_.name(), "] boxed kernel returned no value");
      return detail::from_ivalue<Return>(stack.back());
    }
  }

  OperatorHandle handle_;
};

template <class Signature>
TypedOperatorHandle<Signature> OperatorHandle::typed() const {
  using Traits = detail::FunctionTraits<Signature>;
  using Params = typename Traits::params;
  auto signature = [&]<class... P>(std::tuple<P...>*) {
    return detail::make_kernel_signature<typename Traits::return_type, P...>();
  }(static_cast<Params*>(nullptr));
  check_typed_signature(signature);
  return TypedOperatorHandle<Signature>(*this);
}

// Looks an operator up by "ns::name.overload", or by "ns::name": the overload with no overload
// name, else the only overload. Throws ValueError when there is none, or several without an
// unnamed one (naming the overloads that exist). See Note [Overload resolution] in overloads.cpp.
OperatorHandle find_op(std::string_view name);
// True when an operator of that name has a schema.
bool has_op(std::string_view name);

// Boxed convenience: call("myops::swish", x, 1.0). Without an overload name, calls the overload
// whose schema fits the arguments best (see Note [Overload resolution] in overloads.cpp).
// Returns the single result, a tensor_list IValue for several tensor results, a tuple IValue
// for several results of mixed kinds, None for none.
IValue call_boxed_by_name(std::string_view name, Stack stack);
template <class... Args>
IValue call(std::string_view name, Args&&... args) {
  Stack stack;
  stack.reserve(sizeof...(Args));
  (stack.emplace_back(std::forward<Args>(args)), ...);
  return call_boxed_by_name(name, std::move(stack));
}

// The operator's schema, each key's kernel with where it was registered, and the
// registrations underneath that a Library's destruction would bring back.
std::string dump_dispatch_table(std::string_view name);
// Every operator name with a schema, sorted.
std::vector<std::string> registered_ops();

}  // namespace strata
