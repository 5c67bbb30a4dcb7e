#!/usr/bin/env bash
# A Slurm job array that profiles one grid, one shard per array task, each on its own GPU (or
# CPU cores): the shards' CSVs together are the grid (`modsim profile --check` says so).
#
#   sbatch --array=1-8 --gpus-per-task=1 scripts/slurm/profile-array.sh \
#          --backend cuda --preset full --out-dir results/h100-run
#
# Every option is passed to `modsim profile` except --out-dir DIR (where shard-I-of-N.csv go,
# default measurements/) and --modsim PATH (the binary, default build/cli/modsim). The array's
# task ids may start anywhere (--array=0-7 or 1-8): the shard is the task's position in the
# array. A task that failed or hit its time limit is re-run with
#   sbatch --array=<its id> scripts/slurm/profile-array.sh <the same options>
# and continues its CSV (--resume: rows already there are kept, the rest measured). When all
# are done:
#   modsim profile <the same grid options> --check results/h100-run/shard-*-of-8.csv
#SBATCH --job-name=modsim-profile
#SBATCH --output=slurm-%A_%a.out
set -euo pipefail

out_dir=measurements
modsim=build/cli/modsim
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out-dir) out_dir="$2"; shift 2 ;;
    --modsim) modsim="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done

: "${SLURM_ARRAY_TASK_ID:?run this script with sbatch --array=...}"
count="${SLURM_ARRAY_TASK_COUNT:?}"
first="${SLURM_ARRAY_TASK_MIN:-1}"
index=$(( SLURM_ARRAY_TASK_ID - first + 1 ))
if (( index < 1 || index > count )); then
  echo "profile-array: task id ${SLURM_ARRAY_TASK_ID} is outside an array of ${count} starting at ${first}" >&2
  exit 2
fi
mkdir -p "$out_dir"
out="$out_dir/shard-${index}-of-${count}.csv"
resume=()
[[ -e "$out" ]] && resume=(--resume)
echo "profile-array: task ${SLURM_ARRAY_TASK_ID} -> shard ${index}/${count} -> ${out} on $(hostname)"
exec "$modsim" profile "${args[@]}" --shard "${index}/${count}" --out "$out" "${resume[@]}"
