# shellcheck shell=bash
# A two-node Slurm cluster on one host, for the multi-node lanes (docs/design and
# ../shared/spec/multi-node.md, "Two nodes on one host"). Sourced, not run:
#
#   source .ci/slurm-cluster.sh
#   cluster_isolate "$@"      # re-runs the calling script in its own PID, mount, network and UTS
#                             # namespaces (returns inside them; the outside waits and exits)
#   cluster_start             # munged, slurmctld ("ctl", 10.77.0.1) and slurmd n1/n2
#   node_exec n2 CMD...       # runs CMD on a node directly: its network and hostname, no Slurm
#   cluster_stop              # jobs cancelled, daemons stopped by pid, namespaces removed
#
# Why namespaces and not `slurmd -N`: Debian's Slurm 22.05 is built without
# --enable-multiple-slurmd, so two slurmd on one host need a hostname and an address each. Each
# node is a network namespace (a veth pair on the bridge cl-br, 10.77.0.0/24) and a UTS namespace
# (hostname n1 / n2); the controller stays in the lane's own network namespace on the bridge.
# The files (munge socket, spool, /dev/shm) are shared: two nodes with one disk.
#
# The lane runs in namespaces of its own (cluster_isolate): the bridge, the veths and the node
# namespaces live in its network namespace, /etc/hosts and /run/netns are bind mounts in its mount
# namespace, and every process is in its PID namespace. When the lane ends, however it ends, the
# kernel removes all of it: nothing is left on the host, and nothing on the host is touched.
#
# Environment:
#   CLUSTER_PORT     slurmctld's port; each slurmd listens on the next one (default 16917)
#   CLUSTER_NET      the bridge's /24 prefix (default 10.77.0)
#   CLUSTER_KEEP=1   keep the temporary folder (it is kept anyway when the stop failed)
# Sets: CL_DIR (the temporary folder), SLURM_CONF, CL_SLURMD_PID[n1|n2], CL_CTLD_PID.

source "$(dirname "${BASH_SOURCE[0]}")/slurm-jobs.sh"

CL_PORT=${CLUSTER_PORT:-16917}
CL_NET=${CLUSTER_NET:-10.77.0}
CL_NODES=(n1 n2)
CL_DIR=""
CL_CTLD_PID=""
declare -A CL_SLURMD_PID=()
declare -A CL_ADDR=([ctl]="$CL_NET.1" [n1]="$CL_NET.2" [n2]="$CL_NET.3")

cl_say() { printf '%s slurm-cluster: %s\n' "$(date +%H:%M:%S)" "$*"; }

# Waits in the background so that a signal to the lane is handled at once.
cl_nap() {
    sleep "$1" &
    wait "$!"
}

# Re-runs the calling script (with its arguments) as the first process of new PID, mount,
# network and UTS namespaces and exits with its status; inside them (CLUSTER_IN_NAMESPACE=1) it
# returns at once. unshare hands SIGTERM/SIGINT on to the script inside (--kill-child).
cluster_isolate() {
    [[ -n ${CLUSTER_IN_NAMESPACE:-} ]] && return 0
    local rc=0
    CLUSTER_IN_NAMESPACE=1 unshare --pid --fork --mount-proc --net --uts --kill-child=TERM \
        "$BASH" "$0" "$@" || rc=$?
    exit "$rc"
}

cl_write_config() {
    local cpus mem n
    cpus=$(nproc)
    mem=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.4 }' /proc/meminfo)
    cat > "$CL_DIR/slurm.conf" << EOF
ClusterName=inferlint-two
SlurmctldHost=ctl(${CL_ADDR[ctl]})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$CL_DIR/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$CL_DIR/state
SlurmdSpoolDir=$CL_DIR/spool/%n
SlurmctldPidFile=$CL_DIR/slurmctld.pid
SlurmdPidFile=$CL_DIR/slurmd-%n.pid
SlurmctldLogFile=$CL_DIR/slurmctld.log
SlurmdLogFile=$CL_DIR/slurmd-%n.log
SlurmctldPort=$CL_PORT
SlurmdPort=$((CL_PORT + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
KillWait=30
MinJobAge=600
SlurmctldDebug=info
SlurmdDebug=info
EOF
    # Both nodes claim the host's cores: the "nodes" share them (no cgroup limits, TaskPlugin none).
    for n in "${CL_NODES[@]}"; do
        echo "NodeName=$n NodeAddr=${CL_ADDR[$n]} CPUs=$cpus RealMemory=$mem State=UNKNOWN" >> "$CL_DIR/slurm.conf"
    done
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >> "$CL_DIR/slurm.conf"
}

# The bridge in the lane's network namespace, one namespace per node with a veth on it, names in
# a private /etc/hosts (Slurm and vLLM resolve n1, n2, ctl).
cl_network() {
    # ip netns keeps its handles under /run/netns: a tmpfs there, in this mount namespace only.
    mkdir -p /run/netns
    mount -t tmpfs -o size=1m cl-netns /run/netns
    {
        echo "127.0.0.1 localhost"
        echo "${CL_ADDR[ctl]} ctl"
        for n in "${CL_NODES[@]}"; do echo "${CL_ADDR[$n]} $n"; done
    } > "$CL_DIR/hosts"
    mount --bind "$CL_DIR/hosts" /etc/hosts
    hostname ctl
    ip link set lo up
    ip link add cl-br type bridge
    ip addr add "${CL_ADDR[ctl]}/24" dev cl-br
    ip link set cl-br up
    local n
    for n in "${CL_NODES[@]}"; do
        ip netns add "cl-$n"
        ip link add "cl-$n-h" type veth peer name "cl-$n-n"
        ip link set "cl-$n-h" master cl-br up
        ip link set "cl-$n-n" netns "cl-$n"
        ip -n "cl-$n" link set lo up
        ip -n "cl-$n" link set "cl-$n-n" name eth0
        ip -n "cl-$n" addr add "${CL_ADDR[$n]}/24" dev eth0
        ip -n "cl-$n" link set eth0 up
        ip -n "cl-$n" route add default via "${CL_ADDR[ctl]}"
    done
}

cl_munge() {
    mungekey -c -k "$CL_DIR/munge/munge.key" > /dev/null
    chmod 400 "$CL_DIR/munge/munge.key"
    # munged refuses a socket folder that others cannot traverse (700).
    chmod 711 "$CL_DIR/munge"
    munged --key-file="$CL_DIR/munge/munge.key" --socket="$CL_DIR/munge/munge.socket" \
        --pid-file="$CL_DIR/munge/munged.pid" --log-file="$CL_DIR/munge/munged.log" \
        --seed-file="$CL_DIR/munge/munged.seed"
    if ! munge -S "$CL_DIR/munge/munge.socket" -n | unmunge -S "$CL_DIR/munge/munge.socket" > /dev/null; then
        cl_say "munge does not work; its log:"
        cat "$CL_DIR/munge/munged.log" >&2 || true
        return 2
    fi
}

# Starts everything; returns 2 when the nodes do not become idle within a minute.
cluster_start() {
    [[ -n ${CLUSTER_IN_NAMESPACE:-} ]] || { cl_say "cluster_start needs cluster_isolate first"; return 2; }
    CL_DIR=$(mktemp -d /tmp/inferlint-2node.XXXXXX)
    chmod 755 "$CL_DIR"
    mkdir -p "$CL_DIR/state" "$CL_DIR/spool" "$CL_DIR/munge" "$CL_DIR/out"
    cl_network || return 2
    cl_write_config
    export SLURM_CONF=$CL_DIR/slurm.conf
    cl_munge || return 2
    slurmctld -D -c -f "$SLURM_CONF" > "$CL_DIR/slurmctld.out" 2>&1 &
    CL_CTLD_PID=$!
    local n
    for n in "${CL_NODES[@]}"; do
        mkdir -p "$CL_DIR/spool/$n"
        # The node's hostname is set in a UTS namespace of its own; slurmd finds its NodeName by it.
        # nsenter, not `ip netns exec`: that one mounts a fresh /sys without /sys/fs/cgroup, and
        # slurmd 22.05 will not start without it ("Unable to initialize cgroup plugin").
        nsenter --no-fork --net=/run/netns/"cl-$n" unshare --uts "$BASH" -c 'hostname "$1"; exec slurmd -D -f "$2"' \
            slurmd-"$n" "$n" "$SLURM_CONF" > "$CL_DIR/slurmd-$n.out" 2>&1 &
        CL_SLURMD_PID[$n]=$!
    done
    cl_say "cluster in $CL_DIR: slurmctld pid $CL_CTLD_PID (ctl ${CL_ADDR[ctl]}:$CL_PORT), slurmd n1 pid ${CL_SLURMD_PID[n1]} (${CL_ADDR[n1]}), n2 pid ${CL_SLURMD_PID[n2]} (${CL_ADDR[n2]})"
    local idle=0
    for _ in $(seq 60); do
        idle=$(sinfo -h -N -o '%N %T' 2> /dev/null | grep -c ' idle$' || true)
        ((idle == ${#CL_NODES[@]})) && break
        kill -0 "$CL_CTLD_PID" 2> /dev/null || break
        cl_nap 1
    done
    if ((idle != ${#CL_NODES[@]})); then
        cl_say "the nodes did not become idle ($(sinfo -h -N -o '%N=%T' 2> /dev/null | tr '\n' ' ')); the daemons' output:"
        tail -n 20 "$CL_DIR"/*.out "$CL_DIR"/*.log >&2 || true
        return 2
    fi
    cl_say "nodes n1 and n2 are idle"
}

# node_exec NODE CMD...: CMD in the node's network and UTS namespaces (those of its slurmd), as a
# step of Slurm would see them, but started directly. `node_exec n1 CMD &` leaves CMD's own pid
# in $!: in the background (a subshell) it execs nsenter, which execs CMD (--no-fork; nsenter
# forks by default, and a signal to its pid would miss CMD).
node_exec() {
    local n=$1
    shift
    if [[ $BASHPID != "$$" ]]; then
        exec nsenter --no-fork -t "${CL_SLURMD_PID[$n]}" -n -u -- "$@"
    fi
    nsenter --no-fork -t "${CL_SLURMD_PID[$n]}" -n -u -- "$@"
}

# Cancels every job, then stops the daemons and munged by pid and removes the node namespaces.
# Returns 1 when one of them did not stop.
cluster_stop() {
    local rc=0 pid jobs n
    if [[ -n $CL_CTLD_PID ]]; then
        jobs=$(squeue -h -o %i 2> /dev/null)
        if [[ -n $jobs ]]; then
            cl_say "cancelling jobs still there: $(echo $jobs)"
            # shellcheck disable=SC2086
            scancel $jobs
            for _ in $(seq 45); do
                [[ -z $(squeue -h -o %i 2> /dev/null) ]] && break
                cl_nap 1
            done
        fi
    fi
    for pid in "${CL_SLURMD_PID[@]}" "$CL_CTLD_PID"; do
        [[ -n $pid ]] && kill "$pid" 2> /dev/null
    done
    for pid in "${CL_SLURMD_PID[@]}" "$CL_CTLD_PID"; do
        [[ -n $pid ]] && wait "$pid" 2> /dev/null
    done
    if [[ -n $CL_DIR && -f $CL_DIR/munge/munged.pid ]]; then
        pid=$(cat "$CL_DIR/munge/munged.pid")
        kill "$pid" 2> /dev/null
        for _ in $(seq 50); do
            kill -0 "$pid" 2> /dev/null || break
            cl_nap 0.1
        done
        kill -0 "$pid" 2> /dev/null && cl_say "munged (pid $pid) did not stop" && rc=1
    fi
    for pid in "${CL_SLURMD_PID[@]}" "$CL_CTLD_PID"; do
        if [[ -n $pid ]] && kill -0 "$pid" 2> /dev/null; then
            cl_say "pid $pid did not stop" && rc=1
        fi
    done
    for n in "${CL_NODES[@]}"; do
        ip netns del "cl-$n" 2> /dev/null
    done
    [[ -n $CL_CTLD_PID ]] && cl_say "cluster stopped"
    if [[ -n $CL_DIR ]]; then
        if [[ $rc == 0 && ${CLUSTER_KEEP:-0} != 1 ]]; then
            rm -rf "$CL_DIR"
        else
            cl_say "kept $CL_DIR for a look"
        fi
    fi
    return "$rc"
}
