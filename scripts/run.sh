#!/usr/bin/env bash
# The main job, from a fresh machine: installs missing Debian packages, builds modsim and
# runs it on the default model (the paper's 220M MoD configuration).
#   scripts/run.sh [modsim arguments...]   (default: flops mod-220m)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/deps.sh
scripts/build.sh "$root/build" >&2
if (($# == 0)); then
  set -- flops configs/models/mod-220m.json --batch 1 --seq 2048
fi
exec "$root/build/sim/cli/modsim" "$@"
