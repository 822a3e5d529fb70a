#!/usr/bin/env bash
# A real Slurm on this machine with two fake GPUs per node, for the tests and for trying autotune's Slurm executors on
# any Debian machine (docs/scale-out.md):
#   scripts/slurm-cluster.sh start [--nodes N] [DIR]
#                                          installs Debian's slurmctld, slurmd, slurm-client and munge when missing;
#                                          writes DIR/slurm.conf and DIR/gres.conf; starts munged (if none runs),
#                                          slurmctld and a slurmd per node; waits until every node is idle.
#                                          One node (the default): this host, on 127.0.0.1. N ≥ 2 nodes: each slurmd
#                                          in its own network and UTS namespace (hostname atnode<K>, an address on a
#                                          bridge in 198.18.0.0/15, the benchmarking range — never a real network),
#                                          slurmctld in this namespace on the bridge's address; this host's cores and
#                                          memory split between the nodes
#   scripts/slurm-cluster.sh stop [DIR]    stops the daemons this script started (by the pids in their pid files), the
#                                          processes in its namespaces, and removes the namespaces, veths and bridge it
#                                          created (DIR/created lists them); a failed start cleans up the same way
#   scripts/slurm-cluster.sh env [DIR]     prints the line to source: export SLURM_CONF=DIR/slurm.conf
# DIR defaults to $AUTOTUNE_CACHE/slurm (~/.cache/autotune/slurm); AUTOTUNE_SLURM_PORT (default 6817) is
# slurmctld's port, slurmd takes the next; the port also names this cluster's namespaces and picks its subnet.
# Needs root (the daemons run as root). Exit status: 0 when the cluster is up; 1 with the reason (and the daemons'
# last log lines) when not; 2 for a node count it cannot create.
set -euo pipefail
cmd="${1:-}"
shift || true
nodes=1
if [ "${1:-}" = --nodes ]; then
  nodes="${2:-}"
  shift 2 || true
fi
DIR="${1:-${AUTOTUNE_CACHE:-$HOME/.cache/autotune}/slurm}"
DIR=$(realpath -m "$DIR")  # the daemons run from /: every path in slurm.conf must be absolute
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

# What a start created, one line each ("netns NAME", "link NAME"), removed by stop in reverse order.
created() { echo "$1 $2" >>"$DIR/created"; }

stop_cluster() {
  for f in "$DIR"/slurmd*.pid; do [ -e "$f" ] && stop_pidfile "$f"; done
  stop_pidfile "$DIR/slurmctld.pid"
  if [ -f "$DIR/created" ]; then
    # the processes left in the namespaces (tasks of a lost node), then the namespaces and links themselves
    while read -r kind name; do
      [ "$kind" = netns ] || continue
      for pid in $(ip netns pids "$name" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    done <"$DIR/created"
    tac "$DIR/created" | while read -r kind name; do
      case "$kind" in
        link) ip link del "$name" 2>/dev/null || true ;;
        netns) ip netns del "$name" 2>/dev/null || true ;;
      esac
    done
    rm -f "$DIR/created"
  fi
  if [ -f "$DIR/munged.started" ]; then
    stop_pidfile /run/munge/munged.pid
    rm -f "$DIR/munged.started"
  fi
}

case "$cmd" in
  env)
    echo "export SLURM_CONF=$DIR/slurm.conf"
    exit 0
    ;;
  stop)
    stop_cluster
    say "stopped ($DIR)"
    exit 0
    ;;
  start) ;;
  *)
    echo "usage: scripts/slurm-cluster.sh start [--nodes N] [DIR] | stop [DIR] | env [DIR]" >&2
    exit 2
    ;;
esac

cpus=$(nproc --all)
if ! [[ "$nodes" =~ ^[0-9]+$ ]] || [ "$nodes" -lt 1 ] || [ "$nodes" -gt "$cpus" ]; then
  say "--nodes '$nodes' is not a node count this machine can hold; allowed: 1..$cpus (each node gets at least one of its $cpus cores)"
  exit 2
fi
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
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 3 / 4 ))
tag="at${port}"                  # names this cluster's namespaces and links (at most 15 characters each)
net="198.18.$(( port % 256 ))"   # its /24 inside the benchmarking range 198.18.0.0/15
if [ "$nodes" -gt 1 ]; then
  # What an earlier start left (a lost shell, a killed test) goes first; a start that fails or is stopped from here
  # on takes away what it created (stop_cluster reads DIR/created).
  stop_cluster
  trap 'stop_cluster' EXIT
  probe="${tag}probe"
  if ! why=$(ip netns add "$probe" 2>&1); then
    fail "network namespaces are refused here (ip netns add: ${why:-failed}): a cluster of $nodes nodes needs one per node"
  fi
  ip netns del "$probe"
  ip link add "${tag}br" type bridge
  created link "${tag}br"
  ip addr add "$net.1/24" dev "${tag}br"
  ip link set "${tag}br" up
  ctl_addr="$net.1"
  node_lines=""
  for k in $(seq "$nodes"); do
    ns="${tag}n$k"
    ip netns add "$ns"
    created netns "$ns"
    ip link add "${tag}v$k" type veth peer name eth0 netns "$ns"
    created link "${tag}v$k"
    ip link set "${tag}v$k" master "${tag}br" up
    ip -n "$ns" addr add "$net.$((k + 1))/24" dev eth0
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
    ip -n "$ns" route add default via "$ctl_addr"
    node_lines+="NodeName=atnode$k NodeHostname=atnode$k NodeAddr=$net.$((k + 1)) CPUs=$((cpus / nodes)) RealMemory=$((mem_mb / nodes)) Gres=gpu:2 State=UNKNOWN"$'\n'
  done
  { cat /etc/hosts; for k in $(seq "$nodes"); do echo "$net.$((k + 1)) atnode$k"; done; } >"$DIR/hosts"
  task_plugin=task/none  # the nodes share this host's cores: no node may pin its tasks to "its" core 0
  what="$nodes nodes atnode[1-$nodes] on $net.2-$((nodes + 1)), bridge ${tag}br, controller on $ctl_addr"
else
  ctl_addr=127.0.0.1
  node_lines="NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb Gres=gpu:2 State=UNKNOWN"$'\n'
  task_plugin=task/affinity
  what="node $host ($cpus CPUs, 2 GPUs)"
fi
cat > "$DIR/slurm.conf.new" <<CONF
# Written by scripts/slurm-cluster.sh: $what.
ClusterName=autotune
SlurmctldHost=$host($ctl_addr)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=$task_plugin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
ReturnToService=2
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.%n.log
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.%n.pid
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.log
MinJobAge=300
KillWait=5
SlurmdUser=root
SlurmUser=root
${node_lines}PartitionName=autotune Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
cat > "$DIR/gres.conf" <<CONF
AutoDetect=off
Name=gpu File=/dev/null
Name=gpu File=/dev/zero
CONF
mv "$DIR/slurm.conf.new" "$DIR/slurm.conf"
export SLURM_CONF="$DIR/slurm.conf"

# munge: Slurm's authentication. One per machine; started here only when none answers. Its socket is a path, which
# network namespaces do not separate: every node's slurmd uses the same munged.
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
if [ "$nodes" -gt 1 ]; then
  for k in $(seq "$nodes"); do  # each slurmd inside its node's namespaces: its own network, its own hostname
    pid_alive "$DIR/slurmd.atnode$k.pid" && continue
    # nsenter, not `ip netns exec`: that remounts /sys for the namespace, and slurmd needs this host's cgroup mount.
    # A mount namespace of its own too, where DIR/hosts stands in for /etc/hosts: the nodes' names resolve on the
    # nodes as a cluster's DNS would resolve them (torchrun, Gloo, MASTER_ADDR=atnode1); this host's file is untouched.
    nsenter --net="/run/netns/${tag}n$k" unshare --uts --mount --propagation private sh -c \
      "hostname atnode$k && mount --bind '$DIR/hosts' /etc/hosts && exec /usr/sbin/slurmd -f '$SLURM_CONF' -N atnode$k -c" ||
      fail "slurmd of atnode$k did not start: $(tail -n 3 "$DIR/log/slurmd.atnode$k.log" 2>/dev/null | tr '\n' ' ')"
  done
else
  pid_alive "$DIR/slurmd.$host.pid" || /usr/sbin/slurmd -f "$SLURM_CONF" -c ||
    fail "slurmd did not start: $(tail -n 3 "$DIR/log/slurmd.$host.log" 2>/dev/null | tr '\n' ' ')"
fi
ready=0
states=""
for _ in $(seq 150); do
  states=$(timeout 5 sinfo -h -N -o %T 2>/dev/null || true)
  ready=$(echo "$states" | grep -cE '^(idle|mixed|allocated)$' || true)
  if [ "$ready" -eq "$nodes" ]; then
    trap - EXIT
    say "up: $what, SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.2
done
fail "$(( nodes - ready )) of $nodes node(s) did not become idle within 30 s (states: $(echo $states)): $(tail -q -n 2 "$DIR"/log/slurmd*.log 2>/dev/null | tr '\n' ' ')"
