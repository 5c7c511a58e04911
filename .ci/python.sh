#!/usr/bin/env bash
# The Python package (pyproject.toml, crates/py, python/): build the wheel once, install it into
# a fresh venv, run python/tests against that install, then `inferlint demo` from the venv's bin.
# The build shares CARGO_TARGET_DIR with the cargo steps: only the release program and the
# extension module are built here. maturin and pytest come from .ci/install.sh's cached venv.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${INFERLINT_CACHE:-/var/cache/inferlint}
tools=$cache/py-tools
export PIP_CACHE_DIR=$cache/pip PIP_DISABLE_PIP_VERSION_CHECK=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== python: the wheel (the release program and the extension module)"
start=$(date +%s)
# --no-build-isolation: the build backend's maturin is the cached one, not a fresh download.
PATH="$tools/bin:$PATH" "$tools/bin/pip" wheel --quiet --no-build-isolation --no-deps \
  --wheel-dir "$work/wheels" .
wheel=$(ls "$work"/wheels/inferlint-*.whl)
echo "built $(basename "$wheel") in $(( $(date +%s) - start )) s: $(stat -c %s "$wheel") bytes"

echo "== python: install into a fresh venv, then pytest python/tests"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet "$wheel" pytest
# The tests import the installed package (python/inferlint has no extension module in it).
rc=0
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider python/tests || rc=$?
if [ "$rc" -eq 5 ]; then
  echo "== python: pytest collected no tests (python/tests missing?): a failure"
  exit 1
fi
[ "$rc" -eq 0 ] || { echo "== python: pytest FAILED (exit $rc)"; exit "$rc"; }

echo "== python: inferlint demo from the venv's bin"
"$work/venv/bin/inferlint" --version
"$work/venv/bin/inferlint" demo -o "$work/demo"
