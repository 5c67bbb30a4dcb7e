#!/usr/bin/env bash
# Builds the GPU binaries here (no GPU needed) and packs them for a GPU session:
#   scripts/gpu-pack.sh            -> .gpu-pack/modsim-gpu.tar.xz (ignored by git)
# Configures the gpu-portable preset into build-gpu/ (sm_90, static host libraries, cudart
# static; cuBLAS, and cuDNN for the fused attention, are found on the GPU machine at run time),
# builds modsim, modsim_cuda_parity_tests (the blocks' and the training step's parity tests) and
# modsim_cuda_decode_tests (-j from MODSIM_JOBS,
# default 1: CUDA compiles are heavy), strips them and packs them with xz. (modsim-bench-decode
# is not packed: it times the CPU decode step only; on a GPU the decode preset times the CUDA one.) A device `run` then carries .gpu-pack and
# runs scripts/gpu-session.sh (see reports/gpu/README.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=${MODSIM_JOBS:-1}
pack="$root/.gpu-pack"
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
cmake --preset gpu-portable > build-gpu.configure.log 2>&1 || { cat build-gpu.configure.log >&2; exit 1; }
cmake --build build-gpu -j "$jobs" --target modsim modsim_cuda_parity_tests modsim_cuda_decode_tests
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin"
bins=(modsim modsim_cuda_parity_tests modsim_cuda_decode_tests)
cp build-gpu/cli/modsim build-gpu/tests/kernels/cuda/modsim_cuda_parity_tests \
  build-gpu/tests/kernels/cuda/modsim_cuda_decode_tests "$stage/bin/"
for b in "${bins[@]}"; do strip "$stage/bin/$b"; done
git rev-parse HEAD > "$stage/bin/REVISION" 2>/dev/null || echo unknown > "$stage/bin/REVISION"
if ! git diff --quiet HEAD 2>/dev/null; then echo "dirty" >> "$stage/bin/REVISION"; fi
mkdir -p "$pack"
tar -C "$stage" -cJf "$pack/modsim-gpu.tar.xz" bin
ls -l "$pack/modsim-gpu.tar.xz"
size=$(stat -c %s "$pack/modsim-gpu.tar.xz")
# The device tool carries at most 64 MiB together with the working tree.
if (( size > 48 * 1024 * 1024 )); then echo "gpu-pack: the pack is over 48 MiB; the device call may refuse it" >&2; fi
