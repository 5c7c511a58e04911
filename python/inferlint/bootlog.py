"""Boot log -> structured facts about the server that actually started.

What a benchmark needs to know about a boot is printed once, in prose, and nowhere else:
the KV pool it drew, the attention block size it was forced to, the attention backend it
actually selected (not the one requested), and how much memory CUDA graphs took.

Every field is looked for in two steps. An **anchor** (a fixed substring) says the line
exists; a **pattern** extracts the value. If the anchor is found but no pattern matches,
the line goes into ``unparsed``. That separates "this server did not print it" from
"it printed it in a format this parser does not know", which a version bump will produce
sooner or later. A field is never filled with a default.

The log is read by the Rust reader (``inferlint._native``), in chunks and with the GIL
released; this module keeps 0.3.1's ``BootFacts``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from . import _native

__all__ = [
    "TESTED_VLLM",
    "BootFacts",
    "Unparsed",
    "labels",
    "parse",
    "parse_file",
    "strip_log_prefix",
    "untested_version",
]

# vLLM release series checked live on a GPU (the README's support table lists each check).
TESTED_VLLM: tuple[str, ...] = ("0.28", "0.29", "0.30")


def strip_log_prefix(line: str) -> str:
    return _native.strip_log_prefix(line)


@dataclass(frozen=True)
class Unparsed:
    field: str
    lineno: int
    line: str


@dataclass
class BootFacts:
    engine: str | None = None  # "vllm", "sglang", "trtllm"; else the one named, or None
    vllm_version: str | None = None
    engine_version: str | None = None  # another engine's version, when its log prints it
    # The version the server reported over HTTP, for engines whose log does not print it.
    server_version: str | None = None
    non_default_args: dict[str, Any] | None = None
    server_args: dict[str, Any] | None = None  # SGLang prints every argument
    page_size: int | None = None  # SGLang's KV allocation unit, in tokens
    # The most requests the server will run at once, after its own adjustments, and why
    # it is lower than asked when it is (SGLang: "the mamba state cache").
    running_cap: int | None = None
    running_cap_reason: str | None = None
    requested_running: int | None = None
    requested_backend: str | None = None
    selected_backends: list[str] = field(default_factory=list[str])  # target model
    drafter_backends: list[str] = field(default_factory=list[str])  # speculative drafter
    candidate_backends: tuple[str, ...] = ()
    attention_block_size: int | None = None
    mamba_page_padding_pct: float | None = None
    kv_pool_tokens: int | None = None
    max_concurrency: float | None = None
    max_concurrency_request_len: int | None = None
    available_kv_cache_gib: float | None = None
    model_load_gib: float | None = None
    model_load_s: float | None = None
    cudagraphs: bool | None = None
    cudagraph_estimated_gib: float | None = None
    cudagraph_actual_gib: float | None = None
    cudagraph_mode_downgrade: tuple[str, str] | None = None
    consumed_gib: float | None = None  # weights and non-torch memory, as vLLM counts it
    peak_activation_gib: float | None = None
    compile_s: float | None = None  # torch.compile, all models together
    compiled_fresh: bool | None = None  # compiled from scratch (True) or loaded (False)
    # Requests TensorRT-LLM paused for recompute, from its log; None if the log has no INFO
    # lines or covers no served request, so cannot have recorded them.
    pauses: int | None = None
    served_in_log: int | None = None  # requests the log shows answered (HTTP 200)
    speculative: bool | None = None
    ready: bool = False
    ready_lineno: int | None = None
    processes: dict[str, list[int]] = field(default_factory=dict[str, list[int]])
    unparsed: list[Unparsed] = field(default_factory=list[Unparsed])
    # field -> every distinct value seen, when a log holds more than one (two boots
    # appended to one file). The last value wins; the conflict is kept visible.
    conflicts: dict[str, list[Any]] = field(default_factory=dict[str, list[Any]])
    lines: int = 0
    # What the Rust reader knows beyond 0.3.1's fields (the failure it found, lines cut,
    # the model...), kept so that a check given these facts sees all of it.
    _rust: dict[str, Any] = field(default_factory=dict[str, Any], repr=False, compare=False)

    @property
    def version(self) -> str | None:
        """The engine's version: from the log (vLLM) or from the server (SGLang)."""
        return self.vllm_version or self.engine_version or self.server_version

    @property
    def config_args(self) -> dict[str, Any] | None:
        """The arguments that identify a start's configuration, for comparing starts.

        vLLM prints only its non-default arguments; SGLang prints all of them, less the
        ones it draws afresh at every start.
        """
        if self.non_default_args is not None:
            return self.non_default_args
        if self.server_args is not None:
            if self.engine == "sglang":
                return {k: v for k, v in self.server_args.items() if k != "random_seed"}
            return self.server_args
        return None

    def result_block(self) -> dict[str, Any]:
        """The ``boot`` block of an ``rv.result/1`` document."""
        block: dict[str, Any] = json.loads(_native.result_block(_to_json(self)))
        return block


_FIELDS = frozenset(f.name for f in fields(BootFacts) if not f.name.startswith("_"))


def _from_json(doc: str) -> BootFacts:
    raw: dict[str, Any] = json.loads(doc)
    kw = {k: raw.pop(k) for k in list(raw) if k in _FIELDS}
    kw["candidate_backends"] = tuple(kw.get("candidate_backends") or ())
    if kw.get("cudagraph_mode_downgrade") is not None:
        kw["cudagraph_mode_downgrade"] = tuple(kw["cudagraph_mode_downgrade"])
    kw["unparsed"] = [Unparsed(**u) for u in kw.get("unparsed") or ()]
    return BootFacts(**kw, _rust=raw)


def _to_json(f: BootFacts) -> str:
    """The facts as the Rust reader's document, for the checks."""
    doc = {k: v for k, v in asdict(f).items() if k != "_rust"}
    doc.update({k: v for k, v in f._rust.items() if k not in doc})
    doc["version"] = f.version
    doc["config_args"] = f.config_args
    return json.dumps(doc)


def parse(text: str, engine: str | None = None) -> BootFacts:
    """Facts of a boot log's text; ``engine`` names the engine when the log does not."""
    return _from_json(_native.parse_bootlog_text(text, engine))


def parse_file(path: str | Path, engine: str | None = None) -> BootFacts:
    """Facts of a boot log file, read in chunks (memory stays bounded whatever its size).

    A missing file raises ``FileNotFoundError`` naming it."""
    return _from_json(_native.parse_bootlog_file(str(path), engine))


def labels(paths: Sequence[str | Path]) -> list[str]:
    """Short, distinct names for boot logs: the file name, with folders added as needed.

    Two runs' logs are often both called boot.log; keyed by file name alone, a comparison
    of them would see one log, not two.
    """
    return _native.log_labels([str(p) for p in paths])


def untested_version(facts: BootFacts) -> str | None:
    """A warning when the log comes from a release series inferlint was not tested on.

    Log lines and metric names change between releases. A check that cannot parse says
    Can't tell, but a format that still parses with a different meaning would not, so a
    new version is flagged up front.
    """
    return _native.untested_version(_to_json(facts))
