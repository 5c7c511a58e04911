//! GuideLLM's own sweep (docs/design/sweeps.md#guidellms-own-sweep): `--profile sweep` runs
//! every point in one process, one after another, and its `benchmarks.json` holds one benchmark
//! per point, each with its own start and end time. A point's window is bounded by the rows of
//! the run's recording just outside its benchmark's span, in the pauses GuideLLM leaves between
//! benchmarks; a point the recording cannot bound is Can't tell, never judged on zeros.

use std::path::Path;

use serde_json::Value;

use crate::bench::foreign::{guidellm_result, num, read_json, ForeignError};
use crate::bench::BenchResult;
use crate::checks::t15;
use crate::engine::Engine;
use crate::prom::Metrics;
use crate::result::{CheckResult, Tripwire};
use crate::series::{Series, SeriesSample};
use crate::snapshot::Snapshot;

/// One benchmark of a GuideLLM report: a point of its sweep.
#[derive(Clone, Debug)]
pub struct GuidePoint {
    /// GuideLLM's own name for it: `synchronous`, `throughput`, `constant@15.29`,
    /// `concurrent@4`.
    pub label: String,
    /// The strategy's fixed concurrency (`streams`; 1 for `synchronous`), where it has one.
    pub streams: Option<f64>,
    /// The strategy's request rate per second, where it has one.
    pub rate: Option<f64>,
    /// Unix seconds on the client's clock: the benchmark's first request sent, its last done.
    pub start: f64,
    pub end: f64,
    /// This benchmark's own counts, as the report's reader gives them for a whole file.
    pub result: BenchResult,
}

/// The points of the GuideLLM report at `path`, in the order it ran them.
pub fn guidellm_points(path: &Path) -> Result<Vec<GuidePoint>, ForeignError> {
    let doc = read_json(path)?;
    let shape = |what: &str| ForeignError::Shape {
        path: path.display().to_string(),
        what: what.into(),
    };
    let benchmarks = doc
        .get("benchmarks")
        .and_then(Value::as_array)
        .ok_or_else(|| shape("not a GuideLLM report (no benchmarks list)"))?;
    benchmarks
        .iter()
        .enumerate()
        .map(|(k, b)| {
            let (Some(start), Some(end)) = (num(b.get("start_time")), num(b.get("end_time")))
            else {
                return Err(shape(&format!(
                    "benchmark {} has no start_time/end_time",
                    k + 1
                )));
            };
            let strategy = b.pointer("/config/strategy");
            let kind = strategy
                .and_then(|s| s.get("type_"))
                .and_then(Value::as_str)
                .unwrap_or("benchmark");
            let rate = strategy.and_then(|s| num(s.get("rate")));
            let streams = strategy
                .and_then(|s| num(s.get("streams")))
                .or((kind == "synchronous").then_some(1.0));
            let label = match (rate, streams) {
                (Some(r), _) => format!("{kind}@{r:.2}"),
                (None, Some(n)) if kind != "synchronous" => format!("{kind}@{n}"),
                _ => kind.to_string(),
            };
            Ok(GuidePoint {
                label,
                streams,
                rate,
                start,
                end,
                result: guidellm_result(path, std::slice::from_ref(b)),
            })
        })
        .collect()
}

/// The rows that bound point `k`: the last at or before its start and the first at or after
/// its end. Rows outside the span, not inside it: a row inside would leave out the requests that
/// finished between the span's edge and that row, which T15 would blame on the client. Each
/// bound must lie in the pause between this benchmark and its neighbour, so that no neighbour's
/// request is counted as this point's; Err says why the recording cannot bound the point.
pub fn bounds<'a>(
    series: &'a Series,
    points: &[GuidePoint],
    k: usize,
) -> Result<(&'a SeriesSample, &'a SeriesSample), String> {
    let p = &points[k];
    let after_previous = k
        .checked_sub(1)
        .map_or(f64::NEG_INFINITY, |j| points[j].end);
    let before_next = points.get(k + 1).map_or(f64::INFINITY, |n| n.start);
    let rows = &series.samples;
    let first = rows
        .iter()
        .rev()
        .find(|s| s.t_wall <= p.start)
        .filter(|s| s.t_wall >= after_previous)
        .ok_or(
            "the recording has no row between the previous benchmark's end and this one's start",
        )?;
    let last = rows
        .iter()
        .find(|s| s.t_wall >= p.end)
        .filter(|s| s.t_wall <= before_next)
        .ok_or("the recording has no row between this benchmark's end and the next one's start")?;
    if first.finished_requests().is_none() || last.finished_requests().is_none() {
        return Err(
            "the recording's rows around it carry no finished-request counter \
                    (recorded before inferlint wrote one, or an engine that counts none)"
                .into(),
        );
    }
    Ok((first, last))
}

/// A snapshot holding only what a recording's row holds: the counters and gauges the row
/// carries, under the engine's names. Every other series is absent from it, so a check that
/// needs one is Can't tell.
pub fn row_snapshot(row: &SeriesSample, engine: Engine, source: &str) -> Snapshot {
    let names = engine.metrics();
    let values = [
        (Some(names.running), row.running()),
        (Some(names.waiting), row.waiting()),
        (names.preemptions, row.preemptions()),
        (Some(names.generation_tokens), row.generation_tokens()),
        (Some(names.prompt_tokens), row.prompt_tokens()),
        (names.finished, row.finished_requests()),
    ];
    let text: String = values
        .iter()
        .filter_map(|(name, v)| Some(format!("{} {:?}\n", (*name)?, (*v)?)))
        .collect();
    let metrics = Metrics::parse(&text).unwrap_or_default();
    Snapshot {
        url: source.to_string(),
        t_wall: row.t_wall,
        t_mono_ns: row.t_mono_ns(),
        latency_s: None,
        text,
        metrics,
        source: source.to_string(),
    }
}

/// T15 for each point: its benchmark's own counts against the server's counters between the
/// rows that bound it; Can't tell with the reason where the recording cannot bound it.
pub fn t15_per_point(series: &Series, points: &[GuidePoint], engine: Engine) -> Vec<CheckResult> {
    (0..points.len())
        .map(|k| match bounds(series, points, k) {
            Ok((first, last)) => {
                let before = row_snapshot(first, engine, &series.source);
                let after = row_snapshot(last, engine, &series.source);
                t15::check(&points[k].result, &before, &after, 0, engine)
            }
            Err(why) => CheckResult::unknown(
                Tripwire::T15,
                format!("{}: cannot bound this point: {why}", points[k].label),
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests;
