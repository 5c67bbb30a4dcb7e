#!/usr/bin/env bash
# The cost gate end to end (scripts/ci/cost-gate.sh with the built modsim, MODSIM=, so nothing is
# rebuilt): a temporary git repository holds one model configuration;
#  1. a commit that raises its capacity 0.125 -> 0.5 (four times the routed tokens of every other
#     layer: more FLOPs, more time) must fail the gate, exit 1, naming time.forward on stderr;
#  2. a commit that changes only its notes must pass, exit 0;
#  3. a corrupted summary.json must be bad input for modsim compare, exit 2, naming the file;
#  4. two reports of the same inputs must write byte-identical summary.json.
# Usage: cost_gate_test.sh MODSIM_BINARY SOURCE_DIR
set -euo pipefail
modsim=$1
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cost-gate-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

repo=$tmp/repo
mkdir -p "$repo/models"
cp "$src/configs/models/mod-60m.json" "$repo/models/tiny.json"
grep -q '"capacity": 0.125' "$repo/models/tiny.json" || fail "mod-60m.json no longer has capacity 0.125"
git() { command git -C "$repo" -c user.name=test -c user.email=test@example.invalid -c commit.gpgsign=false "$@"; }
git init -q
git add models/tiny.json
git commit -q -m "tiny: MoD at capacity 0.125"

export MODSIM=$modsim MODSIM_GATE_MODELS='models/*.json' MODSIM_GATE_HARDWARE=h100-sxm
# The sweep, serving, sampling and parallel parts apart: seconds, not minutes.
# Batch 8 x 2,048 tokens: a step the matmuls decide (at batch 1 x 512 launches are most of it).
export MODSIM_GATE_REPORT_ARGS="--no-serving --no-sampling --no-parallel --threads 2 --batch 8 --seq 2048"
gate() { (cd "$repo" && MODSIM_GATE_OUT="$tmp/$1" "$src/scripts/ci/cost-gate.sh" HEAD~1 HEAD >"$tmp/$1.out" 2>"$tmp/$1.err"); }

# 1. Slower: the gate fails and names the figure.
sed -i 's/"capacity": 0.125/"capacity": 0.5/' "$repo/models/tiny.json"
git commit -q -am "tiny: capacity 0.5"
rc=0
gate slower || rc=$?
[[ $rc -eq 1 ]] || { cat "$tmp/slower.err" >&2; fail "capacity 0.125 -> 0.5: gate exit $rc, expected 1"; }
grep -q "regression: time.forward (mod-60m)" "$tmp/slower.err" || { cat "$tmp/slower.err" >&2; fail "time.forward not named"; }
grep -q "regressed" "$tmp/slower/compare.md" || fail "compare.md shows no regression"
grep -q '<failure' "$tmp/slower/junit-tiny.xml" || fail "junit-tiny.xml has no failure"
[[ -f "$tmp/slower/base/tiny/summary.json" && -f "$tmp/slower/head/tiny/summary.json" ]] || fail "no summaries"

# 2. No cost change (the notes only): the gate passes.
sed -i 's/"notes": "/"notes": "Renamed in notes only. /' "$repo/models/tiny.json"
git commit -q -am "tiny: notes"
rc=0
gate notes || rc=$?
[[ $rc -eq 0 ]] || { cat "$tmp/notes.err" >&2; fail "a notes change: gate exit $rc, expected 0"; }
grep -q "every figure within its threshold" "$tmp/notes/compare.md" || fail "compare.md does not pass"
! grep -q '<failure' "$tmp/notes/junit-tiny.xml" || fail "junit-tiny.xml has a failure"
# The inputs differ (the file changed) though no figure does.
! cmp -s "$tmp/notes/base/tiny/summary.json" "$tmp/notes/head/tiny/summary.json" || fail "the summaries' inputs should differ"

# 3. A corrupted summary is bad input.
head -c 100 "$tmp/notes/head/tiny/summary.json" >"$tmp/corrupt.json"
rc=0
"$modsim" compare "$tmp/notes/base/tiny" "$tmp/corrupt.json" >/dev/null 2>"$tmp/corrupt.err" || rc=$?
[[ $rc -eq 2 ]] || fail "a corrupted summary: compare exit $rc, expected 2"
grep -q "corrupt.json" "$tmp/corrupt.err" || fail "the corrupted file is not named: $(cat "$tmp/corrupt.err")"

# 4. The same inputs twice: the same bytes.
for run in 1 2; do
  (cd "$repo" && "$modsim" report models/tiny.json --hardware h100-sxm --no-profile --no-charts \
    $MODSIM_GATE_REPORT_ARGS --out "$tmp/same$run" >/dev/null 2>&1) || fail "report run $run failed"
done
cmp "$tmp/same1/summary.json" "$tmp/same2/summary.json" || fail "summary.json differs between two runs"
echo "cost gate: slower -> 1, notes -> 0, corrupted -> 2, summary.json byte-identical"
