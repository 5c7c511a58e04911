#!/bin/bash
# BAD (T12, warning): the server's exit status is lost in the pipe.
# Without `set -o pipefail` a pipeline's status is its last command's: `wait` below reports
# tee's 0 even when vllm serve died during start-up.
set -eu

vllm serve Qwen/Qwen3-8B --port 8000 2>&1 | tee server.log &
server=$!
if ! wait "$server"; then
    echo "server failed" >&2
fi
