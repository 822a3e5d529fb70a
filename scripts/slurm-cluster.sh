#!/usr/bin/env bash
# A real single-node Slurm on 127.0.0.1 with two fake GPUs, for the tests and for trying autotune's Slurm
# executors on any Debian machine (docs/scale-out.md):
#   scripts/slurm-cluster.sh start [DIR]   installs Debian's slurmctld, slurmd, slurm-client and munge when
#                                          missing; writes DIR/slurm.conf and DIR/gres.conf for this host (its
#                                          CPUs, 2 GPUs backed by /dev/null and /dev/zero); starts munged (if
#                                          none runs), slurmctld and slurmd; waits until the node is idle
#   scripts/slurm-cluster.sh stop [DIR]    stops the daemons this script started, by the pids in their pid files
#   scripts/slurm-cluster.sh env [DIR]     prints the line to source: export SLURM_CONF=DIR/slurm.conf
# DIR defaults to $AUTOTUNE_CACHE/slurm (~/.cache/autotune/slurm); AUTOTUNE_SLURM_PORT (default 6817) is
# slurmctld's port, slurmd takes the next. Needs root (the daemons run as root).
# Exit status: 0 when the cluster is up; 1 with the reason (and the daemons' last log lines) when not.
set -euo pipefail
cmd="${1:-}"
DIR="${2:-${AUTOTUNE_CACHE:-$HOME/.cache/autotune}/slurm}"
say() { echo "slurm-cluster: $*" >&2; }
fail() { say "$*"; exit 1; }

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_pidfile() {  # stop the daemon named by a pid file (never by name: other daemons may run here)
  local f="$1"
  pid_alive "$f" || { rm -f "$f"; return 0; }
  local pid
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$f"
}

case "$cmd" in
  env)
    echo "export SLURM_CONF=$DIR/slurm.conf"
    exit 0
    ;;
  stop)
    stop_pidfile "$DIR/slurmd.pid"
    stop_pidfile "$DIR/slurmctld.pid"
    if [ -f "$DIR/munged.started" ]; then
      stop_pidfile /run/munge/munged.pid
      rm -f "$DIR/munged.started"
    fi
    say "stopped ($DIR)"
    exit 0
    ;;
  start) ;;
  *)
    echo "usage: scripts/slurm-cluster.sh start|stop|env [DIR]" >&2
    exit 2
    ;;
esac

[ "$(id -u)" = 0 ] || fail "the Slurm daemons need root here (uid $(id -u)); run as root or give a cluster through SLURM_CONF"

missing=()
for bin in /usr/sbin/slurmctld:slurmctld /usr/sbin/slurmd:slurmd /usr/bin/srun:slurm-client /usr/sbin/munged:munge; do
  [ -x "${bin%%:*}" ] || missing+=("${bin##*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${missing[@]}" >/dev/null; } ||
    fail "cannot install ${missing[*]} with apt-get"
fi

mkdir -p "$DIR"/{state,spool,log}
host=$(hostname -s)
port="${AUTOTUNE_SLURM_PORT:-6817}"
cpus=$(nproc --all)
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 3 / 4 ))
cat > "$DIR/slurm.conf.new" <<EOF
# Written by scripts/slurm-cluster.sh: one node, this host, on 127.0.0.1.
ClusterName=autotune
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
ReturnToService=2
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.log
MinJobAge=300
KillWait=5
SlurmdUser=root
SlurmUser=root
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb Gres=gpu:2 State=UNKNOWN
PartitionName=autotune Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
cat > "$DIR/gres.conf" <<EOF
AutoDetect=off
Name=gpu File=/dev/null
Name=gpu File=/dev/zero
EOF
mv "$DIR/slurm.conf.new" "$DIR/slurm.conf"
export SLURM_CONF="$DIR/slurm.conf"

# munge: Slurm's authentication. One per machine; started here only when none answers.
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  [ -f /etc/munge/munge.key ] || fail "no /etc/munge/munge.key (the munge package creates it)"
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
  if id munge >/dev/null 2>&1; then
    su -s /bin/sh munge -c "/usr/sbin/munged --pid-file=/run/munge/munged.pid" || fail "munged did not start"
  else
    /usr/sbin/munged --force --pid-file=/run/munge/munged.pid || fail "munged did not start"
  fi
  touch "$DIR/munged.started"
  for _ in $(seq 50); do munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
fi

pid_alive "$DIR/slurmctld.pid" || /usr/sbin/slurmctld -f "$SLURM_CONF" -c ||
  fail "slurmctld did not start: $(tail -n 3 "$DIR/log/slurmctld.log" 2>/dev/null | tr '\n' ' ')"
pid_alive "$DIR/slurmd.pid" || /usr/sbin/slurmd -f "$SLURM_CONF" -c ||
  fail "slurmd did not start: $(tail -n 3 "$DIR/log/slurmd.log" 2>/dev/null | tr '\n' ' ')"
for _ in $(seq 150); do
  state=$(sinfo -h -N -o %T 2>/dev/null | head -n1 || true)
  if [ "$state" = idle ] || [ "$state" = mixed ] || [ "$state" = allocated ]; then
    say "up: node $host ($cpus CPUs, 2 GPUs), SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.2
done
fail "the node did not become idle within 30 s (state '${state:-none}'): $(tail -n 3 "$DIR/log/slurmd.log" 2>/dev/null | tr '\n' ' ')"
