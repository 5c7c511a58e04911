#!/bin/bash
# BAD (T13): a stale waiter adopts the next campaign's server.
# If this script is killed while wait_ready polls, bash runs the EXIT trap only when the loop's
# current command ends; the loop may first see the NEXT campaign's server on port 8000, report
# it ready, and the deferred cleanup then kills that server.
set -euo pipefail

cleanup() {
    kill -- -"$SERVER_PGID" 2>/dev/null || true
}
trap cleanup EXIT

wait_ready() {
    until curl -sf http://localhost:8000/health > /dev/null; do
        sleep 2
    done
}

setsid vllm serve Qwen/Qwen3-8B --port 8000 > server.log 2>&1 &
SERVER_PGID=$!
wait_ready
vllm bench serve --model Qwen/Qwen3-8B --max-concurrency 32 --num-prompts 320
