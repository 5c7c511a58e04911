"""One HTML page that says what happened in a run, and which of its numbers hold.

``build`` runs every tripwire the given files allow and collects the results; ``render``
draws the page. Both are the Rust library's report (the page ``inferlint report`` writes),
so the page from Python and the page from the command line are the same page.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import _native
from .benchresult import BenchResult
from .bootlog import BootFacts, _from_json
from .engines import VLLM, Engine, by_key
from .result import CheckResult
from .series import Series, _recording
from .telemetry import Snapshot, _parsed

__all__ = ["Report", "Summary", "build", "render"]


@dataclass
class Summary:
    """What the run's files say happened. Every field is None when its source is absent."""

    span_s: float | None = None
    started: float | None = None  # Unix time of the before reading
    ended: float | None = None
    boot_s: float | None = None  # first boot log: first stamped line to ready
    finished: dict[str, int] = field(default_factory=dict[str, int])  # by finished_reason
    finished_total: int | None = None  # when the server does not say why each finished
    output_tokens: int | None = None
    prompt_tokens: int | None = None
    mean_latency_s: float | None = None
    mean_first_token_s: float | None = None
    mean_queue_s: float | None = None
    preemptions: int | None = None
    peak_running: int | None = None
    interval_s: float | None = None
    readings: int | None = None
    url: str | None = None
    restarted: bool = False

    @property
    def done(self) -> int | None:
        return sum(self.finished.values()) if self.finished else self.finished_total


@dataclass
class Report:
    title: str
    results: list[CheckResult]
    boots: list[tuple[str, BootFacts]] = field(default_factory=list[tuple[str, BootFacts]])
    series: Series | None = None
    before: Snapshot | None = None
    after: Snapshot | None = None
    requested: int | None = None
    usable_blocks: int | None = None
    generated: str = ""
    summary: Summary = field(default_factory=Summary)
    sources: list[str] = field(default_factory=list[str])
    engine: Engine = VLLM
    bench: BenchResult | None = None  # the load tool's result file, when there is one
    # The Rust report these fields were read from, which ``render`` draws.
    _built: list[_native.Report] = field(
        default_factory=list[_native.Report], repr=False, compare=False
    )

    def result(self, tripwire: str) -> CheckResult | None:
        return next((r for r in self.results if r.tripwire == tripwire), None)


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def _summary(doc: str) -> Summary:
    s: dict[str, Any] = json.loads(doc)
    reasons: dict[str, Any] = s.get("finished_by_reason") or {}
    return Summary(
        span_s=s.get("span_s"),
        started=s.get("wall_start"),
        ended=s.get("wall_end"),
        boot_s=s.get("boot_s"),
        finished={str(k): int(v) for k, v in reasons.items()},
        finished_total=_int(s.get("finished")),
        output_tokens=_int(s.get("output_tokens")),
        prompt_tokens=_int(s.get("prompt_tokens")),
        mean_latency_s=s.get("mean_e2e_s"),
        mean_first_token_s=s.get("mean_ttft_s"),
        mean_queue_s=s.get("mean_queue_s"),
        preemptions=_int(s.get("preemptions")),
        peak_running=_int(s.get("peak_running")),
        interval_s=s.get("interval_s"),
        readings=s.get("readings"),
        url=s.get("url"),
        restarted=bool(s.get("restarted")),
    )


def _native_report(
    boot_logs: Sequence[str | Path],
    before: Snapshot | None,
    after: Snapshot | None,
    series: Series | None,
    requested: int | None,
    title: str | None,
    sources: Sequence[str],
    extra: Sequence[CheckResult],
    server_version: str | None,
    engine: str | None,
    bench: BenchResult | None,
    generated: str,
) -> _native.Report:
    return _native.build_report(
        [str(p) for p in boot_logs],
        None if before is None else _parsed(before),
        None if after is None else _parsed(after),
        None if series is None else _recording(series),
        requested,
        title,
        list(sources),
        list(extra),
        server_version,
        engine,
        bench,
        generated,
    )


def build(
    *,
    boot_logs: Sequence[str | Path] = (),
    before: Snapshot | None = None,
    after: Snapshot | None = None,
    series: Series | None = None,
    requested: int | None = None,
    title: str | None = None,
    sources: Sequence[str] = (),
    extra: Sequence[CheckResult] = (),
    server_version: str | None = None,
    engine: str | None = None,
    bench: BenchResult | None = None,
) -> Report:
    """Run every tripwire the given files allow and collect the results.

    ``sources`` names the input files, for the report's "Made from" line. ``extra`` adds
    results the files cannot give, from a live run: the probe (T7), the teardown (T2) and
    the client/server comparison (T15). ``server_version`` is the version the live
    server reported, for engines whose boot log does not print it. ``engine`` is the
    engine the user named, for files that do not say which engine wrote them. ``bench``
    is the load tool's result file. A boot log that cannot be read raises ``OSError``
    naming it.
    """
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rep = _native_report(
        boot_logs, before, after, series, requested, title, sources, extra,
        server_version, engine, bench, generated,
    )
    results = rep.results()
    return Report(
        title=rep.title(),
        results=results,
        boots=[(label, _from_json(doc)) for label, doc in rep.boots()],
        series=series,
        before=before,
        after=after,
        requested=requested,
        usable_blocks=rep.usable_blocks(),
        generated=generated,
        summary=_summary(rep.summary()),
        sources=list(sources),
        engine=by_key(rep.engine()),
        bench=bench,
        _built=[rep],
    )


def render(rep: Report, *, standalone: bool = True) -> str:
    """The report as HTML. ``standalone=False`` omits the document skeleton.

    A ``Report`` made by :func:`build` is drawn as built; one assembled by hand is built
    again from its readings, with its ``results`` as the live run's own."""
    if not rep._built:
        rep._built.append(
            _native_report(
                (), rep.before, rep.after, rep.series, rep.requested, rep.title,
                rep.sources, rep.results, None, rep.engine.key, rep.bench, rep.generated,
            )
        )
    return rep._built[0].render(standalone)
