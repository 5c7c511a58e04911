"""Stop a vLLM or SGLang server completely, and prove the GPU is free before the next boot.

Two traps, both of which produce numbers rather than errors:

* ``pkill -f "vllm serve"`` signals the API server and misses the engine. vLLM renames
  its engine child to ``VLLM::EngineCore``, which no longer contains ``vllm serve``. The
  engine keeps its weights and KV cache resident, the next boot loads a second copy on
  top of it, and the benchmark runs on whatever memory is left. SGLang renames its
  children the same way (``sglang::scheduler``, ``sglang::detokenizer``).
* The same pattern run from ``bash -c '... pkill -f "vllm serve" ...'`` matches the
  shell's own command line and kills the shell.

So processes are matched structurally (argv, not a substring of the whole command line),
the caller and its ancestors are never candidates, and the card counts as free only after
*consecutive* low readings with no server process alive. A crashing engine can read low
for a moment part-way through its own teardown.

Process discovery reads ``/proc`` and is Linux-only (the servers are too). GPU memory is read with
``nvidia-smi``; both are injectable for tests. Matching processes, and the wait for consecutive
clear readings, are the Rust library's; the hooks are called from it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import _native
from .gpu import nvidia_smi_path

__all__ = [
    "ClearResult",
    "Proc",
    "is_server_process",
    "list_processes",
    "naive_pkill_matches",
    "read_gpu_used_mib",
    "server_engine",
    "server_processes",
    "teardown",
    "usual_pkill_pattern",
    "wait_clear",
]

DEFAULT_MAX_USED_MIB = 800
_SIGKILL: int = getattr(signal, "SIGKILL", 9)


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    argv: tuple[str, ...]
    comm: str

    @property
    def cmdline(self) -> str:
        return " ".join(self.argv)


def _row(p: Proc) -> tuple[int, int, list[str], str]:
    return (p.pid, p.ppid, list(p.argv), p.comm)


def list_processes(proc_root: str | Path = "/proc") -> list[Proc]:
    return [
        Proc(pid, ppid, tuple(argv), comm)
        for pid, ppid, argv, comm in _native.list_processes(str(proc_root))
    ]


def server_engine(p: Proc) -> str | None:
    """Which engine's server process this is ("vllm", "sglang", "trtllm"), or None."""
    return _native.server_engine(_row(p))


def is_server_process(p: Proc) -> bool:
    """True for a vLLM, SGLang or TensorRT-LLM server, including renamed children."""
    return server_engine(p) is not None


def usual_pkill_pattern(targets: Sequence[Proc]) -> str:
    """The ``pkill -f`` pattern people use for the server these processes belong to."""
    return _native.usual_pkill_pattern([_row(p) for p in targets])


def server_processes(
    procs: Sequence[Proc], self_pid: int | None = None, engine: str | None = None
) -> list[Proc]:
    """Server processes and everything they started, never ``self_pid`` or its ancestors.

    Descendants count because some engines hold the GPU in a process with a generic
    name: TensorRT-LLM's model runs in ``python -m mpi4py.futures.server`` under ``prte``,
    both started by ``trtllm-serve``. With ``engine``, only that engine's servers.
    """
    me = os.getpid() if self_pid is None else self_pid
    found = set(_native.server_pids([_row(p) for p in procs], me, engine))
    return [p for p in procs if p.pid in found]


def naive_pkill_matches(procs: Iterable[Proc], pattern: str = "vllm serve") -> list[Proc]:
    """What ``pkill -f PATTERN`` would signal. Kept to show what it gets wrong."""
    procs = list(procs)
    hits = set(_native.pkill_hits([_row(p) for p in procs], pattern))
    return [p for p in procs if p.pid in hits]


def read_gpu_used_mib(nvidia_smi: str | None = None) -> list[int]:
    exe = nvidia_smi or nvidia_smi_path()
    out = _native.run_smi(exe, ["--query-gpu=memory.used", "--format=csv,noheader,nounits"])
    return [int(x) for x in out.split()]


@dataclass
class ClearResult:
    clear: bool
    readings: list[tuple[float, int | None, int]] = field(
        default_factory=list[tuple[float, int | None, int]]
    )  # (elapsed_s, max used MiB or None if unreadable, live server processes)
    reason: str = ""


def wait_clear(
    *,
    read_used: Callable[[], list[int]] = read_gpu_used_mib,
    live_servers: Callable[[], int],
    max_used_mib: int = DEFAULT_MAX_USED_MIB,
    consecutive: int = 2,
    interval_s: float = 2.0,
    timeout_s: float = 120.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> ClearResult:
    """Poll until ``consecutive`` readings in a row are clear, or time runs out.

    A reading is clear only if no server process is alive *and* every GPU is at or below
    ``max_used_mib``. Any unclear reading resets the count. ``consecutive`` below 1
    raises ``ValueError``.
    """
    if consecutive < 1:
        raise ValueError("consecutive must be >= 1")
    clear, readings, reason = _native.wait_clear(
        read_used, live_servers, max_used_mib, consecutive, interval_s, timeout_s, sleep, clock
    )
    return ClearResult(clear=clear, readings=readings, reason=reason)


def _signal(pids: Iterable[int], sig: int) -> list[int]:
    sent: list[int] = []
    for pid in pids:
        try:
            os.kill(pid, sig)
            sent.append(pid)
        except ProcessLookupError:
            pass
    return sent


def teardown(
    *,
    grace_s: float = 15.0,
    list_procs: Callable[[], list[Proc]] = list_processes,
    kill: Callable[[Iterable[int], int], list[int]] = _signal,
    read_used: Callable[[], list[int]] = read_gpu_used_mib,
    self_pid: int | None = None,
    max_used_mib: int = DEFAULT_MAX_USED_MIB,
    consecutive: int = 2,
    interval_s: float = 2.0,
    timeout_s: float = 120.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    engine: str | None = None,
) -> tuple[list[Proc], ClearResult]:
    """SIGTERM every server process, SIGKILL survivors after ``grace_s``, then wait for clear.

    With ``engine``, only that engine's servers are signalled; the card is still clear
    only when no server of any engine is left.
    """
    if consecutive < 1:
        raise ValueError("consecutive must be >= 1")
    # The staged stop is the library's (`inferlint teardown`'s), on these hooks.
    # The first table read is the one the targets are chosen from and returned as.
    first = list_procs()
    pending = [first]

    def rows() -> list[tuple[int, int, list[str], str]]:
        procs = pending.pop() if pending else list_procs()
        return [_row(p) for p in procs]

    pids, clear, readings, reason = _native.teardown(
        rows,
        lambda pids, sig: kill(pids, signal.Signals(sig)),
        read_used,
        sleep,
        clock,
        grace_s=grace_s,
        self_pid=os.getpid() if self_pid is None else self_pid,
        max_used_mib=max_used_mib,
        consecutive=consecutive,
        interval_s=interval_s,
        timeout_s=timeout_s,
        engine=engine,
    )
    by_pid = {p.pid: p for p in first}
    targets = [by_pid[pid] for pid in pids if pid in by_pid]
    result = ClearResult(clear=clear, readings=readings, reason=reason)
    return targets, result

