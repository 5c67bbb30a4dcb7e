#!/usr/bin/env bash
# The test suite, from a fresh machine: installs missing Debian packages, builds, runs ctest.
#   scripts/test.sh              release build in build/; every unit and integration test except
#                                those labelled `slow` (about 5 minutes of tests on 2 cores)
#   scripts/test.sh --all        the same build; every test, `slow` included (cli.validate_cpu
#                                profiles this CPU: 5-15 minutes), then the Slurm job array on a
#                                one-node cluster (scripts/slurm/test.sh, needs root) and a short
#                                libFuzzer run of each reader (scripts/fuzz.sh --runs 20000).
#                                CI (.ci/run) calls this.
#   scripts/test.sh --sanitize   ASan + UBSan build in build-asan/, unit tests
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$(date +%s)
mode=${1:-}
case "$mode" in
  "" | --all | --sanitize) ;;
  *) echo "usage: scripts/test.sh [--all | --sanitize]" >&2; exit 2 ;;
esac
scripts/deps.sh
if [[ "$mode" == "--sanitize" ]]; then
  # CUDA code is compiled by the release build; the sanitizer build checks the host code.
  MODSIM_BUILD_TYPE=RelWithDebInfo scripts/build.sh "$root/build-asan" -DMODSIM_SANITIZE=ON \
    -DMODSIM_ENABLE_CUDA=OFF -DMODSIM_ENABLE_GUI=OFF
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # Unit tests without the `slow` label, and without the band check over the H100 data's
  # leave-one-value-out (hundreds of fits: about a minute in the release build, which runs it,
  # over ten under the sanitizers); the band code runs under them in the other band tests.
  ctest --test-dir "$root/build-asan" --output-on-failure -j "$(nproc)" -LE slow \
    -E 'Cli\.ErrorBandsHoldOnH100ValuesLeftOut'
elif [[ "$mode" == "--all" ]]; then
  scripts/build.sh "$root/build"
  ctest --test-dir "$root/build" --output-on-failure -j "$(nproc)"
  echo "== Slurm: a CPU grid as a 4-task job array on a one-node cluster (scripts/slurm/test.sh)" >&2
  scripts/slurm/test.sh build
  echo "== fuzzing (libFuzzer, a short run of each reader: scripts/fuzz.sh --runs 20000)" >&2
  scripts/fuzz.sh --runs 20000
else
  scripts/build.sh "$root/build"
  ctest --test-dir "$root/build" --output-on-failure -j "$(nproc)" -LE slow
fi
echo "test.sh: finished in $(( $(date +%s) - start )) s" >&2
