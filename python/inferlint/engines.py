"""The serving engines inferlint knows, and how to tell which one produced a file.

Each engine has its own metric names, process names and log format. Everything that
depends on them asks this module, so the checks themselves are written once. A file whose
engine cannot be told is read as vLLM's, which is what inferlint read before it knew any
other engine, unless the user named the engine (``--engine`` or ``INFERLINT_ENGINE``).

Telling the engine from metric names, a log or a command is the Rust library's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import _native
from .metricnames import LLAMACPP as LLAMACPP_METRICS
from .metricnames import SGLANG as SGLANG_METRICS
from .metricnames import TRTLLM as TRTLLM_METRICS
from .metricnames import VLLM as VLLM_METRICS
from .metricnames import MetricNames

__all__ = [
    "ENGINES",
    "ENV_VAR",
    "LLAMACPP",
    "SGLANG",
    "TRTLLM",
    "VLLM",
    "Engine",
    "by_key",
    "from_command",
    "from_log",
    "from_names",
    "named_by",
    "parse_key",
]

# Names the engine for every command, for a team that always runs the same one.
ENV_VAR = "INFERLINT_ENGINE"


@dataclass(frozen=True)
class Engine:
    key: str  # "vllm", "sglang", "trtllm", "llamacpp"
    name: str  # as the project writes it
    prefix: str  # what its metric names start with
    metrics: MetricNames
    tested: tuple[str, ...]  # release series checked live on a GPU
    preemption: str  # the engine's word for evicting a running request
    serve: str  # how its server is usually started, for messages
    # counter -> a series exported from the start, for counters the engine writes only
    # once they first count (see telemetry.counter_delta)
    witnesses: tuple[tuple[str, str], ...] = ()
    logs_preemptions: bool = False  # does it write a log line when it preempts?
    # Are its gauges updated only when a request completes, not at every step?
    gauges_lag: bool = False
    # What to change when the server serves no Prometheus metrics.
    metrics_hint: str = ""
    # Does its generated-token counter count a request's tokens only when it finishes?
    tokens_at_finish: bool = False
    # The port its server listens on when the command gives none.
    default_port: int = 8000
    # What to change when the server serves its counters but not its gauges.
    gauges_hint: str = ""

    def witness(self, counter: str) -> str | None:
        return dict(self.witnesses).get(counter)


def _engines() -> dict[str, Engine]:
    # Everything but how a server is usually started and whether it logs its preemptions
    # (0.3.1's fields, kept here) is the Rust library's engine table.
    own: dict[str, tuple[str, bool]] = {
        "vllm": ("vllm serve", False),
        # "KV cache pool is full. Retract requests. #retracted_reqs: N" (WARNING)
        "sglang": ("sglang serve", True),
        # "MaxUtilizationScheduler: request ID N -> pause", at INFO (the default level)
        "trtllm": ("trtllm-serve", True),
        # a slot runs its request to the end: nothing is evicted, nothing logged
        "llamacpp": ("llama-server", False),
    }
    metrics = {
        "vllm": VLLM_METRICS,
        "sglang": SGLANG_METRICS,
        "trtllm": TRTLLM_METRICS,
        "llamacpp": LLAMACPP_METRICS,
    }
    out = {}
    for row in json.loads(_native.engine_table()):
        key = row["key"]
        counter, witness = row["metrics"]["preemptions"], row["metrics"]["preemption_witness"]
        serve, logs = own[key]
        out[key] = Engine(
            key=key,
            name=row["name"],
            prefix=row["prefix"],
            metrics=metrics[key],
            tested=tuple(row["tested"]),
            preemption=row["preemption"],
            serve=serve,
            witnesses=((counter, witness),) if counter and witness else (),
            logs_preemptions=logs,
            gauges_lag=row["gauges_lag"],
            metrics_hint=row["metrics_hint"],
            tokens_at_finish=row["tokens_at_finish"],
            default_port=row["default_port"],
            gauges_hint=row["gauges_hint"],
        )
    return out


_BY_KEY: dict[str, Engine] = _engines()
VLLM = _BY_KEY["vllm"]
SGLANG = _BY_KEY["sglang"]
TRTLLM = _BY_KEY["trtllm"]
LLAMACPP = _BY_KEY["llamacpp"]
ENGINES: tuple[Engine, ...] = (VLLM, SGLANG, TRTLLM, LLAMACPP)


def _of(key: str | None) -> Engine | None:
    return None if key is None else _BY_KEY[key]


def by_key(key: str | None) -> Engine:
    """The engine named ``key`` ("vllm", "sglang", "trtllm"); vLLM if ``None`` or unknown."""
    return next((e for e in ENGINES if e.key == key), VLLM)


def parse_key(value: str) -> Engine | None:
    """The engine a user named: its key or its name, in any case ("trtllm", "TensorRT-LLM")."""
    return _of(_native.parse_engine(value))


def named_by(names: Iterable[str]) -> Engine | None:
    """The engine whose metric prefix most series carry; None when no series has one."""
    return _of(_native.engine_from_names(list(names)))


def from_names(names: Iterable[str]) -> Engine:
    """The engine whose metric prefix most series carry; vLLM when none does."""
    return named_by(names) or VLLM


def from_command(cmd: str | Sequence[str] | None) -> Engine | None:
    """The engine a server command starts; None if it names none.

    Reads ``vllm serve``, ``sglang serve``, ``trtllm-serve``, and ``python -m`` with one of
    their modules, also behind a path or a prefix such as ``env X=1``.
    """
    if not cmd:
        return None
    if isinstance(cmd, str):
        return _of(_native.engine_from_command(cmd))
    return _of(_native.engine_from_argv(list(cmd)))


def from_log(text: str) -> Engine | None:
    """The engine that wrote a boot log, from lines only it prints; None if unknown."""
    return _of(_native.engine_from_log(text))
