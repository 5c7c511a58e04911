"""The hostile-byte corpus through the Python readers (docs/design/formats.md#hostile-bytes):
the mutations of tests/proptest_readers/hostile.rs, applied to the same recorded files, each
read to a value or refused with a ``ValueError`` that starts with the file's path; never a
panic of the Rust reader (pyo3's ``PanicException``, a ``BaseException``) nor another error."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from inferlint import benchresult, bootlog, failures, prom, series, sweep, telemetry

# Pieces that readers have mistaken for whitespace or for numbers (as the Rust corpus).
PIECES = [
    "\u000c", "\u00a0", "\u2028", "\ufeff", "\0", "\r", "\u000c{}", "\u00a0{}", "{}", "[]",
    '"\\ud800"', "\ufffd",
]
# Numbers a JSON or Prometheus reader can overflow, round or refuse.
NUMBERS = [
    "NaN", "Infinity", "-Infinity", "+Inf", "1e999", "-1e999", "1e-999", "-0", "-0.0",
    "12345678901234567890", "-12345678901234567890", "123456789012345678901234567890",
]
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")


def _at_line(text: str, n: int, piece: str, own_line: bool) -> str:
    lines = text.splitlines(keepends=True) or [""]
    i = n % len(lines)
    if own_line:
        lines.insert(i + 1, piece + "\n")
    else:
        lines[i] = piece + lines[i]
    return "".join(lines)


def _number(text: str, n: int, k: int) -> str:
    found = list(_NUMBER.finditer(text))
    if not found:
        return text
    m = found[n % len(found)]
    return text[: m.start()] + NUMBERS[k] + text[m.end() :]


def mutations() -> list[tuple[str, Callable[[str], str]]]:
    """The fixed set the Rust commands run on: each piece at the start, on a line of its own
    and at line 3's start; CRLF; each hostile number for the first and the 8th number; deep
    nesting; a cut in the middle."""
    out: list[tuple[str, Callable[[str], str]]] = []
    for p, piece in enumerate(PIECES):
        out.append((f"start-{p}", lambda t, s=piece: s + t))
        out.append((f"own-line-{p}", lambda t, s=piece: _at_line(t, 0, s, True)))
        out.append((f"line-3-{p}", lambda t, s=piece: _at_line(t, 3, s, False)))
    out.append(("crlf", lambda t: t.replace("\n", "\r\n")))
    for k in range(len(NUMBERS)):
        out.append((f"number-0-{k}", lambda t, k=k: _number(t, 0, k)))
        out.append((f"number-7-{k}", lambda t, k=k: _number(t, 7, k)))
    out.append(("deep", lambda t: "[" * 100_000 + t + "]" * 100_000))
    out.append(("cut", lambda t: t[: len(t) // 2]))
    return out


def _bench(p: Path) -> Any:
    return benchresult.load(p)


def _snapshot(p: Path) -> Any:
    return telemetry.load(p).metrics.total("vllm:num_requests_running")


def _prom(p: Path) -> Any:
    return prom.parse(p.read_text(encoding="utf-8", errors="surrogateescape")).names()


def _series(p: Path) -> Any:
    return len(series.read(p).samples)


def _bootlog(p: Path) -> Any:
    return (bootlog.parse_file(p), failures.classify_file(p))


def _sweep(p: Path) -> Any:
    s = sweep.read(p)  # a path ending .json is read itself
    return [(pt.holds, pt.why_not, pt.figures.to_json()) for pt in s.points]


# A sweep.json the program wrote (python/tests/data; absolute, so `evidence / SWEEP` is it).
SWEEP = str(Path(__file__).resolve().parent / "data" / "sweep" / "sweep.json")


# Each Python reader, the recorded file it starts from, and whether it refuses with the path
# (prom.parse takes text, so its errors name the line only).
READERS: list[tuple[str, Callable[[Path], Any], str, bool]] = [
    ("benchresult.load", _bench, "vllm-0.28/xray/bench.json", True),
    ("benchresult.load-jsonl", _bench, "vllm-0.32-cpu/bench-serve-result.json", True),
    ("telemetry.load", _snapshot, "vllm-0.28/xray/before.snapshot.json", True),
    ("telemetry.load-prom", _snapshot, "vllm-0.32-cpu/metrics.prom", True),
    ("prom.parse", _prom, "vllm-0.32-cpu/metrics-after-bench.prom", False),
    ("series.read", _series, "vllm-0.28/xray/run.series.jsonl", True),
    ("bootlog.parse_file", _bootlog, "vllm-0.32-cpu/boot.log", True),
    ("sweep.read", _sweep, SWEEP, True),
]


@pytest.mark.parametrize(
    ("name", "reader", "rel", "names_path"), READERS, ids=[r[0] for r in READERS]
)
def test_every_python_reader_is_total_on_hostile_bytes(
    evidence: Path,
    tmp_path: Path,
    name: str,
    reader: Callable[[Path], Any],
    rel: str,
    names_path: bool,
) -> None:
    base = (evidence / rel).read_text(encoding="utf-8")
    refused = 0
    for i, (label, mutate) in enumerate(mutations()):
        path = tmp_path / f"{i}-{Path(rel).name}"
        path.write_text(mutate(base), encoding="utf-8", errors="surrogatepass")
        try:
            reader(path)
        except ValueError as e:
            refused += 1
            if names_path:
                assert str(e).startswith(str(path)), f"{name} on {label}: {e}"
        except BaseException as e:  # a PanicException is a BaseException
            pytest.fail(f"{name} on {label}: {type(e).__name__}: {e}")
    # Every reader of a structured file refuses some of the corpus (a cut document at least);
    # a boot log has no malformed form, only lines that say less.
    assert refused > 0 or name == "bootlog.parse_file", f"{name} refused none of the corpus"


def test_a_100_mb_line_is_read_or_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "huge.prom"
    path.write_text("vllm:num_requests_running " + "1" * 100_000_000 + "\n", encoding="utf-8")
    try:
        telemetry.load(path)
    except ValueError as e:
        assert str(e).startswith(str(path)), e
