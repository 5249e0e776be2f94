#!/usr/bin/env bash
# The checks that need a GPU, as one command for a session with a device (about 5 minutes on
# an H200): the CUDA tests (the op table compares every op on CUDA with the CPU, forward and
# backward), the op table under compute-sanitizer, the CUDA benchmarks (ratios against cuBLAS and
# device copies measured in the same run) and the flagship on the GPU for one epoch.
#   bash scripts/gpu_check.sh                          # builds build-gpu/ there (needs Eigen, doctest, benchmark)
#   bash scripts/gpu_pack.sh build                     # here: stage binaries built with CUDA into .gpu/
#   STRATA_GPU_PREBUILT=.gpu bash scripts/gpu_check.sh # there: run the staged binaries, no build
#   STRATA_GPU_FULL=1 ...                              # also the whole suite with the GPU present
# Figures and logs go to stdout and to $OUT (or gpu_check_out/). Each step has a time limit so
# that the whole run fits one device call.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CCACHE_BASEDIR="$root"
out="${OUT:-gpu_check_out}"
mkdir -p "$out"
status=0
step() {
  local name=$1 limit=$2 start=$SECONDS
  shift 2
  echo "=== gpu_check: $name: $*"
  if timeout "$limit" "$@" > "$out/$name.log" 2>&1; then
    tail -n 25 "$out/$name.log"
    echo "=== gpu_check: $name passed in $((SECONDS - start)) s"
  else
    local rc=$?
    tail -n 80 "$out/$name.log"
    echo "=== gpu_check: $name FAILED (exit $rc$([ $rc = 124 ] && echo ', time limit')) in $((SECONDS - start)) s"
    status=1
  fi
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | tee "$out/gpu.txt"
data=/usr/share/datasets/fashion-mnist
if [ -n "${STRATA_GPU_PREBUILT:-}" ]; then
  pre=$(cd "$STRATA_GPU_PREBUILT" && pwd)
  build=$pre/build
  [ -d "$build" ] || tar -C "$pre" -xJf "$pre/binaries.tar.xz"
  [ -d "$pre/data" ] && data=$pre/data
  # The test executable names its plugins and data by the paths of the machine it was built on.
  while read -r kind path; do
    want=$([ "$kind" = build ] && echo "$build" || echo "$root")
    if [ ! -e "$path" ] && [ "$path" != "$want" ]; then
      mkdir -p "$(dirname "$path")" && ln -sfn "$want" "$path"
    fi
  done < "$pre/paths"
  cublas=$(ldconfig -p | awk '/libcublas\.so\.13 / {print $NF; exit}')
  [ -z "$cublas" ] && cublas=$(find /usr/local /opt /usr/lib -name 'libcublas.so.13' 2>/dev/null | head -n 1)
  export LD_LIBRARY_PATH="$build:$pre/lib${cublas:+:$(dirname "$cublas")}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "prebuilt binaries from $pre; cuBLAS: ${cublas:-not found}"
else
  build=build-gpu
  step configure 300 cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON -DSTRATA_BUILD_SAMPLES=ON
  step build 900 cmake --build build-gpu -j"$(nproc)" --target strata_tests bench_cuda train_fashion_mnist
fi
tests=$build/tests/strata_tests
step tests_cuda_files 150 "$tests" --source-file='*tests/cuda/*'
step tests_devices 150 "$tests" \
  --test-case='op table*,copy:*,layout:*,registry:*,cuda:*,Event:*,Generator:*,DeviceGuard:*,to:*,cuda backend*,jit::CudaGraph*'
step bench 150 "$build"/bench/bench_cuda --benchmark_min_time=0.2
if [ -d "$data" ]; then
  step flagship 120 "$build"/samples/train_fashion_mnist --device cuda --epochs 1 --data "$data" --out "$out/flagship"
fi
if command -v compute-sanitizer > /dev/null; then
  step sanitizer 150 compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$tests" --test-case='op table: forward values*,op table: gradients on every*'
fi
if [ -n "${STRATA_GPU_FULL:-}" ]; then
  step tests_all 300 "$tests"
fi
echo "=== gpu_check: done, status $status (logs in $out/)"
exit $status
