"""The readers on the recorded evidence: snapshots, Prometheus text, recordings, boot logs,
result files, failures, GPUs, engines, the catalogue and block inference."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from inferlint import (
    benchresult,
    blocks,
    bootlog,
    catalog,
    engines,
    failures,
    gpu,
    prom,
    series,
    telemetry,
)


def test_prom_parse_select_total_single_info() -> None:
    m = prom.parse(
        '# HELP x\nreq_total{engine="0",model="m"} 3\nreq_total{engine="1",model="m"} 4\n'
        'info{num_gpu_blocks="43"} 1\nusage{engine="0"} 0.5\n'
    )
    assert len(m) == 4 and m.has("req_total") and not m.has("absent")
    assert m.names() == {"req_total", "info", "usage"}
    assert m.total("req_total") == 7 and m.total("req_total", engine="1") == 4
    assert m.total("absent") is None
    assert m.single("usage") == 0.5 and m.single("absent") is None
    with pytest.raises(LookupError):
        m.single("req_total")
    assert m.info("info") == {"num_gpu_blocks": "43"}
    s = m.select("req_total", engine="0")[0]
    assert isinstance(s, prom.Sample) and s.labels == (("engine", "0"), ("model", "m"))
    assert s.label("model") == "m" and s.label("x") is None
    assert [x.name for x in m.with_prefix("req")] == ["req_total", "req_total"]


def test_prom_metrics_built_from_samples_keep_them_and_sum_exactly() -> None:
    import copy
    import math
    import pickle

    values = [1e16, 1.0, -1e16, 0.1, 0.2]
    given = [prom.Sample("c", (("r", str(i)), ("e", "0")), v) for i, v in enumerate(values)]
    m = prom.Metrics(given)
    # The very Sample objects come back, in order, from the Rust lookups.
    assert m.select("c", e="0")[1] is given[1]
    assert m.with_prefix("c")[4] is given[4]
    assert list(m) == given and len(m) == 5
    # Exact, as 0.3.1's math.fsum: a left-to-right sum would say 0.30000000000000004.
    assert m.total("c") == math.fsum(values) == 1.3
    assert m.total("c", r="3") == 0.1
    assert m.total("c", r="9") is None and m.total("absent") is None
    with pytest.raises(LookupError, match=r"c matches 5 series \(\{'r': '0', 'e': '0'\}"):
        m.single("c")
    assert m.single("c", r="2") == -1e16
    assert m.info("c", r="1") == {"r": "1", "e": "0"}
    for back in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert list(back) == given and back.total("c") == 1.3
    parsed = prom.parse('c{r="a"} +Inf\nc{r="b"} 1\nd NaN\n')
    assert parsed.total("c") == math.inf
    d = parsed.total("d")
    assert d is not None and math.isnan(d)
    assert parsed.names() == {"c", "d"} and parsed.has("d") and not parsed.has("e")


def test_snapshot_files_round_trip(evidence: Path, tmp_path: Path) -> None:
    s = telemetry.load(evidence / "vllm-0.28/live/after.snapshot.json")
    assert s.t_mono_ns is not None and s.latency_s is not None
    assert s.metrics.total("vllm:num_preemptions_total") is not None
    bare = telemetry.load(evidence / "vllm-0.28/metrics/preempted_after.prom")
    assert bare.url == "file:preempted_after.prom" and bare.t_mono_ns is None
    assert len(bare.metrics) > 300
    s.save(tmp_path / "copy.json")
    again = telemetry.load(tmp_path / "copy.json")
    assert again == s
    assert telemetry.Snapshot.from_json(s.to_json()) == s
    with pytest.raises(ValueError, match="not an inferlint.snapshot/1 document"):
        telemetry.Snapshot.from_json({"schema": "x"})


def test_counter_delta_witness_and_labels(evidence: Path) -> None:
    before = telemetry.load(evidence / "vllm-0.28/live/before.snapshot.json")
    after = telemetry.load(evidence / "vllm-0.28/live/after.snapshot.json")
    assert telemetry.counter_delta(before, after, "vllm:num_preemptions_total") == 22
    assert telemetry.counter_delta(before, after, "no_such_total") is None
    assert telemetry.counter_delta(before, after, "no_such_total", witness="vllm:num_requests_running") == 0
    assert telemetry.counter_delta(before, after, "vllm:num_preemptions_total", engine="9") is None
    assert telemetry.created_changes(before, after) == []


def test_series_read_and_its_samples(evidence: Path) -> None:
    rec = series.read(evidence / "vllm-0.28/live/run.series.jsonl")
    assert rec.header["schema"] == series.SCHEMA and rec.engine is engines.VLLM
    assert len(rec.samples) > 100 and rec.skipped_lines == 0
    first = rec.samples[0]
    assert isinstance(first, series.Sample) and first.t_wall > 1e9
    assert rec.peak_running() == 10
    assert all(u != 0 for u in rec.kv_usages())
    assert len(rec.busy()) == sum(1 for s in rec.samples if s.running)
    assert series.load is series.read
    # The same rows rebuilt in Python read the same.
    again = series.from_samples(rec.samples, dict(rec.header))
    assert again.peak_running() == rec.peak_running() and again.kv_usages() == rec.kv_usages()
    assert again == series.Series(again.header, tuple(rec.samples))


def test_series_skips_damaged_rows(tmp_path: Path) -> None:
    p = tmp_path / "r.series.jsonl"
    p.write_text(
        '{"schema": "inferlint.series/1", "url": "http://x", "interval_s": 0.5}\n'
        '{"t_wall": 1.0, "t_mono_ns": 1, "running": 2, "waiting": 0, "kv_usage": 0.5}\n'
        "garbage\n"
        '{"t_wall": 2.0, "t_mono_ns": 2, "running": null, "waiting": null, "kv_usage": null}\n',
        encoding="utf-8",
    )
    rec = series.read(p)
    assert rec.skipped_lines == 1 and len(rec.samples) == 2
    assert rec.samples[1].running is None  # absent, never zero
    assert rec.peak_running() == 2


def test_series_watch_writes_a_header_and_rows(evidence: Path) -> None:
    snap = telemetry.load(evidence / "vllm-0.28/live/after.snapshot.json")
    out = io.StringIO()
    calls: list[float] = []
    n = series.watch("http://x", out, scrape_fn=lambda _: snap, sleep=calls.append, duration=0.05)
    lines = out.getvalue().splitlines()
    assert n >= 1 and len(lines) == n + 1
    assert json.loads(lines[0])["engine"] == "vllm"
    row = json.loads(lines[1])
    assert row["preemptions"] == snap.metrics.total("vllm:num_preemptions_total")
    assert series.sample_row(snap.metrics, 1.0, 2)["t_mono_ns"] == 2
    assert series.gauges(engines.TRTLLM.metrics)["paused"] == "trtllm_num_paused_requests"


def test_a_data_parallel_recording_from_python_keeps_each_engine(evidence: Path) -> None:
    """The rows are the Rust recorder's: a DP=2 server's per-engine gauges, summed running,
    no single usage reading; TensorRT-LLM's rows carry ``paused`` and no ``preemptions``."""
    text = (evidence / "vllm-0.32-cpu/dp2/load1.prom").read_text(encoding="utf-8")
    snap = telemetry.Snapshot(url="http://x", text=text, t_wall=1.0, t_mono_ns=1)
    out = io.StringIO()
    n = series.watch("http://x", out, scrape_fn=lambda _: snap, sleep=lambda _: None, duration=0.02)
    lines = out.getvalue().splitlines()
    rows = [json.loads(x) for x in lines[1:]]
    assert json.loads(lines[0])["engine"] == "vllm" and n == len(rows) >= 1
    per = rows[0]["engines"]
    assert sorted(per) == ["0", "1"]
    assert rows[0]["running"] == sum(e["running"] for e in per.values())
    assert rows[0]["kv_usage"] is None
    assert series.sample_row(snap.metrics, 1.0, 1) == rows[0]
    trt = telemetry.load(evidence / "trtllm-1.3/qwen3-8b/after.snapshot.json")
    row = series.sample_row(trt.metrics, 1.0, None)
    assert "paused" in row and "preemptions" not in row


def test_bootlog_facts_of_the_live_boot(evidence: Path) -> None:
    f = bootlog.parse_file(evidence / "vllm-0.28/live/boot.log")
    assert (f.attention_block_size, f.kv_pool_tokens) == (784, 26093)
    assert f.cudagraph_actual_gib == 0.18 and f.unparsed == [] and f.ready
    assert f.engine == "vllm" and f.version is not None and f.version.startswith("0.28")
    assert bootlog.untested_version(f) is None
    block = f.result_block()
    assert block["kv_pool_tokens"] == 26093 and block["attention_block_size"] == 784
    assert block["unparsed_lines"] == 0


def test_bootlog_eager_boot_fields_and_the_version_note(evidence: Path) -> None:
    text = (evidence / "vllm-0.28/boot_eager.log").read_text(encoding="utf-8")
    f = bootlog.parse(text)
    assert f.vllm_version == "0.28.0" and f.kv_pool_tokens == 31_554
    assert f.max_concurrency == 1.93 and f.max_concurrency_request_len == 16_384
    assert f.selected_backends == ["FLASH_ATTN"] and f.requested_backend is None
    assert f.cudagraphs is False and f.speculative is False
    assert f.non_default_args is not None and f.non_default_args["max_num_seqs"] == 32
    assert sorted(f.processes) == ["APIServer", "EngineCore"]
    assert f.config_args == f.non_default_args
    newer = bootlog.parse(text.replace("(v0.28", "(v0.99"))
    note = bootlog.untested_version(newer)
    assert note is not None and "0.99" in note and "tested: 0.28, 0.29, 0.30" in note


def test_bootlog_sglang_and_engine_hint(evidence: Path) -> None:
    f = bootlog.parse_file(evidence / "sglang-0.5/capped/boot.log")
    assert f.engine == "sglang" and f.server_args is not None
    assert f.config_args is not None and "random_seed" not in f.config_args
    assert bootlog.parse("plain text\n", "sglang").engine == "sglang"
    assert bootlog.parse("plain text\n").engine is None


def test_bootlog_helpers() -> None:
    line = "(EngineCore pid=3475) ERROR 09-05 23:33:11 [core.py:1348] message"
    assert bootlog.strip_log_prefix(line) == "message"
    assert bootlog.labels(["a/run1/boot.log", "a/run2/boot.log"]) == [
        "run1/boot.log",
        "run2/boot.log",
    ]
    assert bootlog.TESTED_VLLM == ("0.28", "0.29", "0.30")


def test_benchresult_load_and_parse(evidence: Path) -> None:
    b = benchresult.load(evidence / "vllm-0.28/xray/bench.json")
    assert b.completed == 32 and isinstance(b.completed, int)
    assert b.output_tokens == 32000 and b.path.endswith("bench.json")
    p = benchresult.parse({"completed": 3, "total_output_tokens": 9, "backend": "vllm"}, "x")
    assert (p.path, p.completed, p.output_tokens, p.backend, p.failed) == ("x", 3, 9, "vllm", None)


def test_failures_classify(evidence: Path) -> None:
    f = failures.classify_file(evidence / "vllm-0.28/boot_fail_accelerator.log")
    assert f is not None and f.kind is failures.Kind.ACCELERATOR_ERROR
    assert f.phase is failures.Phase.BOOT and f.lineno > 0
    assert f.summary().startswith("accelerator_error during boot: ")
    assert failures.classify("INFO all good\n") is None
    assert failures.shutdown_lineno("a\nb\n") is None


def test_gpu_parse_family(evidence: Path) -> None:
    rows = gpu.parse("0, NVIDIA H200, 143771, 0, 143252, 570.133.20, 9.0\n")
    assert rows == [gpu.GpuInfo(0, "NVIDIA H200", 143771, 0, 143252, "570.133.20", "9.0")]
    assert rows[0].family == "Hopper" and rows[0].to_json()["family"] == "Hopper"
    assert gpu.family("8.9") == "Ada Lovelace" and gpu.family(None) is None
    old = gpu.parse("0, Tesla V100, 16160, 1, 16159, 470.1\n", with_cap=False)
    assert old[0].compute_cap is None
    calls: list[list[str]] = []

    def query(args: list[str]) -> str:
        calls.append(args)
        return "1, NVIDIA A100, 81920, 10, 81910, 550.54, 8.0\n"

    assert gpu.read_gpus(query)[0].family == "Ampere" and "compute_cap" in calls[0][0]


def test_engines_detection() -> None:
    assert engines.by_key("sglang") is engines.SGLANG and engines.by_key(None) is engines.VLLM
    assert engines.parse_key("TensorRT-LLM") is engines.TRTLLM and engines.parse_key("x") is None
    assert engines.from_names(["sglang:num_running_reqs"]) is engines.SGLANG
    assert engines.named_by(["other"]) is None and engines.from_names([]) is engines.VLLM
    assert engines.from_command("env X=1 /usr/bin/vllm serve m") is engines.VLLM
    assert engines.from_command(["python", "-m", "sglang.launch_server"]) is engines.SGLANG
    assert engines.from_command("vllm bench serve") is None and engines.from_command(None) is None
    assert engines.from_log("[TensorRT-LLM] loaded") is engines.TRTLLM
    assert engines.from_log("nothing") is None
    assert engines.SGLANG.witness("sglang:num_retracted_requests_total") == "sglang:num_retracted_reqs"
    assert engines.ENV_VAR == "INFERLINT_ENGINE" and len(engines.ENGINES) == 4
    assert engines.from_command("llama-server -m m.gguf --metrics") is engines.LLAMACPP
    assert engines.from_log("0.00.282.121 I srv  llama_server: listening on http://x") is engines.LLAMACPP
    assert engines.LLAMACPP.metrics.request_success is None and engines.LLAMACPP.default_port == 8080


def test_catalog() -> None:
    assert sorted(catalog.TRIPWIRES, key=lambda k: int(k[1:])) == [f"T{i}" for i in range(1, 28)]
    t1 = catalog.lookup("silent-preemption")
    assert t1 is catalog.TRIPWIRES["T1"] and catalog.lookup("t1") is t1
    assert t1.name == "Silent preemption" and t1.what and t1.why and t1.command
    assert catalog.lookup("nothing") is None
    assert "sglang" in catalog.ENGINE_NOTES["T1"]


def test_blocks_infer_and_predict() -> None:
    inf = blocks.infer_blocks([k / 42 for k in range(1, 9)])
    assert (inf.blocks, inf.distinct, inf.trusted, inf.reason) == (42, 8, True, "ok")
    few = blocks.infer_blocks([1 / 42, 2 / 42])
    assert not few.trusted and few.reason.startswith("only 2 distinct readings")
    assert blocks.infer_blocks([]).blocks is None
    assert blocks.infer_blocks([1 / 65521, 1 / 65519]).blocks is None  # two primes: N too large
    small = blocks.infer_blocks([k / 42 for k in range(1, 9)], max_blocks=40)
    assert small.blocks is None
    assert blocks.predict_concurrency(0.125, 1) == 8
    assert blocks.predict_concurrency(0.25, 2, usable_blocks=42) == 8
    with pytest.raises(ValueError):
        blocks.predict_concurrency(0.0, 1)
