"""Bad input raises the documented exception, naming the file and, where there is one, the
line."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlint import benchresult, bootlog, checks, failures, prom, series, telemetry


def test_prometheus_text_names_the_line() -> None:
    with pytest.raises(ValueError, match=r"^line 2: "):
        prom.parse("ok_total 1\nthis is not a sample\n")


def test_a_snapshot_with_bad_text_names_the_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.prom"
    p.write_text("ok_total 1\nok_total 2\n{broken\n", encoding="utf-8")
    with pytest.raises(ValueError) as e:
        telemetry.load(p)
    assert str(p) in str(e.value) and "line 3" in str(e.value)


def test_a_snapshot_document_with_bad_json_names_the_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.snapshot.json"
    p.write_text('{\n "schema": "inferlint.snapshot/1",\n "url": \n}\n', encoding="utf-8")
    with pytest.raises(ValueError) as e:
        telemetry.load(p)
    assert str(p) in str(e.value) and "line 4" in str(e.value)


def test_a_snapshot_built_in_python_with_bad_text_fails_when_read() -> None:
    s = telemetry.Snapshot("http://x/metrics", "not a sample at all\n", 1.0, 1)
    with pytest.raises(ValueError, match=r"http://x/metrics: line 1"):
        checks.precise_rate(s, s)


def test_missing_files_raise_file_not_found_naming_them(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.json"
    for read in (
        telemetry.load,
        series.read,
        bootlog.parse_file,
        benchresult.load,
        failures.classify_file,
    ):
        with pytest.raises(FileNotFoundError) as e:
            read(missing)  # type: ignore[operator]
        assert e.value.filename == str(missing), read


def test_a_recording_without_a_header_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "r.series.jsonl"
    p.write_text('{"t_wall": 1.0}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=str(p)):
        series.read(p)


def test_a_result_file_that_is_not_json_names_the_file(tmp_path: Path) -> None:
    p = tmp_path / "bench.json"
    p.write_text("[1, 2", encoding="utf-8")
    with pytest.raises(ValueError, match=str(p)):
        benchresult.load(p)


def test_clocks_that_disagree_refuse_a_span(evidence: Path) -> None:
    import dataclasses

    a = telemetry.load(evidence / "vllm-0.28/live/before.snapshot.json")
    b = telemetry.load(evidence / "vllm-0.28/live/after.snapshot.json")
    stepped = dataclasses.replace(b, t_wall=b.t_wall + 30, _metrics=[], _parsed=[])
    with pytest.raises(ValueError, match="disagree"):
        telemetry.span_s(a, stepped)


def test_an_unknown_engine_name_is_refused() -> None:
    with pytest.raises(ValueError, match="not an engine"):
        bootlog.parse("x\n", "tgi")
