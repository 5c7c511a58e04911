"""Which GPU this is, from ``nvidia-smi``: model, family, memory and driver.

``inferlint gpu-inspect`` prints these next to the free-card check (T2), so a test can
record the card it ran on. Reading them works wherever ``nvidia-smi`` does (Linux, WSL,
Windows); the free-card check itself needs Linux.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from . import _native

__all__ = ["GpuInfo", "family", "nvidia_smi_path", "parse", "read_gpus"]

_BASE = ("index", "name", "memory.total", "memory.used", "memory.free", "driver_version")
_CAP = "compute_cap"  # needs a 2022 or newer driver


def family(compute_cap: str | None) -> str | None:
    """``"8.9"`` -> ``"Ada Lovelace"``; None when the capability is missing or unknown."""
    if not compute_cap:
        return None
    return _native.gpu_family(compute_cap)


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    memory_total_mib: int | None
    memory_used_mib: int | None
    memory_free_mib: int | None
    driver: str | None
    compute_cap: str | None

    @property
    def family(self) -> str | None:
        return family(self.compute_cap)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "family": self.family}


def parse(text: str, *, with_cap: bool = True) -> list[GpuInfo]:
    """Parse ``--format=csv,noheader,nounits`` output, one line per GPU. A line that is no
    GPU row raises ``ValueError`` naming it (0.3.1 skipped it silently)."""
    return [GpuInfo(*row) for row in _native.parse_gpus(text, with_cap)]


def nvidia_smi_path() -> str:
    return _native.nvidia_smi_path()


def _run(args: list[str]) -> str:
    exe = nvidia_smi_path()
    try:
        return _native.run_smi(exe, args)
    except OSError as e:
        # 0.3.1 raised CalledProcessError for a driver that rejects a field; read_gpus asks
        # again without compute_cap on it.
        raise subprocess.CalledProcessError(1, [exe, *args], stderr=str(e)) from e


def read_gpus(query: Callable[[list[str]], str] = _run) -> list[GpuInfo]:
    """Every GPU ``nvidia-smi`` reports. Raises OSError or SubprocessError without one."""
    fmt = "--format=csv,noheader,nounits"
    try:
        return parse(query([f"--query-gpu={','.join((*_BASE, _CAP))}", fmt]))
    except subprocess.CalledProcessError:
        # An older driver rejects the compute_cap field; ask again without it.
        return parse(query([f"--query-gpu={','.join(_BASE)}", fmt]), with_cap=False)
