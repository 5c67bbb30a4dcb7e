#!/usr/bin/env bash
# Everything that needs an H100/H200, in one go, on a GPU machine that has the CUDA driver,
# runtime and cuBLAS but none of the Debian libraries. Build here first (no GPU needed):
#   cmake --preset gpu-portable && cmake --build --preset gpu-portable
# then, on the GPU machine, from the repository root with build-gpu/ copied along (the two
# binaries it needs, build-gpu/cli/modsim and build-gpu/tests/kernels/cuda/
# modsim_cuda_parity_tests, are about 60 MB together):
#   scripts/gpu-run.sh [all|parity|profile|peer|summary]   (results under $OUT, default out-gpu/)
# Stages: parity = CUDA-vs-CPU parity tests; profile = `modsim profile --backend cuda --preset
# full`; peer = the PyTorch MoD block and modsim's CUDA block at the same shapes; summary = a
# short table of the MoD block's time vs dense next to the FLOP ratio.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
stage=${1:-all}
out=${OUT:-$root/out-gpu}
build=${MODSIM_GPU_BUILD:-$root/build-gpu}
mkdir -p "$out"
modsim="$build/cli/modsim"
[[ -x "$modsim" ]] || { echo "gpu-run: $modsim not found: build with the gpu-portable preset first" >&2; exit 2; }

# cuBLAS is loaded at run time: the toolkit's lib folder, else the nvidia-cublas wheel's.
for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           $(python3 -c 'import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), "lib"))' 2>/dev/null); do
  if ls "$dir"/libcublas.so* >/dev/null 2>&1; then export LD_LIBRARY_PATH="$dir:${LD_LIBRARY_PATH:-}"; break; fi
done

if command -v nvidia-smi >/dev/null; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr '[:upper:] ' '[:lower:]-' | tr -cd 'a-z0-9-')
  nvidia-smi > "$out/nvidia-smi.txt" 2>&1
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$out/clocks-start.csv" 2>&1
else
  gpu=no-gpu
fi
day=$(date -u +%Y-%m-%d)
csv="$out/$gpu-$day.csv"

run_parity() {
  echo "== parity: CUDA vs CPU"
  "$build/tests/kernels/cuda/modsim_cuda_parity_tests" --gtest_output="json:$out/parity.json" 2>&1 | tee "$out/parity.txt" | tail -25
}
run_profile() {
  echo "== profile: modsim profile --backend cuda --preset full"
  "$modsim" profile --backend cuda --preset full --out "$csv" --resume --format csv > /dev/null 2> "$out/profile.log"
  local rc=$?
  tail -3 "$out/profile.log"
  return $rc
}
run_peer() {
  echo "== peer: PyTorch MoD block vs modsim's CUDA block (bf16, B=8, S=2048, d=2048)"
  python3 profiler/peer/mod_block_torch.py --out "$out/peer-torch-$gpu-$day.csv" --batch 8 --seq 2048 --d-model 2048 \
    --heads 16 --capacities 0.125 0.25 0.5 1.0 --compile 2> "$out/peer.log"
  tail -12 "$out/peer.log"
  "$modsim" profile --backend cuda --grid configs/grids/peer-gpu.json --out "$out/peer-modsim-$gpu-$day.csv" --resume \
    2> "$out/peer-modsim.log" | tail -8
}
run_summary() {
  echo "== summary ($csv)"
  python3 - "$csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
key = lambda r: (r["dtype"], r["batch"], r["seq_len"], r["d_model"], r["n_heads"], r["d_ff"])
dense = {key(r): r for r in rows if r["op"] == "block_dense"}
print(f"{'dtype':5} {'B':>2} {'S':>5} {'d':>5} {'d_ff':>6} {'cap':>6} {'time/dense':>10} {'FLOP ratio':>10}")
for r in rows:
    if r["op"] != "block_mod" or key(r) not in dense: continue
    d = dense[key(r)]
    t = float(r["median_s"]) / float(d["median_s"])
    f = int(r["matmul_flops"]) / int(d["matmul_flops"])
    print(f"{r['dtype']:5} {r['batch']:>2} {r['seq_len']:>5} {r['d_model']:>5} {r['d_ff']:>6} {float(r['capacity']):>6g} {t:>10.3f} {f:>10.3f}")
PY
}

status=0
case "$stage" in
  parity) run_parity || status=$? ;;
  profile) run_profile || status=$? ;;
  peer) run_peer || status=$? ;;
  summary) run_summary || status=$? ;;
  all) run_parity || status=$?; run_profile || status=$?; run_peer || status=$?; run_summary ;;
  *) echo "gpu-run: unknown stage '$stage' (all, parity, profile, peer, summary)" >&2; exit 2 ;;
esac
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$out/clocks-end.csv" 2>&1
exit $status
