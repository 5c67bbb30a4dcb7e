#!/usr/bin/env bash
# The CPU held-out validation of the cost model, reproducible: profile the calibration grid
# (default: `modsim profile --preset calibration`, the grid users calibrate on: the 96 blocks of
# configs/grids/calibration-5-cpu.json with each op timed inside its block, routed GEMMs of 32
# and 64 rows among them for the few-row factor, gelu MHA and GQA + swiglu layers, and the 400
# GEMMs of configs/grids/gemm-rows-cpu.json; --calibration-grid FILE profiles a grid file
# instead, timed --calibration-timing, `quick` the quick preset's blocks) and
# configs/grids/holdout-cpu.json (48 blocks of shapes the calibration grid never measures:
# other seq_len, d_model, d_ff, batch and capacities, timed as whole blocks), calibrate on the
# first, validate on the second, and on configs/grids/holdout-2-cpu.json (holdout-2.csv, 32
# blocks of widths and head counts neither grid measured, about 1 min: the README's recipe). The calibration is also checked on the second (--holdout):
# its bands inside the measured range come from those errors, so the holdout's own validation
# scores errors the fit never saw but bands set by them (validate notes it); the decode and
# out-of-family files below check the bands. Everything goes to a temporary folder (kept with
# --keep DIR).
# --decode adds the decode steps: `--preset decode` with decode_step of mod-60m and dense-60m
# (decode.csv) goes into the calibration, and configs/grids/decode-holdout-cpu.json with
# decode_step of mod-220m and dense-220m (decode-holdout.csv: batches, contexts, widths and a
# capacity the preset never measured) is validated on its own, and so is
# configs/grids/decode-holdout-2-cpu.json (decode-holdout-2.csv: other batches, contexts and
# capacity, a 640-wide MHA layer and a GQA + swiglu layer, with the same two models' steps).
# --gemm-rows adds configs/grids/gemm-rows-cpu.json to a --calibration-grid FILE or quick
# (gemm-rows.csv, about 2 min; the default preset has them already, and then it adds nothing):
# the layer's GEMMs at every row count around 256 and 512, from which calibrate fits what the
# 1-3 rows left over past a group of four cost (routed GEMMs of 4q + 3 rows took up to 8 %
# longer than the work curve says).
# --realistic adds the out-of-family blocks: configs/grids/realistic-cpu.json (released
# models' layers at batches, sequences and capacities off the powers of two: realistic.csv,
# about 5 min) and configs/grids/realistic-long-cpu.json (8,192 and 16,384 tokens:
# realistic-long.csv, about 9 min), each validated on its own.
#
#   scripts/validate-cpu.sh [--modsim PATH] [--max-error PCT] [--threads N] [--keep DIR] [--decode]
#                           [--realistic] [--calibration-grid FILE|quick|calibration]
#                           [--calibration-timing in_block|isolated (FILE, quick)]
#                           [--passes N] [--report-only] [--gemm-rows]
#
# --threads defaults to 1: OpenBLAS's threads and the kernels' own pool share two cores badly
# (a block's time swung by up to 50 % between runs), one thread measures the method, not the
# contention. --max-error defaults to 15 (percent, median absolute error): CPU timings on a
# shared CI machine are noisy; on a quiet machine the split reaches a median of about 2-3%.
# --passes N is profile's: every grid measured N times over, each point the median of its
# passes (for a shared machine whose slow spells last seconds; the run takes N times as long).
# --report-only prints the scores against --max-error but does not fail on them: the ctest
# cli.validate_cpu uses it, because a test asserts no timing (on a shared 2-core CI machine the
# same calibration grid has cross-validated at a median of 17 %, where a quiet one gives 2 %);
# what it checks is that profiling, calibrating and validating run end to end on real kernels.
# Exit code: validate's (0 ok, 1 above --max-error unless --report-only, 2 bad input, 3 runtime
# failure).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
modsim="$root/build/cli/modsim"
max_error=15
threads=1
keep=""
calibration_grid=calibration
calibration_timing=in_block
decode=0
realistic=0
gemm_rows=0
report_only=0
passes=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --modsim) modsim="$2"; shift 2 ;;
    --max-error) max_error="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    --calibration-grid) calibration_grid="$2"; shift 2 ;;
    --calibration-timing) calibration_timing="$2"; shift 2 ;;
    --decode) decode=1; shift ;;
    --realistic) realistic=1; shift ;;
    --gemm-rows) gemm_rows=1; shift ;;
    --report-only) report_only=1; shift ;;
    --passes) passes="$2"; shift 2 ;;
    -h|--help) sed -n '2,48p' "$0"; exit 0 ;;
    *) echo "validate-cpu.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -x "$modsim" ]] || { echo "validate-cpu.sh: $modsim: not an executable (build modsim first, or pass --modsim)" >&2; exit 2; }

if [[ -n "$keep" ]]; then
  mkdir -p "$keep"
  dir=$(cd "$keep" && pwd)
  rm -f "$dir"/calibration.* "$dir"/holdout.* "$dir"/holdout-2.* "$dir"/decode.* "$dir"/decode-holdout.* "$dir"/decode-holdout-2.* \
    "$dir"/realistic.* "$dir"/realistic-long.* "$dir"/gemm-rows.* "$dir/cpu-calibrated.json"
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/modsim-validate-cpu.XXXXXX")
  trap 'rm -rf "$dir"' EXIT
fi

echo "validate-cpu.sh: load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; data in $dir" >&2
if [[ "$calibration_grid" == calibration ]]; then
  # The preset times its blocks in_block and its GEMMs alone (--calibration-timing does not apply).
  "$modsim" profile --backend cpu --preset calibration --threads "$threads" --passes "$passes" \
    --out "$dir/calibration.csv" >/dev/null
  gemm_rows=0
elif [[ "$calibration_grid" == quick ]]; then
  "$modsim" profile --backend cpu --preset quick --threads "$threads" --passes "$passes" --timing "$calibration_timing" \
    --out "$dir/calibration.csv" >/dev/null
else
  "$modsim" profile --backend cpu --grid "$calibration_grid" --threads "$threads" --passes "$passes" --timing "$calibration_timing" \
    --out "$dir/calibration.csv" >/dev/null
fi
for grid in holdout holdout-2; do
  "$modsim" profile --backend cpu --grid "$root/configs/grids/$grid-cpu.json" --threads "$threads" --passes "$passes" \
    --out "$dir/$grid.csv" >/dev/null
done
measurements=("$dir/calibration.csv")
if ((gemm_rows)); then
  "$modsim" profile --backend cpu --grid "$root/configs/grids/gemm-rows-cpu.json" --threads "$threads" --passes "$passes" \
    --out "$dir/gemm-rows.csv" >/dev/null
  measurements+=("$dir/gemm-rows.csv")
fi
if ((decode)); then
  "$modsim" profile --backend cpu --preset decode --model mod-60m --model dense-60m --threads "$threads" --passes "$passes" \
    --out "$dir/decode.csv" >/dev/null
  "$modsim" profile --backend cpu --grid "$root/configs/grids/decode-holdout-cpu.json" --model mod-220m \
    --model dense-220m --threads "$threads" --passes "$passes" --out "$dir/decode-holdout.csv" >/dev/null
  "$modsim" profile --backend cpu --grid "$root/configs/grids/decode-holdout-2-cpu.json" --model mod-220m \
    --model dense-220m --threads "$threads" --passes "$passes" --out "$dir/decode-holdout-2.csv" >/dev/null
  measurements+=("$dir/decode.csv")
fi
if ((realistic)); then
  for grid in realistic realistic-long; do
    "$modsim" profile --backend cpu --grid "$root/configs/grids/$grid-cpu.json" --threads "$threads" --passes "$passes" \
      --out "$dir/$grid.csv" >/dev/null
  done
fi
"$modsim" calibrate --measurements "${measurements[@]}" --hardware "$root/configs/hardware/cpu.json" \
  --holdout "$dir/holdout.csv" --out "$dir/cpu-calibrated.json"
echo
status=0
"$modsim" validate --measurements "$dir/holdout.csv" --hardware "$dir/cpu-calibrated.json" --max-error "$max_error" ||
  status=$?
echo
"$modsim" validate --measurements "$dir/holdout-2.csv" --hardware "$dir/cpu-calibrated.json" --max-error "$max_error" ||
  status=$?
if ((decode)); then
  echo
  "$modsim" validate --measurements "$dir/decode-holdout.csv" --hardware "$dir/cpu-calibrated.json" \
    --max-error "$max_error" || status=$?
  echo
  "$modsim" validate --measurements "$dir/decode-holdout-2.csv" --hardware "$dir/cpu-calibrated.json" \
    --max-error "$max_error" || status=$?
fi
if ((realistic)); then
  for grid in realistic realistic-long; do
    echo
    "$modsim" validate --measurements "$dir/$grid.csv" --hardware "$dir/cpu-calibrated.json" \
      --max-error "$max_error" || status=$?
  done
fi
if ((report_only && status == 1)); then
  echo
  echo "validate-cpu.sh: above --max-error $max_error % on this machine (reported, not gated: --report-only)" >&2
  status=0
fi
exit "$status"
