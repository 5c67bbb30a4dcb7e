#!/usr/bin/env bash
# The Slurm job array for real: installs Debian's slurm-wlm and munge when missing, starts a
# one-node cluster on this machine (munged, slurmctld and slurmd on the loopback, their own
# config and state under a temporary folder), profiles a CPU grid as a 4-task array through
# scripts/slurm/profile-array.sh, and checks that the shards hold every point of the grid
# exactly once (`modsim profile --check`) and the same points as the grid unsharded
# (`--dry-run`). The daemons are stopped on exit, whatever happened.
#
#   scripts/slurm/test.sh [BUILD_DIR]      (default build; needs root for the daemons)
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
modsim="$PWD/$build/cli/modsim"
[[ -x "$modsim" ]] || { echo "slurm-test: no $modsim (build first: scripts/build.sh)" >&2; exit 2; }
if [[ $(id -u) -ne 0 ]]; then echo "slurm-test: the daemons need root" >&2; exit 2; fi

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "== installing slurm-wlm and munge"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi

work=$(mktemp -d /tmp/modsim-slurm.XXXXXX)
chmod 755 "$work"
host=$(hostname -s)
cpus=$(nproc)
pids=()
cleanup() {
  set +e
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  pkill -f "slurmctld -D -f $work" 2>/dev/null
  pkill -f "slurmd -D -f $work" 2>/dev/null
  [[ -f "$work/munged.pid" ]] && kill "$(cat "$work/munged.pid")" 2>/dev/null
  sleep 1
  rm -rf "$work"
}
trap cleanup EXIT

echo "== munge (its own key and socket under $work)"
mkdir -p "$work/munge" && chmod 700 "$work/munge"
dd if=/dev/urandom bs=1 count=1024 of="$work/munge/munge.key" status=none
chmod 400 "$work/munge/munge.key"
socket="$work/munge/munge.socket"
munged --force --key-file="$work/munge/munge.key" --socket="$socket" --pid-file="$work/munged.pid" \
  --log-file="$work/munged.log" --seed-file="$work/munge/seed"
export MUNGE_SOCKET="$socket"

echo "== slurm.conf: one node ($host, $cpus CPUs), loopback"
mkdir -p "$work/state" "$work/spool" "$work/log"
cat > "$work/slurm.conf" <<CONF
ClusterName=modsim-ci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmctldPort=6917
SlurmdPort=6918
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# slurmd loads a cgroup plugin even with proctrack/linuxproc and task/none (22.05 has no
# "disabled"): the version this machine mounts.
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then cgroup=cgroup/v2; else cgroup=cgroup/v1; fi
printf 'CgroupPlugin=%s\nCgroupAutomount=no\nConstrainCores=no\nConstrainRAMSpace=no\n' "$cgroup" > "$work/cgroup.conf"
export SLURM_CONF="$work/slurm.conf"

echo "== slurmctld and slurmd"
slurmctld -D -f "$work/slurm.conf" -i > "$work/log/slurmctld.out" 2>&1 &
pids+=($!)
sleep 2
slurmd -D -f "$work/slurm.conf" > "$work/log/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 60); do
  state=$(sinfo -h -o %T 2>/dev/null | head -1 || true)
  [[ "$state" == idle* ]] && break
  sleep 1
done
if [[ "${state:-}" != idle* ]]; then
  echo "slurm-test: the node did not come up (state '${state:-none}')" >&2
  tail -n 20 "$work"/log/* >&2 || true
  exit 3
fi
sinfo

echo "== a CPU grid as a 4-task job array"
grid=(--backend cpu --preset quick --threads 1 --max-time 0.002)
out="$work/out"
mkdir -p "$out"
sbatch --wait --array=1-4 --cpus-per-task=1 --chdir="$PWD" --output="$work/log/task-%a.out" \
  scripts/slurm/profile-array.sh "${grid[@]}" --out-dir "$out" --modsim "$modsim"
cat "$work"/log/task-*.out
ls -l "$out"

echo "== the shards against the grid"
"$modsim" profile "${grid[@]}" --check "$out"/shard-*-of-4.csv --format json > "$work/check.json"
cat "$work/check.json"; echo
"$modsim" profile "${grid[@]}" --check "$out"/shard-*-of-4.csv
# The merged rows are the unsharded grid's points: the same point count as --dry-run lists.
points=$("$modsim" profile "${grid[@]}" --dry-run 2>/dev/null | wc -l)
rows=0
for f in "$out"/shard-*-of-4.csv; do rows=$(( rows + $(tail -n +2 "$f" | wc -l) )); done
echo "unsharded grid: $points points; rows in the 4 shards: $rows"
[[ "$rows" -eq "$points" ]] || { echo "slurm-test: $rows rows for $points points" >&2; exit 1; }
echo "slurm-test: OK (4 array tasks, $rows rows, 0 lost, 0 duplicated)"
