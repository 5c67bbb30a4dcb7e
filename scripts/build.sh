#!/usr/bin/env bash
# Configures and builds modsim in a build folder (default: build/).
#   scripts/build.sh [BUILD_DIR] [extra cmake -D options...]
# CUDA and the GUI are built when nvcc / Qt 6 are found. CI sets CI=true, which turns
# warnings into errors.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$root/build"}
shift || true
werror=OFF
[[ "${CI:-}" == "true" || "${MODSIM_WERROR:-}" == "ON" ]] && werror=ON
jobs=${MODSIM_JOBS:-$(nproc)}
# ccache: paths under the checkout are hashed relative to it, so another clone of the same
# sources (CI's fresh clone) reuses the cache.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${MODSIM_BUILD_TYPE:-Release}" \
  -DMODSIM_WERROR="$werror" "$@" >"$build.configure.log" 2>&1 || { cat "$build.configure.log" >&2; exit 1; }
grep -E "^-- modsim:" "$build.configure.log" >&2 || true
cmake --build "$build" -j "$jobs"
