"""``inferlint.xray``, 0.3.1's whole-run API: the helpers give the library's reading of a
command line, ``exit_code`` the run's status rule, and ``run`` a supervised run of the
simulated vLLM through the installed program, read back from its folder."""

from __future__ import annotations

import shlex
import socket
from pathlib import Path

import pytest

from inferlint import CheckResult, Status, xray
from inferlint._binary import find


def test_the_helpers_read_a_command_as_the_library_does(tmp_path: Path) -> None:
    bench = ["vllm", "bench", "serve", "--model", "m", "--max-concurrency", "32"]
    assert xray.load_client(bench) == "vllm"
    assert xray.load_client(["python", "-m", "sglang.bench_serving"]) == "sglang"
    assert xray.load_client(["curl", "http://x"]) is None
    assert xray.load_concurrency(bench) == 32
    assert xray.load_concurrency(["vllm", "bench", "serve", "--max-concurrency", "4,8"]) is None
    argv, result = xray.prepare_load(bench, tmp_path)
    assert argv[: len(bench)] == bench
    assert argv[len(bench) :] == [
        "--save-result", "--result-dir", str(tmp_path), "--result-filename", "bench.json",
    ]
    assert result == tmp_path / "bench.json"
    saved = [*bench, "--save-result", "--result-dir", "r", "--result-filename", "x.json"]
    assert xray.prepare_load(saved, tmp_path) == (saved, Path("r/x.json"))
    assert xray.untimed_requests("Initial test run completed.\nWarming up with 3 requests...") == 4
    assert xray.server_url("vllm serve m --host 0.0.0.0 --port 9000") == "http://127.0.0.1:9000"
    assert xray.server_url("python -m sglang.launch_server --model-path m") == "http://127.0.0.1:30000"
    assert xray.server_url("vllm serve 'unclosed", "sglang") == "http://127.0.0.1:30000"


def _r(status: Status) -> CheckResult:
    return CheckResult("T8", status, "x")


def test_exit_code_follows_the_run_rule() -> None:
    assert xray.exit_code(xray.Outcome(results=[_r(Status.PASS)])) == 0
    assert xray.exit_code(xray.Outcome(results=[_r(Status.UNKNOWN)])) == 2
    assert xray.exit_code(xray.Outcome(results=[_r(Status.FAIL), _r(Status.UNKNOWN)])) == 1
    assert xray.exit_code(xray.Outcome(results=[_r(Status.WARN)])) == 0
    assert xray.exit_code(xray.Outcome(results=[_r(Status.WARN)]), strict=True) == 1
    assert xray.exit_code(xray.Outcome(load_exit=3)) == 1
    assert xray.exit_code(xray.Outcome(problem="the server died")) == 1
    assert xray.exit_code(xray.Outcome(results=[_r(Status.FAIL)], interrupted=True)) == 130


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_run_supervises_a_simulated_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = find()
    assert exe is not None, "the inferlint program is not installed beside the package"
    gpu = tmp_path / "gpu"
    gpu.mkdir()
    monkeypatch.setenv("INFERLINT_GPU", f"sim:{gpu}")
    monkeypatch.delenv("INFERLINT_ENGINE", raising=False)
    port = _free_port()
    serve = (
        f"{shlex.quote(exe)} sim serve m --port {port} --boot-secs 0.2 "
        "--num-gpu-blocks-override 98 --block-size 16 --max-model-len 1024 --tokens-per-s 100"
    )
    load = [exe, "sim", "bench", "--port", str(port), "--model", "m", "--max-concurrency", "3",
            "--num-prompts", "9", "--random-input-len", "40", "--random-output-len", "40",
            "--ignore-eos"]
    said: list[str] = []
    out = tmp_path / "run"
    o = xray.run(xray.Plan(out=out, load=load, serve=serve), say=said.append)
    assert o.problem is None, said
    assert o.load_exit == 0 and not o.interrupted
    by = {r.tripwire: r for r in o.results}
    assert by["T8"].status is Status.PASS and by["T8"].message == "reached 3 running (requested 3)"
    assert by["T7"].status is Status.PASS
    assert o.report == out / "report.html" and o.report.is_file()
    assert any(line.startswith("[ T8] PASS") for line in said)
    assert o.limits and all(i.title and i.text for i in o.limits), said
    # Read from the report's data, they are the lines the program printed.
    at = said.index("== what limited this run") + 1
    printed = said[at : at + len(o.limits)]
    assert [f"- {i.title}. {i.text}" for i in o.limits] == printed
    assert xray.exit_code(o) in (0, 2), said  # 2 only if the wall clock stepped (T10)
