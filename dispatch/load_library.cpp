// Static library blocks (STRATA_LIBRARY*) and loading .so files of them.
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <map>
#include <mutex>

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
  std::map<const StaticLibraryBlock*, std::pair<LibraryInitFunction, std::unique_ptr<Library>>> live;
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
      blocks.live[block.owner] = {block.init, std::move(library)};
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

namespace {

// The libraries of static blocks whose code lives in the loaded object at `base`.
std::vector<std::shared_ptr<LibraryState>> libraries_in_object(void* handle);

}  // namespace
}  // namespace detail

LibraryHandle load_library(const std::string& path) {
  STRATA_CHECK_VALUE(!path.empty(), "[load_library] path is empty");
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* reason = dlerror();
    detail::throw_error<Error>("[load_library] cannot load '", path, "': ", reason ? reason : "unknown loader error");
  }
  LibraryHandle result;
  result.path_ = path;
  result.handle_ = handle;
  try {
    detail::flush_pending_library_blocks();
  } catch (...) {
    result.libraries_ = detail::libraries_in_object(handle);
    result.unload();
    throw;
  }
  result.libraries_ = detail::libraries_in_object(handle);
  return result;
}

LibraryHandle::LibraryHandle(LibraryHandle&& other) noexcept
    : path_(std::move(other.path_)), handle_(std::exchange(other.handle_, nullptr)), libraries_(std::move(other.libraries_)) {}

LibraryHandle& LibraryHandle::operator=(LibraryHandle&& other) noexcept {
  if (this != &other) {
    unload();
    path_ = std::move(other.path_);
    handle_ = std::exchange(other.handle_, nullptr);
    libraries_ = std::move(other.libraries_);
  }
  return *this;
}

LibraryHandle::~LibraryHandle() { unload(); }

void LibraryHandle::unload() {
  if (!handle_) return;
  for (auto it = libraries_.rbegin(); it != libraries_.rend(); ++it) (*it)->undo();
  libraries_.clear();
  // Calls still running the .so's kernels, and its kernels' state awaiting reclamation, must be
  // done before its code goes. See Note [Reclaiming kernels] in reclaim.cpp.
  detail::wait_for_calls_in_flight(detail::local_dispatch_keys());
  {
    std::vector<std::shared_ptr<const void>> doomed;
    detail::reclaim(doomed, /*force=*/true);
  }
  dlclose(handle_);
  handle_ = nullptr;
}

std::vector<std::string> LibraryHandle::defined_ops() const {
  std::vector<std::string> names;
  auto& reg = detail::registry();
  std::lock_guard lock(reg.mutex);
  for (const auto& library : libraries_)
    for (const auto& undo : library->undo_log)
      if (undo.what == detail::LibraryState::Undo::What::Schema) names.push_back(undo.entry->name);
  std::sort(names.begin(), names.end());
  return names;
}

namespace detail {
namespace {

std::vector<std::shared_ptr<LibraryState>> libraries_in_object(void* handle) {
  link_map* map = nullptr;
  std::vector<std::shared_ptr<LibraryState>> found;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) return found;
  auto& blocks = static_blocks();
  std::lock_guard lock(blocks.mutex);
  for (auto& [owner, entry] : blocks.live) {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(entry.first), &info) == 0) continue;
    if (info.dli_fbase == reinterpret_cast<void*>(map->l_addr) ||
        (info.dli_fname && map->l_name && std::string_view(info.dli_fname) == map->l_name))
      found.push_back(entry.second->state());
  }
  return found;
}

}  // namespace
}  // namespace detail
}  // namespace strata
