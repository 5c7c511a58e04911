"""Every server metric inferlint reads, per serving engine.

The checks, the recorder and the report refer to these fields, never to a literal series
name. The names come from the Rust library's engine table (crates/core/src/engine.rs), the
one place a release that renames a series is written down. A field is ``None`` when an
engine has no such series.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from . import _native

__all__ = ["LLAMACPP", "SGLANG", "TRTLLM", "VLLM", "MetricNames"]


@dataclass(frozen=True)
class MetricNames:
    # gauges, recorded during the run
    running: str
    waiting: str
    kv_usage: str | None  # fraction of the KV pool in use, 0 to 1; None: llama.cpp has none
    # counters, compared between the before and after snapshots
    preemptions: str | None  # None: the engine counts no preemptions
    generation_tokens: str
    prompt_tokens: str
    request_success: str | None  # None: llama.cpp counts no finished requests
    # histograms (read as _sum / _count); None where the engine has none (llama.cpp)
    e2e_latency: str | None
    first_token: str | None
    queue_time: str | None
    # an *_info series whose labels carry the cache configuration
    cache_info: str | None = None
    # the label of ``request_success`` that says why a request finished
    finished_reason_label: str | None = None
    # gauges that describe the KV pool itself
    pool_tokens: str | None = None
    page_size: str | None = None
    # a gauge of requests paused for recompute, for engines that count none
    paused: str | None = None


def _table() -> dict[str, MetricNames]:
    # The names themselves are the Rust library's (one table for the program and this
    # package); the three fields it has no use for are 0.3.1's, kept here.
    own: dict[str, dict[str, str]] = {
        "vllm": {"finished_reason_label": "finished_reason"},
        # sglang: gauges that describe the KV pool itself
        "sglang": {"pool_tokens": "sglang:max_total_num_tokens", "page_size": "sglang:page_size"},
        "trtllm": {"finished_reason_label": "finished_reason"},
        "llamacpp": {},
    }
    out = {}
    for row in json.loads(_native.engine_table()):
        m = row["metrics"]
        out[row["key"]] = MetricNames(
            running=m["running"],
            waiting=m["waiting"],
            kv_usage=m["kv_usage"],
            preemptions=m["preemptions"],
            generation_tokens=m["generation_tokens"],
            prompt_tokens=m["prompt_tokens"],
            request_success=m["finished"],
            e2e_latency=m["e2e_latency"],
            first_token=m["ttft"],
            queue_time=m["queue_time"],
            cache_info=m["cache_info"],
            paused=m["paused"],
            **own[row["key"]],
        )
    return out


_BY_KEY = _table()
# vLLM (verified on 0.28-0.30). SGLang (0.5.20, with --enable-metrics) calls a preemption a
# retraction: a running request is sent back to the queue and its KV freed. TensorRT-LLM
# (1.3.0rc29) serves these at /prometheus/metrics with return_perf_metrics, the gauges only with
# enable_iter_perf_stats as well; it pauses a request for recompute and exports only how many
# are paused at each iteration, not a count of pauses.
VLLM = _BY_KEY["vllm"]
SGLANG = _BY_KEY["sglang"]
TRTLLM = _BY_KEY["trtllm"]
# llama.cpp's llama-server (0.6, with --metrics): unlabelled counters and gauges, no KV-usage
# gauge, no finished-request counter, no latency histograms.
LLAMACPP = _BY_KEY["llamacpp"]
