#pragma once
// The dispatcher: operator handles, typed and boxed calls, thread-local key guards.
// See Note [The path of one call] in dispatcher.cpp.
#include <array>
#include <atomic>
#include <string>
#include <string_view>

#include <strata/tensor/dispatch_key.h>
#include <strata/dispatch/ivalue.h>
#include <strata/dispatch/kernel.h>
#include <strata/dispatch/reclaim.h>
#include <strata/dispatch/schema.h>

namespace strata {

// Keys added to / removed from every call on this thread (`included`, `excluded`), and the
// thread's place in its calls. Alias keys in guards stand for their runtime keys.
using LocalDispatchKeySet = detail::LocalDispatchState;
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

// Removes keys from every call on this thread for a scope (NoGradGuard excludes Autograd, i.e.
// AutogradMeta, AutogradCPU and AutogradCUDA).
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

// A return annotated Tensor(a) / Tensor(a!) and the argument it aliases.
struct AliasedReturn {
  uint8_t result = 0;
  uint8_t argument = 0;
  bool in_place = false;  // Tensor(a!): the very same tensor as the argument
};

// What an operator's schema says its kernels do to their arguments.
// See Note [Mutation from the schema] in dispatch_checks.cpp.
struct SchemaEffects {
  uint64_t written_arguments = 0;  // bit i: argument i is Tensor(a!) (or a list or optional of them)
  std::vector<AliasedReturn> aliased_returns;
  std::string error_name;          // "relu_", "myops::swish_": the op as errors name it
};

// The kernels a call can reach, one per runtime key, and what the dispatcher does around
// them. Published atomically; never changed; freed by the reclaimer (Note [Reclaiming kernels]).
struct DispatchTable {
  KernelFunction kernels[kNumRuntimeKeys];
  uint32_t schema_generation = 0;  // See Note [Stale typed handles] in dispatcher.cpp
  // Runtime keys whose kernels the dispatcher wraps: autograd keys of mutable ops (in-place
  // check before), backend keys of mutable or aliasing ops (version bump and alias check after).
  uint16_t checked_keys = 0;
  SchemaEffects effects;
};

// An argument or result as the checks around kernels see it.
struct ArgumentRef {
  const Tensor* tensor = nullptr;
  const tensor_list* list = nullptr;
};
template <class T>
ArgumentRef argument_ref(const T& value) {
  using D = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<D, Tensor>) return {&value, nullptr};
  else if constexpr (std::is_same_v<D, std::optional<Tensor>>) return {value ? &*value : nullptr, nullptr};
  else if constexpr (std::is_same_v<D, tensor_list>) return {nullptr, &value};
  else return {};
}
// Before an autograd key's kernel: refuses in-place changes autograd cannot record.
void check_written_arguments(const DispatchTable& table, const ArgumentRef* arguments);
// After a backend kernel: bumps written arguments' versions, checks aliased returns.
void after_backend_kernel(const DispatchTable& table, const ArgumentRef* arguments, const ArgumentRef* results,
                          size_t result_count);
// Calls a boxed kernel with the checks of checked_keys around it.
void call_boxed_checked(const OperatorHandle& op, const DispatchTable& table, const KernelFunction& kernel,
                        DispatchKeySet keys, Stack& stack);
[[noreturn]] void throw_stale_typed_handle(const OperatorHandle& op, uint32_t generation);

// Autograd's in-place check (autograd::detail::check_inplace), installed at static
// initialisation: dispatch/ cannot depend on autograd/.
using InplaceCheck = void (*)(const Tensor& self, const char* op);
void set_inplace_check(InplaceCheck check);

// One dispatcher call on this thread: announces the thread's epoch on the outermost call.
// See Note [Reclaiming kernels] in reclaim.cpp.
class CallScope {
 public:
  CallScope() : local_(local_dispatch_keys()) {
    if (local_.call_depth++ == 0) enter_epoch(local_);
  }
  ~CallScope() {
    if (--local_.call_depth == 0) leave_epoch(local_);
  }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
  // The keys a call dispatches on: its arguments' keys (CPU when none names a backend),
  // plus the thread's included keys, minus its excluded keys.
  DispatchKeySet apply_local_keys(DispatchKeySet keys) const {
    if ((keys & kBackendKeys).empty()) keys = keys.add(DispatchKey::CPU);
    return (keys | local_.included) - local_.excluded;
  }

 private:
  LocalDispatchState& local_;
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

// The kernel for the highest key of `keys` that has one (skipping fallthroughs and empty
// autograd/Tracer slots); `chosen` gets the keys from that one down.
const KernelFunction& lookup_kernel_slow(const OperatorHandle& op, const DispatchTable& table, DispatchKeySet keys,
                                         DispatchKeySet* chosen);

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

inline DispatchKeySet apply_local_keys(DispatchKeySet keys) {
  if ((keys & kBackendKeys).empty()) keys = keys.add(DispatchKey::CPU);
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
  // The schema generation typed handles are checked against. See Note [Stale typed handles].
  uint32_t schema_generation() const;

  detail::OperatorEntry* entry() const { return entry_; }
  bool operator==(const OperatorHandle& other) const { return entry_ == other.entry_; }

 private:
  friend class detail::OperatorEntry;
  template <class Signature>
  friend class TypedOperatorHandle;
  explicit OperatorHandle(detail::OperatorEntry* entry, detail::OperatorCore* core) : entry_(entry), core_(core) {}
  // Checks under the registry lock; returns the schema generation it checked.
  uint32_t check_typed_signature(const detail::KernelSignature& signature) const;

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
    detail::CallScope scope;
    return dispatch(scope.apply_local_keys(keys), args...);
  }

  // Calls the kernel for the highest key of `keys` as given (what a kernel that takes the key
  // set calls to pass the call on below its own key).
  Return redispatch(DispatchKeySet keys, detail::canonical_arg_t<Args>... args) const {
    detail::CallScope scope;
    return dispatch(keys, args...);
  }

  const OperatorHandle& handle() const { return handle_; }
  // False once the operator was defined again after typed<Sig>() checked this handle (calling
  // it then throws); one atomic load. See Note [Stale typed handles] in dispatcher.cpp.
  bool is_current() const {
    return handle_.core_->table.load(std::memory_order_acquire)->schema_generation == generation_;
  }

 private:
  friend class OperatorHandle;
  TypedOperatorHandle(OperatorHandle handle, uint32_t generation) : handle_(handle), generation_(generation) {}

  Return dispatch(DispatchKeySet keys, detail::canonical_arg_t<Args>... args) const {
    detail::flush_if_blocks_pending();
    const detail::DispatchTable* table = handle_.core_->table.load(std::memory_order_acquire);
    if (table->schema_generation != generation_) [[unlikely]]
      detail::throw_stale_typed_handle(handle_, generation_);
    DispatchKeySet served = keys;
    const KernelFunction* kernel = keys.empty() ? nullptr : &table->kernels[static_cast<int>(keys.highest())];
    if (kernel == nullptr || kernel->unboxed == nullptr) [[unlikely]]
      kernel = &detail::lookup_kernel_slow(handle_, *table, keys, &served);
    if (table->checked_keys != 0) [[unlikely]] {
      if (table->checked_keys & (1u << static_cast<int>(served.highest())))
        return call_checked(*table, *kernel, served, args...);
    }
    return invoke(*kernel, served, args...);
  }

  Return invoke(const KernelFunction& kernel, DispatchKeySet keys, detail::canonical_arg_t<Args>... args) const {
    if (kernel.unboxed != nullptr) [[likely]] {
      using Thunk = Return (*)(void*, DispatchKeySet, detail::canonical_arg_t<Args>...);
      return reinterpret_cast<Thunk>(kernel.unboxed)(kernel.functor, keys, args...);
    }
    return call_through_boxed(kernel, keys, args...);
  }

  // See Note [Mutation from the schema] in dispatch_checks.cpp.
  Return call_checked(const detail::DispatchTable& table, const KernelFunction& kernel, DispatchKeySet keys,
                      detail::canonical_arg_t<Args>... args) const {
    const std::array<detail::ArgumentRef, sizeof...(Args) + 1> arguments{detail::argument_ref(args)..., {}};
    if (is_autograd_key(keys.highest())) {
      detail::check_written_arguments(table, arguments.data());
      return invoke(kernel, keys, args...);
    }
    if constexpr (std::is_void_v<Return>) {
      invoke(kernel, keys, args...);
      detail::after_backend_kernel(table, arguments.data(), nullptr, 0);
    } else if constexpr (requires { std::tuple_size<Return>::value; }) {
      Return result = invoke(kernel, keys, args...);
      auto results = std::apply([](const auto&... parts) {
        return std::array<detail::ArgumentRef, std::tuple_size_v<Return>>{detail::argument_ref(parts)...};
      }, result);
      detail::after_backend_kernel(table, arguments.data(), results.data(), results.size());
      return result;
    } else {
      Return result = invoke(kernel, keys, args...);
      const detail::ArgumentRef reference = detail::argument_ref(result);
      detail::after_backend_kernel(table, arguments.data(), &reference, 1);
      return result;
    }
  }

  Return call_through_boxed(const KernelFunction& kernel, DispatchKeySet keys,
                            detail::canonical_arg_t<Args>... args) const {
    Stack stack;
    stack.reserve(sizeof...(Args));
    (stack.emplace_back(args), ...);
    kernel.boxed(kernel.functor, handle_, keys, stack);
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
  uint32_t generation_ = 0;
};

template <class Signature>
TypedOperatorHandle<Signature> OperatorHandle::typed() const {
  using Traits = detail::FunctionTraits<Signature>;
  using Params = typename Traits::params;
  auto signature = [&]<class... P>(std::tuple<P...>*) {
    return detail::make_kernel_signature<typename Traits::return_type, P...>();
  }(static_cast<Params*>(nullptr));
  const uint32_t generation = check_typed_signature(signature);
  return TypedOperatorHandle<Signature>(*this, generation);
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
