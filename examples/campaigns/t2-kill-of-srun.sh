#!/bin/bash
#SBATCH --nodes=2
#SBATCH --gres=gpu:8
# BAD (T2): `kill` of an srun's pid signals the srun client, not the step: srun relays it only
# to the step's tasks, a kill -9 ends srun alone, and the server keeps running on its node.
# Fix: `scancel --signal=TERM "$SLURM_JOB_ID.<step>"`, or `srun inferlint run …` as the step.
set -euo pipefail
srun --overlap --nodes=1 --ntasks=1 --relative=1 vllm serve Qwen/Qwen3-8B --port 8000 > node1.log 2>&1 &
server=$!
node1=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 2p)
until curl -sf "$node1:8000/health" > /dev/null; do
    kill -0 "$server" || exit 1
    sleep 2
done
vllm bench serve --base-url "http://$node1:8000" --model Qwen/Qwen3-8B --max-concurrency 32 --num-prompts 320
kill -TERM "$server"
wait
