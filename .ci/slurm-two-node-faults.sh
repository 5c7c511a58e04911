# The faults of the two-node lane's `sim` case, sourced by .ci/slurm-two-node.sh (which defines
# W, INFERLINT, API_PORT, CL_NODES, node_pids, wait_health, now, say, fail and timing): each a
# job of its own across both nodes, ended mid-load by one fault.
# shellcheck shell=bash

# The job script of a fault case: the `sim` case's run with a load that lasts (a sleep named
# two-node-load), so that the fault lands mid-load. The script outlives the run by 30 s, so what
# is left right after the run's end is what inferlint left, not what Slurm's own cleanup of the
# job ended. $1: extra #SBATCH lines.
write_fault_job() {
    printf '#!/bin/bash\nexec -a two-node-load sleep 300\n' > "$W/load.sh"
    chmod +x "$W/load.sh"
    cat > "$W/fault.sbatch" << EOF
#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node=1
$1
"$INFERLINT" run -o "$W/fault-run" --stop-grace 5 \\
    --serve "$INFERLINT sim serve m --host 0.0.0.0 --port $API_PORT" \\
    --serve-node 1 "$INFERLINT sim serve m --host 0.0.0.0 --port $((API_PORT + 1)) --tensor-parallel-size 2" \\
    -- "$W/load.sh"
echo "run exit \$?"
sleep 30
EOF
}

# The run's processes alive on either node, as "node:pid cmdline": those carrying a run marker,
# the run's and the agents' inferlint, the simulated servers and the load.
run_left() {
    local n p cmd
    for n in "${CL_NODES[@]}"; do
        for p in $(node_pids "$n"); do
            cmd=$(tr '\0' ' ' < "/proc/$p/cmdline" 2> /dev/null) || continue
            if grep -qz '^INFERLINT_RUN_ID=' "/proc/$p/environ" 2> /dev/null \
                || [[ $cmd =~ (two-node-load|sim\ serve|inferlint\ (run|node)\ ) ]]; then
                printf '%s:%s %s\n' "$n" "$p" "${cmd:0:100}"
            fi
        done
    done
}

# The pid on node $1 whose command line starts with "$INFERLINT $2", waiting up to 10 s for it
# (srun's step launch on a loaded machine can take that long).
find_on_node() {
    local p
    for _ in $(seq 50); do
        for p in $(node_pids "$1"); do
            if [[ $(tr '\0' ' ' < "/proc/$p/cmdline" 2> /dev/null) == "$INFERLINT $2"* ]]; then
                echo "$p"
                return 0
            fi
        done
        cl_nap 0.2
    done
    return 1
}

# Waits up to $2 s for the line $1 in the fault job's output; 1 if it never came.
wait_output() {
    for _ in $(seq $(($2 * 5))); do
        grep -qs -- "$1" "$W"/fault-*.out && return 0
        cl_nap 0.2
    done
    return 1
}

# Waits up to $1 s until nothing of the run is left on either node and prints how long that
# took; else prints what is left and returns 1.
wait_nothing_left() {
    local t0 left
    t0=$(now)
    for _ in $(seq $(($1 * 5))); do
        left=$(run_left)
        if [[ -z $left ]]; then
            awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'
            return 0
        fi
        cl_nap 0.2
    done
    echo "$left"
    return 1
}

# One fault mid-load across both nodes: `scancel` of the job, the job's time limit, SIGKILL of the
# head's inferlint (node 2's agent then loses its stream), SIGKILL of node 2's agent. Each leaves
# nothing of the run on either node; the agent's death fails T7 named by its node.
fault_case() {
    local fault=$1 job t1 pid took extra="" failures_before=$FAILURES
    [[ $fault == time-limit ]] && extra="#SBATCH --time=1"
    rm -rf "$W/fault-run" "$W"/fault-*.out
    write_fault_job "$extra"
    job=$(sbatch --parsable -o "$W/fault-$fault-%j.out" "$W/fault.sbatch")
    if ! wait_health "$job"; then
        fail "$fault: the head did not serve (job $job)"
        scancel "$job"
        return
    fi
    wait_output "== load:" 30 || fail "$fault: the load did not start: $(tail -5 "$W"/fault-*.out)"
    cl_nap 1
    t1=$(now)
    case $fault in
        scancel) scancel "$job" ;;
        time-limit) ;;
        kill-head)
            pid=$(find_on_node n1 "run -o $W/fault-run") || fail "kill-head: no inferlint run on n1"
            [[ -n $pid ]] && kill -KILL "$pid"
            ;;
        kill-agent)
            pid=$(find_on_node n2 "node ") || fail "kill-agent: no inferlint node on n2"
            [[ -n $pid ]] && kill -KILL "$pid"
            ;;
    esac
    if [[ $fault == kill-* ]]; then
        # What inferlint left, while the job (its script's sleep) still runs.
        wait_output "run exit" 60 || fail "$fault: the run did not end: $(tail -5 "$W"/fault-*.out)"
        if took=$(wait_nothing_left 20); then
            say "$fault: nothing of the run left on n1 or n2 ${took} s after the run's end, the job still running"
            TIMINGS+=("$(printf '%-34s %7s s' "$fault: run's end to nothing left" "$took")")
        else
            fail "$fault: left 20 s after the run's end, the job still running: $(echo "$took")"
        fi
        [[ $(squeue -h -j "$job" -o %T) == RUNNING ]] || fail "$fault: the job ended before the check"
        scancel "$job"
    fi
    for _ in $(seq 150); do
        [[ -z $(squeue -h -j "$job" 2> /dev/null) ]] && break
        cl_nap 1
    done
    timing "$fault: fault to the job's end" "$t1" "$(now)"
    [[ -z $(squeue -h -j "$job" 2> /dev/null) ]] || fail "$fault: job $job still there 150 s after the fault"
    took=$(wait_nothing_left 10) || fail "$fault: left after the job's end: $(echo "$took")"
    case $fault in
        kill-agent)
            grep -q "run exit 1" "$W"/fault-*.out || fail "kill-agent: the run did not exit 1: $(tail -5 "$W"/fault-*.out)"
            grep -q '"node": *1' "$W/fault-run/run.json" || fail "kill-agent: run.json names no death on node 1"
            grep -q 'node 1: ' "$W/fault-run/results.json" \
                || fail "kill-agent: T7 does not name node 1: $(grep -o '"T7".\{0,300\}' "$W/fault-run/results.json")"
            ;;
        scancel | time-limit)
            [[ -s $W/fault-run/run.json ]] || fail "$fault: no run.json"
            ;;
    esac
    local n
    for n in "${CL_NODES[@]}"; do
        kill -0 "${BYSTANDER[$n]}" 2> /dev/null || fail "$fault: node $n's bystander VLLM::EngineCore_DP0 died"
    done
    ((FAILURES > failures_before)) && tail -n 40 "$W"/fault-*.out >&2
    say "$fault: job $job, $(grep -h 'run exit' "$W"/fault-*.out || echo 'no run exit line (Slurm ended the script)')"
}
