//! "What the server did" (the charts), "The server that ran" (boot facts and memory) and the
//! tripwire guide.

use maud::{html, Markup, PreEscaped};

use inferlint_core::bootlog::BootFacts;
use inferlint_core::catalogue;
use inferlint_core::engine::Engine;
use inferlint_core::fmt::{g, thousands_f};
use inferlint_core::result::Tripwire;

use super::super::charts::{self, Body, Figure};
use super::super::downsample::Cell;
use super::super::{embed, Report};
use super::happened::kv_list;

pub fn charts_section(report: &Report) -> Markup {
    let figures = charts::figures(report);
    let engine = report.engine();
    let has_series = report
        .inputs()
        .series
        .as_ref()
        .is_some_and(|s| s.samples.len() >= 2);
    if figures.is_empty() && !has_series {
        return html! {};
    }
    html! {
        section aria-labelledby="h-did" {
            h2 id="h-did" { "What the server did" }
            @if has_series && engine.token_counter_at_finish() {
                p class="note" { (charts::no_tput_note(engine)) }
            }
            div class="charts" {
                @for f in &figures {
                    @match f {
                        Ok(fig) => (figure(report, fig)),
                        Err(e) => p class="note" { "A chart could not be drawn: " (e.to_string()) }
                    }
                }
            }
        }
    }
}

fn series_file(report: &Report) -> String {
    let name = report
        .inputs()
        .series
        .as_ref()
        .and_then(|s| {
            // A recording built in memory has no file; the run folder's is run.series.jsonl.
            let name = std::path::Path::new(&s.source).file_name()?;
            let name = name.to_string_lossy();
            name.ends_with(".jsonl").then(|| name.into_owned())
        })
        .unwrap_or_else(|| "run.series.jsonl".into());
    match &report.inputs().run_folder {
        Some(dir) => format!("{name} in {dir}"),
        None => format!("{name} in the run folder"),
    }
}

fn cell_text(c: &Cell) -> String {
    match *c {
        Cell::Empty => "–".into(),
        Cell::One(v) => short(v),
        Cell::Range(a, b) => format!("{}–{}", short(a.min(b)), short(a.max(b))),
    }
}

fn short(v: f64) -> String {
    if v.fract() == 0.0 {
        thousands_f(v, 0)
    } else if v.abs() >= 100.0 {
        thousands_f(v, 1)
    } else {
        format!("{v:.2}")
    }
}

pub fn figure(report: &Report, fig: &Figure) -> Markup {
    let legend = html! {
        @if !fig.legend.is_empty() {
            ul class="legend" {
                @for k in &fig.legend {
                    li { i class=(k.class) {} (k.name) }
                }
            }
        }
    };
    match &fig.body {
        Body::Bars(svg, rows) => html! {
            figure class="chart" id=(fig.id) {
                h3 { (fig.title) }
                figcaption { (fig.caption) }
                (svg)
                details {
                    summary { "Data table" }
                    div class="table-wrap" {
                        table {
                            tbody {
                                @for (k, v) in rows { tr { th scope="row" { (k) } td class="num" { (v) } } }
                            }
                        }
                    }
                }
            }
        },
        Body::Time(drawn) => {
            let thinned = drawn.thinned;
            let time_head = if thinned.is_some() {
                "Seconds (from–to)"
            } else {
                "Seconds"
            };
            html! {
                figure class="chart" id=(fig.id) data-chart {
                    h3 { (fig.title) }
                    figcaption {
                        (fig.caption)
                        @if let Some((n, cols)) = thinned {
                            " " span class="thinned-badge" {
                                "Thinned: " (thousands_f(n as f64, 0)) " readings are drawn as the lowest and highest value in each of " (cols) " columns, so every peak and dip shows."
                            }
                        }
                    }
                    (legend)
                    (drawn.svg)
                    script type="application/json" class="chart-data" {
                        (PreEscaped(embed::json_for_script(&drawn.data())))
                    }
                    details {
                        summary { "Data table" }
                        div class="table-wrap" {
                            table {
                                thead {
                                    tr {
                                        th class="num" { (time_head) }
                                        @for name in &drawn.names { th class="num" { (name) } }
                                        @if !drawn.events.is_empty() { th class="num" { "Events" } }
                                    }
                                }
                                tbody {
                                    @for r in &drawn.rows {
                                        tr {
                                            td class="num" {
                                                @if thinned.is_some() { (format!("{:.2}–{:.2}", r.t0, r.t1)) } @else { (format!("{:.2}", r.t0)) }
                                            }
                                            @for c in &r.cells { td class="num" { (cell_text(c)) } }
                                            @if !drawn.events.is_empty() {
                                                td class="num" { (events_at(drawn, r.x)) }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                        p class="data-note" {
                            @if thinned.is_some() {
                                "The table lists what is drawn: per column, the lowest and highest reading. "
                            } @else {
                                "The table lists every reading drawn. "
                            }
                            "The full recording is " (series_file(report)) "."
                        }
                    }
                }
            }
        }
    }
}

fn events_at(drawn: &super::super::svg::Drawn, x: f64) -> String {
    let n: f64 = drawn
        .events
        .iter()
        .filter(|e| (e.1 - x).abs() < 1e-9)
        .map(|e| e.2)
        .sum();
    if n > 0.0 {
        g(n)
    } else {
        String::new()
    }
}

/// The boot facts table rows (docs/design/report.md#the-server-that-ran).
pub fn boot_rows(f: &BootFacts, engine: Engine) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    if let Some(v) = &f.version {
        rows.push((engine.name().to_string(), v.clone()));
    }
    if let Some(m) = &f.model {
        rows.push(("Model".into(), m.clone()));
    }
    if let Some(p) = f.kv_pool_tokens {
        rows.push((
            "KV pool".into(),
            format!("{} tokens", thousands_f(p as f64, 0)),
        ));
    }
    let block = match (f.page_size, f.attention_block_size) {
        (Some(1), _) => Some("1 token (page size)".into()),
        (Some(p), _) => Some(format!("{} tokens (page size)", thousands_f(p as f64, 0))),
        (None, Some(b)) => Some(format!("{} tokens", thousands_f(b as f64, 0))),
        (None, None) if engine == Engine::Vllm && f.ready => Some("16 tokens (default)".into()),
        _ => None,
    };
    if let Some(b) = block {
        rows.push(("Attention block".into(), b));
    }
    if !f.selected_backends.is_empty() || f.requested_backend.is_some() {
        let mut text = if f.selected_backends.is_empty() {
            "not printed".to_string()
        } else {
            f.selected_backends.join(", ")
        };
        if let Some(r) = &f.requested_backend {
            text.push_str(&format!(" (requested {r})"));
        }
        rows.push(("Attention backend".into(), text));
    }
    if !f.drafter_backends.is_empty() {
        rows.push(("Draft model backend".into(), f.drafter_backends.join(", ")));
    } else if f.speculative == Some(false) {
        rows.push(("Draft model backend".into(), "none".into()));
    }
    if let Some(kv) = f.available_kv_cache_gib {
        rows.push(("Memory for KV cache".into(), format!("{} GiB", g(kv))));
    }
    match (f.cudagraphs, f.cudagraph_actual_gib) {
        (Some(false), _) => rows.push(("CUDA graphs".into(), "off".into())),
        (_, Some(gib)) => rows.push(("CUDA graphs".into(), format!("on, {} GiB", g(gib)))),
        (Some(true), None) => rows.push(("CUDA graphs".into(), "on".into())),
        (None, None) => {}
    }
    if let Some(why) = &f.custom_allreduce_off {
        rows.push(("Custom all-reduce".into(), format!("off ({why})")));
    }
    if let Some(c) = f.max_concurrency {
        let at = f
            .max_concurrency_request_len
            .map(|n| format!(" at {} tokens", thousands_f(n as f64, 0)))
            .unwrap_or_default();
        rows.push((
            "Boot line 'maximum concurrency'".into(),
            format!("{}x{at}", g(c)),
        ));
    }
    if let Some(gib) = f.model_load_gib {
        let secs = f
            .model_load_s
            .map(|s| format!(" in {} s", g(s)))
            .unwrap_or_default();
        rows.push(("Model load".into(), format!("{} GiB{secs}", g(gib))));
    }
    rows
}

/// The settings shown: vLLM's non-default args (minus the model), SGLang's 15 that change the
/// numbers, TensorRT-LLM's parsed arguments.
pub fn settings(f: &BootFacts, engine: Engine) -> Vec<String> {
    const SGLANG: [&str; 15] = [
        "attention_backend",
        "chunked_prefill_size",
        "context_length",
        "disable_cuda_graph",
        "disable_radix_cache",
        "kv_cache_dtype",
        "mamba_full_memory_ratio",
        "max_mamba_cache_size",
        "max_queued_requests",
        "max_running_requests",
        "max_total_tokens",
        "mem_fraction_static",
        "page_size",
        "schedule_policy",
        "speculative_algorithm",
    ];
    let show = |k: &str, v: &serde_json::Value| {
        let v = match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        format!("{k}={v}")
    };
    match engine {
        Engine::Vllm => f
            .non_default_args
            .iter()
            .flatten()
            .filter(|(k, _)| *k != "model" && *k != "model_tag")
            .map(|(k, v)| show(k, v))
            .collect(),
        Engine::Sglang => f
            .server_args
            .as_ref()
            .map(|a| {
                SGLANG
                    .iter()
                    .filter_map(|k| a.get(*k).map(|v| show(k, v)))
                    .collect()
            })
            .unwrap_or_default(),
        Engine::Trtllm | Engine::Llamacpp => f
            .server_args
            .iter()
            .flatten()
            .map(|(k, v)| show(k, v))
            .collect(),
    }
}

pub fn boot_section(report: &Report) -> Markup {
    let Some((label, facts)) = report.facts().first() else {
        return html! {};
    };
    let engine = report.engine();
    let rows = boot_rows(facts, engine);
    let settings = settings(facts, engine);
    let memory = charts::memory(facts);
    html! {
        section aria-labelledby="h-server" {
            h2 id="h-server" { "The server that ran" }
            div class="boot" {
                div class="card" {
                    p {
                        "From " code { (label) } ". Every result should carry these, because they change from one start to the next."
                    }
                    (kv_list(&rows))
                    @if !settings.is_empty() {
                        details {
                            summary { "Server settings (" (settings.len()) ")" }
                            ul class="settings mono" {
                                @for s in &settings { li { (s) } }
                            }
                        }
                    }
                }
                @if let Some(fig) = &memory {
                    (figure(report, fig))
                }
            }
        }
    }
}

pub fn guide_section(report: &Report) -> Markup {
    let engine = report.engine();
    html! {
        section aria-labelledby="h-guide" {
            h2 id="h-guide" { (format!("The {} tripwires", Tripwire::ALL.len())) }
            details class="gloss guide" {
                summary { "What each one catches, and how to check it" }
                div class="guide-list" {
                    @for e in catalogue::all() {
                        article id=(format!("guide-{}", e.id())) {
                            h3 { (e.id()) " · " (e.name) " " code { (e.slug) } }
                            p { (e.what) }
                            p { strong { "Why it matters: " } (e.why) }
                            @if let Some(note) = e.note(engine) {
                                p class="engine-note" { strong { "On " (engine.name()) ": " } (note) }
                            }
                            p { "Check: " code { (e.command) } }
                        }
                    }
                }
            }
        }
    }
}
