#!/bin/bash
#SBATCH --nodes=2
#SBATCH --gres=gpu:8
# BAD (T2): `ray start` without --block under srun daemonizes its gcs_server and raylet and
# returns, so the step ends at once: Slurm then kills the Ray daemons with the step, or leaves
# them running outside any step (reparented to PID 1) and holding the GPUs after the job.
# Fix: `srun … ray start --block … &` on every node.
set -euo pipefail
head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
srun --nodes=1 --ntasks=1 -w "$head" ray start --head --port=6379
srun --nodes=1 --ntasks=1 --relative=1 ray start --address="$head:6379" --block &
until ray status --address="$head:6379" | grep -q "2 node"; do sleep 5; done
inferlint run --serve "vllm serve Qwen/Qwen3-235B-A22B --tensor-parallel-size 8 --pipeline-parallel-size 2 --distributed-executor-backend ray" \
    -- vllm bench serve --model Qwen/Qwen3-235B-A22B --max-concurrency 64 --num-prompts 640
