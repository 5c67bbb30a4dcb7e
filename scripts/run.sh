#!/usr/bin/env bash
# The main job, from a fresh machine: installs missing Debian packages, builds modsim and
# writes the default cost report (the paper's 220M MoD model vs its dense baseline on an
# H100, with a quick CPU profile of this machine for the validation section) to report/.
#   scripts/run.sh [modsim arguments...]   (default: report --out report)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/deps.sh
scripts/build.sh "$root/build" >&2
if (($# == 0)); then
  set -- report --out "$root/report"
fi
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}  # charts render without a display
exec "$root/build/cli/modsim" "$@"
