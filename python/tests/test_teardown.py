"""Process matching and the wait for a clear card, with 0.3.1's injectable hooks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inferlint import teardown
from inferlint.teardown import Proc

SERVER = Proc(100, 1, ("/usr/bin/python3", "/usr/bin/vllm", "serve", "m"), "vllm")
ENGINE = Proc(101, 100, ("VLLM::EngineCore",), "VLLM::EngineCor")
WORKER = Proc(102, 101, ("python", "-c", "x"), "python")
SHELL = Proc(200, 1, ("bash", "-c", "vllm serve m; pkill -f 'vllm serve'"), "bash")
TAIL = Proc(201, 1, ("tail", "-f", "vllm serve.log"), "tail")
BENCH = Proc(202, 1, ("vllm", "bench", "serve"), "vllm")
SGL = Proc(300, 1, ("python", "-m", "sglang.launch_server"), "python")
PROCS = [SERVER, ENGINE, WORKER, SHELL, TAIL, BENCH, SGL]


def test_servers_are_matched_by_structure() -> None:
    assert teardown.server_engine(SERVER) == "vllm"
    assert teardown.server_engine(ENGINE) == "vllm"
    assert teardown.server_engine(SGL) == "sglang"
    for p in (SHELL, TAIL, BENCH, WORKER):
        assert not teardown.is_server_process(p), p
    found = teardown.server_processes(PROCS, self_pid=999)
    assert [p.pid for p in found] == [100, 101, 102, 300]
    assert [p.pid for p in teardown.server_processes(PROCS, 999, "sglang")] == [300]
    # The caller and its ancestors are never candidates.
    assert 100 not in {p.pid for p in teardown.server_processes(PROCS, self_pid=102)}


def test_the_usual_pkill_misses_the_engine_and_hits_bystanders() -> None:
    hits = {p.pid for p in teardown.naive_pkill_matches(PROCS)}
    assert 101 not in hits and {100, 200, 201} <= hits
    assert teardown.usual_pkill_pattern([SERVER, ENGINE]) == "vllm serve"
    assert teardown.usual_pkill_pattern([SGL]) == "sglang.launch_server"


def test_list_processes_reads_this_machine() -> None:
    if not Path("/proc").is_dir():
        pytest.skip("no /proc")
    me = next(p for p in teardown.list_processes() if p.pid == os.getpid())
    assert me.ppid == os.getppid() and me.cmdline


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


def test_wait_clear_needs_consecutive_clear_readings() -> None:
    clock = Clock()
    used = iter([[5000], [100], [5000], [100], [100], [100]])
    r = teardown.wait_clear(
        read_used=lambda: next(used), live_servers=lambda: 0, sleep=clock.sleep, clock=clock
    )
    assert r.clear and r.reason == "2 consecutive clear readings"
    assert [u for _, u, _ in r.readings] == [5000, 100, 5000, 100, 100]


def test_wait_clear_times_out_and_an_unreadable_gpu_is_not_clear() -> None:
    clock = Clock()

    def broken() -> list[int]:
        raise OSError("nvidia-smi is missing")

    r = teardown.wait_clear(
        read_used=broken, live_servers=lambda: 1, timeout_s=6, sleep=clock.sleep, clock=clock
    )
    assert not r.clear
    assert r.reason == "not clear after 6s: last reading ? MiB used, 1 server processes alive"
    assert all(u is None for _, u, _ in r.readings)
    with pytest.raises(ValueError):
        teardown.wait_clear(live_servers=lambda: 0, consecutive=0)


def test_a_hook_that_fails_otherwise_is_raised() -> None:
    clock = Clock()

    def bad() -> int:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        teardown.wait_clear(
            read_used=lambda: [0], live_servers=bad, timeout_s=2, sleep=clock.sleep, clock=clock
        )


def test_teardown_signals_the_servers_and_waits() -> None:
    clock = Clock()
    alive = list(PROCS)
    sent: list[tuple[list[int], int]] = []

    def kill(pids: object, sig: int) -> list[int]:
        got = list(pids)  # type: ignore[call-overload]
        sent.append((got, sig))
        alive[:] = [p for p in alive if p.pid not in got]
        return got

    targets, res = teardown.teardown(
        list_procs=lambda: list(alive),
        kill=kill,
        read_used=lambda: [10],
        self_pid=999,
        sleep=clock.sleep,
        clock=clock,
        engine="vllm",
    )
    assert [p.pid for p in targets] == [100, 101, 102]
    assert sent[0] == ([100, 101, 102], 15)
    # SGLang's server was not ours to stop, so the card is never clear.
    assert not res.clear and res.readings[-1][2] == 1
