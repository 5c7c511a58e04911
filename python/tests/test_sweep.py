"""``inferlint.sweep`` against a sweep folder ``inferlint run --sweep max-concurrency=2,8`` wrote
(data/sweep: its sweep.json and the points' results.json): the verdicts, figures and findings
are the file's, and holds / why_not are the words of the table the program printed."""

from __future__ import annotations

import json
import shlex
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from inferlint import CheckResult, Status, _native, sweep
from inferlint._binary import find
from inferlint.sweep import FindingKind

DATA = Path(__file__).resolve().parent / "data" / "sweep"

# The table `inferlint run --sweep max-concurrency=2,8` printed when it wrote data/sweep.
CLI_TABLE = [
    "point  asked                ran at most  req/s  out tok/s  TTFT p50  TTFT p99  TPOT p50  "
    "holds",
    "1      --max-concurrency 2  2            6.24   99.8       20 ms     24 ms     20 ms     yes",
    "2      --max-concurrency 8  4            12.41  198.5      339 ms    346 ms    20 ms     "
    "no: T8 failed; T16 failed; cache not reset; cache of point 1; the knee",
]


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((DATA / "sweep.json").read_text(encoding="utf-8"))
    return doc


@pytest.fixture(scope="module")
def swept() -> sweep.Sweep:
    return sweep.read(DATA)


def test_the_sweep_is_the_files(swept: sweep.Sweep) -> None:
    assert isinstance(swept, sweep.Sweep)
    assert swept.option == "max-concurrency"
    assert swept.between == "reset-cache"
    assert swept.knee == 2
    assert swept.path == DATA
    assert len(swept) == 2
    assert [p.index for p in swept.points] == [1, 2]
    assert swept.to_json() == _doc()


def test_each_points_verdicts_are_sweep_json_and_its_results_json(swept: sweep.Sweep) -> None:
    for p, doc in zip(swept.points, _doc()["points"]):
        assert all(isinstance(r, CheckResult) for r in p.results)
        assert [r.to_json() for r in p.results] == doc["results"]
        # The point's own folder has the same verdicts, read as the package reads results.json.
        assert p.path == DATA / doc["folder"]
        assert p.results == _native.load_results(str(p.path / "results.json"))
    two = swept.point(2)
    assert {r.tripwire: r.status for r in two.results if not r.ok} == {
        "T8": Status.FAIL,
        "T16": Status.FAIL,
    }
    t8 = two.result("T8")
    assert t8 is not None and t8.message.startswith("requested 8 concurrent")
    assert two.result("T7") is None


def test_holds_and_why_not_are_the_clis_table(swept: sweep.Sweep) -> None:
    one, two = swept.points
    assert one.holds and one.why_not == []
    assert not two.holds
    assert two.why_not == [
        "T8 failed",
        "T16 failed",
        "cache not reset",
        "cache of point 1",
        "the knee",
    ]
    assert swept.table() == CLI_TABLE


def test_a_points_fields_are_typed(swept: sweep.Sweep) -> None:
    one, two = swept.points
    assert (one.label, one.value, one.folder) == (
        "--max-concurrency 2",
        "2",
        "points/01-max-concurrency-2",
    )
    assert (one.asked_concurrency, one.asked_rate, one.load_exit, one.interrupted) == (
        2,
        None,
        0,
        False,
    )
    assert (one.prompts.dataset, one.prompts.seed, one.prompts.fresh) == ("random", 0, True)
    assert one.reset is None
    reset = two.reset
    assert reset is not None
    assert (reset.outcome, reset.done) == ("unavailable", False)
    assert reset.detail is not None and "/reset_prefix_cache" in reset.detail
    for p, doc in zip(swept.points, _doc()["points"]):
        f = p.figures
        assert f.to_json() == doc["figures"]
        assert [
            f.requests_per_s,
            f.output_tokens_per_s,
            f.ttft_p50_ms,
            f.ttft_p99_ms,
            f.tpot_p50_ms,
            f.peak_running,
            f.cache_hit_rate,
        ] == [doc["figures"][k] for k in (
            "requests_per_s",
            "output_tokens_per_s",
            "ttft_p50_ms",
            "ttft_p99_ms",
            "tpot_p50_ms",
            "peak_running",
            "cache_hit_rate",
        )]
    assert two.figures.cache_hit_rate == 0.9375
    assert "holds=False" in repr(two)
    assert "peak_running=2.0, cache_hit_rate=0.0)" in repr(one.figures)
    assert repr(two.reset).startswith('Reset(outcome="unavailable", detail="the server has no')
    assert repr(one.prompts) == 'Prompts(dataset="random", seed=0, fresh=True)'


def test_findings_across_the_points(swept: sweep.Sweep) -> None:
    got = [(f.kind, f.point, f.names, f.short) for f in swept.findings]
    assert got == [
        (FindingKind.RESET_FAILED, 2, None, "cache not reset"),
        (FindingKind.INHERITED_CACHE, 2, 1, "cache of point 1"),
        (FindingKind.KNEE, 2, None, "the knee"),
    ]
    assert all(isinstance(f.kind, FindingKind) for f in swept.findings)
    assert swept.findings[1].kind == "inherited_cache"
    assert [f.message for f in swept.findings] == [f["message"] for f in _doc()["findings"]]
    assert [f.to_json() for f in swept.findings] == _doc()["findings"]


def test_finding_kinds_are_the_librarys() -> None:
    assert [k.value for k in FindingKind] == _native.finding_kinds()


def test_sweep_json_itself_and_a_pathlike(tmp_path: Path) -> None:
    assert sweep.read(DATA / "sweep.json").to_json() == _doc()
    assert sweep.read(str(DATA)).path == DATA
    with pytest.raises(IndexError, match="no point 3"):
        sweep.read(DATA).point(3)


def test_why_not_is_the_librarys_for_a_point_that_did_not_finish(tmp_path: Path) -> None:
    doc = _doc()
    doc["points"][0]["interrupted"] = True
    doc["points"][0]["load_exit"] = 130
    (tmp_path / "sweep.json").write_text(json.dumps(doc), encoding="utf-8")
    one = sweep.read(tmp_path).point(1)
    assert not one.holds
    assert one.why_not == ["interrupted", "the load exited 130"]


def test_bad_folders_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError) as e:
        sweep.read(missing)
    assert e.value.filename == str(missing / "sweep.json")

    bad = tmp_path / "bad"
    bad.mkdir()
    f = bad / "sweep.json"
    f.write_text('{"schema": "inferlint.sweep/1",\n "option": }', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad/sweep\.json: line 2, column \d+: not valid JSON"):
        sweep.read(bad)

    f.write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad/sweep\.json: the file is empty"):
        sweep.read(bad)

    # Another of the run's files, and a newer schema: named as such, not by a missing field.
    shutil.copy(DATA / "points" / "01-max-concurrency-2" / "results.json", f)
    with pytest.raises(ValueError, match=r"bad/sweep\.json: not a sweep\.json"):
        sweep.read(bad)
    doc = _doc()
    doc["schema"] = "inferlint.sweep/2"
    f.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match=r'bad/sweep\.json: schema "inferlint\.sweep/2" is not'):
        sweep.read(bad)

    # The schema's name with fields that are not the library's.
    doc = _doc()
    doc["points"][0]["index"] = "one"
    f.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    expected = (
        r"bad/sweep\.json: line 7, column \d+: not a sweep\.json of this version "
        r"\(invalid type: string \"one\", expected usize\)"
    )
    with pytest.raises(ValueError, match=expected):
        sweep.read(bad)
    doc = _doc()
    doc["points"][0]["results"][0]["status"] = "great"
    f.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad/sweep\.json: line \d+, column \d+: .*great"):
        sweep.read(bad)


def test_the_docs_snippet_prints_what_it_says(capsys: pytest.CaptureFixture[str]) -> None:
    # docs/python.md's sweep snippet, as written, on this folder.
    text = (Path(__file__).resolve().parents[2] / "docs" / "python.md").read_text(encoding="utf-8")
    section = text.split("## A sweep in a notebook", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    said = [ln.split("# ", 1)[1] for ln in code.splitlines() if ln.startswith("# ")]
    code = code.replace('"runs/qwen-sweep"', repr(str(DATA)))
    exec(compile(code, "docs/python.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[:2] == said
    assert printed[2:5] == CLI_TABLE


def test_a_sweep_the_program_runs_reads_back_as_its_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `inferlint run --sweep` against the simulated vLLM (at most 4 running: 8 is the knee, and
    # the second point's prompts repeat the first's), then the folder read from Python.
    exe = find()
    assert exe is not None, "the inferlint program is not installed beside the package"
    helped = subprocess.run([exe, "run", "--help"], capture_output=True, text=True, check=False)
    if "--sweep" not in helped.stdout:
        pytest.skip("the installed program predates `run --sweep`")
    gpu = tmp_path / "gpu"
    gpu.mkdir()
    monkeypatch.setenv("INFERLINT_GPU", f"sim:{gpu}")
    monkeypatch.delenv("INFERLINT_ENGINE", raising=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    out = tmp_path / "run"
    serve = (
        f"{shlex.quote(exe)} sim serve m --port {port} --host 127.0.0.1 --boot-secs 0.2 "
        "--max-num-seqs 4"
    )
    argv = [
        exe, "run", "-o", str(out), "--serve", serve, "--sweep", "max-concurrency=2,8", "--",
        exe, "sim", "bench", "--port", str(port), "--model", "m", "--num-prompts", "16",
        "--random-input-len", "256", "--random-output-len", "16", "--seed", "0",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    printed = done.stdout.splitlines()
    assert done.returncode == 1, done.stdout + done.stderr
    at = next(i for i, ln in enumerate(printed) if ln.startswith("point  asked"))
    table = printed[at : at + 3]
    s = sweep.read(out)
    assert s.table() == table
    holds = [ln.split("  ")[-1].strip() for ln in table[1:]]
    assert holds == ["yes" if p.holds else "no: " + "; ".join(p.why_not) for p in s.points]
    assert [p.holds for p in s.points] == [True, False]
    assert "T8 failed" in s.point(2).why_not and s.knee == 2
    for p in s.points:
        assert p.results == _native.load_results(str(p.path / "results.json"))


def test_repeats_read_with_their_run_and_the_spread_that_names_them(evidence: Path) -> None:
    # The real vLLM's `--repeat 3 --between nothing`: the runs disagree, every one is named.
    swept = sweep.read(evidence / "vllm-0.32-cpu" / "sweep" / "repeat-nothing")
    assert [p.repeat for p in swept.points] == [1, 2, 3]
    assert swept.points[1].label == "--max-concurrency 2 (2 of 3)"
    spread = [(f.point, f.names) for f in swept.findings if f.kind is FindingKind.SPREAD]
    assert spread == [(1, None), (2, 1), (3, 1)]
    assert "repeats disagree" in swept.points[2].why_not
    # A sweep without --repeat has no run number.
    assert all(p.repeat is None for p in sweep.read(DATA).points)
