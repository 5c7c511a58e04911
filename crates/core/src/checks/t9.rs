//! T9 falling-ceiling: how many requests fit, `floor(1/share)`, changed as requests grew
//! (docs/design/tripwires.md#t9).

use crate::checks::blocks::predicted_ceiling;
use crate::checks::t8::gauges_hint;
use crate::engine::Engine;
use crate::evidence::{JsonF64, T9Evidence};
use crate::fmt::pct;
use crate::result::{CheckResult, Tripwire};
use crate::series::Series;

/// Usage at or above this is "saturated": the cache is the limit there, so those samples say
/// the most about the ceiling.
pub const SATURATION: f64 = 0.9;

/// T9 at the saturation threshold 0.9, with the usable block count when a T14 PASS gave one and
/// the concurrency the load asked for when it is known.
pub fn check(
    series: &Series,
    usable_blocks: Option<u64>,
    requested: Option<u64>,
    engine: Engine,
) -> CheckResult {
    check_at(series, usable_blocks, requested, engine, SATURATION)
}

/// T9 with another saturation threshold.
pub fn check_at(
    series: &Series,
    usable_blocks: Option<u64>,
    requested: Option<u64>,
    engine: Engine,
    saturation: f64,
) -> CheckResult {
    // A data-parallel server: each engine's pool on its own (docs/tripwires.md).
    if let Some(r) =
        crate::checks::per_engine::t9(series, usable_blocks, requested, engine, saturation)
    {
        return r;
    }
    // One pass, no copies: a day's recording is 345,600 samples, and the reader has already
    // spent most of the memory budget holding them.
    let Some(pass) = busy_pass(series, usable_blocks, saturation) else {
        return no_busy_sample(series, usable_blocks, engine);
    };
    let (basis, c) = match pass.saturated {
        Some(c) => ("saturated", c),
        None => ("busy", pass.busy),
    };
    let (fullest, ran) = (pass.fullest, pass.ran);
    let fullest = fullest.and_then(|(u, r)| predicted_ceiling(u, r, usable_blocks).ok());
    let msg = ceiling_message(&c, basis, engine);
    // A ceiling that moved only far above what ran limited nothing: it could bind only where
    // its lowest value was reached or asked for (docs/design/tripwires.md#t9).
    let could_bind = (ran >= c.lo as f64) || requested.is_some_and(|n| n >= c.lo);
    let r = if c.lo == c.hi {
        CheckResult::pass(Tripwire::T9, msg)
    } else if could_bind {
        CheckResult::warn(Tripwire::T9, msg)
    } else {
        CheckResult::pass(Tripwire::T9, above_message(c.lo, c.hi, ran, requested))
    };
    let per_request = |share: f64| usable_blocks.map(|b| share * b as f64);
    r.with_evidence(T9Evidence {
        ceiling_min: Some(c.lo),
        ceiling_max: Some(c.hi),
        ceiling_at_fullest: Some(fullest),
        share_min: Some(JsonF64(c.share_min)),
        share_max: Some(JsonF64(c.share_max)),
        samples: Some(c.rows as u64),
        basis: Some(basis.to_string()),
        usable_blocks: Some(usable_blocks),
        blocks_per_request_min: Some(per_request(c.share_min).map(JsonF64)),
        blocks_per_request_max: Some(per_request(c.share_max).map(JsonF64)),
        gauges_lag: Some(engine.gauges_lag()),
        engines: None,
    })
}

/// The unknown of a series with no sample where requests ran and KV was in use, with the hint
/// for engines whose gauges must be switched on.
fn no_busy_sample(series: &Series, usable_blocks: Option<u64>, engine: Engine) -> CheckResult {
    let mut msg = "no sample with requests running and KV in use".to_string();
    let no_running = series.samples.iter().all(|s| s.running().is_none());
    let hint = gauges_hint(engine);
    if no_running && !hint.is_empty() {
        msg.push_str("; ");
        msg.push_str(hint);
    }
    CheckResult::unknown(Tripwire::T9, msg).with_evidence(T9Evidence {
        samples: Some(0),
        usable_blocks: Some(usable_blocks),
        gauges_lag: Some(engine.gauges_lag()),
        ..Default::default()
    })
}

/// The range of ceilings, and of one request's share, over the samples that judge them.
struct Ceilings {
    /// Samples that gave a ceiling.
    rows: usize,
    lo: u64,
    hi: u64,
    share_min: f64,
    share_max: f64,
}

impl Ceilings {
    fn new() -> Ceilings {
        Ceilings {
            rows: 0,
            lo: u64::MAX,
            hi: 0,
            share_min: f64::INFINITY,
            share_max: f64::NEG_INFINITY,
        }
    }

    /// Counts the ceiling and share (usage ÷ running) of `rows` samples with the same readings.
    fn add(&mut self, ceiling: u64, share: f64, rows: usize) {
        self.rows += rows;
        self.lo = self.lo.min(ceiling);
        self.hi = self.hi.max(ceiling);
        self.share_min = self.share_min.min(share);
        self.share_max = self.share_max.max(share);
    }

    fn done(mut self) -> Ceilings {
        if self.rows == 0 {
            self.lo = 0;
        }
        self
    }
}

/// What T9 reads of the busy samples (running > 0 and usage > 0).
struct BusyPass {
    /// The ceilings of every busy sample; each has one unless the pool's size rules it out.
    busy: Ceilings,
    /// The ceilings of the saturated ones (usage at or above the threshold), when any is.
    saturated: Option<Ceilings>,
    /// The fullest busy sample's (usage, running).
    fullest: Option<(f64, f64)>,
    /// The most requests that ran.
    ran: f64,
}

/// T9's questions of the busy samples, answered from their distinct readings (each pair's
/// ceiling and share are the same on every row that has it); None when no sample is busy.
fn busy_pass(series: &Series, usable_blocks: Option<u64>, saturation: f64) -> Option<BusyPass> {
    let (mut busy, mut saturated) = (Ceilings::new(), Ceilings::new());
    let mut any_saturated = false;
    let mut fullest: Option<(f64, f64)> = None;
    let mut ran = 0.0_f64;
    let readings = series.busy_readings();
    // In the order of each pair's first row, so the fullest is the first row at the most usage.
    for b in &readings {
        let (u, r) = (b.usage, b.running);
        let is_saturated = u >= saturation;
        any_saturated |= is_saturated;
        if !fullest.is_some_and(|f| f.0 >= u) {
            fullest = Some((u, r));
        }
        ran = ran.max(r);
        let Ok(ceiling) = predicted_ceiling(u, r, usable_blocks) else {
            continue;
        };
        busy.add(ceiling, u / r, b.rows);
        if is_saturated {
            saturated.add(ceiling, u / r, b.rows);
        }
    }
    (!readings.is_empty()).then(|| BusyPass {
        busy: busy.done(),
        saturated: any_saturated.then(|| saturated.done()),
        fullest,
        ran,
    })
}

/// What the ceilings say: one steady ceiling with its share, or the range it moved in.
fn ceiling_message(c: &Ceilings, basis: &str, engine: Engine) -> String {
    let (lo, hi) = (c.lo, c.hi);
    let pool = match engine {
        Engine::Sglang => "the fullest memory pool (KV cache or request state)",
        Engine::Vllm | Engine::Trtllm | Engine::Llamacpp => "the cache",
    };
    let mut msg = if lo == hi {
        let (a, b) = (pct(c.share_min, 1), pct(c.share_max, 1));
        let share = if a == b { a } else { format!("{a} to {b}") };
        format!(
            "one request holds {share} of {pool}; ceiling = floor(1/share) = {lo} on every {basis} sample"
        )
    } else {
        format!(
            "ceiling moved between {lo} and {hi} as requests grew (one request held {} to {} of {pool}); concurrency was not a constant of this run",
            pct(c.share_min, 1),
            pct(c.share_max, 1)
        )
    };
    if engine.gauges_lag() {
        msg.push_str(&format!(
            " (from {} readings; {} updates its gauges only when a request completes)",
            c.rows,
            engine.name()
        ));
    }
    msg
}

/// The pass of a ceiling that moved but stayed above every request that ran or was asked for.
fn above_message(lo: u64, hi: u64, ran: f64, requested: Option<u64>) -> String {
    let asked = requested.map_or_else(String::new, |n| format!("the {n} asked for and "));
    format!(
        "ceiling moved between {lo} and {hi} as requests grew, always above {asked}the {} that ran at most: it never limited this run",
        ran as u64
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;
    use crate::series::{Readings, SeriesHeader, SeriesSample};

    fn series(engine: Option<Engine>, rows: &[(Option<f64>, Option<f64>)]) -> Series {
        let samples = rows
            .iter()
            .enumerate()
            .map(|(i, &(running, kv_usage))| {
                SeriesSample::from(Readings {
                    t_wall: 1000.0 + i as f64 * 0.25,
                    t_mono_ns: Some(i as i64 * 250_000_000),
                    running,
                    waiting: Some(0.0),
                    kv_usage,
                    preemptions: Some(0.0),
                    generation_tokens: Some(0.0),
                    prompt_tokens: Some(0.0),
                    paused: None,
                    finished_requests: None,
                })
            })
            .collect();
        Series::from_samples(
            SeriesHeader {
                url: "http://127.0.0.1:8000".into(),
                interval_s: 0.25,
                engine,
            },
            samples,
        )
    }

    #[test]
    fn a_ceiling_that_moves_far_above_what_ran_passes_with_its_range() {
        // 4 requests of a 4,096-block pool: the ceiling moves between 2,730 and 4,095, as real
        // GuideLLM 0.8.1 at 4 streams gave it.
        let s = series(
            None,
            &[
                (Some(4.0), Some(4.0 / 4095.0)),
                (Some(4.0), Some(6.0 / 4095.0)),
            ],
        );
        let r = check(&s, Some(4095), Some(4), Engine::Vllm);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(
            r.message,
            "ceiling moved between 2730 and 4095 as requests grew, always above the 4 asked for and the 4 that ran at most: it never limited this run"
        );
        // Asked for as many as the lowest ceiling: it could bind, so it warns.
        assert_eq!(
            check(&s, Some(4095), Some(2730), Engine::Vllm).status,
            Status::Warn
        );
        // Unknown concurrency asked: what ran decides.
        assert_eq!(
            check(&s, Some(4095), None, Engine::Vllm).status,
            Status::Pass
        );
    }

    #[test]
    fn a_falling_ceiling_warns_with_whole_blocks() {
        // 42 usable blocks: 10 requests of 4 blocks, then 7 of 6 blocks.
        let s = series(
            None,
            &[
                (Some(0.0), Some(0.0)),
                (Some(10.0), Some(40.0 / 42.0)),
                (Some(7.0), Some(42.0 / 42.0)),
            ],
        );
        let r = check(&s, Some(42), None, Engine::Vllm);
        assert_eq!(r.status, Status::Warn);
        assert_eq!(
            r.message,
            "ceiling moved between 7 and 10 as requests grew (one request held 9.5% to 14.3% of the cache); concurrency was not a constant of this run"
        );
        assert_eq!(r.evidence_json()["basis"], "saturated");
        assert_eq!(r.evidence_json()["ceiling_at_fullest"], 7);
        assert!(
            (r.evidence_json()["blocks_per_request_min"]
                .as_f64()
                .unwrap()
                - 4.0)
                .abs()
                < 1e-9
        );
    }

    #[test]
    fn a_steady_ceiling_passes_and_busy_is_the_basis_below_saturation() {
        let s = series(
            Some(Engine::Sglang),
            &[(Some(2.0), Some(0.5)), (Some(1.0), Some(0.25))],
        );
        let r = check(&s, None, None, Engine::Sglang);
        assert_eq!(r.status, Status::Pass);
        assert_eq!(
            r.message,
            "one request holds 25.0% of the fullest memory pool (KV cache or request state); ceiling = floor(1/share) = 4 on every busy sample"
        );
    }

    #[test]
    fn no_busy_sample_is_unknown_with_the_gauges_hint_for_trtllm() {
        let idle = series(None, &[(Some(0.0), Some(0.0))]);
        let r = check(&idle, None, None, Engine::Vllm);
        assert_eq!(r.status, Status::Unknown);
        assert_eq!(r.message, "no sample with requests running and KV in use");
        let none = series(Some(Engine::Trtllm), &[(None, None)]);
        let r = check(&none, None, None, Engine::Trtllm);
        assert_eq!(r.status, Status::Unknown);
        assert!(r.message.contains("'enable_iter_perf_stats: true'"));
    }
}
