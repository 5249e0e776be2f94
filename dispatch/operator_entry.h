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

class OperatorEntry {
 public:
  explicit OperatorEntry(std::string name);

  OperatorHandle handle() { return OperatorHandle(this, &core); }
  // Recomputes the dispatch table from the registration stacks and publishes it.
  void publish_table();
  const KernelFunction& resolve(DispatchKey key) const;
  const Registration* active(DispatchKey key) const;
  std::string keys_with_kernels() const;

  OperatorCore core;
  const std::string name;                              // "ns::name.overload"
  std::atomic<const SchemaRegistration*> schema{nullptr};
  std::vector<Registration> registrations[kNumDispatchKeys];  // per key; back() is active

 private:
  std::vector<std::unique_ptr<const DispatchTable>> retired_tables_;
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
  // Kernel state and superseded schemas/fallbacks another thread may still be reading.
  // See Note [Lock-free calls] in dispatcher.cpp.
  std::vector<std::shared_ptr<void>> graveyard;
  uint64_t next_id = 1;

  OperatorEntry& entry(const std::string& full_name);  // creates when missing
  OperatorEntry* find(const std::string& full_name);
  void publish_fallback(DispatchKey key);
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
