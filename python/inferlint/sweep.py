"""A sweep folder (``inferlint run --sweep OPTION=V1,V2,...``) as typed points, for notebooks.

``read(folder)`` reads the folder's ``sweep.json`` (docs/design/formats.md, "sweep.json") with
the Rust library's own type: each :class:`Point` carries what it asked, its :class:`Figures`,
its window's verdicts (``CheckResult``, as the point's ``results.json``) and whether it holds;
``holds`` and ``why_not`` are the library's, the words of the table the program prints
(``Sweep.table()``). :class:`Finding` is what holds across the points: a cache an earlier point
filled, a reset that did not take, the knee.

    s = sweep.read("runs/qwen-sweep")
    for p in s.points:
        print(p.label, p.figures.output_tokens_per_s, "yes" if p.holds else p.why_not)
"""

from __future__ import annotations

import os
from enum import Enum

from ._native import Figures, Finding, Point, Prompts, Reset, Sweep, read_sweep

__all__ = ["Figures", "Finding", "FindingKind", "Point", "Prompts", "Reset", "Sweep", "read"]


class FindingKind(str, Enum):
    # The members are the library's kinds (``_native.finding_kinds()``, held to this class by
    # python/tests/test_sweep.py); the values are sweep.json's keys.
    # A point's prompts were served from a cache an earlier point with the same prompts filled.
    INHERITED_CACHE = "inherited_cache"
    # The first point whose server ran fewer requests than asked (T8) or whose client fell
    # short (T21).
    KNEE = "knee"
    # A point after the knee: it measures the server's ceiling or the client.
    PAST_KNEE = "past_knee"
    # The cache reset before the point did not take.
    RESET_FAILED = "reset_failed"
    # The point's value ran several times (``--repeat``) and its runs disagree beyond noise.
    SPREAD = "spread"
    # The point ran on another start of the server than the point before (another KV pool,
    # engine version or running cap).
    SERVER_CHANGED = "server_changed"


def read(folder: str | os.PathLike[str]) -> Sweep:
    """The sweep in ``folder`` (its ``sweep.json``; a path ending ``.json`` is read itself).

    A missing file raises ``FileNotFoundError`` naming it; a file that is not JSON, or not a
    ``sweep.json`` of this schema, raises ``ValueError`` whose message starts with the file."""
    return read_sweep(folder)
