#!/bin/bash
# BAD (T10, warning): whole-second timestamps.
# `date +%s` truncates to the second, so the duration is off by up to ±1 s at each end (±3.5 %
# on a 29 s run) and every tokens/s figure made from it inherits the error.
set -euo pipefail

start=$(date +%s)
vllm bench serve --model Qwen/Qwen3-8B --base-url http://127.0.0.1:8000 --num-prompts 320
end=$(date +%s)
echo "elapsed: $((end - start)) s"
