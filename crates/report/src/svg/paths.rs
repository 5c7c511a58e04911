//! The SVG path data of a time chart's lines, areas, bands and event markers.

use super::downsample::{Cell, Row};
use super::{c, LineKind, LEFT, RIGHT, TOP, WIDTH};

/// A marker triangle pointing down from the top edge, kept inside the plot.
pub(super) fn triangle(x: f64) -> String {
    let x = x.clamp(LEFT + 4.0, WIDTH - RIGHT - 4.0);
    format!(
        "M{} {}L{} {}L{} {}Z",
        c(x - 4.0),
        c(TOP),
        c(x + 4.0),
        c(TOP),
        c(x),
        c(TOP + 7.0)
    )
}

/// The points of series `i`, in drawing order, with `None` where the line breaks.
fn points(rows: &[Row], i: usize, y_of: &impl Fn(f64) -> f64) -> Vec<Option<(f64, f64)>> {
    let mut pts = Vec::with_capacity(rows.len() + 1);
    for r in rows {
        match r.cells[i] {
            Cell::Empty => pts.push(None),
            Cell::One(v) => pts.push(Some((r.x, y_of(v)))),
            Cell::Range(a, b) => {
                pts.push(Some((r.x, y_of(a))));
                pts.push(Some((r.x, y_of(b))));
            }
        }
    }
    pts
}

/// `M x y L x y …` (or `H x V y` moves for a step line); a missing value lifts the pen.
pub(super) fn line_path(
    rows: &[Row],
    i: usize,
    kind: LineKind,
    y_of: &impl Fn(f64) -> f64,
) -> String {
    let mut d = String::new();
    let mut pen_down = false;
    for p in points(rows, i, y_of) {
        match p {
            None => pen_down = false,
            Some((x, y)) if !pen_down => {
                d.push_str(&format!("M{} {}", c(x), c(y)));
                pen_down = true;
            }
            Some((x, y)) if kind == LineKind::Step => {
                d.push_str(&format!("H{}V{}", c(x), c(y)));
            }
            Some((x, y)) => d.push_str(&format!("L{} {}", c(x), c(y))),
        }
    }
    d
}

/// The filled area under series `i`: one closed shape per unbroken stretch.
pub(super) fn area_path(rows: &[Row], i: usize, y_of: &impl Fn(f64) -> f64, base: f64) -> String {
    let mut d = String::new();
    let mut stretch: Vec<(f64, f64)> = Vec::new();
    let close = |stretch: &mut Vec<(f64, f64)>, d: &mut String| {
        if let (Some(first), Some(last)) = (stretch.first(), stretch.last()) {
            d.push_str(&format!("M{} {}", c(first.0), c(base)));
            for (x, y) in stretch.iter() {
                d.push_str(&format!("L{} {}", c(*x), c(*y)));
            }
            d.push_str(&format!("L{} {}Z", c(last.0), c(base)));
        }
        stretch.clear();
    };
    for p in points(rows, i, y_of) {
        match p {
            Some(pt) => stretch.push(pt),
            None => close(&mut stretch, &mut d),
        }
    }
    close(&mut stretch, &mut d);
    d
}

/// The band between each drawn column's lowest and highest value of series `i`: one closed
/// shape per unbroken stretch, along the highest values and back along the lowest.
pub(super) fn band_path(rows: &[Row], i: usize, y_of: &impl Fn(f64) -> f64) -> String {
    let mut d = String::new();
    let mut stretch: Vec<(f64, f64, f64)> = Vec::new();
    let close = |stretch: &mut Vec<(f64, f64, f64)>, d: &mut String| {
        for (k, (x, _, hi)) in stretch.iter().enumerate() {
            let cmd = if k == 0 { 'M' } else { 'L' };
            d.push_str(&format!("{cmd}{} {}", c(*x), c(y_of(*hi))));
        }
        for (x, lo, _) in stretch.iter().rev() {
            d.push_str(&format!("L{} {}", c(*x), c(y_of(*lo))));
        }
        if !stretch.is_empty() {
            d.push('Z');
        }
        stretch.clear();
    };
    for r in rows {
        match (r.cells[i].min(), r.cells[i].max()) {
            (Some(lo), Some(hi)) => stretch.push((r.x, lo, hi)),
            _ => close(&mut stretch, &mut d),
        }
    }
    close(&mut stretch, &mut d);
    d
}
