"""The tripwires. Each returns a :class:`CheckResult`; none raises on a finding.

IDs match the catalogue in ``docs/tripwires.md``. Every verdict is the Rust library's:
these functions hand it the readers' values and wrap what it decides.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from . import _native
from .benchresult import BenchResult
from .bootlog import BootFacts, _to_json
from .engines import Engine, from_names
from .result import CheckResult
from .series import Series, _recording
from .telemetry import Snapshot, _parsed

__all__ = [
    "check_backend_honoured",
    "check_block_size",
    "check_boot_failure",
    "check_client_server_agree",
    "check_concurrency_reached",
    "check_kv_memory_stable",
    "check_no_preemption",
    "check_null_block",
    "check_outputs_full_length",
    "check_prompts_fresh",
    "check_requests_finished",
    "check_same_pool",
    "check_speculation_transfers",
    "check_warmup_outside_window",
    "check_client_kept_pace",
    "check_engines_balanced",
    "check_itl_per_token",
    "check_prompt_lengths",
    "check_graph_batches",
    "check_gpu_clocks",
    "check_kv_offload",
    "concurrency_ceiling",
    "does_not_apply",
    "engine_of",
    "precise_rate",
    "running_cap",
    "with_timer_comparison",
]


def engine_of(*snapshots: Snapshot) -> Engine:
    """The engine that served these snapshots, from their metric names (vLLM if unknown)."""
    names: set[str] = set()
    for s in snapshots:
        names |= s.metrics.names()
    return from_names(names)


def _facts(f: BootFacts | None) -> str | None:
    return None if f is None else _to_json(f)


def _labels(facts: Sequence[BootFacts], labels: Sequence[str] | None) -> list[str]:
    return list(labels) if labels is not None else [f"boot{i}" for i in range(len(facts))]


def check_no_preemption(
    before: Snapshot,
    after: Snapshot,
    series: Series | None = None,
    facts: BootFacts | None = None,
) -> CheckResult:
    """T1. vLLM preempts silently: no log line at the default level, only a counter.

    A preempted request loses its computed KV and is recomputed from the start, so a run
    that assumed uninterrupted generation (a long-horizon test, a latency number) is void.
    SGLang calls it a retraction and logs a warning for each, but the cost is the same.
    TensorRT-LLM pauses a request for recompute and counts nothing; only the recording
    (``series``) or the server log (``facts``) can show that it happened.
    """
    rec = None if series is None else _recording(series)
    return (
        _native.check_no_preemption(_parsed(before), _parsed(after), rec, _facts(facts))
    )


def check_same_pool(
    facts: Sequence[BootFacts], labels: Sequence[str] | None = None
) -> list[CheckResult]:
    """T4. The KV pool is a property of the boot, not of the config.

    Boots with identical flags can draw different pools, and pools come in discrete
    levels, so a small difference in tokens can be a whole allocation step. Boots are
    compared only with boots of the same flags; boots that never came up are left out.
    """
    docs = [_to_json(f) for f in facts]
    return _native.check_same_pool(docs, _labels(facts, labels))


def check_block_size(facts: BootFacts, default: int = 16) -> CheckResult:
    """T5. Hybrid (attention + Mamba) models force the attention block size up.

    The block becomes the allocation unit: every request holds a whole number of blocks,
    so with a 784-token block a 100-token request costs as much cache as a 784-token one.
    """
    return _native.check_block_size(_to_json(facts), default)


def check_kv_memory_stable(
    facts: Sequence[BootFacts], labels: Sequence[str] | None = None
) -> list[CheckResult]:
    """T11. The memory left for KV cache can differ between boots of one config.

    CUDA-graph capture memory varies boot to boot. A small loss can drop the pool by one
    whole level, so comparisons across boots need the per-boot figure recorded.
    """
    docs = [_to_json(f) for f in facts]
    return _native.check_kv_memory_stable(docs, _labels(facts, labels))


def check_backend_honoured(facts: BootFacts) -> CheckResult:
    """T6. A requested attention backend is not applied everywhere, and nothing says so.

    ``--attention-backend`` sets the target model's backend. A speculative-decoding
    drafter chooses its own from a candidate list, so a backend known to fail on this
    machine can be in use while the boot log shows the requested one being honoured.
    """
    return _native.check_backend_honoured(_to_json(facts))


def check_boot_failure(log_text: str) -> CheckResult:
    """T7 + T12. Did the server die, when, and why.

    A config that boots and then dies on its first request passes any boot-only gate;
    ``phase == serving`` is that case.
    """
    return _native.check_boot_failure(log_text)


def check_concurrency_reached(
    series: Series, requested: int, facts: BootFacts | None = None
) -> CheckResult:
    """T8. Did the server ever run the concurrency the benchmark asked for?

    A server caps running requests by its own settings (``--max-num-seqs``) and by what
    the KV cache holds; requests beyond that wait in the queue, and the benchmark's
    "concurrency" is a number the server never saw. With the boot log's facts, the
    message names the limit that held it back.
    """
    return (
        _native.check_concurrency_reached(_recording(series), int(requested), _facts(facts))
    )


def running_cap(facts: BootFacts | None) -> tuple[int, str] | None:
    """The most requests the server runs at once by its own setting, and how it was set."""
    if facts is None:
        return None
    return _native.running_cap(_to_json(facts), facts.engine)


def concurrency_ceiling(
    series: Series,
    usable_blocks: int | None = None,
    *,
    saturated: float = 0.9,
    requested: int | None = None,
) -> CheckResult:
    """T9. How many requests fit, sample by sample: ``floor(1 / share)``.

    ``share = usage / running`` is the fraction of the cache one running request holds,
    read from every sample where the cache is the binding constraint (usage at or above
    ``saturated``). A ceiling that moved is reported as a warning, since a single
    "concurrency" figure for such a run describes none of it, where the lowest ceiling
    could bind: at or below ``requested`` (the concurrency asked for) or reached by the
    requests that ran. A ceiling that stayed above both passes, with its range as a note.
    """
    return (
        _native.concurrency_ceiling(_recording(series), usable_blocks, saturated, requested)
    )


def does_not_apply(tripwire: str, engine: Engine) -> CheckResult | None:
    """The result for a tripwire about a behaviour ``engine`` does not have, else None.

    T14 is about vLLM's reserved null block: an engine that exports no block count
    (SGLang, TensorRT-LLM) gets "does not apply", never a pass or a "can't tell".
    """
    return _native.does_not_apply(tripwire, engine.key)


def check_null_block(series: Series, snapshot: Snapshot) -> CheckResult:
    """T14. The usage gauge's denominator is ``num_gpu_blocks - 1``.

    Checked by inferring the denominator from the gauge alone and comparing it with the
    ``num_gpu_blocks`` label the server exports.
    """
    return _native.check_null_block(_recording(series), _parsed(snapshot))


def check_client_server_agree(
    bench: BenchResult,
    before: Snapshot,
    after: Snapshot,
    *,
    expected_extra_requests: int = 0,
) -> CheckResult:
    """T15. Did the server do the work the load tool says it sent, and no other work?

    The load tool's result file counts the requests it completed and the output tokens it
    received; the server's counters between the snapshots count what the server finished.
    Requests the load tool sends but leaves out of its result (a test request, warm-ups)
    are ``expected_extra_requests``.
    """
    return (
        _native.check_client_server_agree(
            bench, _parsed(before), _parsed(after), int(expected_extra_requests)
        )
    )


def with_timer_comparison(r: CheckResult) -> CheckResult:
    """T10's message with what an integer-second timer would have said, for the terminal."""
    return _native.with_timer_comparison(r)


def precise_rate(before: Snapshot, after: Snapshot, counter: str | None = None) -> CheckResult:
    """T10. Throughput from the snapshots' own float clocks.

    Tokens counted between two snapshots divided by the time between those same two
    snapshots. ``counter`` defaults to the engine's generated-token counter.
    """
    return _native.precise_rate(_parsed(before), _parsed(after), counter)


def check_prompts_fresh(
    before: Snapshot,
    after: Snapshot,
    load: str | Sequence[str] | None = None,
    *,
    untimed_requests: int = 0,
    completed: int | None = None,
) -> CheckResult:
    """T16. Did the load's prompts reach the server fresh, or from its prefix cache?

    The hit rate is the prefix-cache hit counter over the prompt-token counter between the
    snapshots. ``load`` is the load's command (a string or its words): a random or synthetic
    dataset is meant to be fresh, and a hit rate of 1 % or more fails. ``untimed_requests``
    (a test prompt, warm-ups) each explain one prompt's hits; ``completed`` sizes a prompt.
    """
    return (
        _native.check_prompts_fresh(
            _parsed(before),
            _parsed(after),
            load,
            int(untimed_requests),
            None if completed is None else float(completed),
        )
    )


def check_requests_finished(
    bench: BenchResult | None = None,
    before: Snapshot | None = None,
    after: Snapshot | None = None,
) -> CheckResult:
    """T17. Did every request of the window finish?

    The load tool's failures (``bench``), the engine's aborts and errors and the API
    server's 4xx and 5xx answers on inference endpoints (between ``before`` and ``after``).
    Any failure fails, with the first error; a pass needs both sides.
    """
    return (
        _native.check_requests_finished(
            bench,
            None if before is None else _parsed(before),
            None if after is None else _parsed(after),
        )
    )


def check_outputs_full_length(
    load: str | Sequence[str] | None,
    bench: BenchResult | None = None,
    before: Snapshot | None = None,
    after: Snapshot | None = None,
) -> CheckResult:
    """T18. Did the requests run to the output length the load asked for?

    Early end-of-sequence stops from the engine's ``finished_reason`` counts, or the load
    tool's per-request ``output_lens`` where the engine has none. Under ``--ignore-eos`` a
    stop fails; otherwise it warns.
    """
    return (
        _native.check_outputs_full_length(
            load,
            bench,
            None if before is None else _parsed(before),
            None if after is None else _parsed(after),
        )
    )


def check_speculation_transfers(
    before: Snapshot,
    after: Snapshot,
    load: str | Sequence[str] | None = None,
    facts: BootFacts | None = None,
) -> CheckResult:
    """T19. Does the speed of speculative decoding measured here carry over to real text?

    Acceptance is the accepted draft tokens over the proposed ones between the snapshots.
    On a random or synthetic dataset (``load``, the load's command) it is a warning: the
    drafter has nothing to predict on random tokens. ``facts`` names the drafting method.
    """
    return (
        _native.check_speculation_transfers(_parsed(before), _parsed(after), load, _facts(facts))
    )


def _observed(observed: Mapping[str, Any] | None) -> str | None:
    return None if observed is None else json.dumps(dict(observed))


def check_warmup_outside_window(
    bench: BenchResult | None = None,
    observed: Mapping[str, Any] | None = None,
) -> CheckResult:
    """T20. Did the first requests of the measured window pay for the server's warm-up?

    The first wave's median TTFT against the rest's, from the result file's per-request
    ``ttfts`` (``--save-detailed``): a warning beyond 3x and beyond what sharing one prefill
    explains. ``observed`` is a run's ``during_load`` (``run.json``): warm-up work the server
    logged while the load ran fails.
    """
    return _native.check_warmup_outside_window(bench, _observed(observed))


def check_client_kept_pace(
    load: str | Sequence[str] | None = None,
    bench: BenchResult | None = None,
    series: Series | None = None,
    requested: int | None = None,
    observed: Mapping[str, Any] | None = None,
) -> CheckResult:
    """T21. Did the client keep up with what it asked of the server?

    The rate sent (the result's ``start_times``) against ``--request-rate`` on a client whose
    schedule is exact, and the client's CPU from a run's ``during_load`` (``observed``)
    against the server's room in ``series`` for ``requested`` requests at once.
    """
    rec = None if series is None else _recording(series)
    return (
        _native.check_client_kept_pace(load, bench, rec, requested, _observed(observed))
    )


def check_engines_balanced(
    before: Snapshot,
    after: Snapshot,
    series: Series | None = None,
) -> CheckResult:
    """T22. Did the engines of a data-parallel server share the load?

    Each engine's finished requests between the snapshots (label ``engine``): a warning when
    the busiest finished 1.5 times its even share or more. ``series`` adds each engine's mean
    running requests while the server was busy. A server of one engine cannot tell.
    """
    rec = None if series is None else _recording(series)
    return _native.check_engines_balanced(_parsed(before), _parsed(after), rec)


def check_itl_per_token(
    bench: BenchResult | None = None,
    facts: BootFacts | None = None,
) -> CheckResult:
    """T23. Is the client's inter-token latency per token, or per streamed chunk?

    The result's per-request output lengths against the chunks it timed (``--save-detailed``):
    a warning above 1.2 tokens per chunk. ``facts`` names the cause (speculative decoding, a
    stream interval).
    """
    return _native.check_itl_per_token(bench, _facts(facts))


def check_prompt_lengths(
    before: Snapshot,
    after: Snapshot,
    load: str | Sequence[str] | None = None,
    bench: BenchResult | None = None,
) -> CheckResult:
    """T24. Were the prompts the server processed as long as the load asked?

    The server's prompt tokens per finished request between the snapshots against the
    prompt length in ``load`` (``--random-input-len``, ``--isl``, ``prompt_tokens=``), else
    against the client's own count in ``bench``: a warning beyond 10 % and 8 tokens.
    """
    return _native.check_prompt_lengths(_parsed(before), _parsed(after), load, bench)


def check_graph_batches(series: Series, facts: BootFacts | None = None) -> CheckResult:
    """T25. Did the server run more requests at once than its largest captured CUDA graph?

    The recording's running requests (each engine's on a data-parallel server) against the
    largest decode batch the boot log (``facts``) says was captured: a warning when beyond it on
    5 % of the busy samples or more. Without captured graphs it cannot tell.
    """
    return _native.check_graph_batches(_recording(series), _facts(facts))


def check_kv_offload(
    before: Snapshot, after: Snapshot, facts: BootFacts | None = None
) -> CheckResult:
    """T26. Did KV offloading load back any of what it stored?

    Between the snapshots, the bytes (vLLM's ``OffloadingConnector``) or blocks
    (``SimpleCPUOffloadConnector``) stored in CPU memory against those loaded back to the GPU:
    a warning when it stored and loaded nothing back. Not applicable where neither the counters
    nor the boot log (``facts``) show offloading.
    """
    return _native.check_kv_offload(_parsed(before), _parsed(after), _facts(facts))


def check_gpu_clocks(observed: Mapping[str, Any]) -> CheckResult:
    """T27. Did the run's GPUs run throttled, by power or heat, during the load?

    ``observed`` is a run's ``during_load`` (``run.json``), whose ``gpu_clocks`` are the cards'
    readings once a second: a warning when a card's clock event reasons showed a power or thermal
    limit on a tenth of its busy readings or more. Without readings it cannot tell.
    """
    return _native.check_gpu_clocks(json.dumps(dict(observed)))
