#pragma once
// Internal: epoch-based reclamation of dispatch tables, kernels, fallbacks and schemas that
// registration replaced or removed while calls may still be reading them, without a lock on
// the call path. See Note [Reclaiming kernels] in reclaim.cpp.
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <strata/tensor/dispatch_key.h>

// ThreadSanitizer models neither fences nor membarrier: under it the epoch protocol uses
// seq_cst atomics alone. See Note [Reclaiming kernels] in reclaim.cpp.
#if defined(__SANITIZE_THREAD__)
#define STRATA_DETAIL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRATA_DETAIL_TSAN 1
#endif
#endif

namespace strata::detail {

// One per thread that has made a dispatcher call: the global epoch it entered its outermost
// call in, 0 while it makes none. Pooled, never freed.
struct EpochRecord {
  std::atomic<uint64_t> active{0};
  bool in_use = false;
};

// What a thread keeps for the dispatcher: keys added to / removed from every call, and where
// it stands in its calls (for reclamation).
struct LocalDispatchState {
  DispatchKeySet included;
  DispatchKeySet excluded;
  uint32_t call_depth = 0;                // nested dispatcher calls in progress
  bool fence_on_enter = true;             // no membarrier: readers pay a full fence
  EpochRecord* epoch_record = nullptr;    // null until the thread's first call
};

extern std::atomic<uint64_t> global_epoch;
void register_dispatch_thread(LocalDispatchState& local);

inline void enter_epoch(LocalDispatchState& local) {
  if (local.epoch_record == nullptr) [[unlikely]] register_dispatch_thread(local);
  const uint64_t epoch = global_epoch.load(std::memory_order_acquire);
#if defined(STRATA_DETAIL_TSAN)
  local.epoch_record->active.store(epoch, std::memory_order_seq_cst);
#else
  local.epoch_record->active.store(epoch, std::memory_order_relaxed);
  // The announcement must be visible before this call reads a table: membarrier on the
  // reclaiming side makes a compiler barrier enough here. See Note [Reclaiming kernels].
  if (local.fence_on_enter) std::atomic_thread_fence(std::memory_order_seq_cst);
  else std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}
inline void leave_epoch(LocalDispatchState& local) { local.epoch_record->active.store(0, std::memory_order_release); }

// Hands an object that calls may still be reading to the reclaimer; it is freed once every
// thread is idle or has entered its outermost call after this point. Call with the object
// already unpublished.
void retire(std::shared_ptr<const void> object);
template <class T>
void retire(std::unique_ptr<T> object) {
  retire(std::shared_ptr<const void>(std::move(object)));
}
// Moves the retired objects no call can reach any more into `doomed`, for the caller to destroy
// outside its locks (a kernel's captured state may do anything in its destructor). `force`
// checks now; otherwise only once enough has been retired to amortise the check.
void reclaim(std::vector<std::shared_ptr<const void>>& doomed, bool force);
// Returns once every call that other threads had in progress has returned (code about to be
// unmapped by dlclose must not be running).
void wait_for_calls_in_flight(const LocalDispatchState& self);
// For tests: how many retired objects wait to be freed.
size_t retired_count();

}  // namespace strata::detail
