"""``inferlint.xray``: 0.3.1's whole-run API, on the Rust ``inferlint run``.

``run(plan)`` runs the program the wheel installed (``inferlint run``, alias ``xray``: the one
owner of the run sequence, of the server's supervision and of the checks) with the plan's
options, hands each line it prints to ``say``, and reads the run back from its folder
(``results.json``, ``run.json``). The helpers answer with the library's own reading of a
command line. Unlike 0.3.1's, a run stops only the processes it started.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import _native
from ._binary import find
from .result import CheckResult, Status

__all__ = [
    "Insight",
    "Outcome",
    "Plan",
    "exit_code",
    "load_client",
    "load_concurrency",
    "prepare_load",
    "run",
    "server_url",
    "server_version",
    "untimed_requests",
]

READY_MARKER = "Application startup complete"


@dataclass
class Plan:
    out: Path
    load: list[str]
    url: str = ""  # "": from the serve command's --host and --port (see server_url)
    serve: str | None = None
    boot_log: Path | None = None
    requested: int | None = None
    bench_result: Path | None = None
    interval_s: float = 0.25
    ready_timeout_s: float = 900.0
    probe: bool = True
    title: str | None = None
    engine: str | None = None  # "vllm", "sglang", "trtllm"; None: told from the server


@dataclass(frozen=True)
class Insight:
    """One "what limited this run" line: ``- {title}. {text}``."""

    title: str
    text: str


@dataclass
class Outcome:
    results: list[CheckResult] = field(default_factory=list[CheckResult])
    load_exit: int | None = None
    report: Path | None = None
    problem: str | None = None  # why the run stopped early, if it did
    interrupted: bool = False
    limits: list[Insight] = field(default_factory=list[Insight])


def load_concurrency(cmd: Sequence[str]) -> int | None:
    """The concurrency a load command asks for (``--max-concurrency``, aiperf's
    ``--concurrency``, GuideLLM's concurrent profile)."""
    return _native.load_concurrency(list(cmd))


def load_client(cmd: Sequence[str]) -> str | None:
    """Which engine's benchmark client a load command runs: "vllm", "sglang", "trtllm"."""
    return _native.load_client(list(cmd))


def prepare_load(cmd: Sequence[str], out: Path) -> tuple[list[str], Path | None]:
    """The load command to run, and where its result file will be: a known client that saves
    no result is made to save one in ``out``; a command that saves its own is left as it is."""
    argv, result = _native.prepare_load(list(cmd), str(out))
    return argv, Path(result) if result is not None else None


def untimed_requests(load_output: str) -> int:
    """Requests a benchmark client sent but left out of its result file, from its output."""
    return _native.untimed_requests(load_output)


def server_url(serve: str | None, engine: str | None = None) -> str:
    """Where a server started with ``serve`` answers: its ``--host`` and ``--port``, else
    127.0.0.1 and the engine's default port (vLLM and TensorRT-LLM 8000, SGLang 30000)."""
    try:
        argv = shlex.split(serve) if serve else []
    except ValueError:
        argv = []
    return _native.server_url(argv, engine)


def server_version(url: str, timeout: float = 5.0) -> str | None:
    """The version the server reports: vLLM and TensorRT-LLM on ``/version``, SGLang on
    ``/get_server_info``."""
    return _native.server_version(url, timeout)


def exit_code(o: Outcome, strict: bool = False) -> int:
    """0 all passed, 1 a tripwire failed or the run did not complete, 2 could not decide,
    130 interrupted."""
    return _native.run_exit_code(
        [json.dumps(r.to_json()) for r in o.results],
        strict,
        o.interrupted,
        o.problem is not None,
        o.load_exit,
    )


def _argv(plan: Plan, exe: str) -> list[str]:
    argv = [exe, "run", "-o", str(plan.out), "--interval", repr(plan.interval_s)]
    argv += ["--ready-timeout", repr(plan.ready_timeout_s)]
    for flag, value in (
        ("--serve", plan.serve),
        ("--url", plan.url or None),
        ("--boot-log", plan.boot_log),
        ("--requested", plan.requested),
        ("--bench-result", plan.bench_result),
        ("--title", plan.title),
        ("--engine", plan.engine),
    ):
        if value is not None:
            argv += [flag, str(value)]
    if not plan.probe:
        argv.append("--no-probe")
    return [*argv, "--", *plan.load]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _limits(lines: Sequence[str]) -> list[Insight]:
    """The "what limited this run" block of the run's output."""
    out: list[Insight] = []
    inside = False
    for line in lines:
        if line == "== what limited this run":
            inside = True
        elif inside and line.startswith("- "):
            title, _, text = line[2:].partition(". ")
            out.append(Insight(title, text))
        elif inside:
            inside = False
    return out


def run(plan: Plan, say: Callable[[str], None] = print) -> Outcome:
    """Run the whole sequence. Findings never raise; they are in ``Outcome.results``."""
    exe = find()
    if exe is None:
        raise FileNotFoundError("the inferlint program is not installed beside this package")
    if not plan.url and plan.serve is None:
        plan = replace(plan, url=server_url(plan.serve, plan.engine))
    plan.out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    o = Outcome()
    proc = subprocess.Popen(
        _argv(plan, exe),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            say(line)
        code = proc.wait()
    except KeyboardInterrupt:
        # The program has its own Ctrl-C (the terminal sent it to the whole group): it stops
        # what it started and writes its folder; wait for that.
        code = proc.wait()
        o.interrupted = True
    results = _read_json(plan.out / "results.json")
    if isinstance(results, list):
        o.results = [
            CheckResult(r["tripwire"], Status(r["status"]), r["message"], r.get("evidence") or {})
            for r in results
            if isinstance(r, dict)
        ]
    record = _read_json(plan.out / "run.json")
    if isinstance(record, dict):
        o.load_exit = record.get("load_exit_code")
        report = record.get("report")
        o.report = Path(report) if isinstance(report, str) else None
        reason = record.get("exit_reason")
        if isinstance(reason, str) and reason.startswith("problem: "):
            o.problem = reason[len("problem: ") :]
        o.interrupted = o.interrupted or reason == "interrupted" or code == 130
    elif code != 0:
        o.problem = f"inferlint run exited with code {code} and wrote no run.json"
    o.limits = _limits(lines)
    return o
