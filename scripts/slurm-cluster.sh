#!/usr/bin/env bash
# A real Slurm on this machine with two fake GPUs per node, for the tests and for trying autotune's Slurm executors on
# any Debian machine (docs/scale-out.md):
#   scripts/slurm-cluster.sh start [--nodes N] [DIR]
#                                          installs Debian's slurmctld, slurmd, slurm-client and munge when missing;
#                                          writes DIR/slurm.conf and DIR/gres.conf; starts this cluster's own munged
#                                          (its key in DIR/munge, its socket named in slurm.conf's AuthInfo),
#                                          slurmctld and a slurmd per node; waits until every node is idle.
#                                          One node (the default): this host, on 127.0.0.1. N ≥ 2 nodes: each slurmd
#                                          in its own network and UTS namespace (hostname atnode<K>, an address on a
#                                          bridge in 198.18.0.0/15, the benchmarking range — never a real network),
#                                          slurmctld in this namespace on the bridge's address; this host's cores and
#                                          memory split between the nodes
#   scripts/slurm-cluster.sh stop [DIR]    cancels the cluster's jobs, stops the daemons this script started (by the
#                                          pids in their pid files), the job steps and tasks they left, the processes in
#                                          its namespaces, its munged, and removes the namespaces, veths, bridge and
#                                          munge socket folder it created (DIR/created lists them); a failed start, and
#                                          a start that finds an earlier start's remains, clean up the same way
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

# What a start created, one line each ("netns NAME", "link NAME", "dir PATH"), removed by stop in reverse order.
created() { echo "$1 $2" >>"$DIR/created"; }

# This cluster's munged: its key, seed, log and pid file in DIR/munge (0700), its socket in a folder of its own under
# /run (munged wants every folder above its socket searchable by all, which a home folder is not, and a socket path
# has at most 107 bytes), named after DIR.
MUNGE_DIR="$DIR/munge"
MUNGE_SOCK_DIR="/run/autotune-munge/$(printf '%s' "$DIR" | sha1sum | cut -c1-12)"
MUNGE_SOCK="$MUNGE_SOCK_DIR/munge.socket"

# What this cluster's slurmd left behind: its slurmstepd processes (detached from slurmd, their parent is init; each
# keeps slurmd's working folder, DIR/log, which names the cluster) and every task under them.
cluster_pids() {
  local marked=() p
  for p in $(pgrep -x slurmstepd); do
    case "$(readlink "/proc/$p/cwd" 2>/dev/null)" in "$DIR"/*) marked+=("$p") ;; esac
  done
  [ ${#marked[@]} -gt 0 ] || return 0
  # the descendants of the marked processes, by each process's parent pid
  ps -e -o pid=,ppid= | awk -v roots="${marked[*]}" '
    BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
    { parent[$1] = $2; order[NR] = $1 }
    END { do { grew = 0; for (i = 1; i <= NR; i++) { p = order[i]; if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 } } } while (grew)
          for (p in keep) print p }'
}

stop_cluster() {
  # The jobs first, while the daemons still answer: their steps end as Slurm ends them (a killed test leaves its jobs).
  if pid_alive "$DIR/slurmctld.pid" && [ -f "$DIR/slurm.conf" ]; then
    local jobs
    jobs=$(SLURM_CONF="$DIR/slurm.conf" timeout 10 squeue -h -o %A 2>/dev/null | tr '\n' ' ' || true)
    if [ -n "${jobs// /}" ]; then
      # shellcheck disable=SC2086
      SLURM_CONF="$DIR/slurm.conf" timeout 10 scancel $jobs 2>/dev/null || true
      for _ in $(seq 50); do
        [ -z "$(SLURM_CONF="$DIR/slurm.conf" timeout 5 squeue -h -o %A 2>/dev/null)" ] && break
        sleep 0.2
      done
    fi
  fi
  for f in "$DIR"/slurmd*.pid; do [ -e "$f" ] && stop_pidfile "$f"; done
  stop_pidfile "$DIR/slurmctld.pid"
  # what the daemons left: job steps and their tasks, here and in the namespaces
  local left
  left=$(cluster_pids | tr '\n' ' ')
  # shellcheck disable=SC2086
  [ -n "${left// /}" ] && kill -9 $left 2>/dev/null || true
  if [ -f "$DIR/created" ]; then
    while read -r kind name; do
      [ "$kind" = netns ] || continue
      for pid in $(ip netns pids "$name" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    done <"$DIR/created"
  fi
  stop_pidfile "$MUNGE_DIR/munged.pid"
  if [ -f "$DIR/created" ]; then
    tac "$DIR/created" | while read -r kind name; do
      case "$kind" in
        link) ip link del "$name" 2>/dev/null || true ;;
        netns) ip netns del "$name" 2>/dev/null || true ;;
        dir) rm -rf "$name" ;;
      esac
    done
    rm -f "$DIR/created"
  fi
  rm -f "$DIR/munged.started"  # an earlier version's marker: that munged was the machine's, and is left alone
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
# What an earlier start in DIR left (a lost shell, a killed test) goes first: a start is always a fresh cluster. A start
# that fails or is stopped from here on takes away what it created (stop_cluster reads DIR/created).
stop_cluster
trap 'stop_cluster' EXIT
if [ "$nodes" -gt 1 ]; then
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
AuthInfo=socket=$MUNGE_SOCK
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

# munge: Slurm's authentication. Each cluster runs its own munged with its own key, and names its socket in
# slurm.conf (AuthInfo, read by every daemon and command of this cluster): stopping one cluster never touches
# another's munged, nor one the machine runs for itself. The nodes' namespaces share this host's /run, so every
# node's slurmd reaches it.
munge_ok() { munge -S "$MUNGE_SOCK" -n </dev/null 2>/dev/null | unmunge -S "$MUNGE_SOCK" >/dev/null 2>&1; }
mkdir -p "$MUNGE_DIR" "$MUNGE_SOCK_DIR"
chmod 0700 "$MUNGE_DIR"
chmod 0755 /run/autotune-munge "$MUNGE_SOCK_DIR"
created dir "$MUNGE_SOCK_DIR"
if [ ! -s "$MUNGE_DIR/munge.key" ]; then
  (umask 077 && dd if=/dev/urandom of="$MUNGE_DIR/munge.key" bs=1024 count=1 status=none) || fail "cannot write $MUNGE_DIR/munge.key"
fi
why=$(/usr/sbin/munged --socket="$MUNGE_SOCK" --key-file="$MUNGE_DIR/munge.key" --pid-file="$MUNGE_DIR/munged.pid" \
        --log-file="$MUNGE_DIR/munged.log" --seed-file="$MUNGE_DIR/munged.seed" 2>&1) ||
  fail "munged did not start: ${why:-$(tail -n 2 "$MUNGE_DIR/munged.log" 2>/dev/null | tr '\n' ' ')}"
for _ in $(seq 50); do munge_ok && break; sleep 0.1; done
munge_ok || fail "munged does not answer on $MUNGE_SOCK: $(tail -n 2 "$MUNGE_DIR/munged.log" 2>/dev/null | tr '\n' ' ')"

/usr/sbin/slurmctld -f "$SLURM_CONF" -c ||
  fail "slurmctld did not start: $(tail -n 3 "$DIR/log/slurmctld.log" 2>/dev/null | tr '\n' ' ')"
if [ "$nodes" -gt 1 ]; then
  for k in $(seq "$nodes"); do  # each slurmd inside its node's namespaces: its own network, its own hostname
    # nsenter, not `ip netns exec`: that remounts /sys for the namespace, and slurmd needs this host's cgroup mount.
    # A mount namespace of its own too, where DIR/hosts stands in for /etc/hosts: the nodes' names resolve on the
    # nodes as a cluster's DNS would resolve them (torchrun, Gloo, MASTER_ADDR=atnode1); this host's file is untouched.
    nsenter --net="/run/netns/${tag}n$k" unshare --uts --mount --propagation private sh -c \
      "hostname atnode$k && mount --bind '$DIR/hosts' /etc/hosts && exec /usr/sbin/slurmd -f '$SLURM_CONF' -N atnode$k -c" ||
      fail "slurmd of atnode$k did not start: $(tail -n 3 "$DIR/log/slurmd.atnode$k.log" 2>/dev/null | tr '\n' ' ')"
  done
else
  /usr/sbin/slurmd -f "$SLURM_CONF" -c ||
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
