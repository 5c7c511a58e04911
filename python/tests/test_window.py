"""T16 to T26 from Python on the real vLLM 0.32 CPU recordings
(tests/fixtures/vllm-0.32-cpu/field/): each check gives the verdict ``inferlint window`` gives on
the same files, in both directions, and a one-number mutation flips it."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

from inferlint import Status, benchresult, checks, telemetry
from inferlint._binary import find
from inferlint.telemetry import Snapshot

FIELD = "vllm-0.32-cpu/field"


def snap(evidence: Path, rel: str) -> Snapshot:
    return telemetry.load(evidence / FIELD / rel)


def command(evidence: Path, rel: str) -> str:
    return (evidence / FIELD / rel).read_text().strip()


def cli(evidence: Path, before: str, after: str, result: str, cmd: str) -> list[dict[str, object]]:
    exe = find()
    assert exe is not None, "the inferlint program is not installed beside the package"
    base = evidence / FIELD
    argv = [exe, "window", str(base / before), str(base / after), "--json"]
    argv += ["--bench-result", str(base / result), "--", *command(evidence, cmd).split()]
    out = subprocess.run(argv, capture_output=True, text=True)
    assert out.returncode in (0, 1, 2), out.stderr
    return list(json.loads(out.stdout))


def same_as_cli(results: list[object], cli_results: list[dict[str, object]]) -> None:
    for r, c in zip(results, cli_results, strict=True):
        assert (r.tripwire, r.status.value, r.message) == (  # type: ignore[attr-defined]
            c["tripwire"],
            c["status"],
            c["message"],
        )


def test_the_second_seeded_load_fails_t16_as_the_cli_says(evidence: Path) -> None:
    for before, after, name, status in [
        ("before.prom", "mid.prom", "first", Status.PASS),
        ("mid.prom", "after.prom", "second", Status.FAIL),
    ]:
        b, a = snap(evidence, f"cache-twice/{before}"), snap(evidence, f"cache-twice/{after}")
        bench = benchresult.load(evidence / FIELD / f"cache-twice/{name}.json")
        load = command(evidence, f"cache-twice/{name}.cmd.txt")
        rs = [
            checks.check_prompts_fresh(b, a, load, completed=bench.completed),
            checks.check_requests_finished(bench, b, a),
            checks.check_outputs_full_length(load, bench, b, a),
            # The result has per-request TTFTs (--save-detailed): `window` decides T20 too.
            checks.check_warmup_outside_window(bench),
            # Per-request streams (T23) and a prompt length asked (T24) too.
            checks.check_itl_per_token(bench),
            checks.check_prompt_lengths(b, a, load, bench),
        ]
        assert rs[0].status == status, rs[0].message
        cli_rs = cli(
            evidence,
            f"cache-twice/{before}",
            f"cache-twice/{after}",
            f"cache-twice/{name}.json",
            f"cache-twice/{name}.cmd.txt",
        )
        same_as_cli(list(rs), cli_rs)


def test_refused_prompts_fail_t17_and_a_clean_result_does_not(evidence: Path) -> None:
    b, a = snap(evidence, "failed/before.prom"), snap(evidence, "failed/mid.prom")
    bench = benchresult.load(evidence / FIELD / "failed/overlong.json")
    r = checks.check_requests_finished(bench, b, a)
    assert r.status == Status.FAIL
    assert r.evidence["failed"] == 8
    cli_rs = cli(
        evidence, "failed/before.prom", "failed/mid.prom", "failed/overlong.json", "failed/overlong.cmd.txt"
    )
    same_as_cli([r], cli_rs[1:2])
    # Mutation: no failure on either side, and the client completed all 8.
    clean = dataclasses.replace(bench, completed=8, failed=0)
    assert checks.check_requests_finished(clean, b, b).status == Status.PASS


def test_end_of_sequence_stops_warn_t18(evidence: Path) -> None:
    b, a = snap(evidence, "eos/before.prom"), snap(evidence, "eos/after.prom")
    bench = benchresult.load(evidence / FIELD / "eos/natural.json")
    load = command(evidence, "eos/natural.cmd.txt")
    r = checks.check_outputs_full_length(load, bench, b, a)
    assert r.status == Status.WARN, r.message
    assert bench.output_lens == (89, 46, 4, 42, 70, 200, 132, 27)
    cli_rs = cli(evidence, "eos/before.prom", "eos/after.prom", "eos/natural.json", "eos/natural.cmd.txt")
    same_as_cli([r], cli_rs[2:3])
    # Mutation: the same stops under --ignore-eos fail.
    assert checks.check_outputs_full_length(load + " --ignore-eos", bench, b, a).status == Status.FAIL


def test_ngram_speculation_on_random_prompts_warns_t19(evidence: Path) -> None:
    from inferlint import bootlog

    b, a = snap(evidence, "spec-ngram/before.prom"), snap(evidence, "spec-ngram/after.prom")
    facts = bootlog.parse_file(evidence / FIELD / "spec-ngram/boot.log")
    load = command(evidence, "spec-ngram/load.cmd.txt")
    r = checks.check_speculation_transfers(b, a, load, facts)
    assert r.status == Status.WARN, r.message
    assert r.evidence["draft_tokens"] == 59
    base = evidence / FIELD
    exe = find()
    assert exe is not None
    out = subprocess.run(
        [exe, "window", str(base / "spec-ngram/before.prom"), str(base / "spec-ngram/after.prom"), "--json", "--", *load.split()],
        capture_output=True,
        text=True,
    )
    t19 = [x for x in json.loads(out.stdout) if x["tripwire"] == "T19"]
    assert [(x["status"], x["message"]) for x in t19][0][1].startswith("speculative decoding accepted 0 of 59")
    assert t19[0]["status"] == "warn"


def by_code(results: list[dict[str, object]], code: str) -> dict[str, object]:
    return next(x for x in results if x["tripwire"] == code)


def test_the_first_wave_passes_t20_and_a_compile_line_while_serving_fails(evidence: Path) -> None:
    bench = benchresult.load(evidence / FIELD / "warmup/cold.json")
    assert len(bench.ttfts) == 8 and len(bench.start_times) == 8
    r = checks.check_warmup_outside_window(bench)
    c = by_code(cli(evidence, "warmup/before.prom", "warmup/mid.prom", "warmup/cold.json", "warmup/cold.cmd.txt"), "T20")
    assert (r.tripwire, r.status.value, r.message) == (c["tripwire"], c["status"], c["message"])
    assert r.status == Status.PASS, r.message
    # Mutation: one compile line in what a run saw during the load fails.
    seen = {"warmup_work": ["Compiling a graph for compile range (1, 2048) takes 36.17 s"]}
    assert checks.check_warmup_outside_window(bench, observed=seen).status == Status.FAIL


def test_the_throttled_client_fails_t21_as_the_cli_says(evidence: Path) -> None:
    for name, status in [("paced", Status.FAIL), ("unthrottled", Status.PASS)]:
        bench = benchresult.load(evidence / FIELD / f"client-paced/{name}.json")
        load = command(evidence, f"client-paced/{name}.cmd.txt")
        r = checks.check_client_kept_pace(load, bench)
        assert r.status == status, r.message
        before = "before.prom" if name == "paced" else "unthrottled-before.prom"
        after = "after.prom" if name == "paced" else "unthrottled-after.prom"
        c = by_code(
            cli(evidence, f"client-paced/{before}", f"client-paced/{after}", f"client-paced/{name}.json", f"client-paced/{name}.cmd.txt"),
            "T21",
        )
        assert (r.tripwire, r.status.value, r.message) == (c["tripwire"], c["status"], c["message"])
    # Mutation: the rate asked for 94 requests/s instead of 100 is kept.
    paced = benchresult.load(evidence / FIELD / "client-paced/paced.json")
    load = command(evidence, "client-paced/paced.cmd.txt").replace("--request-rate 100", "--request-rate 94")
    assert checks.check_client_kept_pace(load, paced).status == Status.PASS
    # A run's measured CPU: a saturated client warns.
    cpu = {"client_cpu": {"busy_s": 10.0, "tree_cpu_s": 9.7, "hottest_cpu_s": 9.7, "hottest": "python3"}}
    assert checks.check_client_kept_pace(None, None, observed=cpu).status == Status.WARN


def test_one_engine_carrying_a_data_parallel_load_warns_t22_as_the_cli_says(evidence: Path) -> None:
    for name, status in [("pinned", Status.WARN), ("even", Status.PASS)]:
        b = snap(evidence, f"dp2-balance/{name}-before.prom")
        a = snap(evidence, f"dp2-balance/{name}-after.prom")
        r = checks.check_engines_balanced(b, a)
        assert r.status == status, r.message
        c = by_code(
            cli(evidence, f"dp2-balance/{name}-before.prom", f"dp2-balance/{name}-after.prom", f"dp2-balance/{name}.json", f"dp2-balance/{name}.cmd.txt"),
            "T22",
        )
        assert (r.tripwire, r.status.value, r.message) == (c["tripwire"], c["status"], c["message"])
    # A server of one engine cannot tell.
    one = snap(evidence, "tokenizer/matching-after.prom")
    assert checks.check_engines_balanced(one, one).status == Status.UNKNOWN


def test_chunked_streams_warn_t23_as_the_cli_says(evidence: Path) -> None:
    from inferlint import bootlog

    facts = bootlog.parse_file(evidence / FIELD / "spec-ngram/boot.log")
    chunked = benchresult.load(evidence / FIELD / "spec-ngram/repetitive.json")
    r = checks.check_itl_per_token(chunked, facts)
    assert r.status == Status.WARN, r.message
    assert r.evidence["chunks"] == 45
    c = by_code(
        cli(evidence, "spec-ngram/repetitive-before.prom", "spec-ngram/repetitive-after.prom", "spec-ngram/repetitive.json", "spec-ngram/repetitive.cmd.txt"),
        "T23",
    )
    # The CLI's window reads no boot log, so it names no cause.
    assert (r.tripwire, r.status.value) == (c["tripwire"], c["status"])
    assert checks.check_itl_per_token(chunked).message == c["message"]
    plain = benchresult.load(evidence / FIELD / "spec-ngram/load.json")
    assert checks.check_itl_per_token(plain, facts).status == Status.PASS
    # Mutation: each request's stream in a third of its chunks.
    cut = dataclasses.replace(plain, chunks=tuple(c / 3 for c in plain.chunks))
    assert checks.check_itl_per_token(cut).status == Status.WARN


def test_a_client_tokenizer_not_the_servers_warns_t24_as_the_cli_says(evidence: Path) -> None:
    for name, status in [("mismatch", Status.WARN), ("matching", Status.PASS)]:
        b = snap(evidence, f"tokenizer/{name}-before.prom")
        a = snap(evidence, f"tokenizer/{name}-after.prom")
        bench = benchresult.load(evidence / FIELD / f"tokenizer/{name}.json")
        load = command(evidence, f"tokenizer/{name}.cmd.txt")
        r = checks.check_prompt_lengths(b, a, load, bench)
        assert r.status == status, r.message
        c = by_code(
            cli(evidence, f"tokenizer/{name}-before.prom", f"tokenizer/{name}-after.prom", f"tokenizer/{name}.json", f"tokenizer/{name}.cmd.txt"),
            "T24",
        )
        assert (r.tripwire, r.status.value, r.message) == (c["tripwire"], c["status"], c["message"])
    # Mutation: the matching load had asked for 140-token prompts.
    load = command(evidence, "tokenizer/matching.cmd.txt").replace("--random-input-len 100", "--random-input-len 140")
    b = snap(evidence, "tokenizer/matching-before.prom")
    a = snap(evidence, "tokenizer/matching-after.prom")
    assert checks.check_prompt_lengths(b, a, load).status == Status.WARN


def test_batches_beyond_the_captured_graphs_warn_t25_as_the_cli_says(evidence: Path) -> None:
    from inferlint import bootlog, series

    run = evidence / "vllm-0.28/live"
    rec = series.read(run / "run.series.jsonl")
    facts = bootlog.parse_file(run / "boot.log")
    r = checks.check_graph_batches(rec, facts)
    assert r.status == Status.PASS, r.message
    exe = find()
    assert exe is not None
    out = subprocess.run(
        [exe, "series", str(run / "run.series.jsonl"), "--boot-log", str(run / "boot.log"), "--json"],
        capture_output=True,
        text=True,
    )
    c = by_code(json.loads(out.stdout), "T25")
    assert (r.tripwire, r.status.value, r.message) == (c["tripwire"], c["status"], c["message"])
    # Mutation: graphs captured up to 8 only.
    small = bootlog.parse((run / "boot.log").read_text().replace("'max_cudagraph_capture_size': 64", "'max_cudagraph_capture_size': 8", 1))
    assert checks.check_graph_batches(rec, small).status == Status.WARN
    assert checks.check_graph_batches(rec).status == Status.UNKNOWN


def test_kv_offloading_that_never_loads_back_warns_t26_as_the_cli_says(evidence: Path) -> None:
    # The simulated vLLM's offloading counters (the CPU build refuses offloading).
    kv = evidence / "sim-kv-offload"
    exe = find()
    assert exe is not None
    for case, want in (("never-loads", Status.WARN), ("loads-back", Status.PASS)):
        before = telemetry.load(kv / case / "before.snapshot.json")
        after = telemetry.load(kv / case / "after.snapshot.json")
        r = checks.check_kv_offload(before, after)
        assert r.status == want, r.message
        argv = [exe, "window", str(kv / case / "before.snapshot.json"), str(kv / case / "after.snapshot.json")]
        out = subprocess.run([*argv, "--json", "--", "vllm", "bench", "serve"], capture_output=True, text=True)
        c = by_code(json.loads(out.stdout), "T26")
        assert (r.tripwire, r.status.value, r.message) == (c["tripwire"], c["status"], c["message"])
    # Mutation: one load-counter line, as vLLM creates it at the first load back.
    after = telemetry.load(kv / "never-loads" / "after.snapshot.json")
    line = 'vllm:kv_offload_load_bytes_total{engine="0",model_name="Qwen/Qwen3-0.6B"} 1835008.0\n'
    loaded = dataclasses.replace(after, text=after.text + line, _metrics=[], _parsed=[])
    before = telemetry.load(kv / "never-loads" / "before.snapshot.json")
    assert checks.check_kv_offload(before, loaded).status == Status.PASS
    # No offloading: not applicable.
    plain = snap(evidence, "tokenizer/matching-after.prom")
    assert checks.check_kv_offload(plain, plain).status == Status.NOT_APPLICABLE


def test_a_power_capped_gpu_warns_t27_as_the_run_said(evidence: Path) -> None:
    # The run on the simulated GPU at its power limit: run.json's clock readings, results.json's T27.
    run = evidence / "sim-gpu-clocks" / "sw-power-cap"
    seen = json.loads((run / "run.json").read_text())["during_load"]
    r = checks.check_gpu_clocks(seen)
    c = by_code(json.loads((run / "results.json").read_text()), "T27")
    assert (r.tripwire, r.status.value, r.message) == (c["tripwire"], c["status"], c["message"])
    assert r.status == Status.WARN
    # Mutation: the readings' reasons cleared (no power cap): a pass.
    free = {**seen, "gpu_clocks": [{**s, "reasons": 0} for s in seen["gpu_clocks"]]}
    assert checks.check_gpu_clocks(free).status == Status.PASS
    assert checks.check_gpu_clocks({}).status == Status.UNKNOWN
    # Every reading failed: can't tell, and why.
    failed = checks.check_gpu_clocks({"gpu_clocks_error": "nvidia-smi failed: exit 9"})
    assert failed.status == Status.UNKNOWN
    assert failed.message == "no GPU clock reading during the load: nvidia-smi failed: exit 9"
    # The NVML reader's readings of a thermally throttled card (built from NVML's documentation).
    hot = json.loads((evidence / "gpu-clocks" / "nvml-thermal.json").read_text())
    r = checks.check_gpu_clocks({"gpu_clocks": hot})
    assert r.status == Status.WARN
    assert "(SwThermalSlowdown, HwThermalSlowdown) on 4 of its 18" in r.message
    assert "at up to 91 °C" in r.message
