#pragma once
// Libraries register operators (DEF, FRAGMENT) and kernels (IMPL); destroying one undoes
// everything it registered. The STRATA_LIBRARY* macros make static ones.
// See Note [Static library blocks] in library.cpp.
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>

#include <strata/dispatch/dispatcher.h>

namespace strata {

enum class AliasAnalysis { FromSchema, Conservative, PureFunction };

namespace detail {
class LibraryState;
// "name(Tensor _0, int _1) -> Tensor" from a kernel's C++ signature; TypeError naming the
// C++ type when one has no schema type (or the kernel is boxed).
std::string infer_schema(const std::string& qualified_name, const std::optional<KernelSignature>& signature);
}

// Note [Discarded libraries]
// A Library undoes its registrations when it dies, so one that is a temporary registers
// nothing lasting: `Library("ns", Library::IMPL, k).impl("op", f);` replaces op's kernel for
// the rest of that statement only. The class is [[nodiscard]] (discarding one made by a
// function warns), its constructors are [[nodiscard]] (a bare `Library(...);` warns), and
// def/impl/fallback exist only for lvalues, so calling them on a temporary does not compile.
class [[nodiscard]] Library {
 public:
  enum Kind { DEF, IMPL, FRAGMENT };

  [[nodiscard]] Library(std::string ns, Kind kind, std::optional<DispatchKey> key = {},
                        std::source_location where = std::source_location::current());
  [[nodiscard]] Library(std::string ns, Kind kind, std::optional<DispatchKey> key, const char* file, int line);
  Library(Library&&) noexcept;
  Library& operator=(Library&&) noexcept;
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library();

  // Declares an operator of this library's namespace.
  Library& def(std::string_view schema, AliasAnalysis alias = AliasAnalysis::FromSchema,
               std::source_location where = std::source_location::current()) &;
  // Declares an operator and gives it a CompositeImplicitAutograd kernel. Given a name without
  // '(' ("name" or "name.overload"), infers the schema from the C++ signature, as
  // torch::Library::def(name, fn) does: arguments _0, _1, ... of the schema types of
  // Note [Canonical C++ types]; a C++ type with no schema type throws TypeError.
  template <class F>
    requires(!std::is_same_v<std::decay_t<F>, AliasAnalysis>)
  Library& def(std::string_view schema_or_name, F&& composite_kernel,
               std::source_location where = std::source_location::current()) & {
    detail::KernelBundle kernel = detail::make_kernel(std::forward<F>(composite_kernel));
    std::string schema = schema_or_name.find('(') == std::string_view::npos
                             ? detail::infer_schema(qualified_name(strip(schema_or_name)), kernel.signature)
                             : std::string(schema_or_name);
    def(schema, AliasAnalysis::FromSchema, where);
    std::string_view name = std::string_view(schema).substr(0, schema.find('('));
    return impl_bundle(strip(name), std::move(kernel), DispatchKey::CompositeImplicitAutograd, where);
  }
  // Registers a kernel for "name" or "name.overload" under `key` (default: the library's key;
  // CompositeImplicitAutograd when the library has none).
  template <class F>
  Library& impl(std::string_view name_with_overload, F&& fn, std::optional<DispatchKey> key = {},
                std::source_location where = std::source_location::current()) & {
    return impl_bundle(name_with_overload, detail::make_kernel(std::forward<F>(fn)), key, where);
  }
  // A boxed kernel for every operator reached with this library's key and no kernel of its own.
  Library& fallback(BoxedKernel kernel, std::source_location where = std::source_location::current()) &;
  // The same, receiving the key set the call dispatched with.
  Library& fallback(BoxedKernelWithKeys kernel, std::source_location where = std::source_location::current()) &;
  Library& fallback(detail::KernelBundle kernel, std::source_location where = std::source_location::current()) &;

  // Registering through a temporary Library is an error: see Note [Discarded libraries].
  template <class... Args>
  Library& def(Args&&...) && = delete;
  template <class... Args>
  Library& impl(Args&&...) && = delete;
  template <class... Args>
  Library& fallback(Args&&...) && = delete;

  const std::string& ns() const;
  Kind kind() const;
  std::optional<DispatchKey> key() const;
  // Internal: the record of what this library registered (shared with LibraryHandle).
  const std::shared_ptr<detail::LibraryState>& state() const { return state_; }

 private:
  Library& impl_bundle(std::string_view name, detail::KernelBundle kernel, std::optional<DispatchKey> key,
                       std::source_location where);
  static std::string_view strip(std::string_view text);
  std::string qualified_name(std::string_view name) const;  // "name" -> "ns::name" for messages
  std::shared_ptr<detail::LibraryState> state_;
};

namespace detail {
struct LoadedLibrary;
struct LoadedCode;
}  // namespace detail

// A .so loaded with load_library. Handles to one file share one load (see Note [One load per
// file] in load_library.cpp): the last handle to go unregisters the .so's operators and closes
// it; destroying a handle is unload().
class [[nodiscard]] LibraryHandle {
 public:
  enum class UnloadResult {
    NotLoaded,    // the handle was empty (default-made, moved from, or unloaded before)
    StillShared,  // another handle to the same file keeps its operators registered
    Unloaded,     // operators unregistered and the .so closed
    Deferred,     // operators unregistered; the .so stays mapped while objects made from its
                  // code live (autograd Nodes of its Functions, hooks, tensor deleters) and
                  // closes when the last of them is destroyed. unload() says so on stderr.
  };

  LibraryHandle() = default;
  LibraryHandle(LibraryHandle&& other) noexcept;
  LibraryHandle& operator=(LibraryHandle&& other) noexcept;
  LibraryHandle(const LibraryHandle&) = delete;
  LibraryHandle& operator=(const LibraryHandle&) = delete;
  ~LibraryHandle();

  const std::string& path() const { return path_; }
  bool loaded() const { return library_ != nullptr; }
  // Operators the library defined ("ns::name.overload").
  std::vector<std::string> defined_ops() const;
  // See UnloadResult. See Note [Code of unloaded libraries] in load_library.cpp.
  UnloadResult unload();
  // True after an unload() that returned Deferred, until the .so is really closed.
  bool unload_deferred() const;

 private:
  friend LibraryHandle load_library(const std::string& path);
  LibraryHandle(std::string path, std::shared_ptr<detail::LoadedLibrary> library);
  std::string path_;
  std::shared_ptr<detail::LoadedLibrary> library_;
  std::weak_ptr<detail::LoadedCode> code_after_unload_;
};

// dlopens a .so of STRATA_LIBRARY blocks and registers them. Throws strata::Error with the
// loader's reason when the file is missing or not a library, and undoes everything when a
// block in it fails. Loading a file that is loaded already shares that load.
[[nodiscard]] LibraryHandle load_library(const std::string& path);

namespace detail {
using LibraryInitFunction = void (*)(Library&);
// Holds a static library block; see Note [Static library blocks].
class StaticLibraryBlock {
 public:
  StaticLibraryBlock(Library::Kind kind, const char* ns, std::optional<DispatchKey> key, LibraryInitFunction init,
                     const char* file, int line);
  ~StaticLibraryBlock();
  StaticLibraryBlock(const StaticLibraryBlock&) = delete;
  StaticLibraryBlock& operator=(const StaticLibraryBlock&) = delete;
};
}  // namespace detail

}  // namespace strata

#define STRATA_DETAIL_CONCAT_INNER(a, b) a##b
#define STRATA_DETAIL_CONCAT(a, b) STRATA_DETAIL_CONCAT_INNER(a, b)
#define STRATA_DETAIL_LIBRARY_BLOCK(kind, ns, key, m, uid)                                               \
  static void STRATA_DETAIL_CONCAT(strata_library_init_, uid)(::strata::Library&);                       \
  static const ::strata::detail::StaticLibraryBlock STRATA_DETAIL_CONCAT(strata_library_block_, uid)(    \
      ::strata::Library::kind, #ns, key, &STRATA_DETAIL_CONCAT(strata_library_init_, uid), __FILE__, __LINE__); \
  void STRATA_DETAIL_CONCAT(strata_library_init_, uid)(::strata::Library & m)

// STRATA_LIBRARY(myops, m) { m.def("swish(Tensor x, float beta=1.0) -> Tensor"); }
#define STRATA_LIBRARY(ns, m) \
  STRATA_DETAIL_LIBRARY_BLOCK(DEF, ns, std::nullopt, m, STRATA_DETAIL_CONCAT(ns##_def_, __COUNTER__))
#define STRATA_LIBRARY_FRAGMENT(ns, m) \
  STRATA_DETAIL_LIBRARY_BLOCK(FRAGMENT, ns, std::nullopt, m, STRATA_DETAIL_CONCAT(ns##_fragment_, __COUNTER__))
#define STRATA_LIBRARY_IMPL(ns, key, m)                                             \
  STRATA_DETAIL_LIBRARY_BLOCK(IMPL, ns, ::strata::DispatchKey::key, m,              \
                              STRATA_DETAIL_CONCAT(ns##_impl_##key##_, __COUNTER__))
