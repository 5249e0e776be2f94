// parallel_for on OpenMP.
#include <strata/tensor/parallel.h>

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>

#include <strata/tensor/errors.h>

namespace strata {

// Note [Grain size]
// Starting an OpenMP region and waking its threads costs a few microseconds, about what one
// core needs for ~30k elementwise float operations (a memory-bound add runs at several
// elements per nanosecond). Below that, threads make a kernel slower, so parallel_for splits
// only ranges of more than one grain and gives every thread at least `grain` elements.
// kDefaultGrainSize = 32768 (2^15) is that break-even point for cheap elementwise kernels;
// kernels doing more work per element (exp, tanh, reductions over a row) pass a smaller grain,
// and the range of such kernels can be counted in rows with a grain of rows.
namespace {
// True while this thread runs a chunk of a parallel_for that was split across threads.
[[gnu::tls_model("initial-exec")]] thread_local bool in_parallel_chunk = false;

struct ParallelChunkScope {
  bool previous = in_parallel_chunk;
  ParallelChunkScope() { in_parallel_chunk = true; }
  ~ParallelChunkScope() { in_parallel_chunk = previous; }
};
}  // namespace

// Note [Process-wide thread count]
// omp_set_num_threads sets an ICV of the calling thread only: a thread started afterwards
// would still see OpenMP's default. set_num_threads is process-wide as in LibTorch, so the count
// lives in an atomic (0 until set) and parallel_for passes it to each region it opens.
namespace {
std::atomic<int> configured_thread_count{0};
}  // namespace

int get_num_threads() {
  int configured = configured_thread_count.load(std::memory_order_relaxed);
  return configured > 0 ? configured : omp_get_max_threads();
}

void set_num_threads(int count) {
  STRATA_CHECK_VALUE(count >= 1, "[set_num_threads] expected a positive number of threads, got ", count);
  configured_thread_count.store(count, std::memory_order_relaxed);
  omp_set_num_threads(count);  // for OpenMP regions outside parallel_for on this thread
}

bool in_parallel_region() { return in_parallel_chunk || omp_in_parallel(); }

void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  STRATA_CHECK_VALUE(grain >= 0, "[parallel_for] grain size must be non-negative, got ", grain);
  if (begin >= end) return;
  int64_t range = end - begin;
  int64_t chunks_of_a_grain = range / std::max<int64_t>(grain, 1);
  int64_t max_threads = get_num_threads();  // See Note [Process-wide thread count]
  if (chunks_of_a_grain < 2 || max_threads < 2 || in_parallel_region()) {
    fn(begin, end);
    return;
  }
  int thread_count = static_cast<int>(std::min(max_threads, chunks_of_a_grain));
  std::exception_ptr first_error;
  std::mutex error_mutex;
#pragma omp parallel num_threads(thread_count)
  {
    // Balanced chunks: sizes differ by at most one, and each holds at least one grain.
    int64_t threads = omp_get_num_threads(), thread = omp_get_thread_num();
    int64_t quotient = range / threads, remainder = range % threads;
    int64_t chunk_begin = begin + thread * quotient + std::min(thread, remainder);
    int64_t chunk_end = chunk_begin + quotient + (thread < remainder ? 1 : 0);
    if (chunk_begin < chunk_end) {
      try {
        ParallelChunkScope scope;
        fn(chunk_begin, chunk_end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
      }
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace strata
