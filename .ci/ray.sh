#!/usr/bin/env bash
# Ray for the Ray tests (tests/run_ray.rs): Ray 2.60.0 from PyPI (with its dashboard, `ray[default]`)
# and setproctitle, in a venv of its own in the cache folder outside the repository, installed
# only when missing (~1 min cold from PyPI, 384 MB; seconds from the pip cache). The tests find
# it through INFERLINT_RAY_VENV.
#
# Usage: source .ci/ray.sh && install_ray   (prints the venv's path on stdout)
#        bash .ci/ray.sh                    (the same, as a command)
# Environment: INFERLINT_CACHE  the cache folder (default /var/cache/inferlint)
# Exit status: 0 when Ray is there; 3 when the install failed.

ray_version=2.60.0

install_ray() {
    local cache=${INFERLINT_CACHE:-/var/cache/inferlint}
    local venv=$cache/ray/venv
    if "$venv/bin/python" -c "import ray, setproctitle, sys; sys.exit(ray.__version__ != '$ray_version')" \
        >/dev/null 2>&1; then
        echo "$venv"
        return 0
    fi
    echo "== pip install ray[default]==$ray_version setproctitle (into $venv)" >&2
    rm -rf "$venv"
    mkdir -p "$cache/ray"
    python3 -m venv "$venv" || { echo "cannot create $venv" >&2; return 3; }
    PIP_CACHE_DIR="$cache/pip" timeout 1200 "$venv/bin/pip" install --quiet \
        --disable-pip-version-check "ray[default]==$ray_version" setproctitle \
        >"$cache/ray/install.log" 2>&1 || {
        echo "the Ray install failed; last lines of $cache/ray/install.log:" >&2
        tail -30 "$cache/ray/install.log" >&2
        return 3
    }
    echo "$venv"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    set -euo pipefail
    install_ray
fi
