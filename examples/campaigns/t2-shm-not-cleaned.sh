#!/bin/bash
#SBATCH --nodes=2
#SBATCH --gres=gpu:8
# WARN (T2): a data-parallel vLLM across two nodes, and nothing removes /dev/shm/vllm-*: a run
# that ends badly (scancel, the time limit, a crash) leaves its shared-memory segments on the
# node, and the next job on it can hang at "Waiting for READY message from DP Coordinator".
# Fix: `trap 'srun --ntasks-per-node=1 rm -f /dev/shm/vllm-*' EXIT`.
set -euo pipefail
head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
dp="--data-parallel-size 4 --data-parallel-size-local 2 --data-parallel-address $head --data-parallel-rpc-port 13345"
srun --nodes=1 --ntasks=1 --relative=1 vllm serve Qwen/Qwen3-30B-A3B $dp --headless --data-parallel-start-rank 2 > node1.log 2>&1 &
inferlint run --serve "vllm serve Qwen/Qwen3-30B-A3B $dp" \
    -- vllm bench serve --model Qwen/Qwen3-30B-A3B --max-concurrency 64 --num-prompts 640
