//! Sweeps (docs/design/sweeps.md): one server, the load run once per value of one of its
//! options, each point judged as a window of its own, and what holds across the points.
//!
//! [`Plan`] reads `--sweep OPTION=V1,V2,…` and sets the option on the load's command for each
//! point; [`Point`] is what one point found (its verdicts and its figures); [`across`] judges
//! the points together (a cache an earlier point filled, the knee); [`Sweep`] is `sweep.json`
//! and the terminal's table.

mod across;
pub mod guidellm;
mod plan;
mod reset;
mod spread;
mod table;
pub mod tool;

pub use across::{across, Finding, FindingKind, INHERITED_HIT_RATE};
pub use plan::{point_folder, script_labels, Between, Plan, Planned, SweepError};
pub use reset::{llamacpp_reset_blocker, LLAMACPP_DEFAULT_CACHE_RAM_MIB};
pub use spread::SPREAD_CV;
pub use table::{table, HEAD as TABLE_HEAD};

use serde::{Deserialize, Serialize};

use crate::bench::BenchResult;
use crate::load::LoadIntent;
use crate::result::{CheckResult, Status, Tripwire};

/// `sweep.json`'s schema name.
pub const SCHEMA: &str = "inferlint.sweep/1";

/// What a point's prompts were: two points with the same key send the same prompts, so the
/// later one can be served from the cache the earlier one filled.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptsKey {
    pub dataset: Option<String>,
    pub seed: Option<u64>,
    /// Whether the prompts are meant to be fresh (random or synthetic).
    pub fresh: bool,
}

impl PromptsKey {
    /// The key of a load's prompts, from what its command asked for.
    pub fn of(intent: &LoadIntent) -> PromptsKey {
        PromptsKey {
            dataset: intent.dataset.clone(),
            seed: intent.seed,
            fresh: intent.prompts == crate::load::Prompts::Fresh,
        }
    }

    /// Whether a later load with this key sends the prompts an earlier one with `other` sent:
    /// fresh prompts of one dataset and one seed.
    pub fn repeats(&self, other: &PromptsKey) -> bool {
        self.fresh && self == other && self.dataset.is_some() && self.seed.is_some()
    }
}

/// A point's headline figures, from the load tool's result and the server's recording.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub requests_per_s: Option<f64>,
    pub output_tokens_per_s: Option<f64>,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    pub tpot_p50_ms: Option<f64>,
    /// The most requests the server ran at once (T8's reading).
    pub peak_running: Option<f64>,
    /// The share of prompt tokens served from the prefix cache in the point (T16's reading).
    pub cache_hit_rate: Option<f64>,
}

impl Figures {
    /// The figures of a point's result file and verdicts.
    pub fn of(bench: Option<&BenchResult>, results: &[CheckResult]) -> Figures {
        let of = |t: Tripwire| results.iter().find(|r| r.tripwire == t);
        let b = bench.cloned().unwrap_or_default();
        let per_s = |n: Option<f64>| match (n, b.duration) {
            (Some(n), Some(d)) if d > 0.0 => Some(n / d),
            _ => None,
        };
        Figures {
            requests_per_s: per_s(b.completed),
            output_tokens_per_s: b.output_throughput.or_else(|| per_s(b.total_output_tokens)),
            ttft_p50_ms: b.median_ttft_ms,
            ttft_p99_ms: b.p99_ttft_ms,
            tpot_p50_ms: b.median_tpot_ms.or(b.mean_tpot_ms),
            peak_running: of(Tripwire::T8)
                .and_then(|r| r.evidence.t8())
                .and_then(|e| e.peak_running.flatten()),
            cache_hit_rate: of(Tripwire::T16)
                .and_then(|r| r.evidence.t16())
                .and_then(|e| e.hit_rate)
                .map(|x| x.0),
        }
    }
}

/// What the run did between the previous point and this one to reset the server's cache, and
/// what the server answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome", content = "detail")]
pub enum Reset {
    /// The server said the cache was reset.
    Done,
    /// The server answered, but did not reset it (vLLM's `{"success": false}`, SGLang's 400).
    Refused(String),
    /// The server has no reset endpoint, or it could not be reached.
    Unavailable(String),
}

/// One point of a sweep: the option's value, its verdicts (its window's), its figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// 1-based.
    pub index: usize,
    /// `--max-concurrency 16`.
    pub label: String,
    pub value: String,
    /// Which run of its value it is (`--repeat`), 1-based; absent when each value ran once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// Its folder under the sweep's (`points/03-max-concurrency-16`).
    pub folder: String,
    /// The concurrency and the rate the point asked for.
    pub asked_concurrency: Option<u64>,
    pub asked_rate: Option<f64>,
    pub prompts: PromptsKey,
    /// The cache reset before it (None: none was asked, or it is the first point).
    pub reset: Option<Reset>,
    pub figures: Figures,
    pub results: Vec<CheckResult>,
    /// The load command exited with this status.
    pub load_exit: Option<i32>,
    /// The point was cut short by Ctrl-C.
    pub interrupted: bool,
    /// Where its time went; absent in a file written before it was measured.
    #[serde(default, skip_serializing_if = "PointTimings::unmeasured")]
    pub timings: PointTimings,
    /// The server it ran on, as that start's boot log tells; absent where no log was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<PointServer>,
}

/// The server a point ran on: which start of it in the run, and what that start's boot log
/// says of what limits the figures (the engine's version, the KV pool, a running cap).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointServer {
    /// 1 for the run's first start; a sweep restarted between its points counts up.
    pub boot: u32,
    pub version: Option<String>,
    pub kv_pool_tokens: Option<u64>,
    pub running_cap: Option<u64>,
}

impl PointServer {
    /// The server of start `boot`, from its boot log's facts.
    pub fn of(boot: u32, facts: &crate::bootlog::BootFacts) -> PointServer {
        PointServer {
            boot,
            version: facts.version.clone(),
            kv_pool_tokens: facts.kv_pool_tokens,
            running_cap: facts.running_cap,
        }
    }
}

/// A point's time, in seconds: all of it (the reset, the snapshots, the load, the result, the
/// checks and its files), and the load's part; the rest is inferlint's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PointTimings {
    pub total_s: f64,
    pub load_s: f64,
}

impl PointTimings {
    /// Nothing was measured (a point read from a file that has no timings).
    pub fn unmeasured(&self) -> bool {
        self.total_s == 0.0 && self.load_s == 0.0
    }
}

impl Point {
    /// Whether its own verdicts let its figures stand: no check failed and none could not tell.
    pub fn verdicts_hold(&self) -> bool {
        !self.interrupted
            && self.load_exit.is_none_or(|c| c == 0)
            && !self
                .results
                .iter()
                .any(|r| matches!(r.status, Status::Fail | Status::Unknown))
    }
}

/// A whole sweep: its plan, its points and what holds across them (`sweep.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    pub schema: String,
    /// The option swept, as given (`max-concurrency`).
    pub option: String,
    pub between: Between,
    pub points: Vec<Point>,
    pub findings: Vec<Finding>,
    /// The first point past the knee, if any (1-based).
    pub knee: Option<usize>,
}

impl Sweep {
    /// The sweep of these points, judged across.
    pub fn new(option: &str, between: Between, points: Vec<Point>) -> Sweep {
        let findings = across(&points);
        let knee = findings
            .iter()
            .find(|f| f.kind == FindingKind::Knee)
            .map(|f| f.point);
        Sweep {
            schema: SCHEMA.to_string(),
            option: option.to_string(),
            between,
            points,
            findings,
            knee,
        }
    }

    /// Whether point `index` holds: its own verdicts do, and no finding across the points
    /// names it. The reasons it does not, in a few words each.
    pub fn why_not(&self, index: usize) -> Vec<String> {
        let Some(p) = self.points.iter().find(|p| p.index == index) else {
            return vec!["no such point".to_string()];
        };
        let mut why: Vec<String> = Vec::new();
        if p.interrupted {
            why.push("interrupted".to_string());
        }
        if let Some(c) = p.load_exit.filter(|&c| c != 0) {
            why.push(format!("the load exited {c}"));
        }
        for r in &p.results {
            match r.status {
                Status::Fail => why.push(format!("{} failed", r.tripwire)),
                Status::Unknown => why.push(format!("{} can't tell", r.tripwire)),
                _ => {}
            }
        }
        for f in self.findings.iter().filter(|f| f.point == index) {
            why.push(f.short.clone());
        }
        why
    }

    /// The sweep as `sweep.json` writes it.
    pub fn to_json(&self) -> String {
        crate::output::to_json_string(self)
    }
}
