// Looking operators up by name, with or without an overload name, and the boxed call by name.
#include <algorithm>
#include <sstream>

#include <strata/dispatch/boxing.h>
#include <strata/dispatch/operator_entry.h>

namespace strata {

// Note [Overload resolution]
// "ns::op.overload" names one operator. "ns::op" names a family, as torch.ops.ns.op does:
//   find_op picks the overload with the empty overload name when there is one, else the only
//   overload, else throws ValueError listing the candidates;
//   call picks, among all overloads, the one whose arguments accept the given IValues
//   (kinds, counts, defaults for the missing trailing ones). Each candidate gets a cost from
//   detail::boxed_match_cost: 0 per argument of its own kind, more per conversion (int ->
//   float, number -> Scalar, one int -> int[N], Tensor[] -> Tensor?[]), so call(x, y) on
//   add.Tensor / add.Scalar takes add.Tensor for a tensor y and add.Scalar for a number. The
//   cheapest wins; a tie goes to the overload without an overload name, else it is an error.
//   No candidate fitting is a TypeError listing every candidate's schema.
// The candidates are found by a scan of the registry, so calls by name cost a few
// microseconds: hot code uses find_op once and a typed handle.

namespace detail {
std::string describe_missing_op(Registry& reg, std::string_view name);  // dispatcher.cpp
}

namespace {

std::string qualified(std::string_view name) {
  STRATA_CHECK_VALUE(name.find("::") != std::string_view::npos, "[", name,
                     "] operator names are qualified with their namespace, e.g. \"myops::", name, "\"");
  return std::string(name);
}

bool has_overload_name(std::string_view full) { return full.find('.', full.find("::") + 2) != std::string_view::npos; }

// The operators with a schema named `base` or `base.<overload>`, the one without an overload
// name first, then by name. Needs the registry's mutex.
std::vector<detail::OperatorEntry*> overloads_of(detail::Registry& reg, const std::string& base) {
  std::vector<detail::OperatorEntry*> found;
  for (auto& [full, entry] : reg.entries) {
    if (!entry->schema.load()) continue;
    if (full == base || (full.size() > base.size() && full.compare(0, base.size(), base) == 0 && full[base.size()] == '.'))
      found.push_back(entry.get());
  }
  std::sort(found.begin(), found.end(), [](const auto* a, const auto* b) { return a->name < b->name; });
  return found;  // "ns::op" sorts before "ns::op.x"
}

std::string names_of(const std::vector<detail::OperatorEntry*>& entries) {
  std::string result;
  for (const auto* entry : entries) result += (result.empty() ? "" : ", ") + entry->name;
  return result;
}

std::string schemas_of(const std::vector<detail::OperatorEntry*>& entries) {
  std::string result;
  for (const auto* entry : entries) result += "\n  " + entry->schema.load()->schema.str();
  return result;
}

std::string kinds_of(const Stack& stack) {
  std::string result = "(";
  for (size_t i = 0; i < stack.size(); ++i) result += (i ? ", " : "") + std::string(stack[i].kind_name());
  return result + ")";
}

// The entry find_op returns for a name without an overload name. Needs the registry's mutex.
detail::OperatorEntry* default_overload(detail::Registry& reg, const std::string& base) {
  std::vector<detail::OperatorEntry*> candidates = overloads_of(reg, base);
  if (candidates.empty()) detail::throw_error<ValueError>("[", base, "] find_op: no operator of this name is defined");
  if (candidates.size() == 1 || candidates.front()->name == base) return candidates.front();
  detail::throw_error<ValueError>("[", base, "] find_op: the name is ambiguous: it has several overloads and none "
                                  "without an overload name (name one of them); defined overloads: ",
                                  names_of(candidates));
}

// The overload `stack` fits best; see Note [Overload resolution].
OperatorHandle resolve_call(const std::string& base, const Stack& stack) {
  auto& reg = detail::registry();
  std::lock_guard lock(reg.mutex);
  std::vector<detail::OperatorEntry*> candidates = overloads_of(reg, base);
  if (candidates.empty()) detail::throw_error<ValueError>("[", base, "] call: no operator of this name is defined");
  if (candidates.size() == 1) return candidates.front()->handle();
  std::vector<std::pair<int, detail::OperatorEntry*>> fitting;
  for (detail::OperatorEntry* entry : candidates)
    if (std::optional<int> cost = detail::boxed_match_cost(entry->schema.load()->schema, stack))
      fitting.emplace_back(*cost, entry);
  STRATA_CHECK_TYPE(!fitting.empty(), "[", base, "] call: no overload accepts the arguments ", kinds_of(stack),
                    "; candidates:", schemas_of(candidates));
  const int best_cost = std::min_element(fitting.begin(), fitting.end())->first;
  std::erase_if(fitting, [&](const auto& fit) { return fit.first != best_cost; });
  detail::OperatorEntry* best = fitting.front().second;  // the unnamed overload sorts first
  STRATA_CHECK_TYPE(fitting.size() == 1 || best->name == base, "[", base, "] call: the arguments ", kinds_of(stack),
                    " fit several overloads equally well; name one of them. Candidates:", schemas_of(candidates));
  return best->handle();
}

// The boxed results as call() returns them: one value, a tensor_list for several tensors, a
// tuple for several results of mixed kinds, None for none.
IValue collect_results(const OperatorHandle& op, Stack& stack) {
  const size_t count = op.schema().returns.size();
  STRATA_CHECK_TYPE(stack.size() >= count, "[", op.name(), "] kernel pushed ", stack.size(), " results, schema has ", count);
  if (count == 0) return IValue();
  if (count == 1) return stack.back();
  const auto first = stack.end() - static_cast<std::ptrdiff_t>(count);
  if (std::all_of(first, stack.end(), [](const IValue& v) { return v.is_tensor(); })) {
    tensor_list results;
    for (auto it = first; it != stack.end(); ++it) results.push_back(it->to_tensor());
    return IValue(std::move(results));
  }
  return IValue::tuple(std::vector<IValue>(first, stack.end()));
}

}  // namespace

OperatorHandle find_op(std::string_view name) {
  std::string full = qualified(name);
  detail::flush_if_blocks_pending();
  auto& reg = detail::registry();
  std::lock_guard lock(reg.mutex);
  detail::OperatorEntry* entry = reg.find(full);
  if (entry && entry->schema.load()) return entry->handle();
  if (!has_overload_name(full)) return default_overload(reg, full)->handle();
  detail::throw_error<ValueError>("[", full, "] find_op: ", detail::describe_missing_op(reg, full));
}

IValue call_boxed_by_name(std::string_view name, Stack stack) {
  std::string full = qualified(name);
  detail::flush_if_blocks_pending();
  OperatorHandle op = has_overload_name(full) ? find_op(full) : resolve_call(full, stack);
  detail::CallScope scope;  // keeps the schema alive while collect_results reads it
  op.call_boxed(stack);
  return collect_results(op, stack);
}

}  // namespace strata
