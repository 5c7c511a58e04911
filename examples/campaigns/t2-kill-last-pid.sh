#!/bin/bash
# BAD (T2): killing `$!` stops only the process started last.
# Here that is `tee`, the end of the pipeline, not the server; with `vllm serve … &` alone it
# would be the API server only, and its VLLM::EngineCore outlives a kill -9 of it.
set -euo pipefail

vllm serve Qwen/Qwen3-8B --port 8000 2>&1 | tee server.log &
trap 'kill $!' EXIT

until curl -sf localhost:8000/health > /dev/null; do
    kill -0 %1 || exit 1
    sleep 2
done
vllm bench serve --model Qwen/Qwen3-8B --max-concurrency 32 --num-prompts 320
