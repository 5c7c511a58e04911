#!/usr/bin/env bash
# Fuzzes every reader (fuzz/fuzz_targets/*) for a fixed time each and fails on any crash, hang
# (an input taking over FUZZ_TIMEOUT seconds) or memory use over FUZZ_RSS_MB.
#
#   .ci/fuzz.sh                 every target for 20 s (CI's short budget)
#   .ci/fuzz.sh 600             every target for 10 minutes
#   .ci/fuzz.sh 600 prom_parse  one target
#   FUZZ_PARALLEL=2 .ci/fuzz.sh 600     two targets at a time
#
# Needs: cargo-fuzz (installed into ~/.cargo/bin when missing, from crates.io) and a C++ compiler
# (g++, for libFuzzer). Works on the stable toolchain: without a sanitizer (`-s none`) cargo-fuzz
# needs no nightly flag. Safe Rust needs no AddressSanitizer; what the fuzzers look for is a
# panic (including integer overflow: the targets are built with overflow checks), a hang, or
# memory out of proportion to the input.
#
# Corpora: fuzz/corpus/<target> (in the repository, small) is copied into a working corpus under
# fuzz/target/corpus/<target> (or FUZZ_WORK/<target>), where new inputs go; the recorded evidence
# (tests/fixtures, or INFERLINT_EVIDENCE; FUZZ_EVIDENCE=0 leaves it out) is read as an extra
# corpus when present, and never written. A crashing
# input is saved under fuzz/artifacts/<target>/; minimize it with
# `cargo fuzz tmin -s none <target> <file>` and keep it under fuzz/regressions/<target>/ with a
# test in tests/fuzz_regressions.rs.
#
# FUZZ_TARGET_DIR puts the build and the working corpora outside the repository (CI keeps them
# in its cache folder, so a warm run does not rebuild).
#
# The summary (target, seconds, executions, executions/s, peak RSS, corpus) goes to stdout and,
# when FUZZ_SUMMARY names a file, to that file as tab-separated lines.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

secs="${1:-${FUZZ_SECONDS:-20}}"
shift || true
all=(prom_parse snapshot_read series_read bench_read bootlog_feed)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
parallel="${FUZZ_PARALLEL:-1}"
timeout_s="${FUZZ_TIMEOUT:-5}"
rss_mb="${FUZZ_RSS_MB:-1024}"
max_len="${FUZZ_MAX_LEN:-131072}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
export PATH="$HOME/.cargo/bin:$PATH"
tdir="${FUZZ_TARGET_DIR:-$root/fuzz/target}"
mkdir -p "$tdir"
tdir="$(cd "$tdir" && pwd)"
export CARGO_TARGET_DIR="$tdir"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install --locked cargo-fuzz
fi

echo "== building the fuzz targets ($(cargo fuzz --version))"
start=$(date +%s)
# `cargo fuzz build` builds one target, or all of them.
if [ ${#targets[@]} -eq 1 ]; then
  (cd fuzz && cargo fuzz build -s none "${targets[0]}")
else
  (cd fuzz && cargo fuzz build -s none)
fi
echo "built in $(( $(date +%s) - start )) s"
bin_dir="$tdir/x86_64-unknown-linux-gnu/release"

evidence="${INFERLINT_EVIDENCE:-$root/tests/fixtures}"
[ "${FUZZ_EVIDENCE:-1}" != 0 ] || evidence=/nonexistent
extra_root="$(mktemp -d)"
trap 'rm -rf "$extra_root"' EXIT

# The evidence files each target reads, copied to a scratch folder outside the repository.
extra_corpus() {
  local target="$1" dir="$extra_root/$1"
  mkdir -p "$dir"
  [ -d "$evidence" ] || { echo "$dir"; return; }
  local -a pat
  case "$target" in
    prom_parse) pat=(-name '*.prom') ;;
    snapshot_read) pat=(-name '*.snapshot.json' -o -name '*.prom') ;;
    series_read) pat=(-name '*.series.jsonl') ;;
    bench_read) pat=(-name 'bench*.json*' -o -name '*result.json' -o -name 'load.log' -o -name '*stdout.txt') ;;
    bootlog_feed) pat=(-name '*.log') ;;
  esac
  find "$evidence" -type f \( "${pat[@]}" \) -print0 |
    while IFS= read -r -d '' f; do cp "$f" "$dir/$(echo "${f#"$evidence"/}" | tr '/' '_')"; done
  echo "$dir"
}

dict_of() {
  case "$1" in
    prom_parse) echo prom ;;
    bootlog_feed) echo bootlog ;;
    *) echo json ;;
  esac
}

run_one() {
  local target="$1"
  local work="${FUZZ_WORK:-$tdir/corpus}/$target" art="$root/fuzz/artifacts/$target/"
  local log="$tdir/fuzz-$target.log"
  mkdir -p "$work" "$art"
  cp -n "$root/fuzz/corpus/$target/"* "$work/" 2>/dev/null || true
  local extra
  extra="$(extra_corpus "$target")"
  local rc=0
  "$bin_dir/$target" "$work" "$extra" \
    -max_total_time="$secs" -timeout="$timeout_s" -rss_limit_mb="$rss_mb" \
    -max_len="$max_len" -dict="$root/fuzz/dicts/$(dict_of "$target").dict" \
    -artifact_prefix="$art" -print_final_stats=1 >"$log" 2>&1 || rc=$?
  local execs peak seconds
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  peak="$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)"
  seconds="$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)"
  [ -n "$seconds" ] || seconds="$secs"
  local per_s=$(( ${execs:-0} / (seconds > 0 ? seconds : 1) ))
  local line
  line="$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s' "$target" "$seconds" "${execs:-?}" "$per_s" \
    "${peak:-?}" "$(find "$work" -type f | wc -l)" "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")")"
  echo "$line" >"$tdir/summary-$target.tsv"
  if [ "$rc" -ne 0 ]; then
    echo "== $target FAILED (exit $rc); what went wrong, from $log:"
    # The panic message sits above a long backtrace: show it first, then the end of the log.
    grep -m 1 -A 4 -e 'panicked at' -e 'ERROR: libFuzzer' "$log" || true
    echo "-- the last lines:"
    tail -n 12 "$log"
    ls -l "$art"
    # The artifact stays on the CI machine; its bytes in the log let anyone reproduce it.
    local f
    for f in "$art"*; do
      [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 16384 ] || continue
      echo "-- $(basename "$f"), base64 (reproduce: base64 -d > crash && $bin_dir/$target crash):"
      base64 -w 0 "$f"
      echo
    done
  fi
  return "$rc"
}

echo "== fuzzing ${targets[*]} for $secs s each, $parallel at a time (evidence: $([ -d "$evidence" ] && echo "$evidence" || echo none))"
failed=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=("$!")
  if [ ${#pids[@]} -ge "$parallel" ]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done

printf '%-14s %8s %14s %10s %8s %7s  %s\n' target seconds executions exec/s rss_mb corpus result
for t in "${targets[@]}"; do
  f="$tdir/summary-$t.tsv"
  [ -f "$f" ] || continue
  IFS=$'\t' read -r a b c d e g h <"$f"
  printf '%-14s %8s %14s %10s %8s %7s  %s\n' "$a" "$b" "$c" "$d" "$e" "$g" "$h"
  [ -z "${FUZZ_SUMMARY:-}" ] || cat "$f" >>"$FUZZ_SUMMARY"
done
exit "$failed"
