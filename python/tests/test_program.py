"""The wheel's program: `inferlint` is the Rust binary itself, `python -m inferlint` and
`cli.main` run it, and its verdicts and exit codes are the program's."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from inferlint import cli
from inferlint._binary import find


def program() -> str:
    exe = find()
    assert exe is not None, "the inferlint program is not installed beside the package"
    return exe


def test_the_program_is_native_code_not_a_python_script() -> None:
    with open(program(), "rb") as f:
        assert f.read(4) == b"\x7fELF"


def test_version_is_quick() -> None:
    exe = program()
    best = min(_timed([exe, "--version"]) for _ in range(5))
    assert best <= 0.020, f"inferlint --version took {best * 1000:.1f} ms"


def _timed(argv: list[str]) -> float:
    t = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    took = time.perf_counter() - t
    assert out.stdout.startswith("inferlint ")
    return took


def test_python_m_inferlint_runs_the_program() -> None:
    direct = subprocess.run([program(), "--version"], capture_output=True, text=True, check=True)
    via = subprocess.run(
        [sys.executable, "-m", "inferlint", "--version"], capture_output=True, text=True, check=True
    )
    assert via.stdout == direct.stdout


def test_cli_main_returns_the_programs_exit_code(
    evidence: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = evidence / "vllm-0.28/live/before.snapshot.json"
    after = evidence / "vllm-0.28/live/after.snapshot.json"
    code = cli.main(["preemption", str(before), str(after)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "[ T1] TRIPWIRE-FAILED  22 preemptions during the run" in out
    assert cli.main(["preemption", str(after), str(after)]) == 0
    assert cli.main(["no-such-command"]) == 2
    assert cli.build_parser().prog == "inferlint"
