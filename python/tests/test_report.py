"""The HTML report from Python: the results of every tripwire the files allow, and the page."""

from __future__ import annotations

from pathlib import Path

from inferlint import Status, benchresult, report, series, telemetry


def test_build_and_render_the_live_run(evidence: Path) -> None:
    run = evidence / "vllm-0.28/xray"
    rep = report.build(
        boot_logs=[run / "boot.log"],
        before=telemetry.load(run / "before.snapshot.json"),
        after=telemetry.load(run / "after.snapshot.json"),
        series=series.read(run / "run.series.jsonl"),
        requested=32,
        bench=benchresult.load(run / "bench.json"),
        sources=["xray"],
    )
    t1 = rep.result("T1")
    assert t1 is not None and (t1.status, t1.message) == (Status.FAIL, "21 preemptions during the run")
    t8 = rep.result("T8")
    assert t8 is not None and t8.status is Status.FAIL
    assert rep.usable_blocks == 42
    assert rep.summary.preemptions == 21 and rep.summary.readings
    assert rep.boots and rep.boots[0][1].kv_pool_tokens == 26093
    assert rep.engine.key == "vllm" and rep.title.startswith("vLLM")
    page = report.render(rep)
    assert page.startswith("<!DOCTYPE html>") or page.lower().startswith("<!doctype html>")
    assert "21 preemptions during the run" in page
    fragment = report.render(rep, standalone=False)
    assert fragment.startswith("<title>")


def test_a_report_of_nothing_says_so(tmp_path: Path) -> None:
    rep = report.build(title="empty")
    assert rep.title == "empty"
    assert all(r.status is not Status.PASS for r in rep.results)
    assert "empty" in report.render(rep)
