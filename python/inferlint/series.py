"""Gauge time series: the only place concurrency and KV occupancy are visible.

``num_requests_running`` and ``kv_cache_usage_perc`` are instantaneous. A before/after
pair of snapshots cannot say whether the requested concurrency ever actually ran, or
how full the cache got. Sampling them during the run can.

File format: JSON Lines. The first line is a header (``{"schema": ..., "url": ...}``),
every later line one sample. Readers skip lines they cannot parse and count them, so a
run killed mid-write still yields everything it recorded.

A recording read from a file stays in the Rust reader: ``Series.samples`` makes Python
``Sample`` objects only when it is indexed or iterated, and the checks never ask for them.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, overload

from . import _native
from .engines import Engine, by_key
from .metricnames import VLLM, MetricNames
from .prom import Metrics
from .telemetry import Snapshot, _parsed, scrape

__all__ = [
    "SCHEMA",
    "VLLM_GAUGES",
    "Sample",
    "Series",
    "from_samples",
    "gauges",
    "load",
    "read",
    "sample_row",
    "watch",
]

SCHEMA = "inferlint.series/1"


def gauges(names: MetricNames) -> dict[str, str]:
    """Output field -> series. Absent series are written as null, never 0."""
    out = {
        "running": names.running,
        "waiting": names.waiting,
        "kv_usage": names.kv_usage,
        "preemptions": names.preemptions,
        "generation_tokens": names.generation_tokens,
        "prompt_tokens": names.prompt_tokens,
        "paused": names.paused,
    }
    return {k: v for k, v in out.items() if v is not None}


VLLM_GAUGES: dict[str, str] = gauges(VLLM)


@dataclass(frozen=True, slots=True)
class Sample:
    t_wall: float
    t_mono_ns: int | None
    running: float | None
    waiting: float | None
    kv_usage: float | None
    preemptions: float | None = None
    generation_tokens: float | None = None
    prompt_tokens: float | None = None
    paused: float | None = None  # requests paused for recompute (TensorRT-LLM)


class _Rows(Sequence[Sample]):
    """The samples of a recording held in Rust, made into ``Sample`` objects on first use."""

    __slots__ = ("_made", "_rec")

    def __init__(self, rec: _native.Recording) -> None:
        self._rec = rec
        self._made: tuple[Sample, ...] | None = None

    def _all(self) -> tuple[Sample, ...]:
        if self._made is None:
            self._made = tuple(Sample(*r) for r in self._rec.rows())
        return self._made

    def __len__(self) -> int:
        return len(self._rec)

    @overload
    def __getitem__(self, i: int) -> Sample: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[Sample, ...]: ...
    def __getitem__(self, i: int | slice) -> Sample | tuple[Sample, ...]:
        return self._all()[i]

    def __iter__(self) -> Iterator[Sample]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Rows):
            other = other._all()
        return self._all() == other

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return repr(self._all())


@dataclass(frozen=True)
class Series:
    header: dict[str, Any]
    samples: Sequence[Sample]
    skipped_lines: int = 0
    # The Rust recording the checks read; made from ``samples`` on first use when the series
    # was built in Python.
    _rec: list[_native.Recording] = field(
        default_factory=list[_native.Recording], repr=False, compare=False
    )

    @property
    def engine(self) -> Engine:
        """The engine the recording came from (named in its header; vLLM if not)."""
        key = self.header.get("engine")
        return by_key(key if isinstance(key, str) else None)

    def busy(self) -> tuple[Sample, ...]:
        return tuple(s for s in self.samples if s.running)

    def peak_running(self) -> float | None:
        return _recording(self).peak_running()

    def kv_usages(self) -> list[float]:
        return _recording(self).kv_usages()


def _recording(s: Series) -> _native.Recording:
    """The Rust recording behind a series."""
    if not s._rec:
        interval = s.header.get("interval_s")
        engine = s.header.get("engine")
        s._rec.append(
            _native.series_from_rows(
                [
                    (
                        float(x.t_wall),
                        x.t_mono_ns,
                        x.running,
                        x.waiting,
                        x.kv_usage,
                        x.preemptions,
                        x.generation_tokens,
                        x.prompt_tokens,
                        x.paused,
                    )
                    for x in s.samples
                ],
                str(s.header.get("url", "")),
                float(interval) if isinstance(interval, (int, float)) else 0.0,
                engine if isinstance(engine, str) else None,
                s.skipped_lines,
            )
        )
    return s._rec[0]


def sample_row(
    m: Metrics, t_wall: float, t_mono_ns: int | None, engine: Engine | None = None
) -> dict[str, Any]:
    """One sample, with the series of ``engine`` (by default, the one ``m`` comes from), as
    the recorder writes it (the Rust writer's row: per-engine gauges of a data-parallel server
    under ``engines``, TensorRT-LLM's ``paused``)."""
    line = _native.sample_row(m._native, t_wall, t_mono_ns, engine.key if engine else None)
    row: dict[str, Any] = json.loads(line)
    return row


def read(path: str | Path) -> Series:
    """Read a recording. Rows that do not parse are skipped and counted (``skipped_lines``);
    a missing file raises ``FileNotFoundError``, a file with no header row ``ValueError``
    naming it."""
    rec = _native.load_series(str(path))
    header: dict[str, Any] = {"schema": SCHEMA, "url": rec.url, "interval_s": rec.interval_s}
    if rec.engine is not None:
        header["engine"] = rec.engine
    return Series(header=header, samples=_Rows(rec), skipped_lines=rec.skipped_lines, _rec=[rec])


# The name this project's CLI and docs use for reading a recording.
load = read


def from_samples(samples: Iterable[Sample], header: dict[str, Any] | None = None) -> Series:
    return Series(header=header or {}, samples=tuple(samples))


def watch(
    base_url: str,
    out: IO[str],
    *,
    interval: float = 0.5,
    stop: threading.Event | None = None,
    duration: float | None = None,
    scrape_fn: Callable[[str], Snapshot] = scrape,
    sleep: Callable[[float], None] = time.sleep,
    on_error: Callable[[Exception], None] | None = None,
) -> int:
    """Sample gauges into ``out`` until ``stop`` is set or ``duration`` elapses.

    A scrape that fails is skipped rather than written as zeros: a missing sample is
    a gap in the series, and a zero would be a false reading of an idle server.
    """
    stop = stop or threading.Event()
    # The rows are the Rust recorder's, as `inferlint watch` writes them; the header, naming
    # the engine of the first scrape, goes first regardless.
    recorder = _native.SeriesRecorder(base_url, interval)
    t_end = None if duration is None else time.monotonic() + duration
    n = 0
    while not stop.is_set() and (t_end is None or time.monotonic() < t_end):
        try:
            snap = scrape_fn(base_url)
        except Exception as e:  # network errors, server gone: record a gap
            if on_error is not None:
                on_error(e)
        else:
            out.write(recorder.add(_parsed(snap)))
            out.flush()
            n += 1
        sleep(interval)
    out.write(recorder.finish())  # no scrape succeeded: the file still says what it is
    return n
