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
# The wheel to share: tagged manylinux (pip's PEP 517 build is tagged for this machine alone).
MATURIN_PEP517_ARGS="--compatibility manylinux_2_34" \
PATH="$tools/bin:$PATH" "$tools/bin/pip" wheel --quiet --no-build-isolation --no-deps \
  --wheel-dir "$work/wheels" .
wheel=$(ls "$work"/wheels/inferlint-*.whl)
echo "built $(basename "$wheel") in $(( $(date +%s) - start )) s: $(stat -c %s "$wheel") bytes"

echo "== python: the wheel's platform tag holds for the program too"
# maturin audits the extension module against pyproject's manylinux tag; the program beside it
# is checked here: no glibc symbol newer than the tag's.
case "$(basename "$wheel")" in
  *manylinux_2_34*) ;;
  *) echo "the wheel is not tagged manylinux_2_34: $(basename "$wheel")"; exit 1 ;;
esac
unzip -q -o "$wheel" 'inferlint-*.data/scripts/inferlint' -d "$work/unpacked"
newest=$(objdump -T "$work"/unpacked/inferlint-*.data/scripts/inferlint \
  | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
if [ "$(printf '%s\n' "$newest" 2.34 | sort -V | tail -1)" != 2.34 ]; then
  echo "the program needs glibc $newest, newer than the wheel's manylinux_2_34"
  exit 1
fi
echo "the program needs glibc $newest at most"

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

echo "== python: pyright --strict on user code against the installed package"
# pyright's own program (from npm) is cached in the cache folder after the first run.
PYRIGHT_PYTHON_CACHE_DIR=$cache/pyright \
  "$tools/bin/pyright" -p python/tests/typing --pythonpath "$work/venv/bin/python"

echo "== python: inferlint demo from the venv's bin"
"$work/venv/bin/inferlint" --version
"$work/venv/bin/inferlint" demo -o "$work/demo"
