#!/usr/bin/env bash
# The checks that need a GPU, as one command for a session with a device (about 5 minutes on
# an H200): build with the CUDA backend, run the whole test suite (the CUDA cases run instead of
# skipping), the op table under compute-sanitizer, the CUDA benchmarks (ratios against cuBLAS and
# device copies measured in the same run) and the flagship on the GPU for one epoch.
#   bash scripts/gpu_check.sh            # figures go to stdout and to $OUT (or gpu_check_out/)
set -uo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD"
out="${OUT:-gpu_check_out}"
mkdir -p "$out"
status=0
step() {
  local name=$1 start=$SECONDS
  shift
  echo "=== gpu_check: $name: $*"
  if "$@" 2>&1 | tee "$out/$name.log"; then
    echo "=== gpu_check: $name passed in $((SECONDS - start)) s"
  else
    echo "=== gpu_check: $name FAILED in $((SECONDS - start)) s"
    status=1
  fi
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | tee "$out/gpu.txt"
step configure cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON -DSTRATA_BUILD_SAMPLES=ON
step build cmake --build build-gpu -j"$(nproc)" --target strata_tests bench_cuda train_fashion_mnist
step tests ./build-gpu/tests/strata_tests
step tests_cuda_only ./build-gpu/tests/strata_tests --test-case="*cuda*,*CUDA*,op table*"
if command -v compute-sanitizer > /dev/null; then
  step sanitizer compute-sanitizer --tool memcheck --error-exitcode 1 \
    ./build-gpu/tests/strata_tests --test-case="op table: forward values*,op table: gradients on every*"
fi
step bench ./build-gpu/bench/bench_cuda --benchmark_min_time=0.2
if [ -d /usr/share/datasets/fashion-mnist ]; then
  step flagship ./build-gpu/samples/train_fashion_mnist --device cuda --epochs 1 --out "$out/flagship"
fi
echo "=== gpu_check: done, status $status (logs in $out/)"
exit $status
