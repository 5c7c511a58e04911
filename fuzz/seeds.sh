#!/usr/bin/env bash
# Regenerates the fuzz corpora's seed files (fuzz/corpus/<target>/demo-*) from what inferlint's
# own code writes: one `inferlint demo` run (the built-in simulated vLLM), sliced small. The
# hand-written edge cases beside them are fuzz/corpus/<target>/hand-*. The recorded evidence
# (tests/fixtures) is not copied here; .ci/fuzz.sh reads it at run time as an extra, read-only
# corpus.
#
#   fuzz/seeds.sh [path/to/inferlint]     (default: target/debug/inferlint, built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-${CARGO_TARGET_DIR:-target}/debug/inferlint}"
[ -x "$bin" ] || cargo build --bin inferlint
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$bin" demo -o "$work/demo" >"$work/demo.log" 2>&1 || { cat "$work/demo.log"; exit 1; }

python3 - "$work/demo" fuzz/corpus <<'PY'
import json, os, sys
demo, corpus = sys.argv[1:3]

def put(target, name, data):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(os.path.join(d, "demo-" + name.removeprefix("demo-")), mode) as f:
        f.write(data)

def lines_with(text, words, limit):
    out = [l for l in text.split("\n") if any(w in l for w in words)]
    return "\n".join(out[:limit]) + "\n"

before = json.load(open(os.path.join(demo, "before.snapshot.json")))
after = json.load(open(os.path.join(demo, "after.snapshot.json")))
text = after["text"]
# Prometheus text: the head (gc counters), vLLM's gauges and counters, one histogram.
put("prom_parse", "demo-head.prom", "\n".join(text.split("\n")[:40]) + "\n")
put("prom_parse", "demo-vllm.prom", lines_with(text, ["vllm:num_", "vllm:kv_cache", "vllm:cache_config", "_created", "vllm:generation_tokens"], 60))
put("prom_parse", "demo-histogram.prom", lines_with(text, ["vllm:e2e_request_latency_seconds"], 40))
# Snapshots: a document with a short text, one with no clocks, and bare text.
for name, snap in (("before", before), ("after", after)):
    small = dict(snap)
    small["text"] = lines_with(snap["text"], ["vllm:num_preemptions", "vllm:generation_tokens", "_created", "vllm:cache_config"], 20)
    put("snapshot_read", f"demo-{name}.snapshot.json", json.dumps(small, indent=1) + "\n")
clockless = dict(before, t_wall=None, t_mono_ns=None, latency_s=None, text="vllm:num_requests_running 1.0\n")
put("snapshot_read", "demo-clockless.snapshot.json", json.dumps(clockless, indent=1) + "\n")
put("snapshot_read", "demo-bare.prom", lines_with(text, ["vllm:num_preemptions", "vllm:generation_tokens"], 10))
# Series: the header and the first rows, and a recording killed mid-line.
rows = open(os.path.join(demo, "run.series.jsonl")).read().split("\n")
put("series_read", "demo-run.series.jsonl", "\n".join(rows[:24]) + "\n")
killed = "\n".join(rows[:8]) + "\n" + rows[8][: len(rows[8]) // 2]
put("series_read", "demo-killed.series.jsonl", killed)
# Result files: the demo's, and the same as JSON lines.
bench = open(os.path.join(demo, "bench.json")).read()
put("bench_read", "demo-bench.json", bench)
one = json.dumps(json.loads(bench))
put("bench_read", "demo-bench.jsonl", one + "\n" + one.replace('"completed": 40', '"completed": 39') + "\n")
put("bench_read", "demo-load.log", open(os.path.join(demo, "load.log")).read())
# Boot log: the first byte of a bootlog_feed input picks the hint and the chunk sizes.
boot = open(os.path.join(demo, "boot.log"), "rb").read()
put("bootlog_feed", "demo-boot.log", b"\x00" + boot[:16384])
put("bootlog_feed", "demo-boot-tail.log", b"\x05" + boot[-8192:])
PY
du -sh fuzz/corpus/*
