//! Arithmetic on two snapshots (docs/design/tripwires.md#counter-deltas-and-restarts): the delta of
//! a counter, the restart that makes a delta meaningless, and the span between the snapshots.
//!
//! A restart is an error carrying its evidence, never a number: after a restart the counters
//! started again from zero, so `after − before` measures nothing.

use std::fmt;

use crate::engine::{detect_from_metric_names, Engine};
use crate::prom::Metrics;
use crate::snapshot::Snapshot;

/// Which counter to read: its name, optionally only the label sets carrying some label values,
/// and optionally a witness series whose presence means "the counter is 0 so far" (SGLang
/// exports its retraction counter only after the first retraction).
#[derive(Clone, Copy, Debug, Default)]
pub struct CounterQuery<'a> {
    pub name: &'a str,
    pub labels: &'a [(&'a str, &'a str)],
    pub witness: Option<&'a str>,
}

impl<'a> CounterQuery<'a> {
    pub fn new(name: &'a str) -> Self {
        CounterQuery {
            name,
            labels: &[],
            witness: None,
        }
    }

    pub fn with_labels(mut self, labels: &'a [(&'a str, &'a str)]) -> Self {
        self.labels = labels;
        self
    }

    pub fn with_witness(mut self, witness: Option<&'a str>) -> Self {
        self.witness = witness;
        self
    }

    /// The counter's value in one reading (summed over its label sets); 0 when only the witness
    /// is there; None when neither is.
    pub fn value(&self, m: &Metrics) -> Option<f64> {
        m.total_where(self.name, self.labels)
            .or_else(|| self.witness.filter(|w| m.has(w)).map(|_| 0.0))
    }
}

/// A `*_created` series whose stamp changed between the snapshots.
#[derive(Clone, Debug, PartialEq)]
pub struct MovedStamp {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub before: f64,
    pub after: f64,
}

/// Why the two snapshots are not from one server life.
#[derive(Clone, Debug, PartialEq)]
pub enum Restart {
    /// `*_created` stamps moved (in `before`'s order).
    CreatedMoved(Vec<MovedStamp>),
    /// The counter went down.
    WentDown {
        name: String,
        before: f64,
        after: f64,
    },
}

impl Restart {
    /// The evidence that shows it.
    pub fn evidence(&self) -> crate::evidence::RestartEvidence {
        use crate::evidence::RestartEvidence;
        match self {
            Restart::CreatedMoved(moved) => RestartEvidence {
                created_changed: Some(moved.len() as u64),
                example: moved.first().map(|m| m.name.clone()),
                before: moved.first().map(|m| m.before),
                after: moved.first().map(|m| m.after),
                ..Default::default()
            },
            Restart::WentDown {
                name,
                before,
                after,
            } => RestartEvidence {
                counter: Some(name.clone()),
                before: Some(*before),
                after: Some(*after),
                ..Default::default()
            },
        }
    }
}

impl fmt::Display for Restart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Restart::CreatedMoved(moved) => {
                let e = &moved[0];
                write!(
                    f,
                    "server restarted between snapshots ({} *_created stamps moved, e.g. {}: {:.3} -> {:.3})",
                    moved.len(),
                    e.name,
                    e.before,
                    e.after
                )
            }
            Restart::WentDown {
                name,
                before,
                after,
            } => write!(
                f,
                "{name} went down ({} -> {}); counters only reset on restart",
                crate::fmt::g(*before),
                crate::fmt::g(*after)
            ),
        }
    }
}

/// Why a counter delta has no value.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DeltaError {
    /// A snapshot lacks the counter (and its witness).
    #[error("{name} absent from a snapshot")]
    Absent { name: String },
    /// The server restarted between the snapshots.
    #[error("{0}")]
    Restarted(Restart),
    /// The engine has no such counter at all (llama.cpp counts no finished requests).
    #[error("{engine} counts no {what}")]
    NotCounted {
        engine: &'static str,
        what: &'static str,
    },
}

/// The `*_created` series present in both readings whose stamp changed, in `before`'s order.
pub fn moved_created_stamps(before: &Metrics, after: &Metrics) -> Vec<MovedStamp> {
    // Each stamp is looked up in `after`'s index of names, nothing copied unless it moved: every
    // counter delta asks this, dozens a window, and a map of every stamp's name and labels built
    // each time was half of what a sweep point's report spent (docs/benchmarks.md).
    before
        .created_stamps()
        .filter_map(|s| {
            let a = after.same_series(s)?.value;
            let same = a == s.value || (a.is_nan() && s.value.is_nan());
            (!same).then(|| MovedStamp {
                name: s.name.clone(),
                labels: s.labels.clone(),
                before: s.value,
                after: a,
            })
        })
        .collect()
}

/// The restart the `*_created` stamps show, if any.
pub fn restart_between(before: &Metrics, after: &Metrics) -> Option<Restart> {
    let moved = moved_created_stamps(before, after);
    (!moved.is_empty()).then_some(Restart::CreatedMoved(moved))
}

/// `after − before` of a counter summed over its label sets. A restart (moved `*_created`
/// stamps, or the counter going down) is an error, and so is a counter absent from either side.
pub fn counter_delta(
    before: &Metrics,
    after: &Metrics,
    q: &CounterQuery<'_>,
) -> Result<f64, DeltaError> {
    if let Some(r) = restart_between(before, after) {
        return Err(DeltaError::Restarted(r));
    }
    let absent = || DeltaError::Absent {
        name: q.name.to_string(),
    };
    let v0 = q.value(before).ok_or_else(absent)?;
    let v1 = q.value(after).ok_or_else(absent)?;
    if v1 < v0 {
        return Err(DeltaError::Restarted(Restart::WentDown {
            name: q.name.to_string(),
            before: v0,
            after: v1,
        }));
    }
    Ok(v1 - v0)
}

/// The delta of the engine's finished-request counter (every reason), or
/// [`DeltaError::NotCounted`] for an engine without one.
pub fn finished_delta(
    before: &Snapshot,
    after: &Snapshot,
    engine: Engine,
) -> Result<f64, DeltaError> {
    let name = engine.metrics().finished.ok_or(DeltaError::NotCounted {
        engine: engine.name(),
        what: "finished requests",
    })?;
    snapshot_delta(before, after, &CounterQuery::new(name))
}

/// As [`counter_delta`], on two snapshots.
pub fn snapshot_delta(
    before: &Snapshot,
    after: &Snapshot,
    q: &CounterQuery<'_>,
) -> Result<f64, DeltaError> {
    counter_delta(&before.metrics, &after.metrics, q)
}

/// The delta of the engine's finished-request counter for one `finished_reason` (`stop`,
/// `length`, `abort`, `error`); None where the engine's counter carries no reason. A reason's
/// series appears at its first request (TensorRT-LLM creates them lazily; vLLM exports every
/// reason from the start), so with the counter's reasons there an absent one is 0.
pub fn finished_reason_delta(
    before: &Snapshot,
    after: &Snapshot,
    engine: Engine,
    reason: &str,
) -> Result<Option<f64>, DeltaError> {
    let names = engine.metrics();
    let (Some(label), Some(finished)) = (names.finished_reason, names.finished) else {
        return Ok(None);
    };
    let has_reasons = after
        .metrics
        .series(finished, &[])
        .iter()
        .any(|s| s.label(label).is_some());
    if !has_reasons {
        return Ok(None);
    }
    if let Some(r) = restart_between(&before.metrics, &after.metrics) {
        return Err(DeltaError::Restarted(r));
    }
    let labels = [(label, reason)];
    let q = CounterQuery::new(finished).with_labels(&labels);
    let (v0, v1) = (
        q.value(&before.metrics).unwrap_or(0.0),
        q.value(&after.metrics).unwrap_or(0.0),
    );
    if v1 < v0 {
        return Err(DeltaError::Restarted(Restart::WentDown {
            name: finished.to_string(),
            before: v0,
            after: v1,
        }));
    }
    Ok(Some(v1 - v0))
}

/// Which clock a span was measured on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanClock {
    Monotonic,
    Wall,
}

/// The time between two snapshots.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    pub seconds: f64,
    /// The mean of the two scrape latencies (each end is uncertain by half its scrape).
    pub uncertainty_s: Option<f64>,
    pub clock: SpanClock,
    /// The wall-clock span, whichever clock `seconds` came from.
    pub wall_seconds: f64,
}

/// The largest disagreement between the monotonic and the wall span that is still one boot.
pub const MAX_CLOCK_DISAGREEMENT_S: f64 = 1.0;

/// Why two snapshots give no span.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SpanError {
    #[error("snapshots carry no clock (bare Prometheus text); no span available")]
    NoClock,
    #[error("monotonic span {mono:.3}s and wall span {wall:.3}s disagree; snapshots from different host boots, or the wall clock stepped")]
    Disagree { mono: f64, wall: f64 },
    #[error("non-positive span {0:.3}s")]
    NonPositive(f64),
}

/// The span from the monotonic clocks when both snapshots have one, cross-checked against the
/// wall clocks; the wall span otherwise.
pub fn span(before: &Snapshot, after: &Snapshot) -> Result<Span, SpanError> {
    if !before.t_wall.is_finite() || !after.t_wall.is_finite() {
        return Err(SpanError::NoClock);
    }
    let wall = after.t_wall - before.t_wall;
    let (seconds, clock) = match (before.t_mono_ns, after.t_mono_ns) {
        (Some(m0), Some(m1)) => {
            let mono = (m1 - m0) as f64 / 1e9;
            if (mono - wall).abs() > MAX_CLOCK_DISAGREEMENT_S {
                return Err(SpanError::Disagree { mono, wall });
            }
            (mono, SpanClock::Monotonic)
        }
        _ => (wall, SpanClock::Wall),
    };
    if seconds <= 0.0 {
        return Err(SpanError::NonPositive(seconds));
    }
    let latencies: Vec<f64> = [before.latency_s, after.latency_s]
        .into_iter()
        .flatten()
        .filter(|l| l.is_finite())
        .collect();
    let uncertainty_s =
        (!latencies.is_empty()).then(|| latencies.iter().sum::<f64>() / latencies.len() as f64);
    Ok(Span {
        seconds,
        uncertainty_s,
        clock,
        wall_seconds: wall,
    })
}

/// The engine a set of snapshots came from: the one whose prefix the most of their series
/// carry; None when no series has a known prefix.
pub fn snapshots_engine(snapshots: &[&Snapshot]) -> Option<Engine> {
    detect_from_metric_names(
        snapshots
            .iter()
            .flat_map(|s| s.metrics.samples().iter().map(|x| x.name.as_str())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(text: &str, t_wall: f64, t_mono_ns: Option<i64>, latency_s: Option<f64>) -> Snapshot {
        Snapshot {
            url: "test".into(),
            t_wall,
            t_mono_ns,
            latency_s,
            text: text.into(),
            metrics: Metrics::parse(text).unwrap(),
            source: "test".into(),
        }
    }

    fn m(text: &str) -> Metrics {
        Metrics::parse(text).unwrap()
    }

    const C: &str = "vllm:num_preemptions_total";

    #[test]
    fn delta_sums_label_sets() {
        let before = m("c_total{a=\"x\"} 3\nc_total{a=\"y\"} 2\n");
        let after = m("c_total{a=\"x\"} 10\nc_total{a=\"y\"} 10\n");
        assert_eq!(
            counter_delta(&before, &after, &CounterQuery::new("c_total")),
            Ok(15.0)
        );
        let only_x = [("a", "x")];
        assert_eq!(
            counter_delta(
                &before,
                &after,
                &CounterQuery::new("c_total").with_labels(&only_x)
            ),
            Ok(7.0)
        );
    }

    #[test]
    fn a_missing_counter_is_no_value_unless_a_witness_says_zero() {
        let before = m("w 0\n");
        let after = m("w 0\nc_total 3\n");
        assert_eq!(
            counter_delta(&before, &after, &CounterQuery::new("c_total")),
            Err(DeltaError::Absent {
                name: "c_total".into()
            })
        );
        let q = CounterQuery::new("c_total").with_witness(Some("w"));
        assert_eq!(counter_delta(&before, &after, &q), Ok(3.0));
        let neither = m("other 1\n");
        assert!(matches!(
            counter_delta(&neither, &after, &q),
            Err(DeltaError::Absent { .. })
        ));
        assert_eq!(
            DeltaError::Absent { name: C.into() }.to_string(),
            "vllm:num_preemptions_total absent from a snapshot"
        );
    }

    #[test]
    fn a_counter_going_down_is_a_restart() {
        let before = m(&format!("{C} 106\n"));
        let after = m(&format!("{C} 4\n"));
        let err = counter_delta(&before, &after, &CounterQuery::new(C)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "vllm:num_preemptions_total went down (106 -> 4); counters only reset on restart"
        );
        assert!(matches!(
            err,
            DeltaError::Restarted(Restart::WentDown {
                before: 106.0,
                after: 4.0,
                ..
            })
        ));
    }

    #[test]
    fn a_moved_created_stamp_is_a_restart_even_when_the_counter_rose() {
        let before = m(&format!(
            "{C} 4\nvllm:num_preemptions_created 1000\nx_created{{a=\"1\"}} 5\n"
        ));
        let after = m(&format!(
            "{C} 40\nvllm:num_preemptions_created 2000\nx_created{{a=\"1\"}} 5\n"
        ));
        let err = counter_delta(&before, &after, &CounterQuery::new(C)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "server restarted between snapshots (1 *_created stamps moved, e.g. vllm:num_preemptions_created: 1000.000 -> 2000.000)"
        );
        let DeltaError::Restarted(Restart::CreatedMoved(moved)) = err else {
            panic!("expected moved stamps");
        };
        assert_eq!(moved[0].before, 1000.0);
        assert_eq!(moved[0].after, 2000.0);
        // A stamp that appears only on one side (a new label set) is not a restart.
        let after = m(&format!(
            "{C} 40\nvllm:num_preemptions_created 1000\nx_created{{a=\"2\"}} 9\n"
        ));
        assert_eq!(
            counter_delta(&before, &after, &CounterQuery::new(C)),
            Ok(36.0)
        );
    }

    #[test]
    fn span_from_monotonic_clocks_with_uncertainty() {
        let a = snap("x 1\n", 100.0, Some(1_000_000_000), Some(0.02));
        let b = snap("x 1\n", 130.3, Some(31_250_000_000), Some(0.04));
        let s = span(&a, &b).unwrap();
        assert!((s.seconds - 30.25).abs() < 1e-9);
        assert!((s.uncertainty_s.unwrap() - 0.03).abs() < 1e-12);
        assert_eq!(s.clock, SpanClock::Monotonic);
        assert!((s.wall_seconds - 30.3).abs() < 1e-9);
    }

    #[test]
    fn span_errors() {
        let a = snap("x 1\n", 100.0, Some(1_000_000_000), Some(0.02));
        let far = snap("x 1\n", 200.0, Some(31_000_000_000), Some(0.02));
        let err = span(&a, &far).unwrap_err();
        assert_eq!(
            err.to_string(),
            "monotonic span 30.000s and wall span 100.000s disagree; snapshots from different host boots, or the wall clock stepped"
        );
        let nan = snap("x 1\n", f64::NAN, None, None);
        assert_eq!(span(&a, &nan), Err(SpanError::NoClock));
        assert_eq!(span(&nan, &a), Err(SpanError::NoClock));
        assert_eq!(
            SpanError::NoClock.to_string(),
            "snapshots carry no clock (bare Prometheus text); no span available"
        );
        let same = span(&a, &a).unwrap_err();
        assert_eq!(same.to_string(), "non-positive span 0.000s");
        // Wall clocks alone when a monotonic clock is missing.
        let w0 = snap("x 1\n", 100.0, None, None);
        let w1 = snap("x 1\n", 110.5, None, None);
        let s = span(&w0, &w1).unwrap();
        assert_eq!(
            (s.seconds, s.clock, s.uncertainty_s),
            (10.5, SpanClock::Wall, None)
        );
    }

    #[test]
    fn engine_of_snapshots() {
        let a = snap("vllm:a 1\nvllm:b 2\n", 1.0, None, None);
        let b = snap("sglang:a 1\n", 1.0, None, None);
        assert_eq!(snapshots_engine(&[&a, &b]), Some(Engine::Vllm));
        let c = snap("python_info 1\n", 1.0, None, None);
        assert_eq!(snapshots_engine(&[&c]), None);
    }
}
