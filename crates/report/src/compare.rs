//! `report --compare RUN_A RUN_B …`: one page with the runs side by side: verdicts, boot facts,
//! peak and average running, evictions, tokens per second, and T4/T11 across the runs' boot
//! logs (do starts with the same flags draw the same pool and memory?).

use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde_json::json;

use inferlint_core::bootlog::BootFacts;
use inferlint_core::checks::t4_t11;
use inferlint_core::fmt::{g, thousands_f};
use inferlint_core::result::{CheckResult, Status, Tripwire};

use super::page::{pill, CSP, FAVICON};
use super::{embed, Report};

/// One run's figure for a row of the side-by-side table, where it has one.
type Figure = fn(&Report) -> Option<String>;

/// The rows of the side-by-side table: a name, and each run's figure ("–" where it has none).
const SIDE_BY_SIDE: &[(&str, Figure)] = &[
    ("Engine", |r| {
        Some(match r.version() {
            Some(v) => format!("{} {v}", r.engine().name()),
            None => r.engine().name().to_string(),
        })
    }),
    ("KV pool", |r| {
        r.first_facts()?
            .kv_pool_tokens
            .map(|p| format!("{} tokens", thousands_f(p as f64, 0)))
    }),
    ("KV blocks (usable)", |r| {
        r.usable_blocks().map(|b| b.to_string())
    }),
    ("Attention block / page", |r| {
        let f = r.first_facts()?;
        f.page_size
            .or(f.attention_block_size)
            .map(|b| format!("{b} tokens"))
    }),
    ("Attention backend", |r| {
        let f = r.first_facts()?;
        (!f.selected_backends.is_empty()).then(|| f.selected_backends.join(", "))
    }),
    ("Memory for KV cache", |r| {
        r.first_facts()?
            .available_kv_cache_gib
            .map(|v| format!("{} GiB", g(v)))
    }),
    ("Concurrency asked for", |r| {
        r.inputs().requested.map(|n| n.to_string())
    }),
    ("Peak running", |r| r.summary().peak_running.map(g)),
    ("Average running while busy", |r| {
        r.busy_averages().map(|b| format!("{:.1}", b.running))
    }),
    ("Preemptions", |r| r.context().evictions().map(g)),
    ("Output tokens/s (server)", |r| {
        r.result(Tripwire::T10)?
            .evidence
            .t10()?
            .rate_per_s
            .map(|v| v.0)
            .filter(|v| v.is_finite())
            .map(|v| thousands_f(v, 1))
    }),
    ("Output tokens/s (load tool)", |r| {
        r.inputs()
            .bench
            .as_ref()?
            .output_throughput
            .map(|v| thousands_f(v, 1))
    }),
    ("Requests finished", |r| {
        r.summary().finished.map(|v| thousands_f(v, 0))
    }),
];

/// Reports of several runs, compared.
pub struct Comparison {
    /// (label, report) per run, in the order given.
    pub runs: Vec<(String, Report)>,
    /// T4 and T11 across the runs' first boot logs.
    pub across: Vec<CheckResult>,
    pub generated_at: Option<String>,
}

impl Comparison {
    pub fn new(runs: Vec<(String, Report)>) -> Comparison {
        let facts: Vec<(String, &BootFacts)> = runs
            .iter()
            .filter_map(|(label, r)| r.first_facts().map(|f| (label.clone(), f)))
            .collect();
        let mut across = Vec::new();
        if facts.len() >= 2 {
            across.extend(t4_t11::check_t4(&facts));
            across.extend(t4_t11::check_t11(&facts));
        }
        Comparison {
            runs,
            across,
            generated_at: None,
        }
    }

    /// The data block: each run's embedded data and the cross-run results.
    pub fn data(&self) -> serde_json::Value {
        json!({
            "schema": "inferlint.compare/1",
            "inferlint": inferlint_core::VERSION,
            "runs": self.runs.iter().map(|(label, r)| json!({"label": label, "report": embed::Embedded::of(r)})).collect::<Vec<_>>(),
            "across": self.across,
        })
    }

    pub fn render_page(&self) -> String {
        let title = format!("{} runs compared", self.runs.len());
        let stamp = self
            .generated_at
            .clone()
            .unwrap_or_else(super::page::generated_now);
        html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta http-equiv="Content-Security-Policy" content=(CSP);
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { (title) }
                    link rel="icon" href=(FAVICON);
                    script { (PreEscaped(include_str!("assets/theme.js"))) }
                    style { (PreEscaped(include_str!("assets/report.css"))) }
                }
                body {
                    div class="inferlint-report" {
                        header class="top" {
                            div class="topbar" {
                                span class="brand" { "inferlint" }
                                button type="button" class="theme" id="theme-toggle" aria-pressed="false" hidden {
                                    span class="label" { "Dark" }
                                }
                            }
                            h1 { (title) }
                            p class="meta" {
                                @for (i, (label, _)) in self.runs.iter().enumerate() {
                                    @if i > 0 { " · " }
                                    (label)
                                }
                            }
                        }
                        main {
                            (self.verdicts())
                            (self.numbers())
                            (self.across_section())
                        }
                        footer { "Generated " (stamp) " by inferlint " (inferlint_core::VERSION) ". Every number is read from the runs' own files." }
                        div class="tt" role="status" hidden {}
                        script type="application/json" id="inferlint-data" {
                            (PreEscaped(embed::json_for_script(&self.data())))
                        }
                        script { (PreEscaped(include_str!("assets/report.js"))) }
                    }
                }
            }
        }
        .into_string()
    }

    fn head_row(&self) -> Markup {
        html! {
            thead { tr { th { "" } @for (label, _) in &self.runs { th scope="col" { (label) } } } }
        }
    }

    fn verdicts(&self) -> Markup {
        let checked: Vec<Tripwire> = Tripwire::ALL
            .into_iter()
            .filter(|t| self.runs.iter().any(|(_, r)| r.result(*t).is_some()))
            .collect();
        html! {
            section aria-labelledby="h-verdicts" {
                h2 id="h-verdicts" { "Verdicts" }
                div class="card table-scroll" {
                    table class="compare" {
                        (self.head_row())
                        tbody {
                            tr {
                                th scope="row" { "Counts" }
                                @for (_, r) in &self.runs { td { (inferlint_core::output::counts_line(r.results())) } }
                            }
                            @for t in &checked {
                                tr {
                                    th scope="row" { (t.code()) " " small { (inferlint_core::catalogue::entry(*t).name) } }
                                    @for (_, r) in &self.runs {
                                        td {
                                            @match r.result(*t) {
                                                Some(res) => { (pill(res.status)) br; small { (res.message) } }
                                                None => span class="muted" { "not checked" }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    fn numbers(&self) -> Markup {
        html! {
            section aria-labelledby="h-numbers" {
                h2 id="h-numbers" { "Side by side" }
                div class="card table-scroll" {
                    table class="compare" {
                        (self.head_row())
                        tbody {
                            @for (name, f) in SIDE_BY_SIDE {
                                tr {
                                    th scope="row" { (name) }
                                    @for (_, r) in &self.runs { td class="num" { (f(r).unwrap_or_else(|| "–".into())) } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    fn across_section(&self) -> Markup {
        html! {
            section aria-labelledby="h-across" {
                h2 id="h-across" { "Across the starts (T4, T11)" }
                @if self.across.is_empty() {
                    p class="note" { "No two runs were started with the same flags (or fewer than two have a boot log), so there is no pool or memory to compare." }
                } @else {
                    div class="findings" {
                        @for r in &self.across {
                            article class=(format!("finding {}", r.status.key())) {
                                header { (pill(r.status)) h3 { (r.tripwire.code()) " · " (inferlint_core::catalogue::entry(r.tripwire).name) } }
                                p class="msg" { (r.message) }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Every result of every run, then the cross-run ones (for `--json`).
    pub fn all_results(&self) -> Vec<CheckResult> {
        self.runs
            .iter()
            .flat_map(|(_, r)| r.results().iter().cloned())
            .chain(self.across.iter().cloned())
            .collect()
    }

    /// Whether any run or the comparison found a failure.
    pub fn any_failed(&self) -> bool {
        self.all_results().iter().any(|r| r.status == Status::Fail)
    }
}
