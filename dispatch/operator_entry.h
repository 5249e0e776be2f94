#pragma once
// Internal: the registry of operators, their registration stacks and dispatch tables.
// Everything here except OperatorCore::table is guarded by Registry::mutex.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <strata/dispatch/dispatcher.h>
#include <strata/dispatch/library.h>

namespace strata::detail {

struct Registration {
  uint64_t id = 0;
  KernelBundle kernel;
  std::string site;  // "file:line"
};

struct SchemaRegistration {
  uint64_t id = 0;
  FunctionSchema schema;
  AliasAnalysis alias = AliasAnalysis::FromSchema;
  std::string site;
};

// Which registration serves a runtime key, and under which key it was registered.
struct Resolution {
  const Registration* registration = nullptr;  // null: the key's fallback, if any, serves it
  DispatchKey from = DispatchKey::CPU;
};

class OperatorEntry {
 public:
  explicit OperatorEntry(std::string name);

  OperatorHandle handle() { return OperatorHandle(this, &core); }
  // Recomputes the dispatch table from the schema and registration stacks, publishes it and
  // retires the old one.
  void publish_table();
  // See Note [Alias keys] in operator_entry.cpp.
  Resolution resolve(DispatchKey key) const;
  const Registration* active(DispatchKey key) const;
  std::string keys_with_kernels() const;
  // A schema is being defined: its generation, new unless the same text was defined before.
  void note_schema_defined(const FunctionSchema& schema);

  OperatorCore core;
  const std::string name;                              // "ns::name.overload"
  std::atomic<const SchemaRegistration*> schema{nullptr};
  std::vector<Registration> registrations[kNumDispatchKeys];  // per key; back() is active
  // See Note [Stale typed handles] in dispatcher.cpp.
  uint32_t schema_generation = 0;
  std::vector<std::string> schema_texts;               // [generation - 1]: the schema it had
};

// A library's registrations, for undo. Shared by its Library and any LibraryHandle.
class LibraryState {
 public:
  struct Undo {
    enum class What { Schema, Kernel, Fallback, Namespace } what;
    OperatorEntry* entry = nullptr;
    DispatchKey key = DispatchKey::CPU;
    uint64_t id = 0;
  };

  std::string ns;
  Library::Kind kind;
  std::optional<DispatchKey> key;
  std::string site;
  std::vector<Undo> undo_log;
  bool undone = false;

  // Removes every registration this library made, newest first. Idempotent.
  void undo();
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<std::string, std::unique_ptr<OperatorEntry>> entries;
  std::unordered_map<std::string, std::string> defining_library_site;  // ns -> "file:line"
  std::vector<Registration> fallbacks[kNumRuntimeKeys];
  std::atomic<const KernelFunction*> active_fallback[kNumRuntimeKeys] = {};
  std::shared_ptr<const KernelFunction> active_fallback_owner[kNumRuntimeKeys];
  uint64_t next_id = 1;

  OperatorEntry& entry(const std::string& full_name);  // creates when missing
  OperatorEntry* find(const std::string& full_name);
  void publish_fallback(DispatchKey key);
};

// Frees, outside the registry lock, what no call can reach any more. See Note [Reclaiming kernels].
class ReclaimAfterUnlock {
 public:
  explicit ReclaimAfterUnlock(bool force) : force_(force) {}
  ~ReclaimAfterUnlock() = default;  // destroys `doomed` after the lock_guard declared later
  void collect() { reclaim(doomed_, force_); }

 private:
  bool force_;
  std::vector<std::shared_ptr<const void>> doomed_;
};

// Never destroyed: static Library objects unregister from it during exit.
Registry& registry();

std::string format_site(const char* file, int line);
std::string format_site(const std::source_location& where);
// Checks a kernel signature against a schema; throws TypeError naming what differs.
void check_signature(const FunctionSchema& schema, const KernelSignature& signature, const std::string& op_name,
                     const std::string& context);
// Boxed-call argument checking and defaults. See OperatorHandle::call_boxed.
void normalize_boxed_arguments(const FunctionSchema& schema, const std::string& op_name, Stack& stack);
IValue default_to_ivalue(const Argument& argument, const std::string& op_name);

}  // namespace strata::detail
