#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs missing Debian packages, builds, runs
# every test with ctest.
#   scripts/test.sh              release build in build/, all tests
#   scripts/test.sh --sanitize   ASan + UBSan build in build-asan/, unit tests
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$(date +%s)
scripts/deps.sh
if [[ "${1:-}" == "--sanitize" ]]; then
  # CUDA code is compiled by the release build; the sanitizer build checks the host code.
  MODSIM_BUILD_TYPE=RelWithDebInfo scripts/build.sh "$root/build-asan" -DMODSIM_SANITIZE=ON \
    -DMODSIM_ENABLE_CUDA=OFF -DMODSIM_ENABLE_GUI=OFF
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # Unit tests without the `slow` label, and without the band check over the H100 data's
  # leave-one-value-out (hundreds of fits: about a minute in the release build, which runs it,
  # over ten under the sanitizers); the band code runs under them in the other band tests.
  ctest --test-dir "$root/build-asan" --output-on-failure -j "$(nproc)" -LE slow \
    -E 'Cli\.ErrorBandsHoldOnH100ValuesLeftOut'
else
  scripts/build.sh "$root/build"
  ctest --test-dir "$root/build" --output-on-failure -j "$(nproc)"
fi
echo "test.sh: finished in $(( $(date +%s) - start )) s" >&2
