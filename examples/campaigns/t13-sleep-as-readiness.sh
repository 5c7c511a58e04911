#!/bin/bash
# BAD (T13, warning): a fixed sleep is the only wait for the server.
# A cold start (compiling, downloading) takes longer than 120 s and the load hits nothing; a
# server left over on the port answers instead of ours.
set -euo pipefail

setsid vllm serve Qwen/Qwen3-8B --port 8000 > server.log 2>&1 &
SERVER_PGID=$!
trap 'kill -- -$SERVER_PGID' EXIT
sleep 120
vllm bench serve --model Qwen/Qwen3-8B --max-concurrency 32 --num-prompts 320
