#!/usr/bin/env bash
# Installs the Debian packages strata needs to build, test and run its samples.
# Does nothing for packages already present; needs root to install anything.
# --ci adds what the reliability jobs in .ci/run need: clang with its libFuzzer and sanitizer
# runtimes (the fuzz targets).
set -euo pipefail
packages=(build-essential cmake ccache libeigen3-dev doctest-dev libbenchmark-dev zlib1g-dev libdlpack-dev
          libopenblas-openmp-dev  # CPU matmul (STRATA_BLAS; Eigen serves without it)
          libopenmpi-dev openmpi-bin  # dist/: data-parallel training (STRATA_DIST; left out without it)
          dataset-fashion-mnist)  # the flagship sample's data, under /usr/share/datasets
for arg in "$@"; do
  case "$arg" in
    --ci) packages+=(clang libclang-rt-dev) ;;
    *) echo "install_deps.sh: unknown argument '$arg' (expected --ci)" >&2; exit 2 ;;
  esac
done
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "strata: missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
