"""Where the ``inferlint`` program installed with this package is."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

_NAME = "inferlint"


def find() -> str | None:
    """The Rust binary the wheel installed: beside this interpreter's scripts first (a venv's
    ``bin``, pipx's), then the scheme's scripts folders (``--user`` installs), then PATH."""
    candidates = [Path(sys.executable).parent / _NAME]
    for scheme in (None, f"{os.name}_user"):
        try:
            scripts = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        candidates.append(Path(scripts) / _NAME)
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK) and _is_native(c):
            return str(c)
    found = shutil.which(_NAME)
    return found if found and _is_native(Path(found)) else None


def _is_native(p: Path) -> bool:
    # A console script written by pip starts with "#!"; the wheel's program is an ELF file.
    # Refusing scripts keeps ``python -m inferlint`` from running itself in a loop.
    try:
        with p.open("rb") as f:
            return f.read(2) != b"#!"
    except OSError:
        return False
