"""Code a user writes against the package; `pyright --strict` must find nothing in it.

    pyright -p python/tests/typing   (with the package installed)
"""

from __future__ import annotations

import pytest

from inferlint import (
    CheckResult,
    Status,
    TripwireFailed,
    bootlog,
    checks,
    series,
    sweep,
    telemetry,
)
from inferlint.blocks import infer_blocks
from inferlint.report import build, render
from inferlint.result import LABELS


def verdicts(url: str, requested: int) -> list[CheckResult]:
    before = telemetry.scrape(url, timeout=5.0)
    after = telemetry.scrape(url, fetch=lambda u, t: "", wall=lambda: 0.0, mono_ns=lambda: 0)
    rec = series.read("run.series.jsonl")
    t14 = checks.check_null_block(rec, after)
    raw = t14.evidence.get("inferred_usable_blocks")
    blocks = raw if isinstance(raw, int) else None
    out = [
        checks.check_no_preemption(before, after, rec),
        checks.precise_rate(before, after),
        t14,
        checks.concurrency_ceiling(rec, blocks, saturated=0.8),
        checks.check_concurrency_reached(rec, requested),
    ]
    samples: list[series.Sample] = list(rec.samples)
    usages: list[float] = [s.kv_usage for s in samples if s.kv_usage is not None]
    inf = infer_blocks(usages)
    if inf.blocks is not None and inf.trusted:
        print(inf.blocks, inf.reason)
    return out


def facts_record(path: str) -> dict[str, object]:
    facts = bootlog.parse_file(path)
    size: int | None = facts.attention_block_size
    pool: int | None = facts.kv_pool_tokens
    print(size, pool, facts.version)
    return {"boot": facts.result_block()}


def gate(result: CheckResult) -> bool:
    try:
        result.raise_for_status(allow_warn=False)
    except TripwireFailed as e:
        return e.result.status is Status.FAIL
    return result.status == "pass"


def own_result() -> str:
    r = CheckResult("T2", Status.PASS, "clear", evidence={"readings": 2})
    status: str = r.to_json()["status"]
    ev: dict[str, object] = r.evidence
    return f"{LABELS[r.status]} {r.ok} {status} {r.tripwire} {r.message} {len(ev)}"


@pytest.fixture
def no_preemption() -> object:
    before = telemetry.scrape("http://127.0.0.1:8000")
    yield
    after = telemetry.scrape("http://127.0.0.1:8000")
    checks.check_no_preemption(before, after).raise_for_status()


def page() -> str:
    return render(build(boot_logs=["boot.log"], requested=32))


def curve(folder: str) -> list[tuple[int, float | None, bool]]:
    s = sweep.read(folder)
    rows: list[tuple[int, float | None, bool]] = []
    for p in s.points:
        tput: float | None = p.figures.output_tokens_per_s
        failed: list[CheckResult] = [r for r in p.results if r.status is Status.FAIL]
        why: list[str] = p.why_not
        reset = p.reset
        detail: str | None = None if reset is None else reset.detail
        asked: int | None = p.asked_concurrency
        print(p.label, p.path / "results.json", len(failed), "; ".join(why), detail, asked)
        rows.append((p.index, tput, p.holds))
    knee: int | None = s.knee
    for f in s.findings:
        if f.kind is sweep.FindingKind.INHERITED_CACHE and f.names is not None:
            print(s.point(f.names).label, f.message, knee)
    print("\n".join(s.table()), s.option, s.between)
    return rows
