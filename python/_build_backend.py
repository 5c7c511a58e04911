"""PEP 517 backend: builds the Rust program `inferlint` with cargo, puts it where maturin
installs scripts from (python/inferlint.data/scripts), then lets maturin build the wheel.

maturin builds one Cargo target per wheel (here the extension module, crates/py); the program
is a second target, so it is built first. It is a release build of the workspace's binary in
cargo's own target folder (CARGO_TARGET_DIR when set), so a warm folder builds nothing again.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import maturin
from maturin import (  # noqa: F401  (the hooks maturin answers itself)
    build_sdist,
    get_requires_for_build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_wheel,
)

_ROOT = Path(__file__).resolve().parent.parent
_SCRIPTS = _ROOT / "python" / "inferlint.data" / "scripts"


def _cargo() -> str:
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    if not Path(cargo).exists():
        raise RuntimeError("building inferlint needs Rust's cargo (https://rustup.rs)")
    return cargo


def _build_program() -> None:
    cargo = _cargo()
    subprocess.run(
        [cargo, "build", "--release", "--locked", "-p", "inferlint", "--bin", "inferlint"],
        cwd=_ROOT,
        check=True,
    )
    meta = subprocess.run(
        [cargo, "metadata", "--format-version", "1", "--no-deps"],
        cwd=_ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    target = Path(json.loads(meta)["target_directory"])
    _SCRIPTS.mkdir(parents=True, exist_ok=True)
    dest = _SCRIPTS / "inferlint"
    tmp = dest.with_suffix(".tmp")
    shutil.copy2(target / "release" / "inferlint", tmp)
    os.replace(tmp, dest)


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: dict[str, Any] | None = None
) -> str:
    # maturin checks that pyproject's `data` folder exists before it writes the metadata; in a
    # fresh checkout the program is not built yet, so the (gitignored) folder is made here.
    _SCRIPTS.mkdir(parents=True, exist_ok=True)
    return maturin.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def prepare_metadata_for_build_editable(
    metadata_directory: str, config_settings: dict[str, Any] | None = None
) -> str:
    _SCRIPTS.mkdir(parents=True, exist_ok=True)
    return maturin.prepare_metadata_for_build_editable(metadata_directory, config_settings)


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    _build_program()
    return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    _build_program()
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)
