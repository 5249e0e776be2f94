#!/usr/bin/env bash
# CI: builds the libFuzzer targets (fuzz/CMakeLists.txt) into build-fuzz/ and runs each for
# STRATA_FUZZ_SECONDS (default 60) on a copy of its seed corpus, so the repository is never
# written to. Exits non-zero if any target finds a crash, a leak, a sanitizer report or a
# timeout, and prints the path of the input that triggered it; turn that input into a test.
# Needs clang and libclang-rt-dev (Debian 12: clang 14); llvm adds symbolized stack traces.
# fuzz_readers links the GCC Release libstrata in build/, which this script brings up to date
# (see Note [Fuzzing with clang 14] in fuzz/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD"  # compiler cache hits across checkouts

seconds=${STRATA_FUZZ_SECONDS:-60}
jobs=$(nproc)

run() {
  echo "+ $*"
  "$@"
}

echo "== building libstrata (GCC, Release) for fuzz_readers"
if [ ! -f build/CMakeCache.txt ]; then
  run cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
fi
run cmake --build build -j"$jobs" --target strata

echo "== building the fuzz targets (clang)"
run cmake -S fuzz -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DSTRATA_FUZZ_LIBRARY_DIR="$PWD/build"
run cmake --build build-fuzz -j"$jobs"

# fuzz_target NAME MAX_LEN: runs build-fuzz/fuzz_NAME on a fresh copy of fuzz/corpus/NAME/.
fuzz_target() {
  local name=$1 max_len=$2
  local work=build-fuzz/run/$name
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp fuzz/corpus/"$name"/* "$work/corpus/"
  local options=(-max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048
                 -print_final_stats=1 -artifact_prefix="$work/artifacts/")
  if [ -f fuzz/"$name".dict ]; then options+=(-dict=fuzz/"$name".dict); fi
  echo "== fuzz_$name for ${seconds} s (log: $work/log.txt)"
  echo "+ build-fuzz/fuzz_$name ${options[*]} $work/corpus"
  local status=0
  build-fuzz/fuzz_"$name" "${options[@]}" "$work/corpus" > "$work/log.txt" 2>&1 || status=$?
  if [ "$status" -eq 0 ]; then
    grep -E "^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added)" \
      "$work/log.txt" || true
    return 0
  fi
  echo "!! fuzz_$name found a problem (exit status $status); the end of its log:"
  tail -n 80 "$work/log.txt"
  local artifact
  for artifact in "$work"/artifacts/*; do
    [ -e "$artifact" ] && echo "!! crashing input: $artifact (replay: build-fuzz/fuzz_$name $artifact)"
  done
  return 1
}

failed=()
fuzz_target schema 1024 || failed+=(fuzz_schema)
fuzz_target readers 4096 || failed+=(fuzz_readers)
if [ ${#failed[@]} -gt 0 ]; then
  echo "== fuzzing found problems in: ${failed[*]}"
  exit 1
fi
echo "== fuzzing found nothing"
