"""The issue's README snippet, verbatim, against `inferlint sim serve`: a simulated vLLM
whose small KV cache preempts under the load given between the two scrapes."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from inferlint import TripwireFailed
from simulator import Sim  # type: ignore[import-not-found]

SNIPPET = """\
from inferlint import bootlog, checks, telemetry
before = telemetry.scrape(url)
...                                   # the user's own benchmark
after = telemetry.scrape(url)
result = checks.check_no_preemption(before, after)
print(result.status.value, result.message)   # fail 22 preemptions during the run
result.raise_for_status()                    # raises TripwireFailed on a failed tripwire or a Can't tell
facts = bootlog.parse_file("boot.log")
print(facts.attention_block_size, facts.kv_pool_tokens)   # 784 26093
record = {"boot": facts.result_block()}
"""

DOCS = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def test_the_docs_show_the_snippet_this_test_runs() -> None:
    assert SNIPPET in DOCS.read_text(encoding="utf-8")


def _parts() -> tuple[str, str, str]:
    """Up to the user's benchmark; up to raise_for_status; the boot facts."""
    lines = SNIPPET.splitlines(keepends=True)
    bench = next(i for i, ln in enumerate(lines) if ln.startswith("..."))
    raise_at = next(i for i, ln in enumerate(lines) if ln.startswith("result.raise_for_status"))
    return (
        "".join(lines[: bench + 1]),
        "".join(lines[bench + 1 : raise_at + 1]),
        "".join(lines[raise_at + 1 :]),
    )


def test_the_snippet_prints_the_simulated_runs_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A hybrid model's 784-token blocks, 8 usable (the 9th is vLLM's null block), for 8
    # requests that each grow past one block: the scheduler must preempt.
    sim = Sim(
        [
            "--hybrid",
            "--num-gpu-blocks-override", "9",
            "--max-model-len", "1024",
            "--tokens-per-s", "400",
        ],
        tmp_path / "boot.log",
    )
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        scope: dict[str, object] = {"url": sim.url}
        first, second, third = _parts()
        exec(first, scope)
        sim.load(requests=8, max_tokens=900)
        with pytest.raises(TripwireFailed) as e:
            exec(second, scope)
        printed = capsys.readouterr().out.strip()
        n = int(e.value.result.evidence["preemptions"])
        assert n > 0
        assert printed == f"fail {n} preemption{'' if n == 1 else 's'} during the run"
        exec(third, scope)
        out = capsys.readouterr().out.split()
        assert out[0] == "784", out
        # The pool the simulator printed, read here without inferlint.
        pool = re.search(r"GPU KV cache size: ([\d,]+) tokens", (tmp_path / "boot.log").read_text())
        assert pool is not None and int(out[1]) == int(pool.group(1).replace(",", ""))
        record = scope["record"]
        assert isinstance(record, dict) and record["boot"]["attention_block_size"] == 784
    finally:
        os.chdir(cwd)
        sim.stop()


def test_a_quiet_run_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sim = Sim(["--tokens-per-s", "400"], tmp_path / "boot.log")
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        scope: dict[str, object] = {"url": sim.url}
        first, second, _ = _parts()
        exec(first, scope)
        sim.load(requests=2, max_tokens=8)
        exec(second, scope)
        assert capsys.readouterr().out.strip() == "pass no preemptions"
    finally:
        os.chdir(cwd)
        sim.stop()
