#include <strata/dispatch/reclaim.h>

#include <deque>
#include <mutex>
#include <thread>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

// MEMBARRIER_CMD_* are enumerators, not macros: whether the headers know the system call is
// told by __NR_membarrier. (Testing defined(MEMBARRIER_CMD_PRIVATE_EXPEDITED) was always false,
// so every call paid the fallback fence.)
#if defined(__linux__) && defined(__NR_membarrier) && !defined(STRATA_DETAIL_TSAN)
#define STRATA_DETAIL_MEMBARRIER 1
#endif

namespace strata::detail {

// Note [Reclaiming kernels]
// Calls read an operator's DispatchTable (and through it kernels' state, the per-key
// fallbacks and the schema) without a lock, while registration replaces tables and removes
// kernels under Registry::mutex. Nothing a call may still be reading is freed at once:
// registration unpublishes it, then retire()s it, tagged with the global epoch E of that
// moment, and advances the global epoch to E + 1.
//
// Each thread announces, in its LocalDispatchState's EpochRecord, the global epoch it saw on
// entering its outermost dispatcher call, and 0 when it leaves it (nested calls only count
// depth; CallScope is RAII, so a kernel that throws leaves the state balanced). reclaim()
// frees an object tagged E once every record is 0 or above E: a thread that announced above E
// read the global epoch after E + 1 was published, so (acquire) it loads the new table and can
// never reach the object; a thread that entered earlier announced at most E and holds it back.
//
// The race to close is a thread that announces while reclaim() scans: its announcement (a
// store) must be visible to the scan, or else its later load of the table must see the
// unpublished one. That is the store-buffer pattern and needs a full fence on both sides. The
// reader side is every call, so there a compiler barrier stands in for the fence and the
// rare reclaiming side runs membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which executes a
// full barrier on every running thread of the process. Where membarrier is unavailable the
// readers fall back to a seq_cst fence (LocalDispatchState::fence_on_enter). Under
// ThreadSanitizer, which does not model fences or membarrier (STRATA_DETAIL_TSAN), the reader
// announces with a seq_cst store and the reclaimer fences with a seq_cst read-modify-write; the
// release store of 0 on leaving and the acquire load of the scan give TSan the happens-before
// edge from a call's reads to the free.
//
// Records are pooled and never freed: a thread that exits returns its record to the pool, and
// an idle record never holds anything back. Objects are destroyed by the caller of reclaim()
// after it drops its locks, since a kernel's captured state may run any code when destroyed.

std::atomic<uint64_t> global_epoch{1};

namespace {

struct Retired {
  std::shared_ptr<const void> object;
  uint64_t epoch;
};

struct Reclaimer {
  std::mutex mutex;
  std::deque<EpochRecord> records;          // stable addresses; guarded by mutex
  std::vector<EpochRecord*> free_records;
  std::vector<Retired> retired;
  size_t retired_at_last_check = 0;
};

Reclaimer& reclaimer() {
  static Reclaimer* instance = new Reclaimer();  // never destroyed: threads exit after statics
  return *instance;
}

bool membarrier_ready() {
#if defined(STRATA_DETAIL_MEMBARRIER)
  static const bool ready = syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  return ready;
#else
  return false;
#endif
}

// The reclaiming side's half of the fence pair.
void heavy_fence() {
#if defined(STRATA_DETAIL_MEMBARRIER)
  if (membarrier_ready() && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return;
#endif
#if defined(STRATA_DETAIL_TSAN)
  global_epoch.fetch_add(0, std::memory_order_seq_cst);  // a seq_cst RMW: TSan ignores fences
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

[[gnu::tls_model("initial-exec")]] thread_local bool thread_exiting = false;  // trivially destructible: readable during thread exit

// Returns the thread's record to the pool when the thread exits.
struct RecordReleaser {
  LocalDispatchState* local = nullptr;
  ~RecordReleaser() {
    thread_exiting = true;
    if (!local || !local->epoch_record) return;
    auto& pool = reclaimer();
    std::lock_guard lock(pool.mutex);
    local->epoch_record->active.store(0, std::memory_order_release);
    local->epoch_record->in_use = false;
    pool.free_records.push_back(local->epoch_record);
    local->epoch_record = nullptr;
  }
};

}  // namespace

void register_dispatch_thread(LocalDispatchState& local) {
  // A no-membarrier process makes every reader fence. Decided before this thread's first call.
  local.fence_on_enter = !membarrier_ready();
  auto& pool = reclaimer();
  {
    std::lock_guard lock(pool.mutex);
    EpochRecord* record;
    if (!pool.free_records.empty()) {
      record = pool.free_records.back();
      pool.free_records.pop_back();
    } else {
      record = &pool.records.emplace_back();
    }
    record->in_use = true;
    local.epoch_record = record;
  }
  // A call made by a thread_local destructor after the releaser ran re-registers and keeps its
  // record: idle records cost a scan step, nothing more.
  if (thread_exiting) return;
  [[gnu::tls_model("initial-exec")]] thread_local RecordReleaser releaser;
  releaser.local = &local;
}

void retire(std::shared_ptr<const void> object) {
  if (!object) return;
  auto& pool = reclaimer();
  std::lock_guard lock(pool.mutex);
  pool.retired.push_back({std::move(object), global_epoch.load(std::memory_order_relaxed)});
  global_epoch.fetch_add(1, std::memory_order_acq_rel);
}

void reclaim(std::vector<std::shared_ptr<const void>>& doomed, bool force) {
  auto& pool = reclaimer();
  std::lock_guard lock(pool.mutex);
  if (pool.retired.empty()) return;
  if (!force && pool.retired.size() < 2 * pool.retired_at_last_check + 64) return;
  heavy_fence();
  uint64_t oldest_active = UINT64_MAX;
  for (const EpochRecord& record : pool.records) {
    const uint64_t epoch = record.active.load(std::memory_order_acquire);
    if (epoch != 0 && epoch < oldest_active) oldest_active = epoch;
  }
  auto keep = pool.retired.begin();
  for (auto it = pool.retired.begin(); it != pool.retired.end(); ++it) {
    if (it->epoch < oldest_active) doomed.push_back(std::move(it->object));
    else *keep++ = std::move(*it);
  }
  pool.retired.erase(keep, pool.retired.end());
  pool.retired_at_last_check = pool.retired.size();
}

void wait_for_calls_in_flight(const LocalDispatchState& self) {
  const uint64_t target = global_epoch.fetch_add(1, std::memory_order_acq_rel) + 1;
  auto& pool = reclaimer();
  for (;;) {
    bool waiting = false;
    {
      std::lock_guard lock(pool.mutex);
      heavy_fence();
      for (const EpochRecord& record : pool.records) {
        if (&record == self.epoch_record) continue;  // this thread's own call cannot end while it waits
        const uint64_t epoch = record.active.load(std::memory_order_acquire);
        waiting = waiting || (epoch != 0 && epoch < target);
      }
    }
    if (!waiting) return;
    std::this_thread::yield();
  }
}

size_t retired_count() {
  auto& pool = reclaimer();
  std::lock_guard lock(pool.mutex);
  return pool.retired.size();
}

}  // namespace strata::detail
