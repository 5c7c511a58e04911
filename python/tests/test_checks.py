"""The tripwires on the recorded evidence, both verdicts of each, with the numbers the Rust
tests pin (tests/checks_evidence.rs, tests/bootlog_evidence.rs) and the same mutations: one
number or line of real evidence changed, verdict flipped."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from inferlint import (
    CheckResult,
    Status,
    TripwireFailed,
    benchresult,
    bootlog,
    checks,
    engines,
    series,
    telemetry,
)
from inferlint.telemetry import Snapshot


def snap(evidence: Path, rel: str) -> Snapshot:
    return telemetry.load(evidence / rel)


def edited(s: Snapshot, old: str, new: str) -> Snapshot:
    assert s.text.count(old) == 1, f"{old!r} must occur once in {s.url}"
    return dataclasses.replace(s, text=s.text.replace(old, new), _metrics=[], _parsed=[])


def without_metric(s: Snapshot, name: str) -> Snapshot:
    kept = [ln for ln in s.text.splitlines() if ln.split("{")[0].split(" ")[0] != name]
    assert len(kept) < len(s.text.splitlines()), f"{name} not in {s.url}"
    return dataclasses.replace(s, text="\n".join(kept) + "\n", _metrics=[], _parsed=[])


# ----------------------------------------------------------------------------- T1


def test_t1_live_fails_with_22_preemptions_and_passes_on_one_snapshot(evidence: Path) -> None:
    before = snap(evidence, "vllm-0.28/live/before.snapshot.json")
    after = snap(evidence, "vllm-0.28/live/after.snapshot.json")
    r = checks.check_no_preemption(before, after)
    assert isinstance(r, CheckResult)
    assert (r.tripwire, r.status, r.message) == ("T1", Status.FAIL, "22 preemptions during the run")
    assert r.evidence["preemptions"] == 22
    assert r.evidence["series"] == "vllm:num_preemptions_total"
    assert r.evidence["engine"] == "vllm"
    assert not r.ok
    with pytest.raises(TripwireFailed) as e:
        r.raise_for_status()
    assert str(e.value) == "[T1] TRIPWIRE-FAILED: 22 preemptions during the run"
    assert e.value.result is r
    same = checks.check_no_preemption(after, after)
    assert (same.status, same.message) == (Status.PASS, "no preemptions")
    same.raise_for_status()


def test_t1_mutations_of_the_counter(evidence: Path) -> None:
    before = snap(evidence, "vllm-0.28/metrics/preempted_before.prom")
    after = snap(evidence, "vllm-0.28/metrics/preempted_after.prom")
    r = checks.check_no_preemption(before, after)
    assert (r.status, r.message) == (Status.FAIL, "60 preemptions during the run")

    def line(v: str) -> str:
        return f'vllm:num_preemptions_total{{engine="0",model_name="qwen38"}} {v}'

    r = checks.check_no_preemption(before, edited(after, line("166.0"), line("106.0")))
    assert (r.status, r.message) == (Status.PASS, "no preemptions")
    r = checks.check_no_preemption(before, without_metric(after, "vllm:num_preemptions_total"))
    assert r.status is Status.UNKNOWN
    assert r.message == (
        "vllm:num_preemptions_total absent from a snapshot; preemption cannot be ruled out"
    )
    with pytest.raises(TripwireFailed):
        r.raise_for_status()
    r.raise_for_status(allow_unknown=True)
    r = checks.check_no_preemption(before, edited(after, line("166.0"), line("100.0")))
    assert r.status is Status.FAIL
    assert r.message == (
        "vllm:num_preemptions_total went down (106 -> 100); counters only reset on restart"
    )
    assert r.evidence["restarted"] is True


def test_t1_restart_by_moved_created_stamps(evidence: Path) -> None:
    before = snap(evidence, "vllm-0.28/metrics/restart_before.prom")
    after = snap(evidence, "vllm-0.28/metrics/restart_after.prom")
    assert len(telemetry.created_changes(before, after)) == 41
    with pytest.raises(telemetry.ServerRestarted) as e:
        telemetry.counter_delta(before, after, "vllm:generation_tokens_total")
    assert e.value.evidence["created_changed"] == 41
    r = checks.check_no_preemption(before, after)
    assert r.status is Status.FAIL
    assert r.message.startswith("server restarted between snapshots (41 *_created stamps moved")
    assert r.evidence["restarted"] is True


def test_t1_trtllm_from_the_log_the_gauge_or_the_policy(evidence: Path) -> None:
    before = snap(evidence, "trtllm-1.3/qwen3-8b/before.snapshot.json")
    after = snap(evidence, "trtllm-1.3/qwen3-8b/after.snapshot.json")
    rec = series.read(evidence / "trtllm-1.3/qwen3-8b/run.series.jsonl")
    facts = bootlog.parse_file(evidence / "trtllm-1.3/qwen3-8b/boot.log")
    assert facts.engine == "trtllm"
    with_log = checks.check_no_preemption(before, after, rec, facts)
    assert with_log.evidence["engine"] == "trtllm"
    assert with_log.status in (Status.PASS, Status.FAIL)
    # The same files without the log's pause count: the recording alone cannot say "none".
    no_log = dataclasses.replace(facts, pauses=None)
    r = checks.check_no_preemption(before, after, rec, no_log)
    assert r.status in (Status.UNKNOWN, Status.PASS, Status.FAIL)
    assert r.evidence["preemptions"] is None or r.status is not Status.PASS
    paused = dataclasses.replace(facts, pauses=3, served_in_log=32)
    r = checks.check_no_preemption(before, after, rec, paused)
    assert r.status is Status.FAIL
    assert r.message.startswith("3 requests paused for recompute during the run")
    none = dataclasses.replace(facts, pauses=0, served_in_log=32)
    r = checks.check_no_preemption(before, after, rec, none)
    assert r.status is Status.PASS


# ----------------------------------------------------------------------------- T8 T9 T14


def test_live_t14_t9_t8(evidence: Path) -> None:
    rec = series.read(evidence / "vllm-0.28/live/run.series.jsonl")
    after = snap(evidence, "vllm-0.28/live/after.snapshot.json")
    t14 = checks.check_null_block(rec, after)
    assert (t14.status, t14.message) == (
        Status.PASS,
        "gauge denominator is 42 = num_gpu_blocks (43) - 1 null block",
    )
    assert t14.evidence["reported_num_gpu_blocks"] == 43
    assert t14.evidence["inferred_usable_blocks"] == 42
    t9 = checks.concurrency_ceiling(rec, 42)
    assert t9.status is Status.WARN
    assert t9.message == (
        "ceiling moved between 7 and 10 as requests grew (one request held 9.5% to 14.3% of "
        "the cache); concurrency was not a constant of this run"
    )
    assert abs(t9.evidence["blocks_per_request_min"] - 4.0) < 0.05
    assert t9.evidence["usable_blocks"] == 42
    assert t9.evidence["ceiling_max"] == 10
    t8 = checks.check_concurrency_reached(rec, 32)
    assert (t8.status, t8.message) == (
        Status.FAIL,
        "requested 32 concurrent, server never ran more than 10",
    )
    assert t8.evidence["peak_running"] == 10
    assert checks.check_concurrency_reached(rec, 10).status is Status.PASS


def test_ladder_t8_boundary_t9_t14_and_the_boot_line(evidence: Path) -> None:
    rec = series.read(evidence / "vllm-0.28/series/ladder.series.jsonl")
    snapshot = snap(evidence, "vllm-0.28/series/ladder_snapshot.prom")
    assert checks.check_concurrency_reached(rec, 32).status is Status.FAIL
    r = checks.check_concurrency_reached(rec, 4)
    assert (r.status, r.message) == (Status.PASS, "reached 4 running (requested 4)")
    r = checks.check_concurrency_reached(rec, 5)
    assert r.message == "requested 5 concurrent, server never ran more than 4"
    t14 = checks.check_null_block(rec, snapshot)
    assert t14.message == "gauge denominator is 52 = num_gpu_blocks (53) - 1 null block"
    t9 = checks.concurrency_ceiling(rec, 52)
    assert t9.status is Status.PASS
    assert (t9.evidence["ceiling_min"], t9.evidence["ceiling_max"]) == (4, 4)
    facts = bootlog.parse_file(evidence / "vllm-0.28/boot_eager.log")
    r = checks.check_concurrency_reached(rec, 4, facts)
    assert r.status is Status.PASS
    assert r.evidence["boot_line_max_concurrency"] == 1.93
    assert r.evidence["boot_line_request_len"] == 16_384


def test_t14_label_mutations_flip_it(evidence: Path) -> None:
    rec = series.read(evidence / "vllm-0.28/series/blocks.series.jsonl")
    snapshot = snap(evidence, "vllm-0.28/series/blocks_snapshot.prom")
    r = checks.check_null_block(rec, snapshot)
    assert (r.status, r.message) == (
        Status.PASS,
        "gauge denominator is 44 = num_gpu_blocks (45) - 1 null block",
    )
    wrong = edited(snapshot, 'num_gpu_blocks="45"', 'num_gpu_blocks="44"')
    r = checks.check_null_block(rec, wrong)
    assert r.status is Status.FAIL
    assert "expected num_gpu_blocks - 1 = 43" in r.message
    gone = edited(snapshot, 'num_gpu_blocks="45"', 'num_gpu_blocks_x="45"')
    assert checks.check_null_block(rec, gone).status is Status.UNKNOWN


def test_t9_from_a_series_built_in_python() -> None:
    s = series.from_samples(
        [
            series.Sample(t_wall=float(i), t_mono_ns=None, running=2.0, waiting=0.0, kv_usage=0.25)
            for i in range(6)
        ]
    )
    r = checks.concurrency_ceiling(s)
    assert (r.status, r.evidence["ceiling_min"], r.evidence["ceiling_max"]) == (Status.PASS, 8, 8)
    grown = series.from_samples(
        [*s.samples, series.Sample(7.0, None, running=2.0, waiting=0.0, kv_usage=0.5)]
    )
    # The ceiling moved from 8 to 4 with 2 running: it could bind only where 4 were asked for.
    assert checks.concurrency_ceiling(grown, requested=4).status is Status.WARN
    above = checks.concurrency_ceiling(grown)
    assert above.status is Status.PASS
    assert above.message.endswith("it never limited this run"), above.message
    empty = series.from_samples([])
    assert checks.concurrency_ceiling(empty).status is Status.UNKNOWN
    assert checks.check_concurrency_reached(empty, 4).status is Status.UNKNOWN


def test_does_not_apply() -> None:
    r = checks.does_not_apply("T14", engines.SGLANG)
    assert r is not None and r.status is Status.NOT_APPLICABLE and r.ok
    assert r.message == "does not apply to SGLang: T14 is about vLLM's reserved null block"
    assert checks.does_not_apply("T14", engines.VLLM) is None
    assert checks.does_not_apply("T8", engines.TRTLLM) is None


# ----------------------------------------------------------------------------- T10 T15


def test_t10_rate_span_and_the_integer_second_comparison(evidence: Path) -> None:
    before = snap(evidence, "vllm-0.28/live/before.snapshot.json")
    after = snap(evidence, "vllm-0.28/live/after.snapshot.json")
    r = checks.precise_rate(before, after)
    assert (r.status, r.message) == (Status.PASS, "341.44 tokens/s over 93.720s")
    assert r.evidence["tokens"] == 32000
    assert abs(r.evidence["span_s"] - 93.72) <= 0.01
    span, unc = telemetry.span_s(before, after)
    assert abs(span - r.evidence["span_s"]) < 1e-9 and unc < 0.02
    assert checks.with_timer_comparison(r).message == (
        "341.44 tokens/s over 93.720s; an integer-second timer would say 344.09 (+0.77%)"
    )
    bare_b = snap(evidence, "vllm-0.28/metrics/preempted_before.prom")
    bare_a = snap(evidence, "vllm-0.28/metrics/preempted_after.prom")
    r = checks.precise_rate(bare_b, bare_a)
    assert (r.status, r.message) == (
        Status.UNKNOWN,
        "snapshots carry no clock (bare Prometheus text); no span available",
    )
    assert checks.with_timer_comparison(r) == r


def test_t15_agrees_and_mutations_of_completed_flip_it(evidence: Path) -> None:
    before = snap(evidence, "vllm-0.28/xray/before.snapshot.json")
    after = snap(evidence, "vllm-0.28/xray/after.snapshot.json")
    b = benchresult.load(evidence / "vllm-0.28/xray/bench.json")
    assert (b.completed, b.output_tokens) == (32, 32000)
    r = checks.check_client_server_agree(b, before, after)
    assert (r.status, r.message) == (
        Status.PASS,
        "client and server agree: 32 requests, 32,000 output tokens",
    )
    for key in (
        "client_completed",
        "client_failed",
        "client_output_tokens",
        "server_finished",
        "server_output_tokens",
        "expected_extra_requests",
        "extra_requests",
        "extra_output_tokens",
        "result_file",
    ):
        assert key in r.evidence, key
    r = checks.check_client_server_agree(dataclasses.replace(b, completed=30), before, after)
    assert (r.status, r.message) == (
        Status.FAIL,
        "the server finished 2 more requests than the load tool sent; other traffic shared "
        "the server during the run",
    )
    r = checks.check_client_server_agree(dataclasses.replace(b, completed=33), before, after)
    assert r.message == "the load tool counted 1 more completed request than the server finished"
    r = checks.check_client_server_agree(dataclasses.replace(b, completed=None), before, after)
    assert r.status is Status.UNKNOWN
    r = checks.check_client_server_agree(
        dataclasses.replace(b, output_tokens=31_000), before, after
    )
    assert r.status is Status.WARN
    r = checks.check_client_server_agree(
        b, before, without_metric(after, "vllm:request_success_total")
    )
    assert (r.status, r.message) == (Status.UNKNOWN, "a server counter is missing from a snapshot")
    r = checks.check_client_server_agree(
        dataclasses.replace(b, completed=30), before, after, expected_extra_requests=2
    )
    assert r.status is Status.PASS


# ----------------------------------------------------------------------------- boot logs


def test_t5_t6_t12_on_the_live_boot_and_mutations(evidence: Path) -> None:
    text = (evidence / "vllm-0.28/boot_eager.log").read_text(encoding="utf-8")
    facts = bootlog.parse(text)
    r = checks.check_block_size(facts)
    assert r.status is Status.WARN and r.evidence["block_size"] == 784
    small = bootlog.parse(text.replace("block size to 784 tokens", "block size to 16 tokens"))
    r = checks.check_block_size(small)
    assert (r.status, r.message) == (Status.PASS, "block size 16")
    assert checks.check_block_size(facts, default=784).status is Status.PASS
    r = checks.check_backend_honoured(facts)
    assert r.status is Status.PASS and r.message.startswith("nothing to check: ")
    assert checks.check_boot_failure(text).status is Status.PASS
    assert checks.check_boot_failure(text).message == "no failure in log"


def test_t6_spec_backend_override(evidence: Path) -> None:
    facts = bootlog.parse_file(evidence / "vllm-0.28/boot_spec_backend_override.log")
    assert facts.requested_backend == "TRITON_ATTN"
    r = checks.check_backend_honoured(facts)
    assert r.status is Status.FAIL, r
    honoured = dataclasses.replace(facts, drafter_backends=["TRITON_ATTN"])
    assert checks.check_backend_honoured(honoured).status is Status.PASS


def test_t12_and_t7_on_failed_boots(evidence: Path) -> None:
    text = (evidence / "vllm-0.28/boot_fail_accelerator.log").read_text(encoding="utf-8")
    r = checks.check_boot_failure(text)
    assert (r.tripwire, r.status) == ("T12", Status.FAIL)
    assert r.evidence["kind"] == "accelerator_error"
    assert r.evidence["phase"] == "boot"
    assert isinstance(r.evidence["lineno"], int) and r.evidence["line"]


def test_t4_t11_same_flags_different_pools(evidence: Path) -> None:
    lo = bootlog.parse_file(evidence / "vllm-0.28/boot_pool_level_lo.log")
    hi = bootlog.parse_file(evidence / "vllm-0.28/boot_pool_level_hi.log")
    [t4] = checks.check_same_pool([lo, hi], ["lo", "hi"])
    assert t4.tripwire == "T4" and t4.status is Status.WARN, t4
    assert set(t4.evidence["pools"]) == {"lo", "hi"}
    [same] = checks.check_same_pool([lo, lo])
    assert same.status is Status.PASS and set(same.evidence["pools"]) == {"boot0", "boot1"}
    [t11] = checks.check_kv_memory_stable([lo, hi], ["lo", "hi"])
    assert t11.tripwire == "T11" and t11.status is Status.WARN, t11
    [t11] = checks.check_kv_memory_stable([lo, lo])
    assert t11.status is Status.PASS
    other = dataclasses.replace(hi, non_default_args={**(hi.non_default_args or {}), "x": 1})
    assert checks.check_same_pool([lo, other]) == []


def test_running_cap(evidence: Path) -> None:
    facts = bootlog.parse_file(evidence / "vllm-0.28/boot_eager.log")
    assert checks.running_cap(facts) == (
        32,
        "the server runs at most 32 at once (--max-num-seqs 32)",
    )
    assert checks.running_cap(None) is None
    assert checks.running_cap(dataclasses.replace(facts, non_default_args={})) is None
