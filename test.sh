#!/usr/bin/env bash
# Quick start, step 2: build and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")"
export CCACHE_BASEDIR="$PWD"  # compiler cache hits across checkouts
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure
