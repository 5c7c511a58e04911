#!/bin/bash
# GOOD: one `inferlint run` per test. inferlint starts the server as its child, waits for its
# ready line and /health, runs the load, checks the tripwires, and stops the server's whole
# process tree (VLLM::EngineCore included) before the next test starts: no pkill, no trap, no
# sleep, no timer. Each run folder holds boot.log, snapshots, the recording, results.json and
# report.html; compare them with `inferlint report --compare` and `inferlint check-log`.
set -euo pipefail

MODEL=${MODEL:-Qwen/Qwen3-8B}
OUT=${OUT:-runs/$(date +%Y%m%d-%H%M%S)}

for c in 8 32 64; do
    inferlint run -o "$OUT/c$c" \
        --serve "vllm serve $MODEL --port 8000" \
        -- vllm bench serve --model "$MODEL" --max-concurrency "$c" --num-prompts $((c * 10)) \
        || echo "c=$c: a tripwire failed (exit $?); see $OUT/c$c/report.html"
done
inferlint check-log "$OUT"/c*/boot.log
