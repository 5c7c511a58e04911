#!/bin/bash
# BAD (T2): the bracket trick fixes T3 but not T2.
# `pkill -f "vllm[ ]serve"` no longer matches its own shell, but it still finds the server by
# name: vLLM's engine runs as `VLLM::EngineCore`, which the pattern misses, so the engine keeps
# the GPU after the API server is gone and the next test starts on a busy card.
set -euo pipefail

for c in 8 32; do
    vllm serve Qwen/Qwen3-8B --port 8000 > "server-$c.log" 2>&1 &
    server=$!
    until curl -sf localhost:8000/health > /dev/null; do
        kill -0 "$server" || exit 1
        sleep 2
    done
    vllm bench serve --model Qwen/Qwen3-8B --max-concurrency "$c" --num-prompts 320
    pkill -f "vllm[ ]serve"
done
