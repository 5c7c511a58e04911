"""T7 against `inferlint sim serve`: a healthy server passes, one that dies on its first
request fails."""

from __future__ import annotations

from pathlib import Path

from inferlint import Status, probe
from simulator import Sim  # type: ignore[import-not-found]


def test_a_healthy_server_passes(tmp_path: Path) -> None:
    sim = Sim(["--tokens-per-s", "400"], tmp_path / "boot.log")
    try:
        r = probe.probe(sim.url, concurrency=4, max_tokens=4, timeout=30.0)
    finally:
        sim.stop()
    assert (r.tripwire, r.status) == ("T7", Status.PASS), r
    assert r.message == "1 + 4 concurrent requests served, server alive"


def test_a_server_that_dies_on_its_first_request_fails(tmp_path: Path) -> None:
    sim = Sim(["--die-on-first-request"], tmp_path / "boot.log")
    try:
        r = probe.probe(sim.url, model="m", concurrency=2, max_tokens=4, timeout=10.0)
    finally:
        sim.stop()
    assert (r.tripwire, r.status) == ("T7", Status.FAIL), r
    assert r.message.startswith("first request failed")


def test_nothing_listening_fails(tmp_path: Path) -> None:
    r = probe.probe("http://127.0.0.1:9", concurrency=1, timeout=2.0)
    assert r.status is Status.FAIL and r.message.startswith("cannot list models")
