// OperatorEntry: which registration serves each runtime key, the published dispatch table,
// and dump_dispatch_table, which explains both.
#include <algorithm>
#include <sstream>

#include <strata/dispatch/operator_entry.h>

namespace strata {
namespace detail {

OperatorEntry::OperatorEntry(std::string full_name) : name(std::move(full_name)) {
  core.table.store(new DispatchTable(), std::memory_order_release);
}

const Registration* OperatorEntry::active(DispatchKey key) const {
  const auto& stack = registrations[static_cast<int>(key)];
  return stack.empty() ? nullptr : &stack.back();
}

// Note [Alias keys]
// A runtime key's kernel is chosen as PyTorch computes its dispatch table:
//   1. a kernel registered for that key;
//   2. for a backend key (CPU, CUDA, Meta): CompositeExplicitAutograd, then
//      CompositeImplicitAutograd;
//   3. for an autograd key: CompositeImplicitAutograd, but only when the op has no kernel of
//      its own for that backend nor a CompositeExplicitAutograd one (a composite's autograd
//      comes from the ops it calls, which a backend kernel would bypass), then the Autograd
//      alias;
//   4. nothing: the call consults the key's fallback, and an autograd or Tracer key with none
//      falls through to the next key.
// So a CPU kernel beats a composite for CPU tensors that require grad (the Autograd alias
// kernel, or the not-implemented fallback, records the derivative), and a
// CompositeImplicitAutograd kernel outranks an Autograd alias registration.
Resolution OperatorEntry::resolve(DispatchKey key) const {
  auto found = [&](DispatchKey from) -> std::optional<Resolution> {
    if (const Registration* r = active(from)) return Resolution{r, from};
    return std::nullopt;
  };
  if (auto direct = found(key)) return *direct;
  if (is_backend_key(key)) {
    if (auto r = found(DispatchKey::CompositeExplicitAutograd)) return *r;
    if (auto r = found(DispatchKey::CompositeImplicitAutograd)) return *r;
  }
  if (is_autograd_key(key)) {
    const bool has_backend_kernel = active(backend_of(key)) || active(DispatchKey::CompositeExplicitAutograd);
    if (!has_backend_kernel)
      if (auto r = found(DispatchKey::CompositeImplicitAutograd)) return *r;
    if (auto r = found(DispatchKey::Autograd)) return *r;
  }
  return {nullptr, key};
}

namespace {

// "[relu_]" for strata's own ops, "[myops::swish_]" for others; no overload name.
std::string error_name_of(const std::string& full_name) {
  std::string_view name(full_name);
  if (name.starts_with("strata::")) name.remove_prefix(8);
  const size_t dot = name.find('.', name.find("::") == std::string_view::npos ? 0 : name.find("::") + 2);
  return std::string(name.substr(0, dot));
}

SchemaEffects effects_of(const FunctionSchema& schema, const std::string& full_name) {
  SchemaEffects effects;
  effects.error_name = error_name_of(full_name);
  const auto& arguments = schema.arguments;
  for (size_t i = 0; i < arguments.size() && i < 64; ++i)
    if (arguments[i].alias && arguments[i].alias->is_write && arguments[i].type.base == BaseType::Tensor)
      effects.written_arguments |= uint64_t{1} << i;
  for (size_t r = 0; r < schema.returns.size(); ++r) {
    const auto& alias = schema.returns[r].alias;
    if (!alias || schema.returns[r].type.base != BaseType::Tensor) continue;
    for (size_t i = 0; i < arguments.size() && i < 256; ++i) {
      if (!arguments[i].alias || arguments[i].alias->set != alias->set) continue;
      if (arguments[i].type.is_list) continue;  // aliasing a list's elements: not checked
      effects.aliased_returns.push_back(
          {static_cast<uint8_t>(r), static_cast<uint8_t>(i), alias->is_write && arguments[i].alias->is_write});
      break;
    }
  }
  return effects;
}

}  // namespace

// A generation per distinct schema text: handles made for a schema work whenever the operator
// has that schema again.
void OperatorEntry::note_schema_defined(const FunctionSchema& defined) {
  std::string text = defined.str();
  auto same = std::find(schema_texts.begin(), schema_texts.end(), text);
  if (same == schema_texts.end()) same = schema_texts.insert(schema_texts.end(), std::move(text));
  schema_generation = static_cast<uint32_t>(same - schema_texts.begin()) + 1;
}

// See Note [Mutation from the schema] in dispatch_checks.cpp.
void OperatorEntry::publish_table() {
  auto table = std::make_unique<DispatchTable>();
  const SchemaRegistration* registered = schema.load(std::memory_order_relaxed);
  if (registered) table->effects = effects_of(registered->schema, name);
  table->schema_generation = schema_generation;
  const bool mutates = table->effects.written_arguments != 0;
  const bool aliases = !table->effects.aliased_returns.empty();
  for (int k = 0; k < kNumRuntimeKeys; ++k) {
    const auto key = static_cast<DispatchKey>(k);
    const Resolution resolution = resolve(key);
    if (resolution.registration) table->kernels[k] = resolution.registration->kernel.function;
    const bool backend_kernel = is_backend_key(key) && resolution.from != DispatchKey::CompositeImplicitAutograd;
    if ((backend_kernel && (mutates || aliases)) || (is_autograd_key(key) && mutates))
      table->checked_keys |= static_cast<uint16_t>(1u << k);
  }
  const DispatchTable* old = core.table.exchange(table.release(), std::memory_order_acq_rel);
  retire(std::unique_ptr<const DispatchTable>(old));
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

namespace {

void dump_runtime_key(std::ostream& out, const OperatorEntry& entry, const Registry& reg, DispatchKey key) {
  const int k = static_cast<int>(key);
  out << "    " << dispatch_key_name(key) << ": ";
  const Resolution resolution = entry.resolve(key);
  if (!resolution.registration) {
    const auto& fallbacks = reg.fallbacks[k];
    const Registration* fallback = fallbacks.empty() ? nullptr : &fallbacks.back();
    if (fallback && !fallback->kernel.function.fallthrough) out << "[backend fallback] registered at " << fallback->site;
    else if (fallback || is_autograd_key(key) || key == DispatchKey::Tracer) out << "[fallthrough]";
    else out << "[missing]";
    out << "\n";
    return;
  }
  const Registration* r = resolution.registration;
  out << (r->kernel.function.fallthrough ? "[fallthrough]" : "kernel") << " registered at " << r->site;
  if (resolution.from != key) out << " (via " << dispatch_key_name(resolution.from) << ")";
  out << "\n";
}

// The runtime keys a registration key's active kernel serves, e.g. "AutogradCPU, AutogradCUDA".
std::string keys_served_by(const OperatorEntry& entry, DispatchKey registered) {
  std::string served;
  for (int k = 0; k < kNumRuntimeKeys; ++k)
    if (entry.resolve(static_cast<DispatchKey>(k)).from == registered &&
        entry.resolve(static_cast<DispatchKey>(k)).registration)
      served += (served.empty() ? "" : ", ") + std::string(dispatch_key_name(static_cast<DispatchKey>(k)));
  return served;
}

}  // namespace
}  // namespace detail

std::string dump_dispatch_table(std::string_view name) {
  OperatorHandle op = find_op(name);
  auto& reg = detail::registry();
  std::lock_guard lock(reg.mutex);
  detail::OperatorEntry& entry = *op.entry();
  std::ostringstream out;
  const detail::SchemaRegistration* schema = entry.schema.load();
  out << entry.name << "\n  schema: " << schema->schema << "\n  defined at: " << schema->site << "\n";
  out << "  dispatch table (runtime key -> kernel):\n";
  for (int k = kNumRuntimeKeys - 1; k >= 0; --k) detail::dump_runtime_key(out, entry, reg, static_cast<DispatchKey>(k));
  out << "  registrations (newest first; the first is active unless shadowed by precedence):\n";
  for (int k = 0; k < kNumDispatchKeys; ++k) {
    const auto& stack = entry.registrations[k];
    if (stack.empty()) continue;
    const auto key = static_cast<DispatchKey>(k);
    const std::string served = detail::keys_served_by(entry, key);
    out << "    " << dispatch_key_name(key) << ":";
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
      out << " " << it->site;
      if (it == stack.rbegin())
        out << (served.empty() ? " (shadowed: every runtime key it covers takes a kernel of higher precedence)"
                               : is_alias_key(key) ? " (active for " + served + ")" : std::string(" (active)"));
      out << ";";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace strata
