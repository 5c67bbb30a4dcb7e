#!/usr/bin/env bash
# libFuzzer on the readers of everything a user writes or measures (tests/fuzz/): the model and
# hardware config reader (with the calibration block), the grid reader, the measurements CSV
# reader. Builds them with clang (coverage + ASan + UBSan) in build-fuzz/, seeds a corpus per
# target from the shipped configs, grids and measurement files, runs each target and prints
# executions, corpus size and crashes. A crash, a hang (-timeout) or a sanitizer report fails
# the run and leaves the input in build-fuzz/artifacts/.
#
#   scripts/fuzz.sh [--runs N] [--max-time S] [--build DIR]
#
# --runs defaults to 1000000 executions per target; CI runs a short --runs 20000.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-fuzz"
runs=1000000
max_time=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --max-time) max_time="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

"$root/scripts/deps.sh" --no-gui
need=()
command -v clang++ >/dev/null || need+=(clang)
compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null || need+=(libclang-rt-14-dev)
if ((${#need[@]})); then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "fuzz.sh: installing ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMODSIM_FUZZ=ON \
  -DMODSIM_BUILD_TESTS=OFF -DMODSIM_ENABLE_GUI=OFF -DMODSIM_ENABLE_CUDA=OFF >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log" >&2; exit 1; }
targets=(fuzz_config fuzz_grid fuzz_measurements)
cmake --build "$build" --target "${targets[@]}"

# Seeds: every shipped file the reader is for (measurement files cut to their first rows).
seed() {
  local dir="$build/corpus/$1"
  mkdir -p "$dir"
  shift
  for f in "$@"; do
    [[ -f "$f" ]] || continue
    # The first 40 lines, cut at 64 KiB. When they are longer, the first head may die of SIGPIPE
    # (141) under pipefail as the second stops reading: no failure here.
    { head -n 40 "$f" | head -c 65536 >"$dir/seed-$(basename "$f")"; } || [[ $? -eq 141 ]]
  done
}
seed fuzz_config "$root"/configs/models/*.json "$root"/configs/hardware/*.json "$root"/configs/hf/*.json
seed fuzz_grid "$root"/configs/grids/*.json
seed fuzz_measurements "$root"/reports/measurements/*.csv

mkdir -p "$build/artifacts"
failed=0
for t in "${targets[@]}"; do
  log="$build/$t.log"
  args=(-runs="$runs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$build/artifacts/$t-")
  ((max_time > 0)) && args+=(-max_total_time="$max_time")
  start=$(date +%s)
  if ASAN_OPTIONS=detect_leaks=1 "$build/tests/fuzz/$t" "${args[@]}" "$build/corpus/$t" >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
    failed=1
  fi
  execs=$(grep -Eo 'Done [0-9]+ runs' "$log" | grep -Eo '[0-9]+' | tail -1 || true)
  corpus=$(find "$build/corpus/$t" -type f | wc -l)
  crashes=$(find "$build/artifacts" -name "$t-*" -type f | wc -l)
  echo "fuzz.sh: $t: ${execs:-?} executions in $(( $(date +%s) - start )) s, corpus $corpus inputs, $crashes crash/hang artifacts: $status"
  [[ $status == ok ]] || tail -n 30 "$log" >&2
done
exit $failed
