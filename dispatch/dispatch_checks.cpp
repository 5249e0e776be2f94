// What the dispatcher does around kernels, from the schema's alias annotations: version bumps
// and in-place checks for Tensor(a!) arguments, storage checks for aliased returns.
#include <bit>

#include <strata/dispatch/operator_entry.h>

namespace strata::detail {

// Note [Mutation from the schema]
// An op whose schema writes an argument (Tensor(a!)) changes that tensor's data, so saved
// tensors that autograd checks by version must see the version move. The schema says which
// arguments are written, so the dispatcher bumps them, once per op call: after the kernel that
// does the writing, the one reached by a backend key (CPU, CUDA, Meta, or a
// CompositeExplicitAutograd kernel serving one). Not at an autograd key (its inner call reaches
// the backend), not for a CompositeImplicitAutograd kernel (its inner ops bump), not for the
// Tracer. Kernels do not bump by hand.
//
// When a mutable op reaches an autograd key, the dispatcher first runs autograd's in-place
// check on every written tensor (installed by autograd/ through set_inplace_check), so custom
// mutable ops, like built-in ones, refuse to modify a leaf that requires grad.
//
// A return annotated Tensor(a) promises to alias the argument annotated (a): a view op. After
// a backend kernel the dispatcher checks that the result shares the argument's storage (and
// for Tensor(a!), that it is the argument itself), so a kernel that copies is caught where it
// is registered rather than as a wrong gradient far away. A result that passes and is not yet a
// view becomes a view of the argument's root base, as PyTorch's ADInplaceOrView key makes it.
//
// OperatorEntry::publish_table precomputes which runtime keys need any of this
// (DispatchTable::checked_keys), so a call to an op with no annotations pays one test.

namespace {
std::atomic<InplaceCheck> inplace_check{nullptr};

template <class F>
void for_each_tensor(const ArgumentRef& argument, F&& f) {
  if (argument.tensor && argument.tensor->defined()) f(*argument.tensor);
  if (argument.list)
    for (const Tensor& t : *argument.list)
      if (t.defined()) f(t);
}

template <class F>
void for_each_written(const DispatchTable& table, const ArgumentRef* arguments, F&& f) {
  for (uint64_t written = table.effects.written_arguments; written != 0; written &= written - 1)
    for_each_tensor(arguments[std::countr_zero(written)], f);
}

void check_aliased_return(const DispatchTable& table, const AliasedReturn& alias, const ArgumentRef& argument,
                          const ArgumentRef& result) {
  if (!argument.tensor || !argument.tensor->defined()) return;
  const Tensor& input = *argument.tensor;
  auto check = [&](const Tensor& out) {
    if (alias.in_place) {
      STRATA_CHECK(out.impl() == input.impl(), "[", table.effects.error_name, "] the schema returns argument ",
                   alias.argument + 1, " itself (Tensor(a!)), but the kernel returned another tensor");
      return;
    }
    STRATA_CHECK(out.defined() && out.impl()->storage().get() == input.impl()->storage().get(), "[",
                 table.effects.error_name, "] the schema says return ", alias.result + 1, " aliases argument ", alias.argument + 1,
                 " (Tensor(a)), but the kernel returned a tensor that does not share its storage");
    // A custom view op's result is a view of the argument, as if make_view had made it (Note
    // [Views and their base]): autograd then treats in-place ops on it as on a view.
    if (out.impl() != input.impl() && !out.impl()->view_base()) {
      TensorImpl* root = input.impl()->view_base() ? input.impl()->view_base() : input.impl();
      out.impl()->set_view_base(intrusive_ptr<TensorImpl>::reclaim_copy(root));
      out.impl()->set_view_version(input.version());
    }
  };
  for_each_tensor(result, check);
}
}  // namespace

void set_inplace_check(InplaceCheck check) { inplace_check.store(check, std::memory_order_release); }

void check_written_arguments(const DispatchTable& table, const ArgumentRef* arguments) {
  InplaceCheck check = inplace_check.load(std::memory_order_acquire);
  if (!check) return;
  const std::string& name = table.effects.error_name;
  for_each_written(table, arguments, [&](const Tensor& t) { check(t, name.c_str()); });
}

void after_backend_kernel(const DispatchTable& table, const ArgumentRef* arguments, const ArgumentRef* results,
                          size_t result_count) {
  for_each_written(table, arguments, [](const Tensor& t) { t.impl()->bump_version(); });
  for (const AliasedReturn& alias : table.effects.aliased_returns)
    if (alias.result < result_count) check_aliased_return(table, alias, arguments[alias.argument], results[alias.result]);
}

namespace {
ArgumentRef ref_of(const IValue& value) {
  if (value.is_tensor()) return {&value.to_tensor(), nullptr};
  if (value.is_tensor_list()) return {nullptr, &value.to_tensor_list()};
  return {};
}
}  // namespace

void call_boxed_checked(const OperatorHandle& op, const DispatchTable& table, const KernelFunction& kernel,
                        DispatchKeySet keys, Stack& stack) {
  const size_t count = op.schema().arguments.size();
  STRATA_CHECK_TYPE(stack.size() >= count, "[", op.name(), "] boxed call needs ", count, " arguments on the stack, found ",
                    stack.size());
  // The kernel pops the arguments: keep them (handles, not data) for the checks after it.
  Stack arguments(stack.end() - static_cast<std::ptrdiff_t>(count), stack.end());
  std::vector<ArgumentRef> argument_refs;
  argument_refs.reserve(count);
  for (const IValue& value : arguments) argument_refs.push_back(ref_of(value));
  if (is_autograd_key(keys.highest())) {
    check_written_arguments(table, argument_refs.data());
    kernel.boxed(kernel.functor, op, keys, stack);
    return;
  }
  const size_t base = stack.size() - count;
  kernel.boxed(kernel.functor, op, keys, stack);
  std::vector<ArgumentRef> result_refs;
  for (size_t i = base; i < stack.size(); ++i) result_refs.push_back(ref_of(stack[i]));
  after_backend_kernel(table, argument_refs.data(), result_refs.data(), result_refs.size());
}

}  // namespace strata::detail
