#!/usr/bin/env bash
# The `--serve` command of the Ray tests (tests/run_ray.rs): a real two-node Ray cluster on this
# host — a head and a worker node, each a `ray start` with ports and a temp dir of its own —
# then the Ray server program (ray_server.py) as the cluster's driver, in this process
# (exec), so that its death is the server's death.
#
# Environment (set by the test):
#   RAY_VENV       the venv holding Ray (bin/ray, bin/python)
#   RAY_PORT_BASE  the first of 40 free ports this cluster may use
#   RAY_TMP        a short folder for the nodes' temp dirs (Ray's socket paths must stay short)
#   RAY_MODE       block (default): `ray start --block` in the background, as Slurm recipes do;
#                  daemon: `ray start` without --block, which daemonizes and returns
#   RAY_NO_SERVER  when set, only the cluster: the script waits instead of starting the server
#   RAY_LIGHT      when set, a head alone and no dashboard (the tests' bystander: quick to start)
# Usage: cluster.sh --port N   (the server's port on 127.0.0.1, where `inferlint run` reads it)
set -euo pipefail
[[ ${1:-} == --port && -n ${2:-} ]] || { echo "usage: $0 --port N" >&2; exit 2; }
http_port=$2
ray=$RAY_VENV/bin/ray
b=$RAY_PORT_BASE
mode=${RAY_MODE:-block}
export RAY_USAGE_STATS_ENABLED=0

# One node's ports: off is its offset in the base's range of 40.
node_args() {
    local off=$1
    echo --node-ip-address=127.0.0.1 --num-cpus=2 --object-store-memory=$((100 * 1024 * 1024)) \
        --node-manager-port=$((b + off)) --object-manager-port=$((b + off + 1)) \
        --metrics-export-port=$((b + off + 2)) --dashboard-agent-listen-port=$((b + off + 3)) \
        --dashboard-agent-grpc-port=$((b + off + 4)) --runtime-env-agent-port=$((b + off + 5)) \
        --min-worker-port=$((b + off + 10)) --max-worker-port=$((b + off + 19))
}

dashboard=true
[[ -n ${RAY_LIGHT:-} ]] && dashboard=false
block=()
[[ $mode == block ]] && block=(--block)

# shellcheck disable=SC2046
"$ray" start --head --port=$((b + 38)) --dashboard-port=$((b + 39)) --include-dashboard=$dashboard \
    --ray-client-server-port=$((b + 37)) --temp-dir="$RAY_TMP/head" --resources='{"head": 1}' \
    $(node_args 0) "${block[@]}" &
head=$!
if [[ $mode != block ]]; then
    wait "$head"
fi
if [[ -n ${RAY_LIGHT:-} ]]; then
    wait
    exit
fi
# The worker node joins once the head's raylet is up (its socket exists): a worker node waits
# only 40 s for the head to register with the GCS (RAY_NUM_REDIS_GET_RETRIES 20 × 2 s), too little
# on a loaded 2-core machine, so it is also given longer.
for _ in $(seq 1 1200); do
    [[ -S $RAY_TMP/head/session_latest/sockets/raylet ]] && break
    sleep 0.1
done
# shellcheck disable=SC2046
RAY_NUM_REDIS_GET_RETRIES=120 "$ray" start --address=127.0.0.1:$((b + 38)) --temp-dir="$RAY_TMP/worker" \
    --resources='{"worker": 1}' $(node_args 20) "${block[@]}" &
worker=$!
if [[ $mode != block ]]; then
    wait "$worker"
fi
if [[ -n ${RAY_NO_SERVER:-} ]]; then
    sleep infinity
fi
exec "$RAY_VENV/bin/python" "$(dirname "$0")/ray_server.py" \
    --address=127.0.0.1:$((b + 38)) --port="$http_port"
