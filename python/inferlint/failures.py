"""Name why a server died, instead of recording a blank.

A failure grep that matches ``ValueError|RuntimeError`` misses
``torch.AcceleratorError: CUDA error: device not ready`` and writes an empty reason, and
a result whose failure has no reason is a lost result. The rules below run in priority
order: specific root causes first, generic exception types after, and the secondary
"engine is dead" message last, because it follows every root cause and explains none.

The classifier also reports *when* the server died: during boot, or after it announced
it was ready. The second is a config that looks healthy until the first request.

The rules are the Rust library's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from . import _native

__all__ = ["Failure", "Kind", "Phase", "classify", "classify_file", "shutdown_lineno"]


class Kind(str, Enum):
    JIT_TOOLCHAIN = "jit_toolchain"  # a kernel JIT build failed (nvcc/ninja/headers)
    OUT_OF_MEMORY = "out_of_memory"
    KV_CACHE_TOO_SMALL = "kv_cache_too_small"
    ACCELERATOR_ERROR = "accelerator_error"
    CUDA_ERROR = "cuda_error"
    ASSERTION = "assertion"
    VALUE_ERROR = "value_error"
    RUNTIME_ERROR = "runtime_error"
    UNCLASSIFIED_EXCEPTION = "unclassified_exception"
    ENGINE_DEAD = "engine_dead"


class Phase(str, Enum):
    BOOT = "boot"
    SERVING = "serving"  # died after announcing it was ready


@dataclass(frozen=True)
class Failure:
    kind: Kind
    phase: Phase
    lineno: int
    line: str
    detail: str

    def summary(self) -> str:
        return f"{self.kind.value} during {self.phase.value}: {self.detail or self.line}"


def _failure(doc: str | None) -> Failure | None:
    if doc is None:
        return None
    raw = json.loads(doc)
    return Failure(Kind(raw["kind"]), Phase(raw["phase"]), raw["lineno"], raw["line"], raw["detail"])


def shutdown_lineno(text: str) -> int | None:
    """Line number of the first orderly-shutdown marker, if the server was stopped."""
    return _native.shutdown_lineno(text)


def classify(text: str) -> Failure | None:
    """The most specific failure in a log, or ``None`` if nothing failed.

    Lines after an orderly shutdown began are not considered, nor are tracebacks the
    server says it ignores. A server that became ready survived whatever it logged before
    that, so only the lines after its ready line can hold a failure, and such a failure is
    one while serving (T7).
    """
    return _failure(_native.classify(text))


def classify_file(path: str | Path) -> Failure | None:
    """:func:`classify` on a log file (``FileNotFoundError`` naming a missing one)."""
    return _failure(_native.classify_file(str(path)))
