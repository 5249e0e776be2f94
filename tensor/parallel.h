#pragma once
// Threads for kernels (OpenMP underneath). See Note [Grain size] in parallel.cpp.
#include <cstdint>
#include <functional>

#include <strata/tensor/cuda.h>  // cuda::is_available() and friends were declared here first

namespace strata {

inline constexpr int64_t kDefaultGrainSize = 32768;

int get_num_threads();
// Throws ValueError for count < 1.
void set_num_threads(int count);
// Runs fn(b, e) over [begin, end) in chunks of at least `grain` elements, on several threads
// only when the range holds more than one grain; small ranges run inline on the calling
// thread. An exception thrown by fn on any thread is rethrown on the calling thread.
void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);
// True inside a parallel_for chunk running on a worker (nested calls then run inline).
bool in_parallel_region();

}  // namespace strata
