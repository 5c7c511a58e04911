"""0.3.1's hooks run inside the library's own loops: ``telemetry.scrape`` with a caller's
``fetch``, ``wall`` and ``mono_ns`` asks the library's places in its order and remembers what it
found; ``xray.server_version`` asks through a replaced ``urllib.request.urlopen``."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from inferlint import telemetry, xray


def test_a_hooked_scrape_is_the_librarys_scrape() -> None:
    calls: list[str] = []
    pages = {
        "http://h1:1/metrics": '{"iter": 1}',
        "http://h1:1/prometheus/metrics": "trtllm_num_requests_running 1.0\n",
    }

    def fetch(url: str, timeout: float) -> str:
        calls.append(url)
        return pages[url]

    clock: Iterator[float] = iter(float(i) for i in range(100))
    mono: Iterator[int] = iter(range(0, 10**12, 10**9))
    s = telemetry.scrape("http://h1:1", fetch=fetch, wall=lambda: next(clock), mono_ns=lambda: next(mono))
    assert s.url == "http://h1:1/prometheus/metrics"
    # The reading's clocks are the hooks', around the GET that answered.
    assert (s.t_wall, s.t_mono_ns, s.latency_s) == (2.5, 2_500_000_000, 1.0)
    telemetry.scrape("http://h1:1/", fetch=fetch)
    assert calls[-1] == "http://h1:1/prometheus/metrics" and len(calls) == 3
    pages = {"http://h1:1/metrics": "vllm:num_requests_running 2.0\n"}  # another server now
    assert telemetry.scrape("http://h1:1", fetch=fetch).url == "http://h1:1/metrics"


def test_a_hooked_scrape_that_finds_only_json_says_so() -> None:
    with pytest.raises(ValueError, match="returned JSON, not Prometheus text"):
        telemetry.scrape("http://h2:1", fetch=lambda url, timeout: "[]")

    def down(url: str, timeout: float) -> str:
        raise ConnectionRefusedError(url)

    with pytest.raises(ConnectionRefusedError):
        telemetry.scrape("http://h2:1", fetch=down)


def test_server_version_asks_through_a_replaced_urlopen(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def urlopen(url: str, timeout: float = 0) -> io.BytesIO:
        asked.append(url)
        if not url.endswith("/get_server_info"):
            raise urllib.error.URLError("404")
        return io.BytesIO(json.dumps({"version": "0.5.20"}).encode())

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    assert xray.server_version("http://x:1/") == "0.5.20"
    assert asked == ["http://x:1/version", "http://x:1/get_server_info"]
