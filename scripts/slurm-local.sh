#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine, for the sweep tests (docs/SWEEPS.md).
#   scripts/slurm-local.sh start   install Debian's slurm-wlm and munge when missing, write a
#                                  one-node slurm.conf for this host, start munged, slurmctld and
#                                  slurmd, and wait until sinfo shows the node idle
#   scripts/slurm-local.sh stop    cancel every job and stop the three daemons
# Needs root (or sudo) and Debian's package archive. Writes /etc/slurm/slurm.conf; run it only on a
# machine whose Slurm configuration is yours to replace (a CI machine, a container).
set -euo pipefail

SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
STATE=/var/spool/slurm-local

install() {
  if command -v slurmctld >/dev/null 2>&1 && command -v munged >/dev/null 2>&1; then
    return
  fi
  echo "installing Debian's slurm-wlm and munge ..."
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq slurm-wlm munge >/dev/null
}

write_conf() {
  local host cpus mem_mb
  host=$(hostname -s)
  cpus=$(nproc)
  # Leave a quarter of the memory to the system.
  mem_mb=$(awk '/MemTotal/ {print int($2 / 1024 * 3 / 4)}' /proc/meminfo)
  $SUDO mkdir -p /etc/slurm "$STATE/ctld" "$STATE/d" /var/log/slurm-local
  $SUDO tee /etc/slurm/slurm.conf >/dev/null <<EOF
# Written by scripts/slurm-local.sh: one node, this machine.
ClusterName=empathy-gym-local
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=/var/log/slurm-local/slurmctld.log
SlurmdLogFile=/var/log/slurm-local/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munge() {
  if pgrep -x munged >/dev/null; then
    return
  fi
  if [ ! -s /etc/munge/munge.key ]; then
    $SUDO mungekey --create --keyfile /etc/munge/munge.key 2>/dev/null ||
      $SUDO dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    $SUDO chown munge:munge /etc/munge/munge.key
    $SUDO chmod 400 /etc/munge/munge.key
  fi
  $SUDO mkdir -p /run/munge
  $SUDO chown munge:munge /run/munge
  $SUDO -u munge /usr/sbin/munged 2>/dev/null || $SUDO runuser -u munge -- /usr/sbin/munged
}

start() {
  install
  write_conf
  start_munge
  pgrep -x slurmctld >/dev/null || $SUDO slurmctld
  pgrep -x slurmd >/dev/null || $SUDO slurmd
  for _ in $(seq 1 60); do
    state=$(sinfo -h -o %T 2>/dev/null | head -n1 || true)
    if [ "$state" = idle ]; then
      echo "slurm: one node ($(hostname -s), $(nproc) CPUs) idle in partition local"
      return
    fi
    sleep 1
  done
  echo "error: the local Slurm node did not become idle in 60 s (state: ${state:-none});" \
    "see /var/log/slurm-local/slurmctld.log and slurmd.log" >&2
  exit 1
}

stop() {
  scancel --user="$(id -un)" 2>/dev/null || true
  $SUDO pkill -x slurmd 2>/dev/null || true
  $SUDO pkill -x slurmctld 2>/dev/null || true
  $SUDO pkill -x munged 2>/dev/null || true
  echo "slurm: stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *)
    echo "usage: scripts/slurm-local.sh start|stop" >&2
    exit 2
    ;;
esac
