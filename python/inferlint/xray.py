"""``inferlint.xray``: 0.3.1's whole-run API, on the Rust ``inferlint run``.

``run(plan)`` runs the program the wheel installed (``inferlint run``, alias ``xray``: the one
owner of the run sequence, of the server's supervision and of the checks) with the plan's
options, hands each line it prints to ``say``, and reads the run back from its folder
(``results.json``, ``run.json``, the data inside ``report.html``), never from what it printed.
The helpers answer with the library's own reading of a command line. Unlike 0.3.1's, a run
stops only the processes it started.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import _native
from ._binary import find
from .result import CheckResult

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


# urllib's own urlopen: while it is in place the library asks the server itself.
_URLOPEN = urllib.request.urlopen


def server_version(url: str, timeout: float = 5.0) -> str | None:
    """The version the server reports: vLLM and TensorRT-LLM on ``/version``, SGLang on
    ``/get_server_info``. A ``urllib.request.urlopen`` replaced by the caller (as 0.3.1
    called it) is the hook the library asks through."""
    urlopen = urllib.request.urlopen
    if urlopen is _URLOPEN:
        return _native.server_version(url, timeout)

    def fetch(u: str) -> str | None:
        try:
            with urlopen(u, timeout=timeout) as resp:
                body: bytes = resp.read()
        except (OSError, urllib.error.URLError):
            return None
        return body.decode("utf-8", "replace")

    return _native.server_version_with(url, fetch)


def exit_code(o: Outcome, strict: bool = False) -> int:
    """0 all passed, 1 a tripwire failed or the run did not complete, 2 could not decide,
    130 interrupted."""
    return _native.run_exit_code(
        o.results,
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


def run(plan: Plan, say: Callable[[str], None] = print) -> Outcome:
    """Run the whole sequence. Findings never raise; they are in ``Outcome.results``."""
    exe = find()
    if exe is None:
        raise FileNotFoundError("the inferlint program is not installed beside this package")
    if not plan.url and plan.serve is None:
        plan = replace(plan, url=server_url(plan.serve, plan.engine))
    plan.out.mkdir(parents=True, exist_ok=True)
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
            say(line.rstrip("\n"))
        code = proc.wait()
    except KeyboardInterrupt:
        # The program has its own Ctrl-C (the terminal sent it to the whole group): it stops
        # what it started and writes its folder; wait for that.
        code = proc.wait()
        o.interrupted = True
    unread: list[str] = []
    if (plan.out / "results.json").is_file():
        try:
            o.results = _native.load_results(str(plan.out / "results.json"))
        except (OSError, ValueError) as e:
            unread.append(str(e))
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
    if o.report is not None and o.report.is_file():
        # "What limited this run": the report's own data, as the page shows it.
        try:
            o.limits = [Insight(t, x) for t, x in _native.report_insights(str(o.report))]
        except (OSError, ValueError) as e:
            unread.append(str(e))
    if unread and o.problem is None:
        o.problem = "; ".join(unread)
    return o
