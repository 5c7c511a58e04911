"""The Python API against inferlint 0.3.1, side by side in one run (docs/benchmarks.md,
"Python API against inferlint 0.3.1").

    python benches/python/compare.py --new VENV/bin/python --old REF/bin/python

Each interpreter runs this file as a worker on the same generated inputs, best of N:

1. ``import inferlint`` in a fresh interpreter (target ≤ 50 ms for the new package);
2. ``series.read`` + T8, T9 and T14 on a 24-hour recording at 0.25 s (345,600 samples, made
   from the recorded vLLM 0.28 live run as benches/series_check.rs makes it; target ≥ 10×);
3. ``bootlog.parse_file`` on the 8.8 MB log (sglang-0.5/capped/boot.log × 20, as
   benches/bootlog.rs makes it; target ≥ 30×).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVIDENCE = Path(os.environ.get("INFERLINT_EVIDENCE") or ROOT / "tests" / "fixtures")
SAMPLES = 345_600
INTERVAL_S = 0.25


def write_day(path: Path) -> int:
    rows = [json.loads(x) for x in (EVIDENCE / "vllm-0.28/live/run.series.jsonl").read_text().splitlines()]
    rows = [r for r in rows if "schema" not in r]
    first, last = rows[0], rows[-1]
    gains = {k: (last.get(k) or 0.0) - (first.get(k) or 0.0) for k in ("preemptions", "generation_tokens", "prompt_tokens")}
    t0, m0 = first["t_wall"], first.get("t_mono_ns") or 0
    out = ['{"schema": "inferlint.series/1", "url": "http://127.0.0.1:8000", "interval_s": 0.25, "engine": "vllm"}']
    for i in range(SAMPLES):
        s = rows[i % len(rows)]
        lap = i // len(rows)
        row = {
            "t_wall": round(t0 + i * INTERVAL_S, 6),
            "t_mono_ns": m0 + i * 250_000_000,
            "running": s.get("running"),
            "waiting": s.get("waiting"),
            "kv_usage": s.get("kv_usage"),
        }
        for k, g in gains.items():
            row[k] = None if s.get(k) is None else s[k] + lap * g
        out.append(json.dumps(row))
    text = "\n".join(out) + "\n"
    path.write_text(text)
    return len(text)


def write_log(path: Path) -> int:
    text = (EVIDENCE / "sglang-0.5/capped/boot.log").read_text() * 20
    path.write_text(text)
    return len(text.encode())


def best(f, n: int) -> tuple[float, float, object]:  # type: ignore[no-untyped-def]
    """Least wall and least CPU seconds over n calls (a loaded machine inflates the wall)."""
    walls, cpus, out = [], [], None
    for _ in range(n):
        t, c = time.perf_counter(), time.process_time()
        out = f()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus), out


def worker(day: str, log: str, snap: str, rounds: int) -> None:
    from inferlint import bootlog, checks, series, telemetry

    after = telemetry.load(snap)

    def series_checks() -> list[str]:
        rec = series.read(day)
        t14 = checks.check_null_block(rec, after)
        t9 = checks.concurrency_ceiling(rec, t14.evidence.get("inferred_usable_blocks"))
        t8 = checks.check_concurrency_reached(rec, 32)
        return [f"{r.tripwire} {r.status.value}" for r in (t14, t9, t8)]

    s_time, s_cpu, verdicts = best(series_checks, rounds)
    b_time, b_cpu, facts = best(lambda: bootlog.parse_file(log), rounds)
    print(json.dumps({
        "series_s": s_time,
        "series_cpu_s": s_cpu,
        "verdicts": verdicts,
        "bootlog_s": b_time,
        "bootlog_cpu_s": b_cpu,
        "kv_pool_tokens": facts.kv_pool_tokens,  # type: ignore[attr-defined]
    }))


def import_time(python: str, rounds: int) -> float:
    code = "import time; t = time.perf_counter(); import inferlint; print(time.perf_counter() - t)"
    return min(
        float(subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, cwd="/").stdout)
        for _ in range(rounds)
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--new", required=True, help="python with this package installed")
    ap.add_argument("--old", required=True, help="python with inferlint 0.3.1 installed")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--trials", type=int, default=3, help="alternating runs of both packages")
    ap.add_argument("--worker", nargs=3, metavar=("DAY", "LOG", "SNAP"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(*a.worker, a.rounds)
        return
    with tempfile.TemporaryDirectory() as d:
        day, log = Path(d) / "day.series.jsonl", Path(d) / "boot.log"
        day_bytes, log_bytes = write_day(day), write_log(log)
        snap = EVIDENCE / "vllm-0.28/live/after.snapshot.json"
        print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
              f"Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}")
        print(f"inputs: {SAMPLES} samples ({day_bytes / 1e6:.1f} MB); boot log {log_bytes / 1e6:.1f} MB")
        # Trials alternate the two packages, so that a slow spell of this shared machine lands
        # on both sides of a pair; the speed-up is the median of the pairs' ratios.
        trials: list[dict[str, dict]] = []
        for _ in range(a.trials):
            res = {}
            for name, py in (("0.3.1", a.old), ("new", a.new)):
                out = subprocess.run(
                    [py, __file__, "--new", a.new, "--old", a.old, "--rounds", str(a.rounds),
                     "--worker", str(day), str(log), str(snap)],
                    capture_output=True, text=True, check=True, cwd="/",
                ).stdout
                res[name] = json.loads(out)
                res[name]["import_s"] = import_time(py, 7)
            trials.append(res)
        old, new = trials[-1]["0.3.1"], trials[-1]["new"]
        print(f"{a.trials} alternating trials; times: the best of all trials; speed-up: the median "
              "of the trials' ratios (and their range)")
        print(f"{'':34}{'0.3.1':>10}{'new':>10}{'speed-up':>10}  {'range':>13}  target")
        for key, label, target in (
            ("import_s", "import inferlint", "new ≤ 50 ms"),
            ("series_s", "series.read + T8/T9/T14, 24 h", "≥ 10×"),
            ("series_cpu_s", "  (CPU time)", ""),
            ("bootlog_s", "bootlog.parse_file, 8.8 MB", "≥ 30×"),
            ("bootlog_cpu_s", "  (CPU time)", ""),
        ):
            olds = [t["0.3.1"][key] for t in trials]
            news = [t["new"][key] for t in trials]
            ratios = sorted(o / n for o, n in zip(olds, news))
            median = ratios[len(ratios) // 2]
            spread = f"{ratios[0]:.1f}–{ratios[-1]:.1f}×"
            print(f"{label:34}{min(olds) * 1000:>8.1f}ms{min(news) * 1000:>8.1f}ms{median:>9.1f}×  "
                  f"{spread:>13}  {target}")
        print(f"verdicts: 0.3.1 {old['verdicts']}, new {new['verdicts']}")
        print(f"kv_pool_tokens: 0.3.1 {old['kv_pool_tokens']}, new {new['kv_pool_tokens']}")


if __name__ == "__main__":
    main()
