#!/usr/bin/env bash
# A real single-node Slurm for tests, in a folder of its own: `local_slurm.sh start DIR` writes a
# munge key and a slurm.conf for this host (its CPUs, free ports), starts munged, slurmctld and
# slurmd, and waits until the node is idle; `local_slurm.sh stop DIR` stops them. Clients use it with
# SLURM_CONF=DIR/slurm.conf. Runs as root (the daemons and their jobs run as root). When a daemon
# cannot start, it says which and why (its log) and exits 1; it never skips.
set -euo pipefail
action=${1:?usage: local_slurm.sh start|stop DIR} dir=${2:?usage: local_slurm.sh start|stop DIR}

stop() {
  [ -f "$dir/slurm.conf" ] || return 0
  # Jobs first (their slurmstepd would outlive slurmd), then the daemons.
  if SLURM_CONF=$dir/slurm.conf squeue -h > /dev/null 2>&1; then
    SLURM_CONF=$dir/slurm.conf scancel --user="$(id -un)" > /dev/null 2>&1 || true
    for _ in $(seq 1 100); do
      [ -z "$(SLURM_CONF=$dir/slurm.conf squeue -h 2> /dev/null)" ] && break
      sleep 0.2
    done
  fi
  SLURM_CONF=$dir/slurm.conf scontrol shutdown > /dev/null 2>&1 || true
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile" 2>/dev/null || true)
    [ -n "$pid" ] || continue
    for _ in $(seq 1 50); do kill -0 "$pid" 2> /dev/null || break; kill "$pid" 2> /dev/null || true; sleep 0.1; done
    kill -9 "$pid" 2> /dev/null || true
  done
}

fail() {
  echo "local_slurm.sh: $1" >&2
  for log in "$dir"/log/*.log; do [ -f "$log" ] && { echo "--- $log" >&2; tail -n 20 "$log" >&2; }; done
  stop
  exit 1
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

case "$action" in
  stop) stop; exit 0 ;;
  start) ;;
  *) echo "local_slurm.sh: unknown action $action (start | stop)" >&2; exit 2 ;;
esac

[ "$(id -u)" -eq 0 ] || fail "must run as root (slurmd runs the jobs as the submitting user)"
for program in munged munge slurmctld slurmd sbatch squeue scontrol scancel sinfo; do
  command -v "$program" > /dev/null || fail "$program not found: ci/setup installs slurm-wlm and munge"
done
stop
rm -rf "$dir" && mkdir -p "$dir"/{state,spool,log,munge}
dir=$(cd "$dir" && pwd)
chmod 755 "$dir" "$dir/munge"
head -c 1024 /dev/urandom > "$dir/munge/munge.key"
chmod 600 "$dir/munge/munge.key"
host=$(hostname -s)
cpus=$(nproc)
ctld_port=$(free_port) d_port=$(free_port)
while [ "$d_port" = "$ctld_port" ]; do d_port=$(free_port); done
cat > "$dir/slurm.conf" <<CONF
# A single-node test cluster written by tests/slurm/local_slurm.sh.
ClusterName=stiefel-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CryptoType=crypto/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
KillWait=5
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf
munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
  --log-file="$dir/log/munged.log" --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/seed" \
  || fail "munged did not start"
munge --socket="$dir/munge/munge.socket" -n | unmunge --socket="$dir/munge/munge.socket" > /dev/null \
  || fail "munge cannot encode and decode a credential"
slurmctld -f "$dir/slurm.conf" -i || fail "slurmctld did not start"
slurmd -f "$dir/slurm.conf" -N "$host" || fail "slurmd did not start"
for _ in $(seq 1 100); do
  state=$(sinfo -h -N -o '%t' 2> /dev/null | head -n 1 || true)
  [ "$state" = idle ] && { echo "local_slurm.sh: $host idle ($cpus CPUs), SLURM_CONF=$dir/slurm.conf"; exit 0; }
  sleep 0.3
done
fail "the node never became idle (sinfo says: ${state:-nothing})"
