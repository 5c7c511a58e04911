#!/bin/bash
# BAD (T3): the cleanup kills its own shell.
# The one-liner below runs as `bash -lc '<the whole string>'`, so its own command line contains
# "vllm serve" and pkill -f kills it together with the server: exit 143, nothing after runs.
# `inferlint lint-script` reports T3 (and T2: a name never matches VLLM::EngineCore).
set -euo pipefail

MODEL=Qwen/Qwen3-8B

bash -lc "vllm serve $MODEL --port 8000 > server.log 2>&1 &
          until curl -sf localhost:8000/health > /dev/null; do sleep 2; done
          vllm bench serve --model $MODEL --max-concurrency 32 --num-prompts 320
          pkill -f 'vllm serve'"
echo "benchmark done"
