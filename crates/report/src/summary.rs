//! What the before and after readings and the recording say about the run as a whole
//! (docs/design/report.md#the-summary): the measured span, requests finished and why, tokens,
//! evictions, mean latencies, the peak running and the recording's cadence.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use inferlint_core::checks::counters::{self, CounterQuery, DeltaError};
use inferlint_core::engine::Engine;
use inferlint_core::prom::Metrics;
use inferlint_core::series::Series;
use inferlint_core::snapshot::Snapshot;

/// Finish reasons in the order the page lists them, with what each means.
pub const FINISH_REASONS: [(&str, &str); 5] = [
    ("length", "reached their token limit"),
    ("stop", "ended by the model"),
    ("repetition", "stopped for repeating"),
    ("abort", "cancelled"),
    ("error", "failed with an error"),
];

/// The run in numbers. A field is None when its input was missing: never zero.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The restart text when the server restarted between the readings; the counts are then
    /// void (None).
    pub restarted: Option<String>,
    /// Seconds from the before to the after reading (monotonic clock when both have one).
    pub span_s: Option<f64>,
    /// Wall-clock times (Unix seconds) of the before and after readings.
    pub wall_start: Option<f64>,
    pub wall_end: Option<f64>,
    pub finished: Option<f64>,
    /// Requests finished per reason, for servers that label them (vLLM, TensorRT-LLM).
    pub finished_by_reason: Map<String, Value>,
    /// Requests that finished with an error; None when the server gives no reasons.
    pub errors: Option<f64>,
    pub output_tokens: Option<f64>,
    pub prompt_tokens: Option<f64>,
    /// Evictions between the readings (preemptions, retractions).
    pub preemptions: Option<f64>,
    pub mean_e2e_s: Option<f64>,
    pub mean_ttft_s: Option<f64>,
    pub mean_queue_s: Option<f64>,
    pub peak_running: Option<f64>,
    pub interval_s: Option<f64>,
    pub readings: usize,
    pub url: Option<String>,
    /// Seconds the server took to start, from its boot log.
    pub boot_s: Option<f64>,
}

impl Summary {
    /// Requests finished per reason, as numbers, in the page's order.
    pub fn reasons(&self) -> Vec<(&'static str, &'static str, f64)> {
        FINISH_REASONS
            .iter()
            .filter_map(|(key, words)| {
                let n = self.finished_by_reason.get(*key)?.as_f64()?;
                Some((*key, *words, n))
            })
            .collect()
    }
}

/// Builds the summary from whatever inputs there are.
pub fn summarize(
    before: Option<&Snapshot>,
    after: Option<&Snapshot>,
    series: Option<&Series>,
    engine: Engine,
    boot_s: Option<f64>,
) -> Summary {
    let mut s = Summary {
        boot_s,
        ..Summary::default()
    };
    if let Some(series) = series {
        s.peak_running = series.peak_running();
        s.interval_s = Some(series.header.interval_s).filter(|v| v.is_finite() && *v > 0.0);
        s.readings = series.samples.len();
        s.url = Some(series.header.url.clone()).filter(|u| !u.is_empty());
    }
    let (Some(before), Some(after)) = (before, after) else {
        return s;
    };
    if s.url.is_none() {
        s.url = Some(after.url.clone()).filter(|u| !u.is_empty());
    }
    if after.t_wall.is_finite() && before.t_wall.is_finite() {
        s.wall_start = Some(before.t_wall);
        s.wall_end = Some(after.t_wall);
    }
    s.span_s = counters::span(before, after).ok().map(|sp| sp.seconds);
    if let Some(r) = counters::restart_between(&before.metrics, &after.metrics) {
        s.restarted = Some(r.to_string());
        return s;
    }
    let names = engine.metrics();
    let mut d = Deltas {
        before: &before.metrics,
        after: &after.metrics,
        restarted: None,
    };
    s.finished = names.finished.and_then(|f| d.value(CounterQuery::new(f)));
    s.output_tokens = d.value(CounterQuery::new(names.generation_tokens));
    s.prompt_tokens = d.value(CounterQuery::new(names.prompt_tokens));
    if let Some(counter) = names.preemptions {
        s.preemptions = d.value(CounterQuery::new(counter).with_witness(names.preemption_witness));
    }
    if let Some(f) = names.finished {
        s.finished_by_reason = d.finished_by_reason(f);
    }
    if !s.finished_by_reason.is_empty() {
        s.errors = Some(
            s.finished_by_reason
                .get("error")
                .and_then(Value::as_f64)
                .unwrap_or(0.0),
        );
    }
    s.mean_e2e_s = names.e2e_latency.and_then(|h| d.mean(h));
    s.mean_ttft_s = names.ttft.and_then(|h| d.mean(h));
    s.mean_queue_s = names.queue_time.and_then(|h| d.mean(h));
    match d.restarted {
        Some(r) => voided(s, r),
        None => s,
    }
}

/// The summary of a server that restarted while a counter was read: its counts are void, what
/// the readings themselves say stays.
fn voided(s: Summary, restarted: String) -> Summary {
    Summary {
        restarted: Some(restarted),
        span_s: s.span_s,
        wall_start: s.wall_start,
        wall_end: s.wall_end,
        peak_running: s.peak_running,
        interval_s: s.interval_s,
        readings: s.readings,
        url: s.url,
        boot_s: s.boot_s,
        ..Summary::default()
    }
}

/// Counter deltas between the before and after readings, remembering the first restart one
/// of them showed.
struct Deltas<'a> {
    before: &'a Metrics,
    after: &'a Metrics,
    restarted: Option<String>,
}

impl Deltas<'_> {
    /// The counter's delta; None when it is absent or the server restarted.
    fn value(&mut self, q: CounterQuery<'_>) -> Option<f64> {
        match counters::counter_delta(self.before, self.after, &q) {
            Ok(v) => Some(v),
            Err(DeltaError::Restarted(r)) => {
                self.restarted.get_or_insert_with(|| r.to_string());
                None
            }
            Err(DeltaError::Absent { .. } | DeltaError::NotCounted { .. }) => None,
        }
    }

    /// The histogram's mean between the readings: the delta of its sum over that of its count.
    fn mean(&mut self, hist: &str) -> Option<f64> {
        let sum = format!("{hist}_sum");
        let count = format!("{hist}_count");
        let total = self.value(CounterQuery::new(&sum))?;
        let n = self.value(CounterQuery::new(&count))?;
        (n > 0.0).then(|| total / n)
    }

    /// Requests finished per reason, the page's reasons first in its order.
    fn finished_by_reason(&mut self, finished: &str) -> Map<String, Value> {
        let mut by_reason = Map::new();
        for (reason, _) in FINISH_REASONS {
            if reason_present(self.after, finished, reason) {
                let labels = [("finished_reason", reason)];
                if let Some(v) = self.value(CounterQuery::new(finished).with_labels(&labels)) {
                    by_reason.insert(reason.to_string(), v.into());
                }
            }
        }
        // Reasons the page does not know still count; keep them after the known ones.
        for sample in self.after.series(finished, &[]) {
            if let Some(reason) = sample.label("finished_reason") {
                if !by_reason.contains_key(reason) {
                    let labels = [("finished_reason", reason)];
                    if let Some(v) = self.value(CounterQuery::new(finished).with_labels(&labels)) {
                        by_reason.insert(reason.to_string(), v.into());
                    }
                }
            }
        }
        by_reason
    }
}

fn reason_present(m: &Metrics, name: &str, reason: &str) -> bool {
    !m.series(name, &[("finished_reason", reason)]).is_empty()
}
