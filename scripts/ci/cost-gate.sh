#!/usr/bin/env bash
# The cost gate: the cost reports of a repository's model configurations at two commits,
# compared figure by figure (`modsim compare`). Fails when a change makes a model slower (or
# bigger, or worse on any figure of the report) past its threshold.
#   scripts/ci/cost-gate.sh BASE_REF [HEAD_REF]      (HEAD_REF defaults to HEAD)
# Run it anywhere inside the repository; each ref is checked out in a temporary git worktree
# (the working tree is not touched). Environment:
#   MODSIM                    a modsim binary used for both refs (nothing is built). Set it when
#                             a change touches only configurations: building modsim twice takes
#                             long on a two-core CI machine. Unset: in a modsim checkout each
#                             ref's own modsim is built in its worktree (Release, CUDA and GUI
#                             off); in any other repository, `modsim` on PATH.
#   MODSIM_GATE_MODELS        model configurations, globs relative to the repository root
#                             (default: configs/models/*.json); each is the subject of one report
#   MODSIM_GATE_HARDWARE      hardware file or shipped name (default: h100-sxm-calibrated)
#   MODSIM_GATE_REPORT_ARGS   more `modsim report` flags (e.g. "--batch 8 --seq 4096 --no-serving")
#   MODSIM_GATE_COMPARE_ARGS  `modsim compare` flags (e.g. "--max-regression 3 --thresholds ci/t.json")
#   MODSIM_GATE_OUT           output folder (default: cost-gate/ in the current folder): base/NAME/
#                             and head/NAME/ (the reports), compare.md (for a pull-request
#                             comment), junit-NAME.xml (one test case per figure)
# Exit: 0 every figure within its threshold, 1 a figure regressed (each named on stderr),
# 2 bad input (a ref, a configuration modsim rejects, a summary compare cannot read), 3 modsim
# did not build at a ref.
set -euo pipefail
usage() { echo "usage: $0 BASE_REF [HEAD_REF]   (see the comment at the top of this script)" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 && "$1" != -* ]] || usage
base_ref=$1
head_ref=${2:-HEAD}
repo=$(git rev-parse --show-toplevel 2>/dev/null) || { echo "cost-gate: not inside a git repository" >&2; exit 2; }
out=${MODSIM_GATE_OUT:-$PWD/cost-gate}
models=${MODSIM_GATE_MODELS:-configs/models/*.json}
hardware=${MODSIM_GATE_HARDWARE:-h100-sxm-calibrated}
read -r -a report_args <<<"${MODSIM_GATE_REPORT_ARGS:-}"
read -r -a compare_args <<<"${MODSIM_GATE_COMPARE_ARGS:-}"

base_sha=$(git -C "$repo" rev-parse --verify -q "$base_ref^{commit}") || { echo "cost-gate: $base_ref: no such commit" >&2; exit 2; }
head_sha=$(git -C "$repo" rev-parse --verify -q "$head_ref^{commit}") || { echo "cost-gate: $head_ref: no such commit" >&2; exit 2; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/base" "$out/head" "$out"/junit-*.xml "$out/compare.md"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cost-gate.XXXXXX")
cleanup() {
  for side in base head; do
    [[ -d "$tmp/$side" ]] && git -C "$repo" worktree remove --force "$tmp/$side" >/dev/null 2>&1 || true
  done
  git -C "$repo" worktree prune >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# The modsim that reports one side: MODSIM, the side's own build, or the one on PATH.
modsim_for() {
  local wt=$1
  if [[ -n "${MODSIM:-}" ]]; then
    [[ -x "$MODSIM" ]] || { echo "cost-gate: MODSIM=$MODSIM is not an executable" >&2; exit 2; }
    (cd "$(dirname "$MODSIM")" && echo "$PWD/$(basename "$MODSIM")")
  elif [[ -f "$wt/cli/main.cpp" && -f "$wt/CMakeLists.txt" ]]; then
    echo "cost-gate: building modsim at $(git -C "$wt" rev-parse --short HEAD) (set MODSIM to reuse one binary)" >&2
    # ccache (when installed) hashes paths relative to the worktree, as scripts/build.sh does, so
    # the second ref reuses what the first compiled from unchanged sources.
    local generator=()
    command -v ninja >/dev/null && generator=(-G Ninja)
    CCACHE_BASEDIR="$wt" CCACHE_NOHASHDIR=true cmake -S "$wt" -B "$wt/build-gate" "${generator[@]}" \
      -DCMAKE_BUILD_TYPE=Release -DMODSIM_ENABLE_CUDA=OFF -DMODSIM_ENABLE_GUI=OFF \
      >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log" >&2; exit 3; }
    CCACHE_BASEDIR="$wt" CCACHE_NOHASHDIR=true cmake --build "$wt/build-gate" --target modsim -j "$(nproc)" \
      >"$tmp/build.log" 2>&1 ||
      { tail -50 "$tmp/build.log" >&2; exit 3; }
    echo "$wt/build-gate/cli/modsim"
  elif command -v modsim >/dev/null; then
    command -v modsim
  else
    echo "cost-gate: no modsim: set MODSIM to a modsim binary" >&2
    exit 2
  fi
}

# report SIDE SHA: one report per model configuration into $out/SIDE/NAME; the names into $tmp/SIDE.names.
report_side() {
  local side=$1 sha=$2 wt="$tmp/$1"
  git -C "$repo" worktree add --detach -q "$wt" "$sha" 2>"$tmp/worktree.log" || { cat "$tmp/worktree.log" >&2; exit 2; }
  modsim=$(modsim_for "$wt")  # global: the head side's compares
  : >"$tmp/$side.names"
  local files
  files=$(cd "$wt" && shopt -s nullglob && for g in $models; do for f in $g; do [[ -f "$f" ]] && echo "$f"; done; done | sort -u)
  local f name
  for f in $files; do
    name=$(basename "$f" .json)
    if grep -qx "$name" "$tmp/$side.names"; then
      echo "cost-gate: two configurations named $name at $side (give MODSIM_GATE_MODELS that names each once)" >&2
      exit 2
    fi
    echo "$name" >>"$tmp/$side.names"
    echo "$f" >"$tmp/$side.$name.path"
    echo "cost-gate: $side ($(git -C "$wt" rev-parse --short HEAD)): modsim report $f" >&2
    local rc=0
    (cd "$wt" && "$modsim" report "$f" --hardware "$hardware" --no-profile --no-charts "${report_args[@]}" \
      --out "$out/$side/$name" >/dev/null 2>"$tmp/report.log") || rc=$?
    if ((rc != 0)); then
      grep -v '^report: ' "$tmp/report.log" >&2 || true
      echo "cost-gate: $side: modsim report $f failed (exit $rc)" >&2
      exit 2
    fi
  done
}

modsim=""
report_side base "$base_sha"
report_side head "$head_sha"

status=0
{
  echo "## modsim cost gate: \`$base_ref\` ($(git -C "$repo" rev-parse --short "$base_sha")) → \`$head_ref\` ($(git -C "$repo" rev-parse --short "$head_sha"))"
  echo
} >"$out/compare.md"
for name in $(sort -u "$tmp/base.names" "$tmp/head.names"); do
  if ! grep -qx "$name" "$tmp/base.names" || ! grep -qx "$name" "$tmp/head.names"; then
    only=$(grep -qx "$name" "$tmp/base.names" && echo base || echo head)
    echo "cost-gate: $name: only at $only (no comparison)" >&2
    printf '### %s\n\nOnly at %s: nothing to compare with.\n\n' "$name" "$only" >>"$out/compare.md"
    continue
  fi
  printf '### %s\n\n' "$(cat "$tmp/head.$name.path")" >>"$out/compare.md"
  rc=0
  "$modsim" compare "$out/base/$name" "$out/head/$name" --format markdown --junit "$out/junit-$name.xml" \
    "${compare_args[@]}" >"$tmp/compare.md" 2>"$tmp/compare.err" || rc=$?
  # compare's own heading one level down, under the model's.
  sed 's/^### /#### /' "$tmp/compare.md" >>"$out/compare.md"
  echo >>"$out/compare.md"
  sed "s/^/cost-gate: $name: /" "$tmp/compare.err" >&2
  if ((rc == 2 || (rc != 0 && rc != 1))); then
    status=2
  elif ((rc == 1 && status == 0)); then
    status=1
  fi
done
cat "$out/compare.md"
echo "cost-gate: $(case $status in 0) echo "pass";; 1) echo "FAIL: a figure regressed";; *) echo "bad input";; esac) ($out/compare.md)" >&2
exit "$status"
