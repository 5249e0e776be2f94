#!/usr/bin/env bash
# Quick start, step 1: install dependencies, build strata in Release, run the flagship sample.
set -euo pipefail
cd "$(dirname "$0")"
export CCACHE_BASEDIR="$PWD"
bash scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
./build/samples/train_fashion_mnist "$@"   # defaults: MLP, 5 epochs; --help for options
