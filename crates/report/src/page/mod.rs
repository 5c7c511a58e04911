//! The page's templates (maud, which escapes every interpolated value). Sections in the order of
//! docs/design/report.md#page-order: header, what limited this run, what happened, results, what
//! the server did, the server that ran, the tripwire guide, footer.

mod happened;
mod nodes;
mod results;
mod server;

use maud::{html, Markup, PreEscaped, DOCTYPE};

use inferlint_core::result::Status;

use super::Report;

const CSS: &str = include_str!("../assets/report.css");
const JS: &str = include_str!("../assets/report.js");
const THEME_JS: &str = include_str!("../assets/theme.js");

/// Forbids every fetch: only the page's own inline styles, inline scripts and data: images.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

/// The favicon: a pulse line on a yellow-to-orange tile, as an inline data URI.
pub const FAVICON: &str = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'%3E%3Cdefs%3E%3ClinearGradient id='g' x1='0' y1='0' x2='1' y2='1'%3E%3Cstop offset='0' stop-color='%23fcd34d'/%3E%3Cstop offset='1' stop-color='%23f97316'/%3E%3C/linearGradient%3E%3C/defs%3E%3Crect width='32' height='32' rx='7' fill='url(%23g)'/%3E%3Cpath d='M4 17h6l3-8 5 15 3-7h7' fill='none' stroke='%23fff' stroke-width='2.6' stroke-linecap='round' stroke-linejoin='round'/%3E%3C/svg%3E";

/// Standalone page or embeddable fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Page,
    /// Starts with `<title>`; no doctype, html, body or icon link.
    Fragment,
}

/// Renders the report.
pub fn render(report: &Report, mode: Mode) -> String {
    let title = report.title();
    let body = html! {
        div class="inferlint-report" {
            (header(report, &title))
            main {
                (limits(report))
                (happened::section(report))
                (results::section(report))
                (server::charts_section(report))
                (server::boot_section(report))
                (nodes::section(report))
                (server::guide_section(report))
            }
            (footer(report))
            div class="tt" role="status" hidden {}
            script type="application/json" id="inferlint-data" {
                (PreEscaped(super::embed::data_block(report)))
            }
            script { (PreEscaped(JS)) }
        }
    };
    match mode {
        Mode::Page => html! {
            (DOCTYPE)
            html lang="en" {
                (head(&title, ""))
                body { (body) }
            }
        }
        .into_string(),
        Mode::Fragment => html! {
            title { (title) }
            meta http-equiv="Content-Security-Policy" content=(CSP);
            script { (PreEscaped(THEME_JS)) }
            style { (PreEscaped(CSS)) }
            (body)
        }
        .into_string(),
    }
}

/// A standalone page's `<head>`: the content policy, the icon, the theme script and the run
/// page's stylesheet, then `extra_css` (the sweep page's own rules) in the same style element.
pub(crate) fn head(title: &str, extra_css: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta http-equiv="Content-Security-Policy" content=(CSP);
            meta name="viewport" content="width=device-width, initial-scale=1";
            meta name="color-scheme" content="light dark";
            meta name="generator" content=(format!("inferlint {}", inferlint_core::VERSION));
            title { (title) }
            link rel="icon" href=(FAVICON);
            script { (PreEscaped(THEME_JS)) }
            style { (PreEscaped(CSS)) (PreEscaped(extra_css)) }
        }
    }
}

/// The status icon: cross, exclamation mark, question mark, tick or dash.
pub fn icon(status: Status) -> Markup {
    let d = match status {
        Status::Fail => "M4.5 4.5l7 7M11.5 4.5l-7 7",
        Status::Warn => "M8 3.2v6M8 12.2v.6",
        Status::Unknown => "M5.8 5.9a2.3 2.3 0 1 1 3.3 2.1c-.7.4-1.1.9-1.1 1.7M8 12.2v.6",
        Status::Pass => "M3.6 8.4l2.9 2.9 5.9-6.6",
        Status::NotApplicable => "M4.2 8h7.6",
    };
    html! {
        svg viewBox="0 0 16 16" aria-hidden="true" focusable="false" {
            path d=(d) fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" {}
        }
    }
}

/// A status pill: icon and label, so the status never rests on colour alone.
pub fn pill(status: Status) -> Markup {
    html! {
        span class=(format!("pill {}", status.key())) { (icon(status)) (status.display_name()) }
    }
}

fn logo() -> Markup {
    html! {
        svg viewBox="0 0 32 32" aria-hidden="true" focusable="false" {
            defs {
                linearGradient id="il-logo" x1="0" y1="0" x2="1" y2="1" {
                    stop offset="0" stop-color="#fcd34d" {}
                    stop offset="1" stop-color="#f97316" {}
                }
            }
            rect width="32" height="32" rx="7" fill="url(#il-logo)" {}
            path d="M4 17h6l3-8 5 15 3-7h7" fill="none" stroke="#fff" stroke-width="2.6" stroke-linecap="round" stroke-linejoin="round" {}
        }
    }
}

fn theme_icon() -> Markup {
    html! {
        svg viewBox="0 0 16 16" aria-hidden="true" focusable="false" {
            circle cx="8" cy="8" r="6" fill="none" stroke="currentColor" stroke-width="1.6" {}
            path d="M8 2a6 6 0 0 1 0 12z" fill="currentColor" {}
        }
    }
}

/// The model's name: the last path component of what the server loaded.
pub fn model_name(report: &Report) -> Option<String> {
    let f = report.first_facts()?;
    let from_args = |args: Option<&serde_json::Map<String, serde_json::Value>>, key: &str| {
        args.and_then(|a| a.get(key))
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let model = f
        .model
        .clone()
        .or_else(|| from_args(f.non_default_args.as_ref(), "model"))
        .or_else(|| from_args(f.non_default_args.as_ref(), "model_tag"))
        .or_else(|| from_args(f.server_args.as_ref(), "model_path"))
        .or_else(|| from_args(f.server_args.as_ref(), "model"))?;
    let trimmed = model.trim_end_matches('/');
    let last = trimmed.rsplit('/').next().unwrap_or(trimmed);
    (!last.is_empty()).then(|| last.to_string())
}

fn header(report: &Report, title: &str) -> Markup {
    let engine = report.engine();
    let mut meta: Vec<String> = Vec::new();
    match report.version() {
        Some(v) => meta.push(format!("{} {v}", engine.name())),
        None => meta.push(engine.name().to_string()),
    }
    if let Some(m) = model_name(report) {
        meta.push(m);
    }
    if let Some(p) = report.first_facts().and_then(|f| f.kv_pool_tokens) {
        meta.push(format!(
            "{}-token KV pool",
            inferlint_core::fmt::thousands(p as i64)
        ));
    }
    if let Some(n) = report.inputs().requested {
        meta.push(format!("concurrency asked for: {n}"));
    }
    let note = report
        .first_facts()
        .and_then(inferlint_core::bootlog::untested_version_note)
        .map(|n| n.strip_prefix("note: ").map(str::to_string).unwrap_or(n));
    html! {
        header class="top" {
            div class="topbar" {
                span class="brand" { (logo()) "inferlint" }
                button type="button" class="theme" id="theme-toggle" aria-pressed="false" hidden {
                    (theme_icon()) span class="label" { "Dark" }
                }
            }
            h1 { (title) }
            p class="meta" { (meta.join(" · ")) }
            @if let Some(n) = note {
                div class="version-note" role="note" { (n) }
            }
        }
    }
}

fn limits(report: &Report) -> Markup {
    let insights = report.insights();
    html! {
        section class="limits" aria-labelledby="h-limits" {
            h2 id="h-limits" { "What limited this run" }
            @if insights.is_empty() {
                p class="none" {
                    @if report.summary().restarted.is_some() {
                        "Nothing can be said: the server restarted between the before and after readings."
                    } @else {
                        "Nothing to say: these sentences need the before and after readings, a recording or the load tool's result file."
                    }
                }
            } @else {
                ul {
                    @for i in insights {
                        li class=(format!("limit {}", i.tone.class())) {
                            h3 { (i.title) }
                            p { (i.text) }
                        }
                    }
                }
            }
        }
    }
}

fn footer(report: &Report) -> Markup {
    let stamp = report
        .inputs()
        .generated_at
        .clone()
        .unwrap_or_else(generated_now);
    html! {
        footer {
            "Generated " (stamp) " by inferlint " (inferlint_core::VERSION) ". Every chart is drawn from the run's own files."
        }
    }
}

/// `2026-09-26 17:52 UTC-7`: the local time and its offset from UTC.
pub fn generated_now() -> String {
    let now = chrono::Local::now();
    format!(
        "{} {}",
        now.format("%Y-%m-%d %H:%M"),
        utc_offset(now.offset().local_minus_utc())
    )
}

/// `UTC`, `UTC-7`, `UTC+5:30`.
pub fn utc_offset(seconds: i32) -> String {
    if seconds == 0 {
        return "UTC".to_string();
    }
    let sign = if seconds < 0 { '-' } else { '+' };
    let m = seconds.unsigned_abs() / 60;
    if m % 60 == 0 {
        format!("UTC{sign}{}", m / 60)
    } else {
        format!("UTC{sign}{}:{:02}", m / 60, m % 60)
    }
}
