#include <strata/dispatch/library.h>

#include <algorithm>

#include <strata/dispatch/operator_entry.h>

namespace strata {
namespace detail {

// Removed registrations are retired, not freed: a call on another thread may still be running
// them. See Note [Reclaiming kernels] in reclaim.cpp.
void LibraryState::undo() {
  auto& reg = registry();
  ReclaimAfterUnlock reclaim_after(/*force=*/true);
  std::lock_guard lock(reg.mutex);
  if (undone) return;
  undone = true;
  for (auto it = undo_log.rbegin(); it != undo_log.rend(); ++it) {
    switch (it->what) {
      case Undo::What::Schema: {
        const SchemaRegistration* old = it->entry->schema.exchange(nullptr);
        it->entry->publish_table();
        retire(std::unique_ptr<const SchemaRegistration>(old));
        break;
      }
      case Undo::What::Kernel: {
        auto& stack = it->entry->registrations[static_cast<int>(it->key)];
        auto found = std::find_if(stack.begin(), stack.end(), [&](const Registration& r) { return r.id == it->id; });
        if (found == stack.end()) break;
        std::shared_ptr<void> owner = std::move(found->kernel.owner);
        stack.erase(found);
        it->entry->publish_table();
        retire(std::move(owner));
        break;
      }
      case Undo::What::Fallback:
        for (int k = 0; k < kNumRuntimeKeys; ++k) {  // an alias key's fallback sits at each of its keys
          if (!DispatchKeySet(it->key).has(static_cast<DispatchKey>(k))) continue;
          auto& stack = reg.fallbacks[k];
          auto found = std::find_if(stack.begin(), stack.end(), [&](const Registration& r) { return r.id == it->id; });
          if (found == stack.end()) continue;
          std::shared_ptr<void> owner = std::move(found->kernel.owner);
          stack.erase(found);
          reg.publish_fallback(static_cast<DispatchKey>(k));
          retire(std::move(owner));
        }
        break;
      case Undo::What::Namespace: reg.defining_library_site.erase(ns); break;
    }
  }
  undo_log.clear();
  reclaim_after.collect();
}

namespace {

void check_namespace(const std::string& ns) {
  bool valid = !ns.empty() && (std::isalpha(static_cast<unsigned char>(ns[0])) || ns[0] == '_');
  for (char c : ns) valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  STRATA_CHECK_VALUE(valid, "[Library] invalid namespace '", ns, "': use letters, digits and '_'");
}

// "name", "name.overload" or "ns::name.overload" -> "ns::name.overload" in this namespace.
std::string qualify(const std::string& ns, std::string_view name, const char* what) {
  auto separator = name.find("::");
  if (separator == std::string_view::npos) return ns + "::" + std::string(name);
  STRATA_CHECK_VALUE(name.substr(0, separator) == ns, "[", name, "] ", what, ": a Library of namespace '", ns,
                     "' cannot register operators of namespace '", name.substr(0, separator), "'");
  return std::string(name);
}

// Note [Libraries flush pending blocks first]
// A Library runs the static blocks still pending before it registers anything, so that
// registrations happen in the order the program made them: a run-time impl finds an operator
// that a static block defines, a run-time DEF of a namespace a static block already defines
// fails at once, and a run-time replacement lands on top of a static block's kernel (and is the
// active one) instead of underneath it. Inside a block's own body nothing is pending any more.
// See Note [Static library blocks] in load_library.cpp.

}  // namespace

std::string describe_missing_op(Registry& reg, std::string_view name);

}  // namespace detail

Library::Library(std::string ns, Kind kind, std::optional<DispatchKey> key, std::source_location where)
    : Library(std::move(ns), kind, key, where.file_name(), static_cast<int>(where.line())) {}

Library::Library(std::string ns, Kind kind, std::optional<DispatchKey> key, const char* file, int line)
    : state_(std::make_shared<detail::LibraryState>()) {
  detail::check_namespace(ns);
  state_->ns = std::move(ns);
  state_->kind = kind;
  state_->key = key;
  state_->site = detail::format_site(file, line);
  if (kind != DEF) return;
  detail::flush_if_blocks_pending();  // See Note [Libraries flush pending blocks first]
  auto& reg = detail::registry();
  std::lock_guard lock(reg.mutex);
  auto [it, inserted] = reg.defining_library_site.emplace(state_->ns, state_->site);
  STRATA_CHECK_VALUE(inserted, "[", state_->ns, "] namespace defined twice: first by the DEF Library at ", it->second,
                     ", again at ", state_->site, " (use FRAGMENT to add operators to a namespace)");
  state_->undo_log.push_back({detail::LibraryState::Undo::What::Namespace});
}

Library::Library(Library&&) noexcept = default;
Library& Library::operator=(Library&& other) noexcept {
  if (this != &other) {
    if (state_) state_->undo();
    state_ = std::move(other.state_);
  }
  return *this;
}
Library::~Library() {
  if (state_) state_->undo();
}

const std::string& Library::ns() const { return state_->ns; }
Library::Kind Library::kind() const { return state_->kind; }
std::optional<DispatchKey> Library::key() const { return state_->key; }

std::string Library::qualified_name(std::string_view name) const {
  STRATA_CHECK_VALUE(state_, "[Library] use of a moved-from Library");
  return detail::qualify(state_->ns, name, "def");
}

std::string_view Library::strip(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

Library& Library::def(std::string_view schema_text, AliasAnalysis alias, std::source_location where) & {
  STRATA_CHECK_VALUE(state_, "[Library] use of a moved-from Library");
  STRATA_CHECK_VALUE(state_->kind != IMPL, "[", state_->ns, "] def: an IMPL Library cannot define operators (at ",
                     detail::format_site(where), ")");
  detail::flush_if_blocks_pending();
  FunctionSchema schema = parse_schema(schema_text);
  std::string full = detail::qualify(state_->ns, schema.full_name(), "def");
  schema.name = full.substr(0, full.find('.', full.find("::") + 2));
  const std::string site = detail::format_site(where);
  auto& reg = detail::registry();
  std::lock_guard lock(reg.mutex);
  detail::OperatorEntry& entry = reg.entry(full);
  if (const auto* existing = entry.schema.load())
    detail::throw_error<ValueError>("[", full, "] operator defined twice: first at ", existing->site, ", again at ", site);
  entry.note_schema_defined(schema);  // See Note [Stale typed handles] in dispatcher.cpp
  auto* registration = new detail::SchemaRegistration{reg.next_id++, std::move(schema), alias, site};
  entry.schema.store(registration, std::memory_order_release);
  entry.publish_table();
  state_->undo_log.push_back({detail::LibraryState::Undo::What::Schema, &entry});
  return *this;
}

Library& Library::impl_bundle(std::string_view name, detail::KernelBundle kernel, std::optional<DispatchKey> key,
                              std::source_location where) {
  STRATA_CHECK_VALUE(state_, "[Library] use of a moved-from Library");
  const std::string full = detail::qualify(state_->ns, strip(name), "impl");
  const std::string site = detail::format_site(where);
  DispatchKey target = key.value_or(state_->key.value_or(DispatchKey::CompositeImplicitAutograd));
  detail::flush_if_blocks_pending();
  auto& reg = detail::registry();
  detail::ReclaimAfterUnlock reclaim_after(/*force=*/false);
  std::lock_guard lock(reg.mutex);
  detail::OperatorEntry* entry = reg.find(full);
  const detail::SchemaRegistration* schema = entry ? entry->schema.load() : nullptr;
  if (!schema)
    detail::throw_error<ValueError>("[", full, "] impl for ", target, " at ", site, ": ",
                                    detail::describe_missing_op(reg, full));
  if (kernel.signature)
    detail::check_signature(schema->schema, *kernel.signature, full, detail::str_cat("impl for ", dispatch_key_name(target)));
  STRATA_CHECK_VALUE(kernel.function.valid(), "[", full, "] impl for ", target, ": kernel has no entry point");
  auto& stack = entry->registrations[static_cast<int>(target)];
  uint64_t id = reg.next_id++;
  stack.push_back({id, std::move(kernel), site});
  entry->publish_table();
  state_->undo_log.push_back({detail::LibraryState::Undo::What::Kernel, entry, target, id});
  reclaim_after.collect();
  return *this;
}

Library& Library::fallback(BoxedKernel kernel, std::source_location where) & {
  return fallback(detail::make_boxed_kernel_bundle(std::move(kernel)), where);
}
Library& Library::fallback(BoxedKernelWithKeys kernel, std::source_location where) & {
  return fallback(detail::make_boxed_kernel_bundle(std::move(kernel)), where);
}

Library& Library::fallback(detail::KernelBundle kernel, std::source_location where) & {
  STRATA_CHECK_VALUE(state_, "[Library] use of a moved-from Library");
  const std::string site = detail::format_site(where);
  STRATA_CHECK_VALUE(state_->key && (is_runtime_key(*state_->key) || *state_->key == DispatchKey::Autograd), "[",
                     state_->ns, "] fallback at ", site,
                     ": needs an IMPL Library with a runtime dispatch key or the Autograd alias");
  DispatchKey key = *state_->key;
  detail::flush_if_blocks_pending();
  auto& reg = detail::registry();
  detail::ReclaimAfterUnlock reclaim_after(/*force=*/false);
  std::lock_guard lock(reg.mutex);
  uint64_t id = reg.next_id++;
  for (int k = 0; k < kNumRuntimeKeys; ++k) {  // the Autograd alias: one registration per autograd key
    if (!DispatchKeySet(key).has(static_cast<DispatchKey>(k))) continue;
    reg.fallbacks[k].push_back({id, kernel, site});
    reg.publish_fallback(static_cast<DispatchKey>(k));
  }
  state_->undo_log.push_back({detail::LibraryState::Undo::What::Fallback, nullptr, key, id});
  reclaim_after.collect();
  return *this;
}

}  // namespace strata
