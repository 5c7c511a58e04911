//! Hand-made SVG charts: time charts (lines, step lines, areas, reference lines, event markers)
//! and horizontal bar charts, on scales with nice ticks.
//!
//! Colours come only from CSS classes (`s1`..`s3`, `ev`, `ref`), so the page's light and dark
//! themes restyle every chart. Every mark stays inside the plot area; labels live in the
//! margins. A time chart with more samples than the plot has pixel columns is thinned to the
//! smallest and largest value per column ([`super::downsample`]), so peaks and dips survive.

use maud::{html, Markup};
use serde_json::{json, Value};

use super::downsample::{self, Cell, Row};

mod paths;
use paths::{area_path, band_path, line_path, triangle};

/// The chart's width in SVG units (the page scales it to fit).
pub const WIDTH: f64 = 720.0;
/// Plot margins: left (y labels), right (reference-line labels), top, bottom (x labels).
pub const LEFT: f64 = 48.0;
pub const RIGHT: f64 = 92.0;
pub const TOP: f64 = 18.0;
pub const BOTTOM: f64 = 34.0;
/// Where bars start: the labels sit to its left.
pub const BAR_X: f64 = 120.0;
/// The plot's width in SVG units; also the number of columns a long series is thinned to.
pub const PLOT_WIDTH: f64 = WIDTH - LEFT - RIGHT;

/// Why a chart could not be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChartError {
    #[error("series '{name}' has {len} values for {expected} times")]
    LengthMismatch {
        name: String,
        len: usize,
        expected: usize,
    },
    #[error("a time chart needs at least two readings")]
    TooFewReadings,
    #[error("reading times must be finite and never go back")]
    BadTimes,
}

/// Tick values for an axis covering `lo..=hi`: at most 7, at a step of 1, 2, 2.5 or 5 times a
/// power of ten, the first at or below `lo` and the last at or above `hi`.
/// `0..32` → 0, 10, 20, 30, 40; `0..0.93` → 0, 0.25, …, 1; `5..5` → 5, 5.25, …, 6.
pub fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (lo, hi) = match (lo.is_finite(), hi.is_finite()) {
        (true, true) if hi > lo => (lo, hi),
        (true, true) if hi == lo => (lo, lo + 1.0),
        (true, true) => (hi, lo),
        _ => (0.0, 1.0),
    };
    let raw = (hi - lo) / 4.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * magnitude);
    let first = (lo / step + 1e-9).floor() as i64;
    let last = (hi / step - 1e-9).ceil() as i64;
    let decimals = (-(step.log10().floor()) as i32 + 2).max(0);
    let scale = 10f64.powi(decimals);
    (first..=last)
        .map(|k| (k as f64 * step * scale).round() / scale)
        .collect()
}

/// A tick label: shortest form, thousands separated (`2.5`, `0.25`, `40`, `25,000`).
pub fn tick_label(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        inferlint_core::fmt::thousands(v as i64)
    } else {
        inferlint_core::fmt::g(v)
    }
}

/// A coordinate with one decimal and no trailing `.0`.
fn c(v: f64) -> String {
    let s = format!("{v:.1}");
    match s.strip_suffix(".0") {
        Some(t) => t.to_string(),
        None => s,
    }
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// Straight segments between readings.
    Line,
    /// Holds each value until the next reading: horizontal, then vertical moves.
    Step,
    /// A line with the area below it filled.
    Area,
}

/// One series of a time chart: one value (or none) per reading.
#[derive(Clone, Debug)]
pub struct Line {
    pub name: String,
    /// `s1`, `s2` or `s3`.
    pub class: &'static str,
    pub kind: LineKind,
    pub values: Vec<Option<f64>>,
}

/// A horizontal reference line, labelled in the right margin (`asked for 32`).
#[derive(Clone, Debug)]
pub struct RefLine {
    pub label: String,
    pub y: f64,
}

/// Something counted between two readings (preemptions), drawn as a triangle at the top.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Event {
    /// Seconds, on the chart's time axis.
    pub t: f64,
    pub count: f64,
}

/// A chart of values over time. Times are seconds from the start of the recording.
#[derive(Clone, Debug)]
pub struct TimeChart {
    pub t: Vec<f64>,
    pub lines: Vec<Line>,
    pub refs: Vec<RefLine>,
    pub events: Vec<Event>,
    /// The event's word, singular and plural (`preemption`, `preemptions`).
    pub event_words: (String, String),
    /// A fixed top of the value axis (100 for a percentage); else from the data.
    pub y_max: Option<f64>,
    /// Appended to value tick labels (`%`).
    pub y_suffix: &'static str,
    pub height: f64,
    /// The chart's accessible name.
    pub label: String,
}

/// A drawn chart: its SVG and the numbers it drew (for the data table and the script).
#[derive(Clone, Debug)]
pub struct Drawn {
    pub svg: Markup,
    /// One row per drawn point in time (a pixel column when thinned).
    pub rows: Vec<Row>,
    /// The series names and CSS classes, in the order of each row's cells.
    pub names: Vec<String>,
    pub classes: Vec<&'static str>,
    /// The event's word, singular and plural.
    pub event_words: (String, String),
    /// The markers drawn: (seconds, x, count).
    pub events: Vec<(f64, f64, f64)>,
    /// `Some((readings, columns))` when the readings were thinned to fit the plot.
    pub thinned: Option<(usize, usize)>,
}

impl Drawn {
    /// The numbers the page's script needs for the crosshair and tooltip.
    pub fn data(&self) -> Value {
        let cell = |c: &Cell| match *c {
            Cell::Empty => Value::Null,
            Cell::One(v) => json!(round4(v)),
            Cell::Range(a, b) => json!([round4(a.min(b)), round4(a.max(b))]),
        };
        json!({
            "t": self.rows.iter().map(|r| round4(r.t0)).collect::<Vec<_>>(),
            "t1": self.thinned.map(|_| self.rows.iter().map(|r| round4(r.t1)).collect::<Vec<_>>()),
            "px": self.rows.iter().map(|r| round4(r.x)).collect::<Vec<_>>(),
            "series": self.names.iter().enumerate().map(|(i, name)| json!({
                "name": name,
                "class": self.classes.get(i).copied().unwrap_or("s1"),
                "values": self.rows.iter().map(|r| cell(&r.cells[i])).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "events": self.events.iter().map(|(t, x, n)| json!([round4(*t), round4(*x), n])).collect::<Vec<_>>(),
            "thinned": self.thinned.is_some(),
            "event_words": [self.event_words.0, self.event_words.1],
            "top": TOP,
        })
    }
}

fn round4(v: f64) -> f64 {
    (v * 1e4).round() / 1e4
}

/// The unit the time axis is labelled in, chosen by the recording's length.
fn time_unit(span: f64) -> (f64, &'static str) {
    if span > 3.0 * 3600.0 {
        (3600.0, "h")
    } else if span > 600.0 {
        (60.0, "min")
    } else {
        (1.0, "s")
    }
}

/// Where a chart's times land across the plot, and the ticks that label them.
struct TimeAxis {
    t_lo: f64,
    /// Seconds across the plot (1 when all readings share one time).
    t_span: f64,
    /// Seconds in the unit the axis is labelled in, and its name.
    unit: f64,
    unit_name: &'static str,
    /// Tick values in that unit, from 0.
    x_ticks: Vec<f64>,
}

impl TimeAxis {
    fn new(t_lo: f64, t_hi: f64) -> Self {
        let t_span = if t_hi > t_lo { t_hi - t_lo } else { 1.0 };
        let (unit, unit_name) = time_unit(t_span);
        let x_ticks: Vec<f64> = nice_ticks(0.0, t_span / unit)
            .into_iter()
            .filter(|v| *v * unit <= t_span * (1.0 + 1e-9))
            .collect();
        TimeAxis {
            t_lo,
            t_span,
            unit,
            unit_name,
            x_ticks,
        }
    }

    fn x_of(&self, t: f64) -> f64 {
        LEFT + (t - self.t_lo) / self.t_span * PLOT_WIDTH
    }
}

/// Where a chart's values land down the plot, and the ticks that label them.
struct ValueAxis {
    /// The ticks, the first and last being the ends of the axis.
    ticks: Vec<f64>,
    y_lo: f64,
    y_hi: f64,
    /// The plot's bottom edge in SVG units.
    plot_bottom: f64,
}

impl ValueAxis {
    fn y_of(&self, v: f64) -> f64 {
        let plot_h = self.plot_bottom - TOP;
        TOP + (1.0 - (v - self.y_lo) / (self.y_hi - self.y_lo)) * plot_h
    }
}

impl TimeChart {
    pub fn render(&self) -> Result<Drawn, ChartError> {
        self.validate()?;
        let n = self.t.len();
        let time = TimeAxis::new(self.t[0], self.t[n - 1]);
        let x_of = |t: f64| time.x_of(t);
        let columns = PLOT_WIDTH as usize;
        let values: Vec<&[Option<f64>]> = self.lines.iter().map(|l| &l.values[..]).collect();
        let (rows, thinned) = if n > 2 * columns {
            let rows = downsample::columns(&self.t, &values, columns, x_of);
            (rows, Some((n, columns)))
        } else {
            (downsample::every(&self.t, &values, x_of), None)
        };
        let value = self.value_axis(&rows);
        let events = self.placed_events(&rows, thinned.is_some(), x_of);
        let svg = self.markup(&time, &value, &rows, thinned, &events);
        Ok(Drawn {
            svg,
            rows,
            names: self.lines.iter().map(|l| l.name.clone()).collect(),
            classes: self.lines.iter().map(|l| l.class).collect(),
            event_words: self.event_words.clone(),
            events,
            thinned,
        })
    }

    /// Whether the chart can be drawn: two readings or more, at finite times in order, and as
    /// many values in each line.
    fn validate(&self) -> Result<(), ChartError> {
        let n = self.t.len();
        if n < 2 {
            return Err(ChartError::TooFewReadings);
        }
        if self.t.iter().any(|t| !t.is_finite()) || self.t.windows(2).any(|w| w[1] < w[0]) {
            return Err(ChartError::BadTimes);
        }
        for l in &self.lines {
            if l.values.len() != n {
                return Err(ChartError::LengthMismatch {
                    name: l.name.clone(),
                    len: l.values.len(),
                    expected: n,
                });
            }
        }
        Ok(())
    }

    /// The value axis: from 0 (or below, for negative data) to the data, the reference lines,
    /// or the fixed top.
    fn value_axis(&self, rows: &[Row]) -> ValueAxis {
        let mut lo: f64 = 0.0;
        let mut hi: f64 = f64::NEG_INFINITY;
        for r in rows {
            for cell in &r.cells {
                for v in cell.values() {
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
            }
        }
        for r in &self.refs {
            hi = hi.max(r.y);
        }
        if let Some(m) = self.y_max {
            hi = hi.max(m);
        }
        if !hi.is_finite() || hi <= lo {
            hi = lo + 1.0;
        }
        let ticks = nice_ticks(lo, hi);
        ValueAxis {
            y_lo: ticks[0],
            y_hi: ticks[ticks.len() - 1],
            ticks,
            plot_bottom: self.height - BOTTOM,
        }
    }

    /// The chart's SVG: grid, axes, reference lines, the lines (or bands, when thinned) and the
    /// event markers.
    fn markup(
        &self,
        time: &TimeAxis,
        value: &ValueAxis,
        rows: &[Row],
        thinned: Option<(usize, usize)>,
        events: &[(f64, f64, f64)],
    ) -> Markup {
        let y_of = |v: f64| value.y_of(v);
        html! {
            svg class="plot" viewBox=(format!("0 0 {} {}", c(WIDTH), c(self.height)))
                role="img" aria-label=(self.label) tabindex="0"
                data-left=(c(LEFT)) data-right=(c(WIDTH - RIGHT)) data-top=(c(TOP)) data-bottom=(c(value.plot_bottom)) {
                title { (self.label) }
                g class="grid" {
                    @for v in &value.ticks {
                        line x1=(c(LEFT)) x2=(c(WIDTH - RIGHT)) y1=(c(y_of(*v))) y2=(c(y_of(*v))) {}
                    }
                }
                g class="axis y" {
                    @for v in &value.ticks {
                        text x=(c(LEFT - 6.0)) y=(c(y_of(*v) + 4.0)) text-anchor="end" {
                            (tick_label(*v)) (self.y_suffix)
                        }
                    }
                }
                g class="axis x" {
                    @for v in &time.x_ticks {
                        text x=(c(time.x_of(time.t_lo + v * time.unit))) y=(c(value.plot_bottom + 16.0)) text-anchor="middle" {
                            (tick_label(*v)) " " (time.unit_name)
                        }
                    }
                }
                @for r in &self.refs {
                    g class="ref" {
                        line x1=(c(LEFT)) x2=(c(WIDTH - RIGHT)) y1=(c(y_of(r.y))) y2=(c(y_of(r.y))) {}
                        text x=(c(WIDTH - RIGHT + 6.0)) y=(c(y_of(r.y) + 4.0)) { (r.label) }
                    }
                }
                @if let Some((readings, cols)) = thinned {
                    text class="thin-note" x=(c(WIDTH - RIGHT + 6.0)) y=(c(value.plot_bottom + 16.0)) {
                        "thinned"
                        title { (inferlint_core::fmt::thousands(readings as i64)) " readings drawn as the lowest and highest value in each of " (cols) " columns" }
                    }
                }
                // The first series is drawn last, on top. Thinned series are drawn as the band
                // between each column's lowest and highest value.
                @for (i, l) in self.lines.iter().enumerate().rev() {
                    @if thinned.is_some() {
                        path class=(format!("band {}", l.class)) d=(band_path(rows, i, &y_of)) {}
                    } @else {
                        @if l.kind == LineKind::Area {
                            path class=(format!("area {}", l.class)) d=(area_path(rows, i, &y_of, y_of(value.y_lo.max(0.0).min(value.y_hi)))) {}
                        }
                        path class=(format!("line {}", l.class)) d=(line_path(rows, i, l.kind, &y_of)) {}
                    }
                }
                @for (t, x, count) in events {
                    path class="ev" data-count=(inferlint_core::fmt::g(*count)) d=(triangle(*x)) {
                        title { (self.event_title(*t, *count)) }
                    }
                }
            }
        }
    }

    fn event_title(&self, t: f64, count: f64) -> String {
        let word = if count == 1.0 {
            &self.event_words.0
        } else {
            &self.event_words.1
        };
        format!("{} {word} at {t:.1} s", inferlint_core::fmt::g(count))
    }

    /// Event markers at their x; when thinned, the events of one pixel column become one marker
    /// carrying their summed count, so the counts drawn still add up to the total.
    fn placed_events(
        &self,
        rows: &[Row],
        thinned: bool,
        x_of: impl Fn(f64) -> f64,
    ) -> Vec<(f64, f64, f64)> {
        let mut out: Vec<(f64, f64, f64)> = Vec::new();
        for e in self.events.iter().filter(|e| e.count > 0.0) {
            let mut x = x_of(e.t);
            if thinned {
                // Snap to the drawn column that holds the event's reading.
                let i = rows.partition_point(|r| r.t1 < e.t).min(rows.len() - 1);
                x = rows[i].x;
            }
            match out.last_mut() {
                Some(last) if thinned && (last.1 - x).abs() < 1e-9 => last.2 += e.count,
                _ => out.push((e.t, x, e.count)),
            }
        }
        out
    }
}

/// One bar of a bar chart.
#[derive(Clone, Debug)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    /// The value as shown after the bar (`26,093 tokens`).
    pub text: String,
    /// `s1`, `s2` or `s3`.
    pub class: &'static str,
}

/// Horizontal bars, proportional to their values, from a common baseline at x = 120.
#[derive(Clone, Debug)]
pub struct BarChart {
    pub bars: Vec<Bar>,
    pub label: String,
}

const BAR_H: f64 = 20.0;
const BAR_GAP: f64 = 10.0;
/// Room above a bar for its label when labels are too long for the left margin.
const LABEL_ABOVE: f64 = 16.0;

impl BarChart {
    /// Whether a label is too long to sit left of the baseline (about 6.5 units a character).
    fn labels_above(&self) -> bool {
        self.bars
            .iter()
            .any(|b| b.label.chars().count() as f64 * 6.5 > BAR_X - 12.0)
    }

    fn row(&self) -> f64 {
        BAR_H
            + BAR_GAP
            + if self.labels_above() {
                LABEL_ABOVE
            } else {
                0.0
            }
    }

    pub fn height(&self) -> f64 {
        TOP + self.bars.len() as f64 * self.row() - BAR_GAP + 14.0
    }

    pub fn render(&self) -> Markup {
        let max = self
            .bars
            .iter()
            .map(|b| b.value)
            .filter(|v| v.is_finite())
            .fold(0.0_f64, f64::max);
        let room = WIDTH - BAR_X - RIGHT;
        let height = self.height();
        let above = self.labels_above();
        html! {
            svg class="bars" viewBox=(format!("0 0 {} {}", c(WIDTH), c(height))) role="img" aria-label=(self.label) {
                title { (self.label) }
                @for (i, b) in self.bars.iter().enumerate() {
                    @let y = TOP + i as f64 * self.row() + if above { LABEL_ABOVE } else { 0.0 };
                    @let w = if max > 0.0 && b.value.is_finite() { (b.value.max(0.0) / max) * room } else { 0.0 };
                    g class="bar" tabindex="0" data-tip=(format!("{}: {}", b.label, b.text)) {
                        title { (b.label) ": " (b.text) }
                        @if above {
                            text class="label" x=(c(BAR_X)) y=(c(y - 5.0)) { (b.label) }
                        } @else {
                            text class="label" x=(c(BAR_X - 8.0)) y=(c(y + BAR_H / 2.0 + 4.0)) text-anchor="end" { (b.label) }
                        }
                        path class=(b.class) d=(bar_path(y, w)) {}
                        text class="value" x=(c(BAR_X + w + 6.0)) y=(c(y + BAR_H / 2.0 + 4.0)) { (b.text) }
                    }
                }
                line class="baseline" x1=(c(BAR_X)) x2=(c(BAR_X)) y1=(c(TOP - 4.0)) y2=(c(height - 10.0)) {}
            }
        }
    }
}

/// A bar from the baseline: square where it starts, rounded at its far end.
fn bar_path(y: f64, w: f64) -> String {
    let r = 3.0_f64.min(w / 2.0);
    let x1 = BAR_X + w;
    format!(
        "M{} {}H{}Q{} {} {} {}V{}Q{} {} {} {}H{}Z",
        c(BAR_X),
        c(y),
        c(x1 - r),
        c(x1),
        c(y),
        c(x1),
        c(y + r),
        c(y + BAR_H - r),
        c(x1),
        c(y + BAR_H),
        c(x1 - r),
        c(y + BAR_H),
        c(BAR_X)
    )
}

#[cfg(test)]
mod tests;
