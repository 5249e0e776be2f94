#include <strata/dispatch/dispatcher.h>

#include <algorithm>
#include <cxxabi.h>
#include <cstdlib>
#include <sstream>

#include <strata/dispatch/operator_entry.h>

namespace strata {

// Note [The path of one call]
// A typed call gathers the key sets of its tensor (and Device) arguments, adds CPU when none
// names a backend, applies the thread's include/exclude sets, and indexes the operator's
// dispatch table with the highest key. The table holds one KernelFunction per runtime key,
// already resolved from alias keys (Note [Alias keys] in operator_entry.cpp), so the fast path
// is: one TLS read (which also announces the call, Note [Reclaiming kernels] in reclaim.cpp),
// one atomic load, a compare of the schema generation, a test of the table's checked keys, one
// index and one indirect call that passes the key set along. Empty slots, fallthrough kernels
// and boxed-only kernels take lookup_kernel_slow(), which walks down the key set and consults
// the per-key fallbacks. Calls never lock; registration takes Registry::mutex, publishes a new
// table atomically and retires the old one.

// Note [Stale typed handles]
// A TypedOperatorHandle calls kernels through the C++ signature it was made with. If its
// operator is undefined and defined again with another schema, the new kernels take other
// arguments, and calling them through the old signature would crash. So each operator counts
// schema generations (one per distinct schema text it has had), the published table carries
// the current one, and a typed handle remembers the one it was checked against: one load and
// compare per call, a TypeError naming both schemas on mismatch. Defining a schema the
// operator had before brings back its generation, so old handles made for it work again.

namespace detail {

LocalDispatchKeySet& local_dispatch_keys() {
  [[gnu::tls_model("initial-exec")]] thread_local LocalDispatchKeySet keys;
  return keys;
}

std::string demangle(const char* mangled) {
  int status = 0;
  char* readable = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string result = status == 0 && readable ? readable : mangled;
  std::free(readable);
  // Shorten the spellings users see in signature errors.
  for (auto [from, to] : {std::pair<std::string_view, std::string_view>{"strata::", ""},
                          {"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >", "std::string"},
                          {"std::basic_string_view<char, std::char_traits<char> >", "std::string_view"},
                          {"std::vector<Tensor, std::allocator<Tensor> >", "tensor_list"},
                          {"ArrayRef<long>", "IntArrayRef"},
                          {"long", "int64_t"}}) {
    for (size_t at = result.find(from); at != std::string::npos; at = result.find(from, at + to.size()))
      result.replace(at, from.size(), to);
  }
  return result;
}

// Sites are shown relative to the source tree: -fmacro-prefix-map strips the tree's absolute
// prefix, and a compiler cache that rewrites paths relative to the build folder
// (CCACHE_BASEDIR) leaves "../../ops/unary.cpp", whose leading "../" and "./" go here.
std::string format_site(const char* file, int line) {
  std::string_view path(file);
  while (path.starts_with("../") || path.starts_with("./")) path.remove_prefix(path[1] == '/' ? 2 : 3);
  return str_cat(path, ":", line);
}
std::string format_site(const std::source_location& where) { return format_site(where.file_name(), where.line()); }

Registry& registry() {
  static Registry* instance = new Registry();  // never destroyed; see operator_entry.h
  return *instance;
}

OperatorEntry& Registry::entry(const std::string& full_name) {
  auto& slot = entries[full_name];
  if (!slot) slot = std::make_unique<OperatorEntry>(full_name);
  return *slot;
}
OperatorEntry* Registry::find(const std::string& full_name) {
  auto it = entries.find(full_name);
  return it == entries.end() ? nullptr : it->second.get();
}
void Registry::publish_fallback(DispatchKey key) {
  const int k = static_cast<int>(key);
  auto& stack = fallbacks[k];
  std::shared_ptr<const KernelFunction> fresh;
  if (!stack.empty()) fresh = std::make_shared<KernelFunction>(stack.back().kernel.function);
  active_fallback[k].store(fresh.get(), std::memory_order_release);
  retire(std::exchange(active_fallback_owner[k], std::move(fresh)));  // calls may still read it
}

const KernelFunction& lookup_kernel_slow(const OperatorHandle& op, const DispatchTable& table, DispatchKeySet keys,
                                         DispatchKeySet* chosen) {
  const DispatchKeySet requested = keys;
  while (!keys.empty()) {
    DispatchKey key = keys.highest();
    const KernelFunction& kernel = table.kernels[static_cast<int>(key)];
    const KernelFunction* use = kernel.valid() ? &kernel : nullptr;
    if (!use) use = registry().active_fallback[static_cast<int>(key)].load(std::memory_order_acquire);
    if (use && !use->fallthrough) {
      if (chosen) *chosen = keys;
      return *use;
    }
    if (use || is_autograd_key(key) || key == DispatchKey::Tracer) {
      keys = keys.remove(key);  // fallthrough
      continue;
    }
    std::lock_guard lock(registry().mutex);
    throw_error<NotImplementedError>("[", op.name(), "] no kernel for dispatch key ", key,
                                     (op.entry()->schema.load() ? "" : " (the operator has no schema)"),
                                     "; kernels are registered for: ", op.entry()->keys_with_kernels());
  }
  throw_error<NotImplementedError>("[", op.name(), "] no kernel for an empty dispatch key set (requested ", requested,
                                   ")");
}

}  // namespace detail

IncludeDispatchKeyGuard::IncludeDispatchKeyGuard(DispatchKeySet keys) {
  auto& local = detail::local_dispatch_keys();
  previous_ = local.included;
  local.included = local.included | keys;
}
IncludeDispatchKeyGuard::~IncludeDispatchKeyGuard() { detail::local_dispatch_keys().included = previous_; }
ExcludeDispatchKeyGuard::ExcludeDispatchKeyGuard(DispatchKeySet keys) {
  auto& local = detail::local_dispatch_keys();
  previous_ = local.excluded;
  local.excluded = local.excluded | keys;
}
ExcludeDispatchKeyGuard::~ExcludeDispatchKeyGuard() { detail::local_dispatch_keys().excluded = previous_; }

const std::string& OperatorHandle::name() const {
  STRATA_CHECK_VALUE(entry_ != nullptr, "[OperatorHandle] handle is empty (default-constructed)");
  return entry_->name;
}
bool OperatorHandle::has_schema() const { return entry_ && entry_->schema.load() != nullptr; }
// The reference stays valid while the operator's definition lives; a schema that is undone is
// freed once no dispatcher call can be reading it (Note [Reclaiming kernels] in reclaim.cpp).
const FunctionSchema& OperatorHandle::schema() const {
  const detail::SchemaRegistration* registered = entry_ ? entry_->schema.load() : nullptr;
  STRATA_CHECK_NOT_IMPLEMENTED(registered != nullptr, "[", name(), "] operator has no schema (its definition was removed)");
  return registered->schema;
}
bool OperatorHandle::has_kernel_for(DispatchKey key) const {
  std::lock_guard lock(detail::registry().mutex);
  return entry_ && !entry_->registrations[static_cast<int>(key)].empty();
}

uint32_t OperatorHandle::check_typed_signature(const detail::KernelSignature& signature) const {
  std::lock_guard lock(detail::registry().mutex);  // the schema may be undone meanwhile
  detail::check_signature(schema(), signature, name(), "typed<Sig>()");
  return entry_->schema_generation;
}

uint32_t OperatorHandle::schema_generation() const {
  std::lock_guard lock(detail::registry().mutex);
  return entry_ ? entry_->schema_generation : 0;
}

namespace detail {
void throw_stale_typed_handle(const OperatorHandle& op, uint32_t generation) {
  std::lock_guard lock(registry().mutex);
  const OperatorEntry& entry = *op.entry();
  const std::string& then = entry.schema_texts.at(generation - 1);
  const SchemaRegistration* now = entry.schema.load();
  throw_error<TypeError>("[", op.name(), "] typed operator handle made for the schema ", then,
                         ", but the operator was defined again as ", now ? now->schema.str() : std::string("(nothing)"),
                         ": get a new handle with find_op(\"", op.name(), "\").typed<...>()");
}
}  // namespace detail

void OperatorHandle::call_boxed(Stack& stack) const {
  detail::CallScope scope;  // keeps the schema alive while it is read
  const FunctionSchema& op_schema = schema();
  detail::normalize_boxed_arguments(op_schema, name(), stack);
  DispatchKeySet keys;
  const size_t first = stack.size() - op_schema.arguments.size();
  for (size_t i = first; i < stack.size(); ++i) {
    const IValue& value = stack[i];
    if (value.is_tensor()) detail::gather_keys(keys, value.to_tensor());
    else if (value.is_tensor_list()) detail::gather_keys(keys, value.to_tensor_list());
    else if (value.is_optional_tensor_list()) detail::gather_keys(keys, value.to_optional_tensor_list());
    else if (value.is_device()) detail::gather_keys(keys, value.to_device());
  }
  redispatch_boxed(scope.apply_local_keys(keys), stack);
}

void OperatorHandle::redispatch_boxed(DispatchKeySet keys, Stack& stack) const {
  detail::CallScope scope;
  detail::flush_if_blocks_pending();
  const detail::DispatchTable& table = *core_->table.load(std::memory_order_acquire);
  DispatchKeySet served = keys;
  const KernelFunction& kernel = detail::lookup_kernel_slow(*this, table, keys, &served);
  if (table.checked_keys & (1u << static_cast<int>(served.highest())))
    detail::call_boxed_checked(*this, table, kernel, served, stack);
  else
    kernel.boxed(kernel.functor, *this, served, stack);
}

namespace {
std::string overloads_of(detail::Registry& reg, std::string_view name) {
  std::vector<std::string> found;
  std::string base(name.substr(0, name.find('.', name.find("::") + 2)));
  for (auto& [full, entry] : reg.entries) {
    if (!entry->schema.load()) continue;
    if (full == base || (full.size() > base.size() && full.compare(0, base.size(), base) == 0 && full[base.size()] == '.'))
      found.push_back(full);
  }
  std::sort(found.begin(), found.end());
  std::string result;
  for (auto& f : found) result += (result.empty() ? "" : ", ") + f;
  return result;
}
}  // namespace

namespace detail {
std::string describe_missing_op(Registry& reg, std::string_view name) {
  std::string overloads = overloads_of(reg, name);
  return overloads.empty() ? std::string("no operator of this name is defined")
                           : "no operator of this name is defined; defined overloads: " + overloads;
}
}  // namespace detail

// find_op and call_boxed_by_name: see overloads.cpp.

bool has_op(std::string_view name) {
  detail::flush_if_blocks_pending();
  auto& reg = detail::registry();
  std::lock_guard lock(reg.mutex);
  detail::OperatorEntry* entry = reg.find(std::string(name));
  return entry && entry->schema.load();
}

std::vector<std::string> registered_ops() {
  detail::flush_if_blocks_pending();
  auto& reg = detail::registry();
  std::lock_guard lock(reg.mutex);
  std::vector<std::string> names;
  for (auto& [full, entry] : reg.entries)
    if (entry->schema.load()) names.push_back(full);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace strata
