#!/usr/bin/env bash
# One GPU session in one device call: unpacks the binaries scripts/gpu-pack.sh built here and
# runs, under a time budget, everything that needs the GPU, writing under $OUT:
#   scripts/gpu-session.sh [check] [decode] [train] [realistic] [full I/N] ...  (default: check decode full 1/1)
# Stages, in the order given:
#   check     parity tests (CUDA vs CPU: the blocks' ops, and the training step's output, dL/dx and
#             every gradient, kernels/cuda_train.hpp); compute-sanitizer memcheck on a small case
#             and, separately (at most 120 s), on small training cases; the peer:
#             PyTorch's MoD block (eager, and SDPA forced to cuDNN, FlashAttention, math) and
#             modsim's CUDA block on the same shapes (configs/grids/peer-gpu.json: bf16, B=8,
#             S=2048, d=2048, H=16, d_ff=8192, dense and c = 1/8, 1/4, 1/2, 1) with each
#             attention implementation, joined by profiler/peer/peer_csv.py into
#             peer-<gpu>-<date>.csv and <gpu>.md.
#   decode    the KV-cached decode step (kernels/decode.hpp): modsim_cuda_decode_tests (CUDA vs
#             CPU; at most 120 s); compute-sanitizer memcheck on a small subset of them (at most
#             180 s); `modsim profile --backend cuda --preset decode --model mod-220m --model
#             dense-220m` into <gpu>-<date>-decode-steps.csv (at most MODSIM_DECODE_PRESET_S,
#             default 300 s, and never into the time the PyTorch peer needs; resumed from
#             .gpu-pack/decode-steps.csv or .gpu-pack/*-decode-steps.csv when carried; stopped
#             cleanly with SIGINT); profiler/peer/decode_torch.py (PyTorch's decode step, eager and
#             CUDA graph, same models, batches and contexts; at most 150 s), joined with modsim's
#             decode_step rows (and the block rows when `check` ran first in this call) by
#             peer_csv.py into peer-<gpu>-<date>.csv and <gpu>.md.
#   train     `modsim profile --backend cuda --preset train` (one layer's forward + backward, bf16,
#             72 points, then 4 AdamW steps, op adamw) into <gpu>-<date>-train.csv (at most MODSIM_TRAIN_PRESET_S, default 240 s;
#             resumed from .gpu-pack/*-train.csv when carried; stopped cleanly with SIGINT); then
#             the PyTorch training peer of the same layers (profiler/peer/mod_block_torch.py
#             --train; at most MODSIM_TRAIN_PEER_S, default 120 s) joined by peer_csv.py --train
#             into logs/train-peer/ and the summary.
#   realistic configs/grids/realistic-gpu.json (96 out-of-family bf16 blocks of released models'
#             layers) into <gpu>-<date>-realistic.csv (resumed from .gpu-pack/*-realistic.csv),
#             then `modsim validate` of it against h100-sxm-calibrated into the summary.
#   full I/N  shard I of N of `modsim profile --backend cuda --preset full`, timed; resumed
#             from .gpu-pack/full-I-of-N.csv when that file was carried along; stopped cleanly
#             (SIGINT: the point in progress finishes, the CSV stays valid) when the budget ends.
# Environment: OUT (default out-gpu/), MODSIM_SESSION_S (seconds for the whole script, default
# 570: one device command may run 600), MODSIM_PEER_COMPILE=1 (also time torch.compile; slow),
# MODSIM_PACK (default .gpu-pack/modsim-gpu.tar.xz).
# $OUT receives at most 8 files (the device tool's limit): summary.txt, the peer CSV and .md,
# the decode-steps CSV, the train CSV, one CSV per full shard and logs.tar.xz with every log, raw CSV and
# metadata file (the PyTorch CSVs, memcheck logs, gtest JSON among them).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$(date +%s)
budget=${MODSIM_SESSION_S:-570}
out=${OUT:-$root/out-gpu}
mkdir -p "$out"
logs=$(mktemp -d)
summary="$out/summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
left() { echo $(( budget - ($(date +%s) - start) )); }

pack=${MODSIM_PACK:-$root/.gpu-pack/modsim-gpu.tar.xz}
bin=/tmp/modsim-gpu/bin
if [[ -f "$pack" ]]; then
  mkdir -p /tmp/modsim-gpu && tar -C /tmp/modsim-gpu -xJf "$pack"
else
  bin=${MODSIM_GPU_BIN:-$root/build-gpu/cli}  # a build on the GPU machine itself
fi
modsim="$bin/modsim"
parity="$bin/modsim_cuda_parity_tests"
[[ -x "$parity" ]] || parity="$root/build-gpu/tests/kernels/cuda/modsim_cuda_parity_tests"
decode_tests="$bin/modsim_cuda_decode_tests"
[[ -x "$decode_tests" ]] || decode_tests="$root/build-gpu/tests/kernels/cuda/modsim_cuda_decode_tests"
# Model names (mod-220m, ...) resolve under this checkout's configs/, not the build machine's.
export MODSIM_CONFIGS="$root/configs"
[[ -x "$modsim" ]] || { say "gpu-session: no modsim binary (run scripts/gpu-pack.sh here and carry .gpu-pack)"; exit 2; }
say "gpu-session: binaries of $(head -c 400 "$bin/REVISION" 2>/dev/null | tr '\n' ' ')"

# cuBLAS and cuDNN are loaded at run time: the toolkit's folder, else the wheels PyTorch uses.
libs=""
for mod in nvidia.cublas nvidia.cudnn nvidia.cu13 nvidia.cuda_runtime; do
  d=$(python3 -c "import $mod, os; print(os.path.join(list($mod.__path__)[0], 'lib'))" 2>/dev/null) || continue
  [[ -d "$d" ]] && libs="$libs:$d"
done
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [[ -d "$d" ]] && libs="$libs:$d"; done
# Wherever else Python's packages hold cuDNN or cuBLAS (wheel layouts differ between versions).
for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
  for f in $(find "$site" -maxdepth 5 \( -name 'libcudnn.so.9' -o -name 'libcublas.so.1[0-9]' \) 2>/dev/null); do
    libs="$libs:$(dirname "$f")"
  done
done
export LD_LIBRARY_PATH="${libs#:}:${LD_LIBRARY_PATH:-}"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" > "$logs/env.txt"
ls $(echo "$libs" | tr ':' ' ') 2>/dev/null | grep -E 'libcudnn|libcublas' >> "$logs/env.txt"

gpu=no-gpu
if command -v nvidia-smi > /dev/null; then
  nvidia-smi > "$logs/nvidia-smi.txt" 2>&1
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  gpu=$(echo "$name" | sed 's/NVIDIA//' | grep -oiE '\b[a-z]{1,2}[0-9]{2,4}[a-z]?\b' | head -1 | tr '[:upper:]' '[:lower:]')
  [[ -n "$gpu" ]] || gpu=$(echo "$name" | tr '[:upper:] ' '[:lower:]-' | tr -cd 'a-z0-9-')
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv > "$logs/clocks-start.csv" 2>&1
fi
day=$(date -u +%Y-%m-%d)
say "gpu-session: $gpu, $day, budget ${budget}s"

run_check() {
  local t0=$(date +%s)
  say "== parity (CUDA vs CPU)"
  MODSIM_REQUIRE_CUDNN=1 "$parity" --gtest_output="json:$logs/parity.json" > "$logs/parity.txt" 2>&1
  say "parity: exit $? — $(grep -E '^\[ +(PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?[,.]' "$logs/parity.txt" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]' "$logs/parity.txt" | head -20 | tee -a "$summary"

  say "== compute-sanitizer memcheck (small case)"
  if command -v compute-sanitizer > /dev/null; then
    MODSIM_REQUIRE_CUDNN=1 compute-sanitizer --tool memcheck --error-exitcode 9 "$parity" \
      --gtest_filter='Cases/CudaParity.*/mha_gelu_*:Cases/CudaParity.*/odd_gqa_gelu_bf16:Cases/CudaParity.*/few_sequences_*_bf16:*Fused*' \
      > "$logs/memcheck.txt" 2>&1
    say "memcheck: exit $? — $(grep -E 'ERROR SUMMARY' "$logs/memcheck.txt" | tail -1)"
  else
    say "memcheck: compute-sanitizer not on PATH"
  fi

  local failed_train
  failed_train=$(grep -cE '^\[  FAILED  \] .*CudaTrain' "$logs/parity.txt")
  say "training parity: $(grep -cE '^\[       OK \] .*CudaTrain' "$logs/parity.txt") passed, $failed_train failed"

  say "== compute-sanitizer memcheck (training, small cases)"
  if command -v compute-sanitizer > /dev/null; then
    # A routed bf16 layer (MHA gelu), the unaligned GQA layer (per-pair GEMMs) under selective
    # recomputation, an integrated MoDE layer with no-op experts and drops, AdamW and the predictor.
    local limit=$(( $(left) < 120 ? $(left) : 120 ))
    timeout -k 10 "$limit" compute-sanitizer --tool memcheck --error-exitcode 9 "$parity" \
      --gtest_filter='Layers/CudaTrainParity.*/mod_mha_gelu_bf16_none:Layers/CudaTrainParity.*/mod_odd_gqa_gelu_fp32_selective:Layers/CudaTrainParity.*/integrated_odd_gelu_fp32_none:CudaTrain.AdamW*:CudaTrain.Predictor*' \
      > "$logs/memcheck-train.txt" 2>&1
    local rc=$?
    say "memcheck train: exit $rc$( (( rc == 124 || rc == 137 )) && echo " (stopped after ${limit}s)") — $(grep -E 'ERROR SUMMARY' "$logs/memcheck-train.txt" | tail -1) $(grep -E '^\[ +(PASSED|FAILED) +\] [0-9]+ tests?[,.]' "$logs/memcheck-train.txt" | tr '\n' ' ')"
  else
    say "memcheck train: compute-sanitizer not on PATH"
  fi

  say "== peer: PyTorch MoD block and modsim's CUDA block, same shapes"
  local impls="eager sdpa-cudnn sdpa-flash sdpa-math"
  [[ "${MODSIM_PEER_COMPILE:-0}" == 1 ]] && impls="$impls compiled"
  PYTHONUNBUFFERED=1 python3 profiler/peer/mod_block_torch.py --out "$logs/peer-torch.csv" --batch 8 --seq 2048 \
    --d-model 2048 --heads 16 --capacities 0.125 0.25 0.5 1.0 --impls $impls --warmup 8 --repeats 40 \
    > "$logs/peer-torch.log" 2>&1
  say "peer torch: exit $?"
  tail -n 30 "$logs/peer-torch.log" >> "$summary"
  local attn
  for attn in unfused fused; do
    "$modsim" profile --backend cuda --grid configs/grids/peer-gpu.json --attention "$attn" \
      --out "$logs/peer-modsim-$attn.csv" --format table > "$logs/peer-modsim-$attn.txt" 2> "$logs/peer-modsim-$attn.log"
    say "peer modsim ($attn attention): exit $?"
    cat "$logs/peer-modsim-$attn.txt" >> "$summary"
  done
  python3 profiler/peer/peer_csv.py --modsim "$logs/peer-modsim-unfused.csv" --torch "$logs/peer-torch.csv" \
    --out-dir "$out" --date "$day" --attention unfused > "$logs/peer-csv.log" 2>&1
  say "peer csv (unfused): exit $? $(tr '\n' ' ' < "$logs/peer-csv.log")"
  if [[ -s "$logs/peer-modsim-fused.csv" ]]; then
    mkdir -p "$logs/fused"
    python3 profiler/peer/peer_csv.py --modsim "$logs/peer-modsim-fused.csv" --torch "$logs/peer-torch.csv" \
      --out-dir "$logs/fused" --date "$day" --attention fused >> "$logs/peer-csv.log" 2>&1
    say "peer csv (fused, in logs/fused): exit $?"
  fi
  [[ -f "$out/$gpu.md" ]] && cat "$out/$gpu.md" >> "$summary"
  say "check: $(( $(date +%s) - t0 )) s"
}

# The decode issue's GPU work: parity, memcheck, the decode preset, the PyTorch decode peer.
run_decode() {
  local t0=$(date +%s) rc limit
  local models=(--model mod-220m --model dense-220m)
  say "== decode parity (CUDA decode step vs CPU)"
  if [[ -x "$decode_tests" ]]; then
    limit=$(( $(left) < 120 ? $(left) : 120 ))
    timeout -k 10 "$limit" "$decode_tests" --gtest_output="json:$logs/decode-parity.json" > "$logs/decode-parity.txt" 2>&1
    rc=$?
    say "decode parity: exit $rc$( (( rc == 124 || rc == 137 )) && echo " (stopped after ${limit}s)") — $(grep -E '^\[ +(PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?[,.]' "$logs/decode-parity.txt" | tr '\n' ' ')"
    grep -E '^\[  FAILED  \]' "$logs/decode-parity.txt" | head -20 | tee -a "$summary"

    say "== compute-sanitizer memcheck (decode, small cases)"
    if command -v compute-sanitizer > /dev/null; then
      # Dense MHA, the padded step in a CUDA graph, the odd MQA shapes (d_head 15, pages of 7),
      # the 97 KiB shared-memory GQA group, 300 sequences across the compaction tiles, refusals.
      limit=$(( $(left) < 180 ? $(left) : 180 ))
      timeout -k 10 "$limit" compute-sanitizer --tool memcheck --error-exitcode 9 "$decode_tests" \
        --gtest_filter='Cases/CudaDecode.*/dense_mha_gelu_*:Cases/CudaDecode.*/routed_mha_count_pad_graph_fp32:Cases/CudaDecode.*/odd_mqa_*:Cases/CudaDecode.*/wide_group_mask_sync_bf16:Cases/CudaDecode.*/many_count_pad_fp32:CudaDecode.Refuses*:CudaDecode.Clear*' \
        > "$logs/memcheck-decode.txt" 2>&1
      rc=$?
      say "memcheck decode: exit $rc$( (( rc == 124 || rc == 137 )) && echo " (stopped after ${limit}s)") — $(grep -E 'ERROR SUMMARY' "$logs/memcheck-decode.txt" | tail -1) $(grep -E '^\[ +(PASSED|FAILED) +\] [0-9]+ tests?[,.]' "$logs/memcheck-decode.txt" | tr '\n' ' ')"
    else
      say "memcheck decode: compute-sanitizer not on PATH"
    fi
  else
    say "decode parity: no modsim_cuda_decode_tests binary (rebuild the pack with scripts/gpu-pack.sh)"
  fi

  # The preset gets what is left once the PyTorch peer's share (and the end's 25 s) is set aside.
  local peer_s=${MODSIM_DECODE_PEER_S:-150}
  local csv="$out/$gpu-$day-decode-steps.csv" carried
  carried=$(ls -t "$root"/.gpu-pack/decode-steps.csv "$root"/.gpu-pack/*-decode-steps.csv 2>/dev/null | head -1)
  [[ -n "$carried" ]] && cp "$carried" "$csv" && say "decode preset: resuming $(basename "$carried") ($(( $(wc -l < "$csv") - 1 )) rows)"
  limit=$(( $(left) - peer_s - 25 ))
  (( limit > ${MODSIM_DECODE_PRESET_S:-300} )) && limit=${MODSIM_DECODE_PRESET_S:-300}
  if (( limit < 30 )); then
    say "decode preset: no time left (${limit}s)"
  else
    say "== decode preset (modsim profile --backend cuda --preset decode ${models[*]}), ${limit}s at most"
    local t1=$(date +%s)
    timeout -s INT -k 20 "$limit" "$modsim" profile --backend cuda --preset decode "${models[@]}" --out "$csv" \
      --resume --format csv > /dev/null 2> "$logs/decode-preset.log"
    rc=$?
    local rows=0 points
    [[ -s "$csv" ]] && rows=$(( $(wc -l < "$csv") - 1 ))
    points=$("$modsim" profile --backend cuda --preset decode "${models[@]}" --dry-run 2>&1 >/dev/null | tail -1)
    say "decode preset: exit $rc, $(( $(date +%s) - t1 )) s, $rows rows in $(basename "$csv") ($points)"
    tail -n 3 "$logs/decode-preset.log" >> "$summary"
    cp "${csv%.csv}.meta.json" "$logs/" 2>/dev/null
  fi
  [[ -f "$csv" ]] || rm -f "${csv%.csv}.meta.json"

  say "== peer: PyTorch decode step (eager, CUDA graph) and modsim's decode_step"
  limit=$(( $(left) - 20 ))
  (( limit > peer_s )) && limit=$peer_s
  if (( limit < 30 )); then
    say "peer decode: no time left (${limit}s)"
  else
    PYTHONUNBUFFERED=1 timeout -k 10 "$limit" python3 profiler/peer/decode_torch.py --out "$logs/peer-torch-decode.csv" \
      "${models[@]}" --batch 1 8 32 128 --context 512 2048 8192 --dtype bf16 --impls eager graph \
      --warmup 5 --repeats 30 --max-seconds $(( limit - 40 > 10 ? limit - 40 : 10 )) > "$logs/peer-torch-decode.log" 2>&1
    say "peer torch decode: exit $?"
    tail -n 30 "$logs/peer-torch-decode.log" >> "$summary"
  fi
  if [[ -s "$logs/peer-torch-decode.csv" && -s "$csv" ]]; then
    local blocks=()
    [[ -s "$logs/peer-modsim-unfused.csv" && -s "$logs/peer-torch.csv" ]] &&
      blocks=(--modsim "$logs/peer-modsim-unfused.csv" --torch "$logs/peer-torch.csv" --attention unfused)
    python3 profiler/peer/peer_csv.py "${blocks[@]}" --modsim-decode "$csv" --torch-decode "$logs/peer-torch-decode.csv" \
      --out-dir "$out" --date "$day" > "$logs/peer-csv-decode.log" 2>&1
    say "peer csv (decode$( (( ${#blocks[@]} )) && echo " + blocks")): exit $? $(tr '\n' ' ' < "$logs/peer-csv-decode.log")"
    [[ -f "$out/$gpu.md" ]] && sed -n '/^## Decode step/,$p' "$out/$gpu.md" >> "$summary"
  else
    say "peer csv (decode): not joined (PyTorch rows: $([[ -s "$logs/peer-torch-decode.csv" ]] && echo yes || echo none), modsim rows: $([[ -s "$csv" ]] && echo yes || echo none))"
  fi
  say "decode: $(( $(date +%s) - t0 )) s"
}

run_full() {  # $1 = I/N
  local shard=$1 tag=${1/\//-of-}
  local csv="$out/full-$tag.csv"
  [[ -f "$root/.gpu-pack/full-$tag.csv" ]] && cp "$root/.gpu-pack/full-$tag.csv" "$csv"
  local limit=$(( $(left) - 25 ))
  if (( limit < 30 )); then say "full $shard: no time left (${limit}s)"; return 0; fi
  say "== full preset, shard $shard, ${limit}s at most"
  local t0=$(date +%s)
  timeout -s INT -k 20 "$limit" "$modsim" profile --backend cuda --preset full --shard "$shard" --out "$csv" \
    --resume --format csv > /dev/null 2> "$logs/full-$tag.log"
  local rc=$?
  local rows=0
  [[ -s "$csv" ]] && rows=$(( $(wc -l < "$csv") - 1 ))
  local points=$("$modsim" profile --backend cuda --preset full --shard "$shard" --dry-run 2>&1 >/dev/null | tail -1)
  say "full $shard: exit $rc, $(( $(date +%s) - t0 )) s, $rows rows in full-$tag.csv ($points)"
  tail -n 3 "$logs/full-$tag.log" >> "$summary"
  cp "${csv%.csv}.meta.json" "$logs/" 2>/dev/null
}

# One layer's training step on the GPU: the train preset (bf16), resumable like the others.
run_train() {
  local csv="$out/$gpu-$day-train.csv" carried
  carried=$(ls -t "$root"/.gpu-pack/*-train.csv 2>/dev/null | head -1)
  [[ -n "$carried" ]] && cp "$carried" "$csv" && say "train preset: resuming $(basename "$carried") ($(( $(wc -l < "$csv") - 1 )) rows)"
  local limit=$(( $(left) - 25 ))
  (( limit > ${MODSIM_TRAIN_PRESET_S:-240} )) && limit=${MODSIM_TRAIN_PRESET_S:-240}
  if (( limit < 30 )); then say "train preset: no time left (${limit}s)"; return 0; fi
  say "== train preset (modsim profile --backend cuda --preset train), ${limit}s at most"
  local t0=$(date +%s)
  timeout -s INT -k 20 "$limit" "$modsim" profile --backend cuda --preset train --out "$csv" --resume --format csv \
    > /dev/null 2> "$logs/train-preset.log"
  local rc=$? rows=0
  [[ -s "$csv" ]] && rows=$(( $(wc -l < "$csv") - 1 ))
  say "train preset: exit $rc, $(( $(date +%s) - t0 )) s, $rows rows in $(basename "$csv") (76 points: 72 layers, 4 adamw)"
  tail -n 3 "$logs/train-preset.log" >> "$summary"
  cp "${csv%.csv}.meta.json" "$logs/" 2>/dev/null
  [[ -f "$csv" ]] || rm -f "${csv%.csv}.meta.json"
  run_train_peer "$csv"
}

# PyTorch's training step of the train preset's MHA gelu layers (d 1024 and 2048, 16 heads,
# d_ff 4 d; dense and c = 1/8, 1/2; recompute none and full), eager and with SDPA forced to
# cuDNN and FlashAttention, in the same run as modsim's rows, joined by peer_csv.py --train
# into logs/train-peer/ (peer-train-<gpu>-<date>.csv, <gpu>-train.md; the table in the summary).
run_train_peer() {
  local csv=$1 limit=$(( $(left) - 20 ))
  (( limit > ${MODSIM_TRAIN_PEER_S:-120} )) && limit=${MODSIM_TRAIN_PEER_S:-120}
  if (( limit < 30 )); then say "train peer: no time left (${limit}s)"; return 0; fi
  say "== train peer: PyTorch's training step of the same layers, ${limit}s at most"
  PYTHONUNBUFFERED=1 timeout -s INT -k 10 "$limit" python3 profiler/peer/mod_block_torch.py --train \
    --recompute none full --out "$logs/peer-torch-train.csv" --batch 1 4 --seq 1024 2048 --d-model 1024 2048 \
    --heads 16 --capacities 0.125 0.5 --impls eager sdpa-cudnn sdpa-flash --warmup 3 --repeats 15 \
    > "$logs/peer-torch-train.log" 2>&1
  say "train peer torch: exit $? (130 or 124: stopped at the limit, its rows kept)"
  [[ -s "$csv" && -s "$logs/peer-torch-train.csv" ]] || { say "train peer: nothing to join"; return 0; }
  python3 profiler/peer/peer_csv.py --train --gpu "$gpu" --modsim "$csv" --torch "$logs/peer-torch-train.csv" \
    --out-dir "$logs/train-peer" --date "$day" > "$logs/peer-csv-train.log" 2>&1
  say "train peer csv: exit $? $(tr '\n' ' ' < "$logs/peer-csv-train.log")"
  [[ -f "$logs/train-peer/$gpu-train.md" ]] && cat "$logs/train-peer/$gpu-train.md" >> "$summary"
}

# The out-of-family GPU grid (configs/grids/realistic-gpu.json: released models' layers, batches,
# sequences and capacities off the powers of two), then `modsim validate` of it against the
# shipped H100 calibration, whose band and error land in the summary.
run_realistic() {
  local csv="$out/$gpu-$day-realistic.csv" carried
  carried=$(ls -t "$root"/.gpu-pack/*-realistic.csv 2>/dev/null | head -1)
  [[ -n "$carried" ]] && cp "$carried" "$csv" && say "realistic: resuming $(basename "$carried")"
  local limit=$(( $(left) - 40 ))
  if (( limit < 30 )); then say "realistic: no time left (${limit}s)"; return 0; fi
  say "== realistic grid (modsim profile --backend cuda --grid configs/grids/realistic-gpu.json), ${limit}s at most"
  local t0=$(date +%s)
  timeout -s INT -k 20 "$limit" "$modsim" profile --backend cuda --grid configs/grids/realistic-gpu.json \
    --attention unfused --out "$csv" --resume --format csv > /dev/null 2> "$logs/realistic.log"
  local rc=$? rows=0
  [[ -s "$csv" ]] && rows=$(( $(wc -l < "$csv") - 1 ))
  say "realistic: exit $rc, $(( $(date +%s) - t0 )) s, $rows rows in $(basename "$csv") (96 points)"
  tail -n 3 "$logs/realistic.log" >> "$summary"
  cp "${csv%.csv}.meta.json" "$logs/" 2>/dev/null
  if (( rows > 0 )); then
    "$modsim" validate --measurements "$csv" --hardware configs/hardware/h100-sxm-calibrated.json \
      > "$logs/realistic-validate.txt" 2>&1
    say "realistic validate (h100-sxm-calibrated): exit $?"
    tail -n 12 "$logs/realistic-validate.txt" >> "$summary"
  fi
}

stages=("$@")
(( ${#stages[@]} )) || stages=(check decode full 1/1)
i=0
while (( i < ${#stages[@]} )); do
  case "${stages[$i]}" in
    check) run_check ;;
    decode) run_decode ;;
    train) run_train ;;
    full) run_full "${stages[$((i + 1))]:-1/1}"; i=$((i + 1)) ;;
    realistic) run_realistic ;;
    *) say "gpu-session: unknown stage '${stages[$i]}' (check, decode, train, realistic, full I/N)" ;;
  esac
  i=$((i + 1))
done

command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
  --format=csv > "$logs/clocks-end.csv" 2>&1
rm -f "$out"/*.meta.json
tar -C "$logs" -cJf "$out/logs.tar.xz" .
say "gpu-session: $(( $(date +%s) - start )) s; files in $out: $(ls "$out" | tr '\n' ' ')"
rm -rf "$logs"
