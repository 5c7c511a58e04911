//! One row of a recording, in 96 bytes.
//!
//! A day's recording at 0.25 s is 345,600 rows, and every check and chart passes over all of
//! them: with each reading an `Option<f64>` (16 bytes) a row took 160 bytes, 55 MB for the day,
//! most of `series`' 64 MiB budget, and each pass over a single gauge read that much memory
//! (docs/benchmarks.md). So a row keeps each gauge and counter reading in eight bytes, "absent"
//! being one bit pattern no reading can have, and gives it out as the `Option` it is. The
//! monotonic clock stays an `Option<i64>`: every `i64` is a clock a file may hold.

use std::fmt;

use super::{engine_labels, single_where, ENGINE_LABEL};
use crate::engine::Engine;
use crate::prom::Metrics;

/// An optional reading in eight bytes: the reading's bits, or [`Reading::ABSENT`].
#[derive(Clone, Copy)]
struct Reading(u64);

impl Reading {
    /// A signalling NaN with a payload. Parsers give the quiet NaN, arithmetic on any NaN gives
    /// a quiet one, and a NaN stored here is stored as the standard quiet NaN: so this pattern is
    /// only ever "absent".
    const ABSENT: u64 = 0x7FF0_0000_0000_0A65;

    #[inline]
    fn new(v: Option<f64>) -> Reading {
        match v {
            None => Reading(Self::ABSENT),
            Some(v) if v.is_nan() => Reading(f64::NAN.to_bits()),
            Some(v) => Reading(v.to_bits()),
        }
    }

    #[inline]
    fn get(self) -> Option<f64> {
        (self.0 != Self::ABSENT).then(|| f64::from_bits(self.0))
    }
}

impl Default for Reading {
    fn default() -> Reading {
        Reading(Self::ABSENT)
    }
}

/// As the `Option<f64>` it holds: two absent readings are equal, a NaN equals nothing.
impl PartialEq for Reading {
    fn eq(&self, other: &Reading) -> bool {
        self.get() == other.get()
    }
}

impl fmt::Debug for Reading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

/// One row of a recording. Every reading is None when its series was absent from that scrape.
/// Built from [`Readings`] (or changed by the setters), read through the methods named after
/// each reading.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesSample {
    pub t_wall: f64,
    t_mono_ns: Option<i64>,
    running: Reading,
    waiting: Reading,
    kv_usage: Reading,
    preemptions: Reading,
    generation_tokens: Reading,
    prompt_tokens: Reading,
    paused: Reading,
    finished_requests: Reading,
    /// The gauges of each engine of a data-parallel server (vLLM's `engine` label), in engine
    /// order; None for a server with one engine. Boxed so that a one-engine row, which every
    /// long recording so far is, pays one pointer for it (docs/benchmarks.md, `series_check`).
    #[allow(clippy::box_collection)]
    pub engines: Option<Box<Vec<EngineGauges>>>,
}

/// The readings of one row as plain fields, to build a [`SeriesSample`] from
/// (`SeriesSample::from(Readings { .. })`) or take one apart ([`SeriesSample::readings`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Readings {
    pub t_wall: f64,
    pub t_mono_ns: Option<i64>,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub kv_usage: Option<f64>,
    /// The eviction counter (vLLM preemptions, SGLang retractions); None for TensorRT-LLM.
    pub preemptions: Option<f64>,
    pub generation_tokens: Option<f64>,
    pub prompt_tokens: Option<f64>,
    /// TensorRT-LLM's paused-requests gauge.
    pub paused: Option<f64>,
    /// The engine's finished-request counter (every reason), summed over label sets: what T15
    /// compares with the client's count, so that a window bounded by two rows (a point of a
    /// load tool's own sweep) can be judged. None for llama.cpp, which counts none, and in
    /// recordings made before the field existed (docs/design/formats.md#series).
    pub finished_requests: Option<f64>,
}

impl From<Readings> for SeriesSample {
    fn from(r: Readings) -> SeriesSample {
        SeriesSample {
            t_wall: r.t_wall,
            t_mono_ns: r.t_mono_ns,
            running: Reading::new(r.running),
            waiting: Reading::new(r.waiting),
            kv_usage: Reading::new(r.kv_usage),
            preemptions: Reading::new(r.preemptions),
            generation_tokens: Reading::new(r.generation_tokens),
            prompt_tokens: Reading::new(r.prompt_tokens),
            paused: Reading::new(r.paused),
            finished_requests: Reading::new(r.finished_requests),
            engines: None,
        }
    }
}

/// The getter and setter of each reading, named after it (their meaning: [`Readings`]).
macro_rules! readings {
    ($($name:ident $set:ident),* $(,)?) => {
        impl SeriesSample {
            $(
                #[inline]
                pub fn $name(&self) -> Option<f64> {
                    self.$name.get()
                }

                #[inline]
                pub fn $set(&mut self, v: Option<f64>) {
                    self.$name = Reading::new(v);
                }
            )*
        }
    };
}

readings!(
    running set_running,
    waiting set_waiting,
    kv_usage set_kv_usage,
    preemptions set_preemptions,
    generation_tokens set_generation_tokens,
    prompt_tokens set_prompt_tokens,
    paused set_paused,
    finished_requests set_finished_requests,
);

/// One engine's gauges in one row of a data-parallel server's recording.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineGauges {
    /// The `engine` label's value (`"0"`, `"1"`, …).
    pub engine: String,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub kv_usage: Option<f64>,
}

impl SeriesSample {
    /// The monotonic clock of the scrape, in nanoseconds.
    #[inline]
    pub fn t_mono_ns(&self) -> Option<i64> {
        self.t_mono_ns
    }

    #[inline]
    pub fn set_t_mono_ns(&mut self, v: Option<i64>) {
        self.t_mono_ns = v;
    }

    /// The row's readings as plain fields (its engines left out).
    pub fn readings(&self) -> Readings {
        Readings {
            t_wall: self.t_wall,
            t_mono_ns: self.t_mono_ns(),
            running: self.running(),
            waiting: self.waiting(),
            kv_usage: self.kv_usage(),
            preemptions: self.preemptions(),
            generation_tokens: self.generation_tokens(),
            prompt_tokens: self.prompt_tokens(),
            paused: self.paused(),
            finished_requests: self.finished_requests(),
        }
    }

    /// The row for one scrape of an `engine` server: counters summed over label sets, the usage
    /// gauge as its single series, absent series as None. SGLang's retraction counter only
    /// appears after the first retraction: while its witness gauge is present it counts as 0.
    pub fn from_metrics(
        metrics: &Metrics,
        engine: Engine,
        t_wall: f64,
        t_mono_ns: Option<i64>,
    ) -> SeriesSample {
        let names = engine.metrics();
        let preemptions = names.preemptions.and_then(|counter| {
            metrics.total(counter).or_else(|| {
                names
                    .preemption_witness
                    .filter(|w| metrics.has(w))
                    .map(|_| 0.0)
            })
        });
        let mut s = SeriesSample::from(Readings {
            t_wall,
            t_mono_ns,
            running: metrics.total(names.running),
            waiting: metrics.total(names.waiting),
            kv_usage: names
                .kv_usage
                .and_then(|k| metrics.single(k).ok().flatten()),
            preemptions,
            generation_tokens: metrics.total(names.generation_tokens),
            prompt_tokens: metrics.total(names.prompt_tokens),
            paused: names.paused.and_then(|p| metrics.total(p)),
            finished_requests: names.finished.and_then(|f| metrics.total(f)),
        });
        let ids = engine_labels(metrics, engine);
        if ids.len() > 1 {
            let per: Vec<EngineGauges> = ids
                .into_iter()
                .map(|id| {
                    let only = [(ENGINE_LABEL, id.as_str())];
                    EngineGauges {
                        running: metrics.total_where(names.running, &only),
                        waiting: metrics.total_where(names.waiting, &only),
                        kv_usage: names.kv_usage.and_then(|k| single_where(metrics, k, &only)),
                        engine: id,
                    }
                })
                .collect();
            s.set_engines(per);
        }
        s
    }

    /// Sets the per-engine gauges and the aggregate ones they imply: running and waiting are
    /// the sums over the engines, known only when every engine reports its gauge (an engine
    /// whose gauge is absent is not an engine running nothing); `kv_usage` stays what it has
    /// always been, the single usage series, so it is None: several pools have no one reading.
    pub fn set_engines(&mut self, per: Vec<EngineGauges>) {
        let sum = |f: fn(&EngineGauges) -> Option<f64>| -> Option<f64> {
            per.iter().map(f).sum::<Option<f64>>()
        };
        self.set_running(sum(|e| e.running));
        self.set_waiting(sum(|e| e.waiting));
        self.set_kv_usage(None);
        self.engines = Some(Box::new(per));
    }

    /// The per-engine gauges (empty for a one-engine server).
    pub fn per_engine(&self) -> &[EngineGauges] {
        self.engines.as_deref().map_or(&[], Vec::as_slice)
    }

    /// This row as engine `id` alone saw it: its own gauges, the server's counters; None when
    /// the row has no entry for that engine.
    pub fn for_engine(&self, id: &str) -> Option<SeriesSample> {
        let e = self.per_engine().iter().find(|e| e.engine == id)?;
        Some(SeriesSample::from(Readings {
            running: e.running,
            waiting: e.waiting,
            kv_usage: e.kv_usage,
            ..self.readings()
        }))
    }

    /// Whether the server was working: running > 0 and the usage gauge > 0.
    #[inline]
    pub fn is_busy(&self) -> bool {
        self.busy_readings().is_some()
    }

    /// The usage and running readings of a busy row ([`SeriesSample::is_busy`]); None for any
    /// other (a NaN reading is neither busy nor idle).
    #[inline]
    pub fn busy_readings(&self) -> Option<(f64, f64)> {
        let (usage, running) = (self.kv_usage()?, self.running()?);
        (running > 0.0 && usage > 0.0).then_some((usage, running))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_96_bytes() {
        assert_eq!(std::mem::size_of::<SeriesSample>(), 96);
    }

    #[test]
    fn every_reading_comes_back_as_it_went_in_and_absent_is_none() {
        for v in [
            None,
            Some(0.0),
            Some(-0.0),
            Some(1.5),
            Some(f64::INFINITY),
            Some(f64::MIN_POSITIVE),
        ] {
            let mut s = SeriesSample::from(Readings {
                t_wall: 1.0,
                ..Readings::default()
            });
            s.set_kv_usage(v);
            assert_eq!(s.kv_usage().map(f64::to_bits), v.map(f64::to_bits));
        }
        let mut s = SeriesSample::from(Readings {
            t_wall: 1.0,
            ..Readings::default()
        });
        // Even the absent pattern itself, given as a reading, is a NaN, not absent.
        s.set_running(Some(f64::from_bits(Reading::ABSENT)));
        assert!(s.running().is_some_and(f64::is_nan));
        s.set_t_mono_ns(Some(i64::MIN));
        assert_eq!(s.t_mono_ns(), Some(i64::MIN));
        assert_eq!(
            SeriesSample::from(Readings {
                t_wall: 1.0,
                ..Readings::default()
            })
            .t_mono_ns(),
            None
        );
    }

    #[test]
    fn rows_compare_as_their_options_do() {
        let a = SeriesSample::from(Readings {
            t_wall: 1.0,
            running: Some(2.0),
            ..Readings::default()
        });
        assert_eq!(a, a.clone());
        let mut nan = a.clone();
        nan.set_waiting(Some(f64::NAN));
        assert_ne!(nan, nan.clone(), "NaN equals nothing, as in an Option<f64>");
        assert_eq!(a.readings().waiting, None);
        assert_eq!(SeriesSample::from(a.readings()), a);
    }
}
