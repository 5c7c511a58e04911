"""The load tool's own account of a run, read from its result file.

Each engine's benchmark client can save one: ``vllm bench serve --save-result`` and
TensorRT-LLM's ``benchmark_serving --save-result`` write one JSON document per run;
SGLang's ``python -m sglang.benchmark.serving --output-file`` appends one JSON line per
run, and the last line is the latest run. All three use the same field names. Every field
is None when the file does not have it. The file is read by the Rust reader.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _native

__all__ = ["BenchResult", "load", "parse"]


@dataclass(frozen=True)
class BenchResult:
    path: str
    completed: int | None = None
    failed: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    duration_s: float | None = None
    output_throughput: float | None = None
    max_concurrency: int | None = None
    num_prompts: int | None = None
    backend: str | None = None
    # client-side latencies, in milliseconds
    mean_ttft_ms: float | None = None
    median_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    mean_tpot_ms: float | None = None
    # the mean gap between two streamed chunks (a chunk may carry several tokens)
    mean_itl_ms: float | None = None
    # per request, with --save-detailed: the first error's text and every output length
    first_error: str | None = None
    output_lens: tuple[float, ...] = ()
    # per request, with --save-detailed: TTFTs (s), send times (s), prompt lengths
    ttfts: tuple[float, ...] = ()
    start_times: tuple[float, ...] = ()
    input_lens: tuple[float, ...] = ()
    # per request, with --save-detailed: the chunks its stream arrived in (0: none)
    chunks: tuple[float, ...] = ()
    # the rate asked for, requests per second; None for "inf"
    request_rate: float | None = None


_INTS = ("completed", "failed", "input_tokens", "output_tokens", "max_concurrency", "num_prompts")


def _from_json(doc: str) -> BenchResult:
    kw: dict[str, Any] = json.loads(doc)
    for k in _INTS:
        if kw[k] is not None:
            kw[k] = int(kw[k])
    for k in ("output_lens", "ttfts", "start_times", "input_lens", "chunks"):
        kw[k] = tuple(kw.get(k) or ())
    return BenchResult(**kw)


def parse(doc: dict[str, Any], path: str = "") -> BenchResult:
    return _from_json(_native.parse_bench(json.dumps(doc), path))


def load(path: str | Path) -> BenchResult:
    """Read a result file. A missing file raises ``FileNotFoundError``; one that is not a
    result raises ``ValueError`` naming the file and the line."""
    return _from_json(_native.load_bench(str(path)))
