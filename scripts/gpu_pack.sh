#!/usr/bin/env bash
# Stages binaries built here for a GPU machine that lacks the build's dependencies (Eigen,
# doctest, Google Benchmark): the strata libraries, the test and benchmark executables, the
# flagship and the shared libraries they need beyond glibc and the CUDA driver, stripped and packed
# as .gpu/binaries.tar.xz, with the Fashion-MNIST files beside it in .gpu/data (.gpu/ is ignored by
# git): together under the 64 MiB that travels with the working tree to a device machine.
#   bash scripts/gpu_pack.sh [build-dir]       # then: STRATA_GPU_PREBUILT=.gpu bash scripts/gpu_check.sh
# The test executable has the build and source folders compiled in (plugins, sample data):
# .gpu/paths records them so that gpu_check.sh can link them to the copies on the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
for f in libstrata.so.0 libstrata_cuda.so.0 tests/strata_tests bench/bench_cuda samples/train_fashion_mnist; do
  [ -e "$build/$f" ] || { echo "gpu_pack: $build/$f is missing; build with STRATA_CUDA=ON and the targets" \
    "strata_tests bench_cuda train_fashion_mnist first" >&2; exit 1; }
done
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
rm -rf .gpu && mkdir -p .gpu/build/tests .gpu/build/bench .gpu/build/samples .gpu/lib
cp -a "$build"/libstrata.so* "$build"/libstrata_cuda.so* .gpu/build/
cp "$build"/tests/strata_tests "$build"/tests/*.so .gpu/build/tests/
cp "$build"/bench/bench_cuda .gpu/build/bench/
cp "$build"/samples/train_fashion_mnist .gpu/build/samples/
find .gpu/build -type f -exec strip --strip-unneeded {} +
# Libraries the GPU machine's image may not have (Debian's Google Benchmark and OpenBLAS, with
# what they need): all but glibc's, the C++ runtime (that image's is newer) and CUDA's.
for exe in .gpu/build/tests/strata_tests .gpu/build/bench/bench_cuda .gpu/build/samples/train_fashion_mnist; do
  LD_LIBRARY_PATH=.gpu/build ldd "$exe" | awk '/=> \// {print $3}'
done | sort -u | grep -v -E '/\.gpu/|/cuda|lib(c|m|dl|rt|pthread|stdc\+\+|gcc_s)\.so' | xargs -r cp -L -t .gpu/lib/
if [ -d /usr/share/datasets/fashion-mnist ]; then
  mkdir -p .gpu/data && cp /usr/share/datasets/fashion-mnist/*-ubyte.gz .gpu/data/
fi
printf 'source %s\nbuild %s\n' "$PWD" "$build" > .gpu/paths
tar -C .gpu -cf - build lib | xz -T0 -6 > .gpu/binaries.tar.xz
rm -rf .gpu/build .gpu/lib
du -sh .gpu
