//! The sweep page's table: the terminal's columns (core's `sweep::table`), a row per point with
//! its link, whether it holds or why not (core's [`Sweep::why_not`]), and the findings across
//! the points.

use maud::{html, Markup};

use inferlint_core::fmt::{g, thousands_f};
use inferlint_core::sweep::{Point, Sweep};

use super::{href, Curve};

/// The column heads, as the terminal's table names them.
const HEAD: [&str; 9] = inferlint_core::sweep::TABLE_HEAD;

/// One sweep's table and its findings.
pub fn section(cv: &Curve, named: bool) -> Markup {
    let s = &cv.sweep;
    let id = format!("h-points-{}", slug(&cv.label));
    html! {
        section class="sweep-points" aria-labelledby=(id) {
            h2 id=(id) {
                @if named { "The points of " (cv.label) } @else { "The points" }
            }
            div class="card table-scroll" {
                table class="sweep-table" {
                    thead { tr { @for (i, h) in HEAD.iter().enumerate() {
                        th scope="col" class=[(i > 1 && i < 8).then_some("num")] { (h) }
                    } } }
                    tbody {
                        @for p in &s.points { (row(cv, p)) }
                    }
                }
            }
            @if !s.findings.is_empty() {
                h3 class="sweep-findings-h" { "Across the points" }
                ul class="sweep-findings" {
                    @for f in &s.findings { li data-kind=(kind_word(f.kind)) { (f.message) } }
                }
            }
        }
    }
}

fn row(cv: &Curve, p: &Point) -> Markup {
    let s: &Sweep = &cv.sweep;
    let why = s.why_not(p.index);
    let holds = why.is_empty();
    let f = &p.figures;
    let num = |x: Option<f64>, d: usize| x.map_or("–".to_string(), |v| thousands_f(v, d));
    let ms = |x: Option<f64>| x.map_or("–".to_string(), |v| format!("{} ms", thousands_f(v, 0)));
    let knee = s.knee == Some(p.index);
    html! {
        tr class=(if holds { "holds" } else { "not-holds" }) data-point=(p.index) {
            td { a href=(href(&cv.href_base, &p.folder)) { (p.index) } }
            td class="asked" {
                (p.label)
                @if knee { " " span class="knee-badge" { "knee" } }
            }
            td class="num" { (f.peak_running.map_or("–".to_string(), g)) }
            td class="num" { (num(f.requests_per_s, 2)) }
            td class="num" { (num(f.output_tokens_per_s, 1)) }
            td class="num" { (ms(f.ttft_p50_ms)) }
            td class="num" { (ms(f.ttft_p99_ms)) }
            td class="num" { (ms(f.tpot_p50_ms)) }
            td class="why" {
                @if holds {
                    span class="holds-yes" { span class="key-dot" {} "yes" }
                } @else {
                    span class="holds-no" { span class="key-ring" {} "no: " }
                    (why.join("; "))
                }
            }
        }
    }
}

/// The finding's kind as sweep.json writes it (`inherited_cache`, `knee`).
fn kind_word(kind: inferlint_core::sweep::FindingKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A label as an id fragment: letters and digits, the rest `-`.
fn slug(label: &str) -> String {
    let s: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    if s.is_empty() {
        "sweep".to_string()
    } else {
        s
    }
}
