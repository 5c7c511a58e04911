//! The sweep page's curve: output tokens per second against TTFT, or against the load each point
//! asked for, one curve per sweep, each point a mark drawn by its verdict
//! (docs/design/report.md#the-sweep-page).
//!
//! A point that holds is a filled dot; one that does not is a hollow ring whose tooltip and
//! `<title>` say why (core's [`inferlint_core::sweep::Sweep::why_not`]). The knee is ringed and labelled. Each mark is a
//! link to the point's own page. Marks carry the class `bar` inside an `svg.bars`, so the run
//! page's script shows their `data-tip` on hover and focus, as it does for its bar charts.

use maud::{html, Markup};

use inferlint_core::fmt::{g, thousands_f};
use inferlint_core::sweep::Point;

use super::super::svg::{nice_ticks, tick_label};
use super::{href, Curve};

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 290.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 48.0;
/// A concurrency or rate axis spanning this ratio or more is drawn on a log scale, so that
/// 1, 2, 4, …, 256 are evenly spaced as the user chose them.
const LOG_RATIO: f64 = 8.0;

/// What a curve's x axis shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XKind {
    /// TTFT p50, in ms.
    Ttft,
    /// The concurrency each point asked for.
    Concurrency,
    /// The request rate each point asked for.
    Rate,
    /// The swept option's value, read as a number.
    Value,
}

impl XKind {
    /// The x axis for the load asked: by the option swept, as every sweep of the page names it.
    pub fn of_load(curves: &[Curve]) -> XKind {
        let all = |f: fn(&Point) -> bool| curves.iter().flat_map(|c| &c.sweep.points).all(f);
        let option_has = |w: &str| curves.iter().all(|c| c.sweep.option.contains(w));
        if option_has("rate") && all(|p| p.asked_rate.is_some()) {
            XKind::Rate
        } else if option_has("concurrency") && all(|p| p.asked_concurrency.is_some()) {
            XKind::Concurrency
        } else {
            XKind::Value
        }
    }

    /// The point's x, where it has one.
    pub fn x(self, p: &Point) -> Option<f64> {
        let x = match self {
            XKind::Ttft => p.figures.ttft_p50_ms,
            XKind::Concurrency => p.asked_concurrency.map(|c| c as f64),
            XKind::Rate => p.asked_rate,
            XKind::Value => p.value.trim().parse::<f64>().ok(),
        };
        x.filter(|v| v.is_finite())
    }

    fn title(self, option: &str) -> String {
        match self {
            XKind::Ttft => "TTFT p50 (ms)".to_string(),
            XKind::Concurrency => "concurrency asked".to_string(),
            XKind::Rate => "request rate asked (req/s)".to_string(),
            XKind::Value => format!("--{option}"),
        }
    }
}

/// One axis: linear from its first tick to its last, or log₂ between powers of two.
struct Axis {
    ticks: Vec<f64>,
    lo: f64,
    hi: f64,
    log: bool,
}

impl Axis {
    fn new(values: &[f64], from_zero: bool, allow_log: bool) -> Axis {
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if allow_log && lo > 0.0 && hi / lo >= LOG_RATIO {
            let (a, b) = (lo.log2().floor() as i32, hi.log2().ceil() as i32);
            let step = ((b - a) as usize).div_ceil(8).max(1);
            let ticks: Vec<f64> = (a..=b).step_by(step).map(|k| 2f64.powi(k)).collect();
            let top = ticks.last().copied().unwrap_or(hi);
            return Axis {
                lo: 2f64.powi(a),
                hi: top.max(hi),
                ticks,
                log: true,
            };
        }
        let lo = if from_zero { lo.min(0.0) } else { lo };
        let ticks = nice_ticks(lo, hi);
        Axis {
            lo: ticks[0],
            hi: ticks[ticks.len() - 1],
            ticks,
            log: false,
        }
    }

    /// Where `v` falls along the axis, from 0 to 1.
    fn frac(&self, v: f64) -> f64 {
        let f = if self.log {
            (v.log2() - self.lo.log2()) / (self.hi.log2() - self.lo.log2())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        if f.is_finite() {
            f
        } else {
            0.5
        }
    }
}

/// A coordinate with one decimal and no trailing `.0`.
fn c(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// One drawn mark: its place, its point and the curve's class.
struct Mark<'a> {
    x: f64,
    y: f64,
    point: &'a Point,
    why: Vec<String>,
}

/// The chart of every curve against `kind`, or None when no point has both figures.
pub fn render(curves: &[Curve], kind: XKind, label: &str) -> Option<Markup> {
    let y_of = |p: &Point| p.figures.output_tokens_per_s.filter(|v| v.is_finite());
    let xs: Vec<f64> = curves
        .iter()
        .flat_map(|c| &c.sweep.points)
        .filter(|p| y_of(p).is_some())
        .filter_map(|p| kind.x(p))
        .collect();
    if xs.is_empty() {
        return None;
    }
    let ys: Vec<f64> = curves
        .iter()
        .flat_map(|c| &c.sweep.points)
        .filter(|p| kind.x(p).is_some())
        .filter_map(y_of)
        .collect();
    let x_axis = Axis::new(&xs, kind == XKind::Ttft, kind != XKind::Ttft);
    let y_axis = Axis::new(&ys, true, false);
    let bottom = HEIGHT - BOTTOM;
    let px = |v: f64| LEFT + x_axis.frac(v) * (WIDTH - LEFT - RIGHT);
    let py = |v: f64| bottom - y_axis.frac(v) * (bottom - TOP);
    let option = curves.first().map_or("", |c| c.sweep.option.as_str());
    let per_curve: Vec<Vec<Mark>> = curves
        .iter()
        .map(|cv| {
            cv.sweep
                .points
                .iter()
                .filter_map(|p| {
                    let (x, y) = (kind.x(p)?, y_of(p)?);
                    Some(Mark {
                        x: px(x),
                        y: py(y),
                        point: p,
                        why: cv.sweep.why_not(p.index),
                    })
                })
                .collect()
        })
        .collect();
    Some(html! {
        svg class="bars sweep-plot" viewBox=(format!("0 0 {} {}", c(WIDTH), c(HEIGHT))) role="img" aria-label=(label) {
            title { (label) }
            g class="grid" {
                @for v in &y_axis.ticks { line x1=(c(LEFT)) x2=(c(WIDTH - RIGHT)) y1=(c(py(*v))) y2=(c(py(*v))) {} }
                @for v in &x_axis.ticks { line x1=(c(px(*v))) x2=(c(px(*v))) y1=(c(TOP)) y2=(c(bottom)) {} }
            }
            g class="axis y" {
                @for v in &y_axis.ticks {
                    text x=(c(LEFT - 6.0)) y=(c(py(*v) + 4.0)) text-anchor="end" { (tick_label(*v)) }
                }
                text class="axis-title" transform=(format!("translate(14 {}) rotate(-90)", c(f64::midpoint(TOP, bottom)))) text-anchor="middle" { "output tok/s" }
            }
            g class="axis x" {
                @for v in &x_axis.ticks {
                    text x=(c(px(*v))) y=(c(bottom + 16.0)) text-anchor="middle" { (tick_label(*v)) }
                }
                text class="axis-title" x=(c(f64::midpoint(LEFT, WIDTH - RIGHT))) y=(c(HEIGHT - 8.0)) text-anchor="middle" { (kind.title(option)) }
            }
            @for (k, (cv, marks)) in curves.iter().zip(&per_curve).enumerate() {
                g class=(format!("curve {}", series_class(k))) data-sweep=(cv.label) {
                    path class=(format!("line {}", series_class(k))) d=(curve_path(marks)) {}
                    @for m in marks { (mark(cv, m, k, curves.len() > 1)) }
                }
            }
        }
    })
}

/// `s1`, `s2`, `s3`, then round again: the run page's series colours.
pub fn series_class(k: usize) -> &'static str {
    ["s1", "s2", "s3"][k % 3]
}

fn curve_path(marks: &[Mark]) -> String {
    marks
        .iter()
        .enumerate()
        .map(|(i, m)| format!("{}{} {}", if i == 0 { 'M' } else { 'L' }, c(m.x), c(m.y)))
        .collect()
}

fn mark(cv: &Curve, m: &Mark, k: usize, named: bool) -> Markup {
    let p = m.point;
    let holds = m.why.is_empty();
    let knee = cv.sweep.knee == Some(p.index);
    let tip = tip(cv, p, &m.why, knee);
    let class = format!(
        "pt {}{}",
        series_class(k),
        if holds { "" } else { " hollow" }
    );
    html! {
        a class="bar point" href=(href(&cv.href_base, &p.folder)) tabindex="0"
            data-point=(p.index) data-holds=(if holds { "yes" } else { "no" }) data-tip=(tip) {
            title { (tip) }
            @if knee {
                circle class="knee" cx=(c(m.x)) cy=(c(m.y)) r="11" {}
                // On a page of several sweeps, each knee's label names its sweep and sits above
                // the earlier ones', so two knees at one place stay readable.
                text class="knee-label" x=(c(m.x)) y=(c(m.y - 15.0 - 13.0 * k as f64)) text-anchor="middle" {
                    @if named { (cv.label) " knee" } @else { "knee" }
                }
            }
            circle class=(class) cx=(c(m.x)) cy=(c(m.y)) r="5" {}
        }
    }
}

/// The mark's tooltip: the point, its figures, and whether it holds or why not.
fn tip(cv: &Curve, p: &Point, why: &[String], knee: bool) -> String {
    let f = &p.figures;
    let mut s = format!("point {} ({})", p.index, p.label);
    if !cv.label.is_empty() {
        s = format!("{}: {s}", cv.label);
    }
    if let Some(v) = f.output_tokens_per_s {
        s.push_str(&format!(": {} output tok/s", thousands_f(v, 1)));
    }
    if let Some(v) = f.ttft_p50_ms {
        s.push_str(&format!(", TTFT p50 {} ms", thousands_f(v, 0)));
    }
    if let Some(v) = f.peak_running {
        s.push_str(&format!(", ran at most {}", g(v)));
    }
    if knee {
        s.push_str("; the knee");
    }
    if why.is_empty() {
        s.push_str("; holds");
    } else {
        s.push_str(&format!("; does not hold: {}", why.join("; ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_concurrency_axis_is_logarithmic_and_a_narrow_one_linear() {
        let a = Axis::new(&[1.0, 2.0, 4.0, 256.0], false, true);
        assert!(a.log);
        assert_eq!(a.ticks.first(), Some(&1.0));
        assert_eq!(a.ticks.last(), Some(&256.0));
        assert!((a.frac(16.0) - 0.5).abs() < 1e-9);
        let b = Axis::new(&[2.0, 4.0, 6.0], false, true);
        assert!(!b.log);
        let t = Axis::new(&[20.0, 340.0], true, false);
        assert_eq!(t.lo, 0.0);
        assert!(t.frac(340.0) <= 1.0);
    }

    #[test]
    fn one_value_does_not_divide_by_zero() {
        let a = Axis::new(&[5.0], true, false);
        assert!(a.frac(5.0).is_finite());
        let b = Axis::new(&[4.0], false, true);
        assert!(b.frac(4.0).is_finite());
    }
}
