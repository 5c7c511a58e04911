//! The HTML report: one offline page that says what limited a run, what happened, each tripwire's
//! result, what the server did over time and the server that ran (docs/design/report.md).
//!
//! [`Report::build`] turns the run's files ([`Inputs`]) into results, a [`Summary`] and
//! [`Insight`]s; [`Report::render_page`] draws the page from templates that escape by default
//! (maud), with the run's data embedded as JSON so the page is also the archive
//! ([`embed::read_back`]).
#![expect(
    missing_docs,
    reason = "120 public items (mostly struct fields and variants) were undocumented when the workspace turned missing_docs on; document them, then drop this"
)]
#![forbid(unsafe_code)]
// No unwrap or expect on what the inputs hold: bad input is an error naming the file and line,
// never a panic. Where an invariant makes one safe, the site allows it and says why.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod charts;
pub mod compare;
pub mod discover;
pub mod downsample;
pub mod embed;
pub mod glossary;
pub mod insights;
pub mod page;
pub mod summary;
pub mod svg;
pub mod sweep_page;

use std::path::Path;

use inferlint_core::bench::BenchResult;
use inferlint_core::bootlog::BootFacts;
use inferlint_core::checks::{self, counters, t14};
use inferlint_core::engine::Engine;
use inferlint_core::result::{CheckResult, Status, Tripwire};
use inferlint_core::series::Series;
use inferlint_core::snapshot::Snapshot;
use inferlint_core::verdict;

pub use insights::{BusyAverages, CacheNeed, Insight, Tone};
pub use summary::Summary;

/// A boot log: the name it is shown under and its text.
#[derive(Clone, Debug)]
pub struct BootLog {
    /// A short distinct label (`boot.log`, `run2/boot.log`).
    pub label: String,
    pub text: String,
}

/// Another node of a run that spans nodes, as run.json's `nodes` records it
/// (docs/design/nodes.md).
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
pub struct NodePart {
    /// The Slurm relative index (`--serve-node K`).
    pub node: u32,
    pub hostname: Option<String>,
    /// The part's command, secrets masked.
    #[serde(default)]
    pub command: String,
    /// How many processes its teardown left (None: no teardown report came).
    pub teardown_left: Option<usize>,
    /// What each death on the node said.
    #[serde(default)]
    pub deaths: Vec<String>,
    /// T2 on the node's GPUs after its teardown (None: its agent sent none).
    #[serde(default)]
    pub t2: Option<inferlint_core::result::CheckResult>,
}

/// Everything a report is made from. Every input is optional; a report needs a boot log or
/// both snapshots to say anything.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// The run's boot log first; more logs are other starts to compare (T4, T11).
    pub boot_logs: Vec<BootLog>,
    pub before: Option<Snapshot>,
    pub after: Option<Snapshot>,
    pub series: Option<Series>,
    /// The load tool's result file.
    pub bench: Option<BenchResult>,
    /// The concurrency the load asked for.
    pub requested: Option<u64>,
    pub title: Option<String>,
    /// The file names the report was made from, in order log, before, after, series, result.
    pub sources: Vec<String>,
    /// Results that only the live run could judge (the gate's and the stop's T2, the probe's
    /// and the deaths' T7), merged by core's one rule ([`verdict::merge`]).
    pub extra_results: Vec<CheckResult>,
    /// The version the live server reported (SGLang prints none in its log).
    pub server_version: Option<String>,
    /// The engine, when known or named; else it is read from the inputs (else vLLM).
    pub engine: Option<Engine>,
    /// Untimed requests the load tool sent but left out of its result (T15, T16).
    pub untimed_requests: u64,
    /// What the load command asked for (T16, T18), when the command is known.
    pub load: Option<inferlint_core::load::LoadIntent>,
    /// What the run saw of its load (T20, T21), from run.json's `during_load`.
    pub observed: Option<inferlint_core::observed::LoadObserved>,
    /// Where the full recording lives, for the note under each chart's data table.
    pub run_folder: Option<String>,
    /// The footer's time stamp; None means now.
    pub generated_at: Option<String>,
    /// Why run checks could not be made from these inputs (a run folder that lacks a file):
    /// each one left out is reported as "can't tell".
    pub missing: inferlint_core::checks::gaps::Gaps,
    /// The server's parts on other nodes (empty for a one-node run).
    pub nodes: Vec<NodePart>,
}

/// A built report.
#[derive(Clone, Debug)]
pub struct Report {
    engine: Engine,
    facts: Vec<(String, BootFacts)>,
    results: Vec<CheckResult>,
    summary: Summary,
    insights: Vec<Insight>,
    lede: Vec<String>,
    inputs: Inputs,
}

/// The engine: named, else the boot log's, the snapshots', the recording's; else vLLM.
pub fn engine_of(inputs: &Inputs, facts: &[(String, BootFacts)]) -> Engine {
    if let Some(e) = inputs.engine {
        return e;
    }
    let snaps: Vec<&Snapshot> = inputs.before.iter().chain(inputs.after.iter()).collect();
    facts
        .first()
        .and_then(|(_, f)| f.engine)
        .or_else(|| counters::snapshots_engine(&snaps))
        .or_else(|| inputs.series.as_ref().and_then(|s| s.engine()))
        .unwrap_or(Engine::Vllm)
}

impl Report {
    /// Runs every check the inputs allow and computes the summary and the insights.
    pub fn build(inputs: Inputs) -> Report {
        let hint = inputs.engine;
        let mut facts: Vec<(String, BootFacts)> = inputs
            .boot_logs
            .iter()
            .map(|l| {
                (
                    l.label.clone(),
                    inferlint_core::bootlog::parse_text(&l.text, hint),
                )
            })
            .collect();
        if let (Some(v), Some((_, first))) = (&inputs.server_version, facts.first_mut()) {
            first.set_server_version(v.clone());
        }
        let engine = engine_of(&inputs, &facts);
        let first = facts.first().map(|(_, f)| f);
        let results = verdict::assemble(&verdict::RunFacts {
            first_log: inputs.boot_logs.first().map(|l| l.text.as_str()),
            boot: &facts,
            live: &inputs.extra_results,
            window: Some(verdict::Window {
                facts: checks::Facts {
                    before: inputs.before.as_ref(),
                    after: inputs.after.as_ref(),
                    series: inputs.series.as_ref(),
                    boot: first,
                    requested: inputs.requested,
                    bench: inputs.bench.as_ref(),
                    untimed_requests: inputs.untimed_requests,
                    load: inputs.load.as_ref(),
                    observed: inputs.observed.as_ref(),
                    engine,
                },
                gaps: &inputs.missing,
            }),
        });
        let summary = summary::summarize(
            inputs.before.as_ref(),
            inputs.after.as_ref(),
            inputs.series.as_ref(),
            engine,
            first.and_then(|f| f.boot_seconds),
        );
        let mut report = Report {
            engine,
            facts,
            results,
            summary,
            insights: Vec::new(),
            lede: Vec::new(),
            inputs,
        };
        let ctx = report.context();
        let (ins, lede) = (insights::insights(&ctx), insights::lede(&ctx));
        report.insights = ins;
        report.lede = lede;
        report
    }

    pub(crate) fn context(&self) -> insights::Context<'_> {
        insights::Context {
            engine: self.engine,
            summary: &self.summary,
            results: &self.results,
            facts: self.first_facts(),
            bench: self.inputs.bench.as_ref(),
            requested: self.inputs.requested,
            series: self.inputs.series.as_ref(),
            cache_block: self.cache_block(),
        }
    }

    /// `block_size` of the after (else the before) snapshot's cache config, where the engine
    /// exports one.
    fn cache_block(&self) -> Option<u64> {
        let info = self.engine.metrics().cache_info?;
        [self.inputs.after.as_ref(), self.inputs.before.as_ref()]
            .into_iter()
            .flatten()
            .find_map(|s| s.metrics.info_label(info, "block_size")?.parse().ok())
    }

    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// Every tripwire result, boot-log checks first, then the run checks.
    pub fn results(&self) -> &[CheckResult] {
        &self.results
    }

    /// The result of one tripwire, if it was checked.
    pub fn result(&self, t: Tripwire) -> Option<&CheckResult> {
        self.results.iter().rev().find(|r| r.tripwire == t)
    }

    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// "What limited this run", at most three.
    pub fn insights(&self) -> &[Insight] {
        &self.insights
    }

    /// The plain-language opening sentences.
    pub fn lede(&self) -> &[String] {
        &self.lede
    }

    /// The boot facts of each log, the run's own first.
    pub fn facts(&self) -> &[(String, BootFacts)] {
        &self.facts
    }

    pub fn first_facts(&self) -> Option<&BootFacts> {
        self.facts.first().map(|(_, f)| f)
    }

    pub fn inputs(&self) -> &Inputs {
        &self.inputs
    }

    /// The usable KV block count T14 inferred.
    pub fn usable_blocks(&self) -> Option<u64> {
        self.result(Tripwire::T14).and_then(t14::usable_blocks)
    }

    pub fn cache_need(&self) -> Option<CacheNeed> {
        self.context().cache_need()
    }

    pub fn busy_averages(&self) -> Option<BusyAverages> {
        self.inputs
            .series
            .as_ref()
            .and_then(insights::busy_averages)
    }

    pub fn per_request_tokens(&self) -> Option<f64> {
        self.context().per_request_tokens()
    }

    /// The page's title: given, else `{Engine} {version} run`, `{Engine} run`, `Tripwire report`.
    pub fn title(&self) -> String {
        if let Some(t) = self.inputs.title.as_ref().filter(|t| !t.trim().is_empty()) {
            return t.clone();
        }
        let engine_known = self.inputs.engine.is_some()
            || self.first_facts().is_some_and(|f| f.engine.is_some())
            || self.inputs.before.is_some()
            || self.inputs.series.is_some();
        match (self.version(), engine_known) {
            (Some(v), _) => format!("{} {v} run", self.engine.name()),
            (None, true) => format!("{} run", self.engine.name()),
            (None, false) => "Tripwire report".to_string(),
        }
    }

    /// The server's version: from its log, else as the live server reported it.
    pub fn version(&self) -> Option<String> {
        self.first_facts()
            .and_then(|f| f.version.clone())
            .or_else(|| self.inputs.server_version.clone())
    }

    /// The terminal's "what limited this run" block for `report` (indented, after a heading).
    pub fn insight_lines(&self) -> Vec<String> {
        self.insights
            .iter()
            .map(|i| format!("  - {}", i.line()))
            .collect()
    }

    /// Counts per status, in the page's order.
    pub fn counts(&self) -> Vec<(Status, usize)> {
        [
            Status::Fail,
            Status::Warn,
            Status::Unknown,
            Status::Pass,
            Status::NotApplicable,
        ]
        .into_iter()
        .map(|s| (s, self.results.iter().filter(|r| r.status == s).count()))
        .collect()
    }

    /// The standalone page.
    pub fn render_page(&self) -> String {
        page::render(self, page::Mode::Page)
    }

    /// The page as a fragment for embedding: starts with `<title>`; no doctype, html, body or
    /// icon link.
    pub fn render_fragment(&self) -> String {
        page::render(self, page::Mode::Fragment)
    }

    /// Writes the standalone page, creating parent folders. The page is written to a temporary
    /// file first and renamed, so a failed write never leaves half a report.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        write_atomically(path, self.render_page().as_bytes())
    }
}

/// Writes a page whole or not at all (core's one atomic write).
pub use inferlint_core::files::write_atomic as write_atomically;
