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
// already resolved from alias keys, so the fast path is: one TLS read, one atomic load, one
// index and one indirect call. Empty slots, fallthrough kernels and boxed-only kernels take
// lookup_kernel_slow(), which walks down the key set and consults the per-key fallbacks.

// Note [Lock-free calls]
// Calls read OperatorCore::table with an acquire load and never lock. Registration takes
// Registry::mutex, builds a new table and publishes it with a release store. A call that
// loaded the old table may still be running a kernel from it, so superseded tables are kept
// by their entry and the state of removed kernels (captured lambdas, std::function) moves to
// Registry::graveyard instead of being freed: every call sees an old or a new kernel, never
// freed memory. The cost is a few hundred bytes per registration that is undone, bounded by
// the number of registrations a program makes.

std::string_view dispatch_key_name(DispatchKey key) {
  switch (key) {
    case DispatchKey::CPU: return "CPU";
    case DispatchKey::CUDA: return "CUDA";
    case DispatchKey::Meta: return "Meta";
    case DispatchKey::Autograd: return "Autograd";
    case DispatchKey::Tracer: return "Tracer";
    case DispatchKey::CompositeImplicitAutograd: return "CompositeImplicitAutograd";
    case DispatchKey::CompositeExplicitAutograd: return "CompositeExplicitAutograd";
  }
  return "Unknown";
}
std::ostream& operator<<(std::ostream& out, DispatchKey key) { return out << dispatch_key_name(key); }
std::ostream& operator<<(std::ostream& out, DispatchKeySet set) {
  out << "DispatchKeySet(";
  bool first = true;
  for (int k = kNumDispatchKeys - 1; k >= 0; --k) {
    if (!set.has(static_cast<DispatchKey>(k))) continue;
    out << (first ? "" : ", ") << static_cast<DispatchKey>(k);
    first = false;
  }
  return out << ")";
}

namespace detail {

LocalDispatchKeySet& local_dispatch_keys() {
  thread_local LocalDispatchKeySet keys;
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

[[noreturn]] void internal_assert_fail(const char* file, int line, const char* condition, const std::string& message) {
  throw Error(str_cat("[internal] strata bug: ", condition, " failed at ", file, ":", line, ": ", message,
                      " (please report it)"));
}

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
  auto& stack = fallbacks[static_cast<int>(key)];
  const KernelFunction* fresh = nullptr;
  if (!stack.empty()) {
    auto copy = std::make_shared<KernelFunction>(stack.back().kernel.function);
    fresh = copy.get();
    graveyard.push_back(std::move(copy));  // lives for the process: readers may hold it
  }
  active_fallback[static_cast<int>(key)].store(fresh, std::memory_order_release);
}

OperatorEntry::OperatorEntry(std::string full_name) : name(std::move(full_name)) {
  auto empty = std::make_unique<DispatchTable>();
  core.table.store(empty.get(), std::memory_order_release);
  retired_tables_.push_back(std::move(empty));
}

const Registration* OperatorEntry::active(DispatchKey key) const {
  const auto& stack = registrations[static_cast<int>(key)];
  return stack.empty() ? nullptr : &stack.back();
}

// Note [Alias keys]
// A runtime key's kernel is, in order: one registered for that key; for CPU, CUDA and Meta a
// CompositeExplicitAutograd kernel, then a CompositeImplicitAutograd one; for Autograd a
// CompositeImplicitAutograd kernel (autograd comes from the ops it calls). An Autograd or
// Tracer slot left empty falls through to the next key.
const KernelFunction& OperatorEntry::resolve(DispatchKey key) const {
  static const KernelFunction empty;
  if (const Registration* direct = active(key)) return direct->kernel.function;
  if (is_backend_key(key)) {
    if (const Registration* r = active(DispatchKey::CompositeExplicitAutograd)) return r->kernel.function;
    if (const Registration* r = active(DispatchKey::CompositeImplicitAutograd)) return r->kernel.function;
  }
  if (key == DispatchKey::Autograd) {
    if (const Registration* r = active(DispatchKey::CompositeImplicitAutograd)) return r->kernel.function;
  }
  return empty;
}

void OperatorEntry::publish_table() {
  auto table = std::make_unique<DispatchTable>();
  for (int k = 0; k < kNumRuntimeKeys; ++k) table->kernels[k] = resolve(static_cast<DispatchKey>(k));
  core.table.store(table.get(), std::memory_order_release);
  retired_tables_.push_back(std::move(table));
}

std::string OperatorEntry::keys_with_kernels() const {
  std::string result;
  for (int k = 0; k < kNumDispatchKeys; ++k) {
    if (registrations[k].empty()) continue;
    result += (result.empty() ? "" : ", ");
    result += dispatch_key_name(static_cast<DispatchKey>(k));
  }
  return result.empty() ? "none" : result;
}

const KernelFunction& lookup_kernel_slow(const OperatorHandle& op, DispatchKeySet keys, DispatchKeySet* chosen) {
  const DispatchTable* table = op.entry()->core.table.load(std::memory_order_acquire);
  const DispatchKeySet requested = keys;
  while (!keys.empty()) {
    DispatchKey key = keys.highest();
    const KernelFunction& kernel = table->kernels[static_cast<int>(key)];
    const KernelFunction* use = kernel.valid() ? &kernel : nullptr;
    if (!use) use = registry().active_fallback[static_cast<int>(key)].load(std::memory_order_acquire);
    if (use && !use->fallthrough) {
      if (chosen) *chosen = keys;
      return *use;
    }
    if (use || key == DispatchKey::Autograd || key == DispatchKey::Tracer) {
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
const FunctionSchema& OperatorHandle::schema() const {
  const detail::SchemaRegistration* registered = entry_ ? entry_->schema.load() : nullptr;
  STRATA_CHECK_NOT_IMPLEMENTED(registered != nullptr, "[", name(), "] operator has no schema (its definition was removed)");
  return registered->schema;
}
bool OperatorHandle::has_kernel_for(DispatchKey key) const {
  std::lock_guard lock(detail::registry().mutex);
  return entry_ && !entry_->registrations[static_cast<int>(key)].empty();
}

void OperatorHandle::check_typed_signature(const detail::KernelSignature& signature) const {
  detail::check_signature(schema(), signature, name(), "typed<Sig>()");
}

void OperatorHandle::call_boxed(Stack& stack) const {
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
  redispatch_boxed(detail::apply_local_keys(keys), stack);
}

void OperatorHandle::redispatch_boxed(DispatchKeySet keys, Stack& stack) const {
  detail::flush_if_blocks_pending();
  const KernelFunction& kernel = detail::lookup_kernel_slow(*this, keys, nullptr);
  kernel.boxed(kernel.functor, *this, stack);
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

std::string dump_dispatch_table(std::string_view name) {
  OperatorHandle op = find_op(name);
  auto& reg = detail::registry();
  std::lock_guard lock(reg.mutex);
  detail::OperatorEntry& entry = *op.entry();
  std::ostringstream out;
  const detail::SchemaRegistration* schema = entry.schema.load();
  out << entry.name << "\n  schema: " << schema->schema << "\n  defined at: " << schema->site << "\n";
  out << "  dispatch table (runtime key -> kernel):\n";
  for (int k = kNumRuntimeKeys - 1; k >= 0; --k) {
    auto key = static_cast<DispatchKey>(k);
    out << "    " << dispatch_key_name(key) << ": ";
    const KernelFunction& kernel = entry.resolve(key);
    if (!kernel.valid()) {
      const KernelFunction* fallback = reg.active_fallback[k].load();
      bool skips = key == DispatchKey::Autograd || key == DispatchKey::Tracer || (fallback && fallback->fallthrough);
      out << (fallback && !fallback->fallthrough ? "[backend fallback]" : skips ? "[fallthrough]" : "[missing]") << "\n";
      continue;
    }
    DispatchKey from = key;
    if (!entry.active(key))
      from = entry.active(DispatchKey::CompositeExplicitAutograd) && is_backend_key(key) ? DispatchKey::CompositeExplicitAutograd
                                                                                          : DispatchKey::CompositeImplicitAutograd;
    const detail::Registration* r = entry.active(from);
    out << (kernel.fallthrough ? "[fallthrough]" : "kernel") << " registered at " << r->site;
    if (from != key) out << " (via " << dispatch_key_name(from) << ")";
    out << "\n";
  }
  out << "  registrations (newest first; the first is active):\n";
  for (int k = 0; k < kNumDispatchKeys; ++k) {
    const auto& stack = entry.registrations[k];
    if (stack.empty()) continue;
    out << "    " << dispatch_key_name(static_cast<DispatchKey>(k)) << ":";
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) out << " " << it->site << (it == stack.rbegin() ? " (active)" : "") << ";";
    out << "\n";
  }
  return out.str();
}

}  // namespace strata
