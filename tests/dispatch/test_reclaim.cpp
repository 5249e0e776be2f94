// Reclaiming the kernels of destroyed Libraries and superseded dispatch tables.
// See Note [Reclaiming kernels] in dispatch/reclaim.cpp.
#include <doctest/doctest.h>

#include <fstream>
#include <unistd.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

#include <strata/dispatch/reclaim.h>
#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::scalar_tensor;

namespace {

// Resident set size of this process, from /proc/self/statm.
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

}  // namespace

TEST_CASE("reclaim: a kernel's captured state is freed when its Library is destroyed") {
  Library def("reclaim_ops", Library::DEF);
  def.def("f(Tensor x) -> Tensor");
  const int64_t before = cpu_live_bytes();
  auto token = std::make_shared<int>(0);
  {
    Tensor big = zeros({4, 1024, 1024});  // 16 MiB
    Library cpu("reclaim_ops", Library::IMPL, DispatchKey::CPU);
    cpu.impl("f", [big, token](const Tensor& x) { return x; });
    call("reclaim_ops::f", scalar_tensor(1));
    CHECK(cpu_live_bytes() - before >= 16 * 1024 * 1024);
  }
  CHECK(token.use_count() == 1);
  CHECK(cpu_live_bytes() - before < 1024 * 1024);
}

TEST_CASE("reclaim: a fallback's state is freed when its Library is destroyed") {
  auto token = std::make_shared<int>(0);
  {
    Library tracer("_", Library::IMPL, DispatchKey::Tracer);
    tracer.fallback([token](const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
      op.redispatch_boxed(keys.remove(DispatchKey::Tracer), stack);
    });
    CHECK(token.use_count() == 2);
  }
  CHECK(token.use_count() == 1);
}

TEST_CASE("reclaim: Library create/destroy cycles keep memory flat") {
  Library def("reclaim_cycles", Library::DEF);
  def.def("f(Tensor x) -> Tensor");
  auto op = find_op("reclaim_cycles::f").typed<Tensor(const Tensor&)>();
  Tensor x = scalar_tensor(1);
  auto cycle = [&](int i) {
    Library cpu("reclaim_cycles", Library::IMPL, DispatchKey::CPU);
    cpu.impl("f", [i](const Tensor& t) { return t; });
    op.call(x);
  };
  for (int i = 0; i < 2000; ++i) cycle(i);  // warm up caches and pools
  const int64_t before = resident_bytes();
  constexpr int kCycles = 100000;  // about 105 MiB of growth when nothing was reclaimed
  for (int i = 0; i < kCycles; ++i) cycle(i);
  const int64_t growth = resident_bytes() - before;
  MESSAGE("RSS growth over " << kCycles << " cycles: " << growth << " bytes");
#if !defined(__SANITIZE_ADDRESS__)  // ASan's quarantine keeps freed blocks resident
  CHECK(growth < 8 * 1024 * 1024);
#endif
  CHECK(detail::retired_count() < 1000);
}

#if defined(__linux__) && !defined(STRATA_DETAIL_TSAN)
// The reader's side of Note [Reclaiming kernels]: where the kernel offers private expedited
// membarrier, an outermost call announces itself with a compiler barrier only, not a fence.
TEST_CASE("reclaim: calls skip the reader fence where membarrier is available") {
  const long supported = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) {
    MESSAGE("this kernel has no private expedited membarrier: readers fence, as designed");
    return;
  }
  add(scalar_tensor(1), scalar_tensor(2));  // registers this thread with the reclaimer
  CHECK_FALSE(detail::local_dispatch_keys().fence_on_enter);
}
#endif
