// Static library blocks (STRATA_LIBRARY*) and loading .so files of them.
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <mutex>

#include <strata/dispatch/keepalive.h>
#include <strata/dispatch/library.h>
#include <strata/dispatch/operator_entry.h>

namespace strata {
namespace detail {

// Note [Static library blocks]
// A STRATA_LIBRARY* block runs during static initialisation, when the order between
// translation units (and so between a DEF and the IMPLs of its operators) is unspecified, and
// when an exception would terminate the program. So a block only records itself; the blocks
// recorded so far run, DEFs first, then FRAGMENTs, then IMPLs, at the first lookup or call that
// sees them pending (find_op, a typed call, load_library). An error in a block is thrown from
// that point as an ordinary exception, after the failing block's registrations are undone.
// The Library a block made lives until the block's static object is destroyed (at exit, or
// when its .so is unloaded).

std::atomic<int> pending_library_blocks{0};

namespace {

struct PendingBlock {
  Library::Kind kind;
  const char* ns;
  std::optional<DispatchKey> key;
  LibraryInitFunction init;
  const char* file;
  int line;
  const StaticLibraryBlock* owner;
};

struct StaticBlocks {
  std::recursive_mutex mutex;
  std::vector<PendingBlock> pending;
  // Blocks that ran, with the Library they made (kept to run them again: see revive_blocks_in).
  std::map<const StaticLibraryBlock*, std::pair<PendingBlock, std::unique_ptr<Library>>> live;
};

StaticBlocks& static_blocks() {
  static StaticBlocks* instance = new StaticBlocks();  // never destroyed: blocks unregister at exit
  return *instance;
}

int kind_order(Library::Kind kind) { return kind == Library::DEF ? 0 : kind == Library::FRAGMENT ? 1 : 2; }

}  // namespace

// Note [Flushing while other threads call]
// Calls and lookups test pending_library_blocks without a lock and skip the flush when it is
// zero, so it may drop to zero only once the pending blocks have registered: a thread that
// reads zero must find their operators and kernels. The flushing thread keeps it non-zero
// while the blocks run (other threads that see it wait for the mutex, then find nothing
// pending), and stores the new count with release after the last registration; readers load
// it with acquire. The mutex is recursive because a block's body registers through a Library,
// which flushes first (see Note [Libraries flush pending blocks first] in library.cpp): that
// inner flush finds nothing pending and leaves the count alone.

void flush_pending_library_blocks() {
  auto& blocks = static_blocks();
  std::lock_guard lock(blocks.mutex);
  if (blocks.pending.empty()) return;
  std::vector<PendingBlock> batch = std::move(blocks.pending);
  blocks.pending.clear();
  // Blocks added meanwhile (a .so being loaded on another thread) keep the count non-zero.
  struct PublishCount {
    StaticBlocks& blocks;
    ~PublishCount() {
      pending_library_blocks.store(static_cast<int>(blocks.pending.size()), std::memory_order_release);
    }
  } publish_when_done{blocks};
  std::stable_sort(batch.begin(), batch.end(),
                   [](const PendingBlock& a, const PendingBlock& b) { return kind_order(a.kind) < kind_order(b.kind); });
  std::exception_ptr first_error;
  for (const PendingBlock& block : batch) {
    try {
      auto library = std::make_unique<Library>(block.ns, block.kind, block.key, block.file, block.line);
      block.init(*library);
      blocks.live[block.owner] = {block, std::move(library)};
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

StaticLibraryBlock::StaticLibraryBlock(Library::Kind kind, const char* ns, std::optional<DispatchKey> key,
                                       LibraryInitFunction init, const char* file, int line) {
  auto& blocks = static_blocks();
  std::lock_guard lock(blocks.mutex);
  blocks.pending.push_back({kind, ns, key, init, file, line, this});
  pending_library_blocks.store(static_cast<int>(blocks.pending.size()), std::memory_order_release);
}

StaticLibraryBlock::~StaticLibraryBlock() {
  auto& blocks = static_blocks();
  std::unique_ptr<Library> library;
  {
    std::lock_guard lock(blocks.mutex);
    std::erase_if(blocks.pending, [&](const PendingBlock& block) { return block.owner == this; });
    pending_library_blocks.store(static_cast<int>(blocks.pending.size()), std::memory_order_release);
    auto it = blocks.live.find(this);
    if (it != blocks.live.end()) {
      library = std::move(it->second.second);
      blocks.live.erase(it);
    }
  }
  // ~Library undoes the registrations; it never throws.
}

// The libraries of the static blocks whose code lies in the loaded object `object`. With
// `rerun`, blocks whose Library was undone (their .so was unloaded, but its code stayed mapped,
// so the loader will not run its static initialisers again: see Note [Code of unloaded
// libraries]) run again first.
std::vector<std::shared_ptr<LibraryState>> libraries_in_object(const link_map* object, bool rerun) {
  auto in_object = [&](LibraryInitFunction init) {
    Dl_info info{};
    link_map* found = nullptr;
    return dladdr1(reinterpret_cast<void*>(init), &info, reinterpret_cast<void**>(&found), RTLD_DL_LINKMAP) != 0 &&
           found == object;
  };
  auto& blocks = static_blocks();
  std::lock_guard lock(blocks.mutex);
  if (rerun) {
    std::vector<PendingBlock> batch;
    {
      auto& reg = registry();
      std::lock_guard registry_lock(reg.mutex);
      for (auto& [owner, entry] : blocks.live)
        if (in_object(entry.first.init) && entry.second->state()->undone) batch.push_back(entry.first);
    }
    for (const PendingBlock& block : batch) {
      blocks.live.erase(block.owner);  // its Library did undo everything already
      blocks.pending.push_back(block);
    }
    pending_library_blocks.store(static_cast<int>(blocks.pending.size()), std::memory_order_release);
    flush_pending_library_blocks();
  }
  std::vector<std::shared_ptr<LibraryState>> found;
  for (auto& [owner, entry] : blocks.live)
    if (in_object(entry.first.init)) found.push_back(entry.second->state());
  return found;
}

}  // namespace detail
}  // namespace strata

// ---- loaded .so files, shared by their handles, and the keep-alive of their code ----------

namespace strata {
namespace detail {

// Note [One load per file]
// load_library of a file that is already loaded (by any spelling of its path: files are
// compared by device and inode) returns a second handle to the same load: the blocks do not
// run twice. The handles share a LoadedLibrary; the last one to go unregisters its operators.
//
// Note [Code of unloaded libraries]
// Objects made from a library's code outlive its registrations: an autograd Node of a
// Function defined in the .so (its backward and its destructor live there), a gradient hook
// lambda, a storage deleter. Closing the .so under them crashes at backward() or when they are
// destroyed. So the dlopen reference lives in a LoadedCode that each such object holds through
// a token (library_keepalive_for): the Node of a CppNode<T> whose T::backward lies in the .so
// (autograd/keepalive.cpp), a gradient hook, a storage deleter (both wrapped by keep_code_alive).
// Unloading the last handle unregisters the operators at once; the dlclose happens when the
// last token goes, and unload() reports that it deferred. A token is released only from
// libstrata's code, after the object's own code (in the .so) has returned: the Node's deleter
// and the wrappers of hooks and deleters are functions of libstrata. (A token held as a member
// of CppNode<T> would be released inside ~CppNode<T>, code of the .so, which would then return
// into unmapped memory; so the Node's shared_ptr deleter holds it.) A library whose code
// stays mapped and is loaded again runs its blocks again (the loader does not re-run its
// static initialisers), so it registers its operators anew.
struct LoadedCode {
  void* handle = nullptr;
  const link_map* object = nullptr;
  std::string path;
  ~LoadedCode();
};

struct LoadedLibrary {
  std::string path;
  std::pair<dev_t, ino_t> file;
  std::shared_ptr<LoadedCode> code;
  std::vector<std::shared_ptr<LibraryState>> libraries;
  ~LoadedLibrary();
};

namespace {

struct Loads {
  std::recursive_mutex mutex;
  std::map<std::pair<dev_t, ino_t>, std::weak_ptr<LoadedLibrary>> by_file;
  std::map<const link_map*, std::weak_ptr<LoadedCode>> by_object;  // code still mapped
  std::atomic<int> objects{0};                                     // by_object.size(), read without the lock
};

Loads& loads() {
  static Loads* instance = new Loads();  // never destroyed: handles may die during exit
  return *instance;
}

const link_map* object_of(void* handle) {
  link_map* map = nullptr;
  return dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 ? map : nullptr;
}

std::optional<std::pair<dev_t, ino_t>> file_id(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return std::nullopt;
  return std::pair{info.st_dev, info.st_ino};
}

void* open_or_throw(const std::string& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* reason = dlerror();
    throw_error<Error>("[load_library] cannot load '", path, "': ", reason ? reason : "unknown loader error");
  }
  return handle;
}

// The LoadedCode of a fresh dlopen: the one of the same object whose code stayed mapped (the
// extra reference goes), or a new one.
std::shared_ptr<LoadedCode> code_for(void* handle, const std::string& path) {
  auto& state = loads();
  const link_map* object = object_of(handle);
  auto& slot = state.by_object[object];
  if (auto existing = slot.lock()) {
    dlclose(handle);
    return existing;
  }
  auto code = std::make_shared<LoadedCode>();
  code->handle = handle;
  code->object = object;
  code->path = path;
  slot = code;
  state.objects.store(static_cast<int>(state.by_object.size()), std::memory_order_release);
  return code;
}

}  // namespace

LoadedCode::~LoadedCode() {
  auto& state = loads();
  {
    std::lock_guard lock(state.mutex);
    auto it = state.by_object.find(object);
    if (it != state.by_object.end() && it->second.expired()) state.by_object.erase(it);
    state.objects.store(static_cast<int>(state.by_object.size()), std::memory_order_release);
  }
  // Calls still running the object's kernels, and its kernels' state awaiting reclamation, must
  // be done before its code goes. See Note [Reclaiming kernels] in reclaim.cpp.
  wait_for_calls_in_flight(local_dispatch_keys());
  {
    std::vector<std::shared_ptr<const void>> doomed;
    reclaim(doomed, /*force=*/true);
  }
  dlclose(handle);
}

LoadedLibrary::~LoadedLibrary() {
  auto& state = loads();
  std::lock_guard lock(state.mutex);  // a load of the same file waits until the undo is done
  for (auto it = libraries.rbegin(); it != libraries.rend(); ++it) (*it)->undo();
  auto found = state.by_file.find(file);
  if (found != state.by_file.end() && found->second.expired()) state.by_file.erase(found);
}

std::shared_ptr<void> library_keepalive_for(const void* code_address) {
  auto& state = loads();
  if (state.objects.load(std::memory_order_acquire) == 0 || code_address == nullptr) return nullptr;
  Dl_info info{};
  link_map* object = nullptr;
  if (dladdr1(code_address, &info, reinterpret_cast<void**>(&object), RTLD_DL_LINKMAP) == 0) return nullptr;
  std::lock_guard lock(state.mutex);
  auto it = state.by_object.find(object);
  return it == state.by_object.end() ? nullptr : std::shared_ptr<void>(it->second.lock());
}

namespace {
// Destroys the wrapped callable before it lets its library go. See Note [Code of unloaded libraries].
template <class R, class... Args>
struct KeptCode {
  std::function<R(Args...)> fn;
  std::shared_ptr<void> keepalive;
  KeptCode(std::function<R(Args...)> f, std::shared_ptr<void> k) : fn(std::move(f)), keepalive(std::move(k)) {}
  KeptCode(const KeptCode&) = default;
  KeptCode(KeptCode&&) noexcept = default;
  ~KeptCode() { fn = nullptr; }
  R operator()(Args... args) const { return fn(std::forward<Args>(args)...); }
};
}  // namespace

template <class R, class... Args>
std::function<R(Args...)> keep_code_alive(std::function<R(Args...)> fn) {
  if (!fn) return fn;
  std::shared_ptr<void> keepalive = library_keepalive_for(code_address_of(fn));
  if (!keepalive) return fn;
  return KeptCode<R, Args...>(std::move(fn), std::move(keepalive));
}
template std::function<Tensor(const Tensor&)> keep_code_alive(std::function<Tensor(const Tensor&)>);
template std::function<void(void*)> keep_code_alive(std::function<void(void*)>);

namespace {
void keep_storage_release_code_alive(std::function<void(void*)>& on_release) {
  on_release = keep_code_alive(std::move(on_release));
}
// tensor/ cannot call dispatch/; it calls this through a pointer set at static initialisation.
[[maybe_unused]] const bool storage_hook_installed = (set_storage_release_hook(&keep_storage_release_code_alive), true);
}  // namespace

}  // namespace detail

LibraryHandle load_library(const std::string& path) {
  STRATA_CHECK_VALUE(!path.empty(), "[load_library] path is empty");
  auto& state = detail::loads();
  std::lock_guard lock(state.mutex);
  std::optional<std::pair<dev_t, ino_t>> file = detail::file_id(path);
  if (file) {
    auto found = state.by_file.find(*file);
    if (found != state.by_file.end()) {
      if (auto shared = found->second.lock()) return LibraryHandle(path, std::move(shared));  // See Note [One load per file]
    }
  }
  void* handle = detail::open_or_throw(path);
  auto library = std::make_shared<detail::LoadedLibrary>();
  library->path = path;
  library->file = file.value_or(std::pair<dev_t, ino_t>{});
  library->code = detail::code_for(handle, path);
  try {
    detail::flush_pending_library_blocks();
    library->libraries = detail::libraries_in_object(library->code->object, /*rerun=*/true);
  } catch (...) {
    library->libraries = detail::libraries_in_object(library->code->object, false);
    throw;  // ~LoadedLibrary undoes what did register
  }
  if (file) state.by_file[*file] = library;
  return LibraryHandle(path, std::move(library));
}

LibraryHandle::LibraryHandle(std::string path, std::shared_ptr<detail::LoadedLibrary> library)
    : path_(std::move(path)), library_(std::move(library)) {}
LibraryHandle::LibraryHandle(LibraryHandle&& other) noexcept = default;
LibraryHandle& LibraryHandle::operator=(LibraryHandle&& other) noexcept {
  if (this != &other) {
    unload();
    path_ = std::move(other.path_);
    library_ = std::move(other.library_);
    code_after_unload_ = std::move(other.code_after_unload_);
  }
  return *this;
}
LibraryHandle::~LibraryHandle() { unload(); }

LibraryHandle::UnloadResult LibraryHandle::unload() {
  if (!library_) return UnloadResult::NotLoaded;
  if (library_.use_count() > 1) {  // See Note [One load per file]
    library_.reset();
    return UnloadResult::StillShared;
  }
  std::weak_ptr<detail::LoadedCode> code = library_->code;
  library_.reset();  // unregisters the operators, and lets go of the code
  long holders = code.use_count();
  if (holders == 0) return UnloadResult::Unloaded;
  code_after_unload_ = code;
  std::cerr << "[load_library] unloading '" << path_ << "': its operators are unregistered, but " << holders
            << " object(s) made from its code (autograd nodes, hooks, tensor deleters) are alive; it stays "
               "loaded until the last of them is destroyed\n";
  return UnloadResult::Deferred;
}

bool LibraryHandle::unload_deferred() const { return !code_after_unload_.expired(); }

std::vector<std::string> LibraryHandle::defined_ops() const {
  std::vector<std::string> names;
  if (!library_) return names;
  auto& reg = detail::registry();
  std::lock_guard lock(reg.mutex);
  for (const auto& library : library_->libraries)
    for (const auto& undo : library->undo_log)
      if (undo.what == detail::LibraryState::Undo::What::Schema) names.push_back(undo.entry->name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace strata
