#!/usr/bin/env bash
# A one-node Slurm from Debian's packages (munge, slurmctld, slurmd) for the sweep tests, all of
# it under one work directory: its own munge key and socket, a slurm.conf for this host with no GPU
# resources, the daemons in the foreground of background jobs. Usage:
#   slurm_fixture.sh start WORK   -> prints `export SLURM_CONF=...` and waits until the node is idle
#   slurm_fixture.sh stop WORK
# Exits 1 with the daemons' logs when they do not come up: a sweep test must then fail, not skip.
set -uo pipefail
cmd=$1
work=$(mkdir -p "$2" && cd "$2" && pwd)
conf=$work/slurm.conf
stop() {
  # The jobs first (their slurmstepd and tasks), then the daemons.
  if [ -f "$conf" ] && [ -f "$work/slurmctld.pid" ]; then
    SLURM_CONF=$conf scancel --full --quiet --user="$(id -un)" 2>/dev/null
    sleep 1
  fi
  for p in slurmd slurmctld munged; do
    [ -f "$work/$p.pid" ] && kill "$(cat "$work/$p.pid")" 2>/dev/null
  done
  sleep 1
  for p in slurmd slurmctld munged; do
    [ -f "$work/$p.pid" ] && kill -9 "$(cat "$work/$p.pid")" 2>/dev/null
    rm -f "$work/$p.pid"
  done
  return 0
}
if [ "$cmd" = stop ]; then
  stop
  exit 0
fi
for p in munged slurmctld slurmd sbatch squeue sacct scontrol; do
  command -v "$p" >/dev/null || { echo "slurm_fixture: $p is not installed (Debian: munge slurm-wlm slurm-client)" >&2; exit 1; }
done
stop
host=$(hostname -s)
cpus=$(nproc)
user=$(id -un)
mkdir -p "$work/munge" "$work/spool" "$work/state" "$work/log"
chmod 700 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/munge.socket" \
  --pid-file="$work/munged.pid" --log-file="$work/log/munged.log" --seed-file="$work/munge/seed" \
  || { echo "slurm_fixture: munged did not start:" >&2; cat "$work/log/munged.log" >&2; exit 1; }
cat > "$conf" <<CONF
ClusterName=nanscope-test
SlurmctldHost=$host
SlurmUser=$user
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/munge.socket
SlurmctldPort=46817
SlurmdPort=46818
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
MaxArraySize=10001
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
rm -f "$work/cgroup.conf"
export SLURM_CONF=$conf
slurmctld -D -f "$conf" >"$work/log/slurmctld.out" 2>&1 &
echo $! > "$work/slurmctld.pid"
slurmd -D -f "$conf" >"$work/log/slurmd.out" 2>&1 &
echo $! > "$work/slurmd.pid"
for _ in $(seq 1 60); do
  state=$(sinfo -h -o %T 2>/dev/null | head -1)
  case "$state" in idle*|mixed*|allocated*) echo "export SLURM_CONF=$conf"; exit 0 ;; esac
  sleep 1
done
echo "slurm_fixture: the node did not come up (sinfo: '${state:-}')" >&2
tail -20 "$work/log/slurmctld.log" "$work/log/slurmd.log" "$work/log/slurmctld.out" "$work/log/slurmd.out" >&2 2>/dev/null
stop
exit 1
