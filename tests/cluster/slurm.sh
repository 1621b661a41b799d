#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for the tests.
#   tests/cluster/slurm.sh up     install Debian's slurm-wlm and munge when missing (needs root),
#                                 write a configuration under $SLURM_TEST_DIR, start munged,
#                                 slurmctld and slurmd, and wait until the node is idle
#   tests/cluster/slurm.sh down   cancel every job and stop the daemons
# Client commands need SLURM_CONF=$SLURM_TEST_DIR/slurm.conf (printed by `up`); jobs get the
# configuration from slurmd (configless mode). The node declares two
# GPUs as a generic resource without device files, so jobs asking for `--gpus` are scheduled
# (and run on the CPU); no accounting database: job states come from squeue.
set -euo pipefail
dir=${SLURM_TEST_DIR:-/tmp/softmax-bottleneck-slurm}
conf=$dir/slurm.conf
export SLURM_CONF=$conf

# Ends the daemons this script started, by the process ids they wrote, and waits for each to exit
# (its port free for the next `up`); never by name, which could end another cluster's daemons.
stop() {
  for daemon in slurmd slurmctld munged; do
    if [ -f "$dir/$daemon.pid" ]; then
      pid=$(cat "$dir/$daemon.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      rm -f "$dir/$daemon.pid"
    fi
  done
}

case "${1:-}" in
up)
  if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    if [ "$(id -u)" != 0 ]; then
      echo "slurm.sh: slurm-wlm and munge are missing and installing them needs root" >&2
      exit 3
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
  fi
  stop
  rm -rf "$dir/state" "$dir/spool"  # a fresh cluster: no drained node or job remembered from a previous run
  mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
  node=$(hostname -s)
  memory=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
  cpus=$(getconf _NPROCESSORS_ONLN)  # not nproc, which answers OMP_NUM_THREADS (1 on the test workers)
  if [ ! -f "$dir/munge/munge.key" ]; then
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$dir/munge/munge.key"
  fi
  mkdir -p /run/munge  # the default socket: slurmd asks for its configuration before knowing any other
  munged --force --key-file="$dir/munge/munge.key" --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" \
    --seed-file="$dir/munge/seed"
  cat > "$conf" <<EOF
ClusterName=softmax-bottleneck-test
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
MinJobAge=3600
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SlurmctldParameters=enable_configless
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory Gres=gpu:2 State=UNKNOWN
PartitionName=main Nodes=$node Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$node MaxTime=INFINITE State=UP
EOF
  # Two stand-in GPU device files (character devices like /dev/null): Slurm schedules and hands
  # out `--gpus` by them; the jobs themselves run on the CPU.
  for i in 0 1; do [ -e "$dir/gpu$i" ] || mknod "$dir/gpu$i" c 1 3; done
  echo "NodeName=$node Name=gpu File=$dir/gpu[0-1]" > "$dir/gres.conf"
  slurmctld -f "$conf"
  # configless: slurmd fetches the configuration from slurmctld and hands its cached copy to the
  # jobs (SLURM_CONF), so srun inside a batch job finds the cluster
  slurmd --conf-server "127.0.0.1:16817"
  for _ in $(seq 60); do
    if sinfo -h -N -o %T 2>/dev/null | grep -q idle; then
      echo "SLURM_CONF=$conf"
      exit 0
    fi
    sleep 1
  done
  echo "slurm.sh: the node did not become idle; see $dir/slurmctld.log and $dir/slurmd.log" >&2
  exit 1
  ;;
down)
  scancel --full --user="$(id -un)" 2>/dev/null || true
  stop
  ;;
*)
  echo "usage: $0 up|down" >&2
  exit 2
  ;;
esac
