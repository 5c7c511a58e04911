"""Snapshots of a server's /metrics, and what may be read out of two of them.

A snapshot keeps the raw exposition text, not a parsed digest, so nothing a later
reader needs has been thrown away at capture time. Each one carries two clocks:

* ``t_wall`` (``time.time()``) to line a snapshot up with logs, and
* ``t_mono_ns`` (``time.monotonic_ns()``) to measure spans. Wall clocks step; the
  monotonic clock does not.

Both are taken on either side of the HTTP request, and the midpoint is used. The
server read its counters somewhere inside that window, so half the scrape latency is
the honest timing uncertainty of a snapshot, and it is recorded rather than assumed away.

The text is parsed, and deltas and spans are computed, by the Rust library; a scrape with
the default hooks is the Rust scraper's, with the GIL released while it waits.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _native
from .prom import Metrics

__all__ = [
    "SCHEMA",
    "ServerRestarted",
    "Snapshot",
    "counter_delta",
    "created_changes",
    "load",
    "scrape",
    "span_s",
]

SCHEMA = "inferlint.snapshot/1"

Fetch = Callable[[str, float], str]


def _http_get(url: str, timeout: float) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        body: bytes = resp.read()
    return body.decode("utf-8", "replace")


@dataclass(frozen=True)
class Snapshot:
    url: str
    text: str
    t_wall: float
    t_mono_ns: int | None
    latency_s: float | None = None
    _metrics: list[Metrics] = field(default_factory=list[Metrics], repr=False, compare=False)
    # The Rust reader's parse of ``text``, made once, on first use by a check.
    _parsed: list[_native.ParsedSnapshot] = field(
        default_factory=list[_native.ParsedSnapshot], repr=False, compare=False
    )

    @property
    def metrics(self) -> Metrics:
        if not self._metrics:
            self._metrics.append(Metrics._of(_parsed(self).metrics()))
        return self._metrics[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "url": self.url,
            "t_wall": self.t_wall,
            "t_mono_ns": self.t_mono_ns,
            "latency_s": self.latency_s,
            "text": self.text,
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=1) + "\n", encoding="utf-8")

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Snapshot:
        if doc.get("schema") != SCHEMA:
            raise ValueError(f"not an {SCHEMA} document (schema={doc.get('schema')!r})")
        return cls(
            url=str(doc["url"]),
            text=str(doc["text"]),
            t_wall=float(doc["t_wall"]),
            t_mono_ns=None if doc.get("t_mono_ns") is None else int(doc["t_mono_ns"]),
            latency_s=None if doc.get("latency_s") is None else float(doc["latency_s"]),
        )


def _parsed(s: Snapshot) -> _native.ParsedSnapshot:
    """The Rust parse of a snapshot's text (``ValueError`` naming the line when malformed)."""
    if not s._parsed:
        s._parsed.append(
            _native.parse_snapshot(s.url, s.text, float(s.t_wall), s.t_mono_ns, s.latency_s)
        )
    return s._parsed[0]


def _from_native(
    fields: tuple[str, str, float, int | None, float | None], parsed: _native.ParsedSnapshot
) -> Snapshot:
    url, text, t_wall, t_mono_ns, latency_s = fields
    return Snapshot(url, text, t_wall, t_mono_ns, latency_s, _parsed=[parsed])


def load(path: str | Path) -> Snapshot:
    """Read a snapshot file, or a bare Prometheus text file (which has no clock).

    A missing file raises ``FileNotFoundError``; a file that is not a snapshot raises
    ``ValueError`` whose message starts with the path and names the line."""
    return _from_native(*_native.load_snapshot(str(path)))


_scraper: list[_native.Scraper] = []


def scrape(
    base_url: str,
    *,
    path: str | None = None,
    timeout: float = 10.0,
    fetch: Fetch = _http_get,
    wall: Callable[[], float] = time.time,
    mono_ns: Callable[[], int] = time.monotonic_ns,
) -> Snapshot:
    """Read the server's Prometheus metrics once, with the time of the reading.

    Without ``path``, ``/metrics`` is read; if that is not Prometheus text, the other
    places servers put it are tried, and the one that works is used from then on.
    With the default ``fetch``, ``wall`` and ``mono_ns`` the reading is the Rust scraper's
    (``OSError`` when the server cannot be read); injected hooks are called by the library's
    scrape as 0.3.1 called them (``ValueError`` when no place answers Prometheus text).
    """
    if fetch is _http_get and wall is time.time and mono_ns is time.monotonic_ns:
        if not _scraper:
            _scraper.append(_native.Scraper())
        return _from_native(*_scraper[0].scrape(base_url, path, float(timeout)))
    # The caller's hooks in the library's own scrape: the same places, order and memory.
    return _from_native(
        *_native.scrape_with(base_url, path, float(timeout), fetch, wall, mono_ns)
    )


def span_s(a: Snapshot, b: Snapshot) -> tuple[float, float]:
    """Seconds between two snapshots, and the uncertainty from their scrape latencies.

    The monotonic clock is used when both snapshots have it. It is only comparable
    within one host boot, so it is cross-checked against the wall clock: if the two
    disagree by more than a second, one of them has jumped and the span is refused
    (``ValueError``), as is a span from snapshots without a clock or one that is not positive.
    """
    return _native.span_s(_parsed(a), _parsed(b))


class ServerRestarted(RuntimeError):
    """Two snapshots came from different server processes. Their deltas mean nothing."""

    def __init__(self, message: str, evidence: Mapping[str, Any]) -> None:
        super().__init__(message)
        self.evidence = dict(evidence)


def created_changes(a: Snapshot, b: Snapshot) -> list[tuple[str, float, float]]:
    """``*_created`` series whose value differs between two snapshots.

    prometheus_client stamps every counter and histogram with the Unix time it was
    created. The stamp changes only when the process that owns the counter restarts.
    That catches a restart even when traffic since the restart has already pushed the
    counters past their old values, which a "counter went down" test cannot see.
    """
    return _native.created_changes(_parsed(a), _parsed(b))


def counter_delta(
    a: Snapshot, b: Snapshot, name: str, *, witness: str | None = None, **labels: str
) -> float | None:
    """``after - before`` for a counter, ``None`` if either snapshot lacks it.

    Some servers write a labelled counter only when it first counts something. With
    ``witness``, a series exported from the start alongside it, a snapshot that has the
    witness but not the counter reads the counter as 0.

    Raises :class:`ServerRestarted` if the server was replaced between the snapshots:
    either a ``_created`` stamp moved, or the counter went down.
    """
    delta, restarted, evidence = _native.counter_delta(
        _parsed(a), _parsed(b), name, witness, sorted(labels.items())
    )
    if restarted is not None:
        raise ServerRestarted(restarted, evidence or {})
    return delta
