"""The same calls, on the recorded evidence, for 0.3.1 and for this package.

Run with inferlint 0.3.1 installed, ``python python/tests/compat_cases.py > python/tests/results_031.json``
writes 0.3.1's verdicts; test_compat.py makes the same calls on this package and compares.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(os.environ.get("INFERLINT_EVIDENCE") or Path(__file__).resolve().parents[2] / "tests/fixtures")


def cases() -> dict[str, Callable[[], Any]]:
    from inferlint import benchresult, bootlog, checks, series, telemetry

    def snap(rel: str) -> Any:
        return telemetry.load(ROOT / rel)

    def rec(rel: str) -> Any:
        return series.read(ROOT / rel)

    def boot(rel: str) -> Any:
        return bootlog.parse_file(ROOT / rel)

    live, xray = "vllm-0.28/live", "vllm-0.28/xray"
    sg, trt = "sglang-0.5/capped", "trtllm-1.3/qwen3-8b"
    return {
        "t1 live": lambda: checks.check_no_preemption(snap(f"{live}/before.snapshot.json"), snap(f"{live}/after.snapshot.json")),
        "t1 live same": lambda: checks.check_no_preemption(snap(f"{live}/after.snapshot.json"), snap(f"{live}/after.snapshot.json")),
        "t1 restart": lambda: checks.check_no_preemption(snap("vllm-0.28/metrics/restart_before.prom"), snap("vllm-0.28/metrics/restart_after.prom")),
        "t1 sglang": lambda: checks.check_no_preemption(snap(f"{sg}/before.snapshot.json"), snap(f"{sg}/after.snapshot.json")),
        "t1 trtllm": lambda: checks.check_no_preemption(snap(f"{trt}/before.snapshot.json"), snap(f"{trt}/after.snapshot.json"), rec(f"{trt}/run.series.jsonl"), boot(f"{trt}/boot.log")),
        "t1 trtllm gauge": lambda: checks.check_no_preemption(snap(f"{trt}/before.snapshot.json"), snap(f"{trt}/after.snapshot.json"), rec(f"{trt}/run.series.jsonl")),
        "t10 live": lambda: checks.precise_rate(snap(f"{live}/before.snapshot.json"), snap(f"{live}/after.snapshot.json")),
        "t10 bare": lambda: checks.precise_rate(snap("vllm-0.28/metrics/preempted_before.prom"), snap("vllm-0.28/metrics/preempted_after.prom")),
        "t14 live": lambda: checks.check_null_block(rec(f"{live}/run.series.jsonl"), snap(f"{live}/after.snapshot.json")),
        "t14 sglang": lambda: checks.check_null_block(rec(f"{sg}/run.series.jsonl"), snap(f"{sg}/after.snapshot.json")),
        "t9 live": lambda: checks.concurrency_ceiling(rec(f"{live}/run.series.jsonl"), 42),
        "t9 ladder": lambda: checks.concurrency_ceiling(rec("vllm-0.28/series/ladder.series.jsonl"), 52),
        "t9 sglang": lambda: checks.concurrency_ceiling(rec(f"{sg}/run.series.jsonl")),
        "t8 live": lambda: checks.check_concurrency_reached(rec(f"{live}/run.series.jsonl"), 32),
        "t8 ladder": lambda: checks.check_concurrency_reached(rec("vllm-0.28/series/ladder.series.jsonl"), 4, boot("vllm-0.28/boot_eager.log")),
        "t8 sglang": lambda: checks.check_concurrency_reached(rec(f"{sg}/run.series.jsonl"), 32, boot(f"{sg}/boot.log")),
        "t15 xray": lambda: checks.check_client_server_agree(benchresult.load(ROOT / f"{xray}/bench.json"), snap(f"{xray}/before.snapshot.json"), snap(f"{xray}/after.snapshot.json")),
        "t5 eager": lambda: checks.check_block_size(boot("vllm-0.28/boot_eager.log")),
        "t5 sglang": lambda: checks.check_block_size(boot(f"{sg}/boot.log")),
        "t6 eager": lambda: checks.check_backend_honoured(boot("vllm-0.28/boot_eager.log")),
        "t6 override": lambda: checks.check_backend_honoured(boot("vllm-0.28/boot_spec_backend_override.log")),
        "t12 accel": lambda: checks.check_boot_failure((ROOT / "vllm-0.28/boot_fail_accelerator.log").read_text()),
        "t12 cccl": lambda: checks.check_boot_failure((ROOT / "vllm-0.28/boot_fail_cccl_headers.log").read_text()),
        "t12 live": lambda: checks.check_boot_failure((ROOT / f"{live}/boot.log").read_text()),
        "t4 levels": lambda: checks.check_same_pool([boot("vllm-0.28/boot_pool_level_lo.log"), boot("vllm-0.28/boot_pool_level_hi.log")]),
        "t11 levels": lambda: checks.check_kv_memory_stable([boot("vllm-0.28/boot_pool_level_lo.log"), boot("vllm-0.28/boot_pool_level_hi.log")]),
    }


def outcome(r: Any) -> Any:
    if isinstance(r, list):
        return [outcome(x) for x in r]
    return {"tripwire": r.tripwire, "status": r.status.value, "evidence_keys": sorted(r.evidence)}


def main() -> None:
    out: dict[str, Any] = {}
    for name, call in cases().items():
        try:
            out[name] = outcome(call())
        except Exception as e:  # recorded: 0.3.1 could not read the file
            out[name] = {"error": type(e).__name__}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
