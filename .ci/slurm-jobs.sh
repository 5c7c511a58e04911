# shellcheck shell=bash
# A Slurm job's state, for the Slurm lanes (slurm-test.sh, and slurm-two-node.sh through
# slurm-cluster.sh). Sourced, not run.
#
# `scontrol show job`'s JobState is a base state or, while a flag is set, the flag's name over it:
# SIGNALING (a --signal being delivered), COMPLETING, CONFIGURING, STAGE_OUT, RESIZING, REQUEUE*,
# STOPPED. Those are transient: a job whose state is one of them has not ended, even when it has
# left squeue (a job warned by --signal=B:TERM showed SIGNALING for seconds after its steps were
# gone). A job has ended only when its state is one of the terminal base states below.
SJ_TERMINAL='COMPLETED|CANCELLED|FAILED|TIMEOUT|NODE_FAIL|PREEMPTED|BOOT_FAIL|DEADLINE|OUT_OF_MEMORY|REVOKED'

sj_nap() {
    sleep "$1" &
    wait "$!"
}

# JobState of a job (for an array: of every task, one per line).
job_states() {
    scontrol show job -o "$1" 2> /dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'
}

job_field() {
    scontrol show job -o "$1" 2> /dev/null | sed -n "s/.* $2=\\([^ ]*\\).*/\\1/p" | head -n 1
}

# Whether every state given (one per line) is terminal (false for none: Slurm does not know the job).
all_terminal() {
    [[ -n $1 ]] && ! grep -qvxE "$SJ_TERMINAL" <<< "$1"
}

# Waits up to LIMIT seconds until every task of the job has ended; leaves the states in STATES.
STATES=""
wait_job_end() {
    local job=$1 limit=$2
    for _ in $(seq "$limit"); do
        STATES=$(job_states "$job")
        all_terminal "$STATES" && return 0
        sj_nap 1
    done
    return 1
}
