#!/usr/bin/env bash
# Runs a built modsim over a fixed set of commands and writes what each prints (and the files
# it writes: sweep CSV, calibration JSON, trace, the report's Markdown, HTML, tables and
# charts) into OUTDIR, one file per command, with the parts that change from run to run
# (dates, clock times, git revisions, OUTDIR itself) masked. Two snapshots of the same
# code compare equal, so a change meant to leave every output alone is checked with
#   scripts/output-snapshot.sh /tmp/snap-before   # before the change
#   scripts/output-snapshot.sh /tmp/snap-after    # after it
#   diff -r /tmp/snap-before /tmp/snap-after
# Usage: scripts/output-snapshot.sh OUTDIR [BUILD_DIR]   (BUILD_DIR defaults to build/)
# Takes about a minute on two cores. The exit status of each command is recorded beside its
# output (NAME.rc), so a command that starts failing shows in the diff too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 1 ]] || { echo "usage: $0 OUTDIR [BUILD_DIR]" >&2; exit 2; }
out=$1
build=${2:-$root/build}
modsim=$(cd "$build" && pwd)/cli/modsim
[[ -x "$modsim" ]] || { echo "output-snapshot: no $modsim (build the modsim target first)" >&2; exit 2; }
if [[ -e "$out" && -n "$(ls -A "$out")" ]]; then
  echo "output-snapshot: $out is not empty (give a new folder)" >&2
  exit 2
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
files="$out/files"  # what the commands write; masked and moved into OUTDIR at the end
rm -rf "$files"
mkdir -p "$files"
cd "$root"
export QT_QPA_PLATFORM=offscreen

meas=reports/measurements
h100_full=$meas/h100-sxm-2026-11-23-full.csv
h100_decode=$meas/h100-sxm-2026-11-23-decode.csv
cpu_cal=$meas/cpu-xeon-2core-2026-11-24-calibration.csv
cpu_holdout=$meas/cpu-xeon-2core-2026-11-22-holdout.csv
cpu_decode=$meas/cpu-xeon-2core-2026-11-24-decode.csv
cpu_quick=$meas/cpu-xeon-2core-2026-11-22-quick.csv

# Dates (not those in file names such as h100-sxm-2026-11-23-full.csv), clock times, git
# revisions (also as JSON, "commit": "..."), the checkout's and the snapshot's own folders.
# Durations need no mask: nothing here prints one.
mask() {
  sed -E \
    -e "s#$out#OUTDIR#g" \
    -e "s#$root#ROOT#g" \
    -e 's/(^|[^-[:alnum:]])[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?/\1DATE/g' \
    -e 's/\b[0-9]{1,2}:[0-9]{2}:[0-9]{2}\b/TIME/g' \
    -e 's/\b(git|revision|commit|rev)([" :=]+)[0-9a-f]{7,40}(-dirty)?\b/\1\2GITREV/g'
}

# run NAME ARGS...: modsim ARGS's stdout into OUTDIR/NAME (masked), its exit status into NAME.rc.
run() {
  local name=$1
  shift
  local rc=0
  "$modsim" "$@" >"$out/$name.raw" 2>"$out/$name.stderr.raw" || rc=$?
  mask <"$out/$name.raw" >"$out/$name"
  rm -f "$out/$name.raw" "$out/$name.stderr.raw"
  echo "$rc" >"$out/$name.rc"
}

# FLOPs.
run flops "flops" mod-220m
run flops-json "flops" mode-staged-220m --format json
run flops-decode "flops" moe-220m --mode decode --batch 8 --seq 2048
run flops-train-csv "flops" mod-gqa-swiglu-1b --mode train --format csv

# Predictions: datasheet and calibrated, GPU and CPU, forward, train and decode.
run predict "predict" mod-220m --hardware h100-sxm-calibrated
run predict-json "predict" mod-220m --hardware h100-sxm-calibrated --format json
run predict-datasheet-csv "predict" mode-integrated-220m --hardware h100-sxm --format csv
run predict-cpu "predict" mod-60m --hardware cpu-calibrated --batch 2 --seq 512
run predict-train-md "predict" moe-220m --hardware h200 --mode train --format markdown
run predict-decode "predict" mod-220m --hardware h100-sxm-calibrated --mode decode --batch 8 --seq 2048
run predict-decode-pad-json "predict" mod-1b --hardware h100-sxm-calibrated --mode decode --batch 16 --seq 4096 --decode-routing pad --graph --format json
run predict-tp "predict" mod-1b --hardware h100-sxm --batch 8 --seq 2048 --tp 2 --pp 2

# The discrete-event simulator.
run simulate-forward "simulate" forward mod-220m --hardware h100-sxm-calibrated --trace "$files/forward-trace.json"
run simulate-forward-json "simulate" forward mode-staged-220m --hardware h100-sxm --format json
run simulate-decode "simulate" forward mod-220m --hardware h100-sxm-calibrated --mode decode --batch 8 --seq 2048
run simulate-decode-graph-json "simulate" forward mod-220m --hardware h100-sxm --mode decode --batch 8 --seq 2048 --graph --decode-routing pad --format json
run simulate-serve "simulate" serve mod-220m --hardware h100-sxm-calibrated --rate 20 --requests 60 --seed 3
run simulate-serve-json "simulate" serve mod-60m --hardware h100-sxm --rate 50 --requests 40 --format json

# The design space and the sampling map.
run sweep "sweep" mod-220m --hardware h100-sxm-calibrated --threads 2 --out "$files/sweep.csv"
run sweep-decode-json "sweep" mod-220m --hardware h100-sxm --mode decode --batch 4 --seq 1024 --capacities 0.125,0.5 --threads 2 --out "$files/sweep-decode.csv" --format json
run sampling "sampling" mod-220m --hardware h100-sxm-calibrated --baseline dense-220m --batches 1,16 --contexts 2048 --threads 2

# The cost model against measurements: validate, cross-validate, calibrate.
run validate "validate" --measurements "$h100_full" --hardware h100-sxm-calibrated
run validate-json "validate" --measurements "$h100_full" "$h100_decode" --hardware h100-sxm-calibrated --format json
run validate-cpu "validate" --measurements "$cpu_holdout" --hardware cpu-calibrated
run validate-cpu-decode-csv "validate" --measurements "$cpu_decode" --hardware cpu-calibrated --format csv
run validate-cv "validate" --measurements "$cpu_cal" --hardware cpu --cv 5
run validate-cv-by "validate" --measurements "$cpu_cal" --hardware cpu --cv-by capacity
run calibrate-cpu "calibrate" --measurements "$cpu_cal" "$cpu_decode" --hardware cpu --out "$files/cpu-cal.json"
run calibrate-gpu "calibrate" --measurements "$h100_full" "$h100_decode" --hardware h100-sxm --out "$files/h100-cal.json"

# The profiler's grid and measurements files (nothing is timed).
run profile-dry-run "profile" --backend cpu --preset quick --out "$files/never-written.csv" --dry-run
run profile-check "profile" --backend cpu --preset quick --check "$cpu_quick"

# Collectives.
run comm "comm" all_reduce --bytes 256M --gpus 8 --hardware h100-sxm
run comm-json "comm" all_to_all --bytes 64M --gpus 16 --hardware h200 --format json

# The cost report (embedded defaults: mod-220m on h100-sxm-calibrated), every file it writes.
run report "report" --out "$files/report" --threads 2 --requests 100

# The files the commands wrote, masked, beside the outputs.
(cd "$files" && find . -type f | sort) | while read -r f; do
  mkdir -p "$out/written/$(dirname "$f")"
  mask <"$files/$f" >"$out/written/$f"
done
rm -rf "$files"
echo "output-snapshot: $(ls "$out" | grep -c '\.rc$') commands into $out" >&2
