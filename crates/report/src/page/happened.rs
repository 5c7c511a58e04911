//! "What happened": the lede, the headline tiles, the facts of the test and of the setup, and
//! the glossary of words.

use maud::{html, Markup};

use inferlint_core::engine::Engine;
use inferlint_core::evidence::{Count, JsonF64};
use inferlint_core::fmt::{duration, g, millis, pct_signed, thousands_f};
use inferlint_core::result::{Status, Tripwire};

use super::super::{glossary, Report};
use super::pill;

pub fn section(report: &Report) -> Markup {
    let lede = report.lede();
    html! {
        section aria-labelledby="h-happened" {
            h2 id="h-happened" { "What happened" }
            @if !lede.is_empty() {
                p class="lede" { (lede.join(" ")) }
            }
            (tiles(report))
            div class="facts" {
                div class="card" {
                    h3 { "The test" }
                    (kv_list(&test_facts(report)))
                }
                div class="card" {
                    h3 { "The setup" }
                    (kv_list(&setup_facts(report)))
                }
            }
            details class="gloss" id="words" {
                summary { "Words used in this report" }
                dl class="terms" {
                    @for (term, text) in glossary::terms(report.engine()) {
                        dt { (term) }
                        dd { (text) }
                    }
                }
            }
        }
    }
}

pub fn kv_list(rows: &[(String, String)]) -> Markup {
    html! {
        dl class="kv" {
            @for (k, v) in rows {
                dt { (k) }
                dd { (v) }
            }
        }
    }
}

struct Tile {
    key: String,
    value: String,
    unit: Option<String>,
    sub: String,
    badge: Option<Status>,
}

/// The headline numbers, each a tile where the recording has it.
fn tiles(report: &Report) -> Markup {
    let tiles: Vec<Tile> = [
        ran_at_once(report),
        evictions(report),
        output_rate(report),
        median_ttft(report),
        usable_blocks(report),
    ]
    .into_iter()
    .flatten()
    .collect();
    if tiles.is_empty() {
        return html! {};
    }
    html! {
        div class="tiles" role="group" aria-label="Headline numbers" {
            @for t in &tiles {
                div class="tile" {
                    @if let Some(s) = t.badge { div class="badge" { (pill(s)) } }
                    div class="k" { (t.key) }
                    div class="v" {
                        (t.value)
                        @if let Some(u) = &t.unit { " " small { (u) } }
                    }
                    div class="sub" { (t.sub) }
                }
            }
        }
    }
}

/// The most requests that ran at once, of those the load kept open, flagged when T8 did not pass.
fn ran_at_once(report: &Report) -> Option<Tile> {
    let requested = report.inputs().requested;
    let p = report
        .result(Tripwire::T8)
        .and_then(|r| r.evidence.t8()?.peak_running.flatten())
        .or(report.summary().peak_running)?;
    let t8 = report.result(Tripwire::T8).map(|r| r.status);
    Some(Tile {
        key: "Ran at once".into(),
        value: g(p),
        unit: requested.map(|n| format!("of {n}")),
        sub: match requested {
            Some(n) => format!("The load tool kept {n} requests open."),
            None => "The most requests the server ran at one reading.".into(),
        },
        badge: t8.filter(|s| *s != Status::Pass),
    })
}

/// Requests evicted and recomputed, by the engine's word for them, where T1 ran.
fn evictions(report: &Report) -> Option<Tile> {
    let engine = report.engine();
    let t1 = report.result(Tripwire::T1)?;
    let count = t1
        .evidence
        .t1()
        .and_then(|e| e.preemptions.flatten())
        .map(Count::as_f64)
        .or(report.summary().preemptions);
    let key = match engine {
        Engine::Vllm => "Preemptions",
        Engine::Sglang => "Retractions",
        Engine::Trtllm => "Pauses",
        Engine::Llamacpp => "Evictions",
    };
    let log = match engine {
        Engine::Vllm => "The server log mentions none.".to_string(),
        e => format!("{} logs each.", e.name()),
    };
    Some(Tile {
        key: key.into(),
        value: count.map(g).unwrap_or_else(|| "?".into()),
        unit: None,
        sub: format!("Requests evicted and recomputed. {log}"),
        badge: Some(t1.status).filter(|s| *s != Status::Pass),
    })
}

/// The server's output tokens per second (T10), beside what the load tool measured.
fn output_rate(report: &Report) -> Option<Tile> {
    let bench = report.inputs().bench.as_ref();
    let t10 = report.result(Tripwire::T10).and_then(|r| r.evidence.t10());
    // A figure written by name ("NaN", "inf") is no figure to show.
    let finite = |x: Option<JsonF64>| x.map(|x| x.0).filter(|x| x.is_finite());
    let rate = t10.and_then(|e| finite(e.rate_per_s))?;
    let span = t10.and_then(|e| finite(e.span_s)).unwrap_or(f64::NAN);
    let client = bench.and_then(|b| Some((b.output_throughput?, b.duration?)));
    let sub = match client {
        Some((c, d)) => format!(
            "server's count over {span:.1} s, idle time included; the load tool measured {} over its {d:.1} s",
            thousands_f(c, 1)
        ),
        None => match t10.and_then(|e| finite(e.integer_second_error.flatten())) {
            Some(e) => format!("over {span:.1} s; a whole-second timer reads {}", pct_signed(e, 2)),
            None => format!("over {span:.1} s"),
        },
    };
    Some(Tile {
        key: "Output tokens per second".into(),
        value: thousands_f(rate, 1),
        unit: None,
        sub,
        badge: None,
    })
}

/// The load tool's median time to first token, with its p99.
fn median_ttft(report: &Report) -> Option<Tile> {
    let b = report.inputs().bench.as_ref()?;
    let med = b.median_ttft_ms?;
    let p99 = b
        .p99_ttft_ms
        .map(|p| format!("p99 {}; ", millis(p)))
        .unwrap_or_default();
    Some(Tile {
        key: "Time to first token, median".into(),
        value: millis(med),
        unit: None,
        sub: format!("{p99}as the load tool measured it, queueing included"),
        badge: None,
    })
}

/// The KV cache's usable blocks, with the count the server reported and the block size.
fn usable_blocks(report: &Report) -> Option<Tile> {
    let blocks = report.usable_blocks()?;
    let reported = report
        .result(Tripwire::T14)
        .and_then(|r| r.evidence.t14()?.reported_num_gpu_blocks.flatten())
        .map(|n| n as f64);
    let bs = report.first_facts().and_then(|f| f.attention_block_size);
    let mut sub = match reported {
        Some(r) => format!("{} reported, one held back", g(r)),
        None => "one block held back".into(),
    };
    if let Some(bs) = bs {
        sub.push_str(&format!("; {} tokens per block", thousands_f(bs as f64, 0)));
    }
    Some(Tile {
        key: "Usable KV blocks".into(),
        value: blocks.to_string(),
        unit: None,
        sub,
        badge: None,
    })
}

/// `2026-09-26 17:50:52 to 17:52:25 (UTC-7)`, in the local time zone of the machine that
/// writes the report.
fn clock_range(start: f64, end: f64) -> Option<String> {
    use chrono::{Local, TimeZone};
    let at = |t: f64| Local.timestamp_opt(t.floor() as i64, 0).single();
    let (a, b) = (at(start)?, at(end)?);
    let same_day = a.date_naive() == b.date_naive();
    let end_fmt = if same_day {
        "%H:%M:%S"
    } else {
        "%Y-%m-%d %H:%M:%S"
    };
    Some(format!(
        "{} to {} ({})",
        a.format("%Y-%m-%d %H:%M:%S"),
        b.format(end_fmt),
        super::utc_offset(a.offset().local_minus_utc())
    ))
}

fn per_request(total: f64, n: Option<f64>) -> String {
    match n.filter(|n| *n > 0.0) {
        Some(n) => format!(
            "{} ({} per request)",
            thousands_f(total, 0),
            thousands_f((total / n).round(), 0)
        ),
        None => thousands_f(total, 0),
    }
}

fn test_facts(report: &Report) -> Vec<(String, String)> {
    let s = report.summary();
    let mut rows = Vec::new();
    if let Some(span) = s.span_s {
        rows.push((
            "Measured time".into(),
            if span < 60.0 {
                format!("{}, from the before to the after reading", duration(span))
            } else {
                format!(
                    "{} ({span:.1} s), from the before to the after reading",
                    duration(span)
                )
            },
        ));
    }
    if let (Some(a), Some(b)) = (s.wall_start, s.wall_end) {
        if let Some(text) = clock_range(a, b) {
            rows.push(("Clock time".into(), text));
        }
    }
    if let Some(boot) = s.boot_s {
        rows.push((
            "Server start-up".into(),
            format!("{}, before the test (from the boot log)", duration(boot)),
        ));
    }
    if let Some(restart) = &s.restarted {
        rows.push(("Counts".into(), format!("void: {restart}")));
    }
    if let Some(n) = s.finished {
        let mut text = thousands_f(n, 0);
        let reasons: Vec<String> = s
            .reasons()
            .into_iter()
            .filter(|(key, _, v)| *v > 0.0 && *key != "error")
            .map(|(_, words, v)| format!("{} {words}", g(v)))
            .collect();
        let mut parts = reasons;
        match s.errors {
            Some(0.0) => parts.push("no errors".into()),
            Some(e) => parts.push(format!("{} failed with an error", g(e))),
            None => {}
        }
        if !parts.is_empty() {
            text.push_str(": ");
            text.push_str(&parts.join(", "));
        }
        rows.push(("Requests finished".into(), text));
    }
    if let Some(t) = s.output_tokens {
        rows.push(("Output tokens generated".into(), per_request(t, s.finished)));
    }
    if let Some(t) = s.prompt_tokens {
        rows.push(("Prompt tokens read".into(), per_request(t, s.finished)));
    }
    if let Some(e) = s.mean_e2e_s {
        rows.push(("Average time per request".into(), format!("{e:.1} s")));
    }
    if let Some(t) = s.mean_ttft_s {
        let mut text = format!("{t:.1} s");
        if let Some(q) = s.mean_queue_s {
            text.push_str(&format!(", {q:.1} s of it waiting in the queue"));
        }
        rows.push(("Average wait for the first token".into(), text));
    } else if let Some(q) = s.mean_queue_s {
        rows.push(("Average wait in the queue".into(), format!("{q:.1} s")));
    }
    if rows.is_empty() {
        rows.push((
            "Measured".into(),
            "nothing: there were no before and after readings".into(),
        ));
    }
    rows
}

fn setup_facts(report: &Report) -> Vec<(String, String)> {
    let s = report.summary();
    let inputs = report.inputs();
    let mut rows = Vec::new();
    if let Some(n) = inputs.requested {
        rows.push(("Concurrency asked for".into(), n.to_string()));
    }
    rows.push((
        "Requests sent by".into(),
        "the load tool. inferlint sends none: it only reads the server's counters.".into(),
    ));
    if s.readings > 0 {
        let every = s
            .interval_s
            .map(|i| format!("the server read every {} s, ", g(i)))
            .unwrap_or_else(|| "the server read ".into());
        let readings = if s.readings == 1 {
            "reading"
        } else {
            "readings"
        };
        rows.push((
            "Recording".into(),
            format!("{every}{} {readings}", thousands_f(s.readings as f64, 0)),
        ));
    }
    if let Some(url) = &s.url {
        rows.push(("Server address".into(), url.clone()));
    }
    if !inputs.sources.is_empty() {
        rows.push(("Made from".into(), inputs.sources.join(", ")));
    }
    rows.push(("Tripwires checked".into(), tripwires_checked(report)));
    rows
}

/// `8 of 25. Not here: …`.
pub fn tripwires_checked(report: &Report) -> String {
    let mut checked: Vec<Tripwire> = Vec::new();
    let mut na: Vec<Tripwire> = Vec::new();
    for r in report.results() {
        let list = if r.status == Status::NotApplicable {
            &mut na
        } else {
            &mut checked
        };
        if !list.contains(&r.tripwire) {
            list.push(r.tripwire);
        }
    }
    // A boot log is checked for start-up failures whether the finding is T12 or T7.
    if !report.inputs().boot_logs.is_empty() && !checked.contains(&Tripwire::T12) {
        checked.push(Tripwire::T12);
    }
    na.retain(|t| !checked.contains(t));
    checked.sort();
    glossary::tripwires_checked(&checked, &na, report.engine())
}
