#!/usr/bin/env bash
# Builds and runs strata's tests under sanitizers, as CI does.
#   scripts/ci_sanitize.sh address,undefined   the whole suite under ASan + UBSan (+ LeakSanitizer),
#                                              in build-asan/
#   scripts/ci_sanitize.sh thread              the concurrency tests under ThreadSanitizer, in
#                                              build-tsan/
# Both halt on the first report. The builds are lean: tests only, no benchmarks or samples, -O1
# with line tables only, and no -march=native, so they cost as little CI time as they can.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD"
jobs=$(nproc)

configure() {
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DSTRATA_SANITIZE="$2" -DSTRATA_NATIVE=OFF -DSTRATA_CUDA=OFF \
    -DSTRATA_BUILD_BENCH=OFF -DSTRATA_BUILD_SAMPLES=OFF -DSTRATA_DIST=OFF
}
# STRATA_DIST=OFF: Open MPI's own start-up allocations (PMIx, hwloc, its transports) are never
# freed, so LeakSanitizer reports them in every MPI program, and its shared-memory transport
# writes memory that no synchronisation TSan sees guards. dist/ is tested by the plain build.

case "${1:-}" in
  address,undefined)
    configure build-asan address,undefined
    cmake --build build-asan -j"$jobs"
    export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0
    export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
    ctest --test-dir build-asan --output-on-failure
    ;;
  thread)
    configure build-tsan thread
    cmake --build build-tsan -j"$jobs" --target strata_concurrency_tests
    # libgomp is not built with TSan, so its thread pool's synchronisation is invisible to it:
    # OpenMP regions run on one thread here and the races under test are strata's own.
    export OMP_NUM_THREADS=1 STRATA_STRESS_DIVISOR="${STRATA_STRESS_DIVISOR:-20}"
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp"
    ./build-tsan/tests/strata_concurrency_tests
    ;;
  *)
    echo "ci_sanitize.sh: expected 'address,undefined' or 'thread', got '${1:-}'" >&2
    exit 2
    ;;
esac
