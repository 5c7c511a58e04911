//! The sweep's table in the terminal: one row per point, its asked load, what the server ran,
//! its figures, and whether it holds or why not.

use super::Sweep;
use crate::fmt::g;

/// The table's column heads (the sweep page's table names them so too).
pub const HEAD: [&str; 9] = [
    "point",
    "asked",
    "ran at most",
    "req/s",
    "out tok/s",
    "TTFT p50",
    "TTFT p99",
    "TPOT p50",
    "holds",
];

/// The table's lines, columns aligned; the last column says `yes` or why not.
pub fn table(sweep: &Sweep) -> Vec<String> {
    let num =
        |x: Option<f64>, digits: usize| x.map_or("-".to_string(), |v| format!("{v:.digits$}"));
    let ms = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.0} ms"));
    let mut rows: Vec<[String; 9]> = vec![HEAD.map(str::to_string)];
    for p in &sweep.points {
        let why = sweep.why_not(p.index);
        let f = &p.figures;
        rows.push([
            p.index.to_string(),
            p.label.clone(),
            f.peak_running.map_or("-".to_string(), g),
            num(f.requests_per_s, 2),
            num(f.output_tokens_per_s, 1),
            ms(f.ttft_p50_ms),
            ms(f.ttft_p99_ms),
            ms(f.tpot_p50_ms),
            if why.is_empty() {
                "yes".to_string()
            } else {
                format!("no: {}", why.join("; "))
            },
        ]);
    }
    let widths: Vec<usize> = (0..HEAD.len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|r| {
            let cells: Vec<String> = r
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(c, (cell, w))| {
                    if c + 1 == HEAD.len() {
                        cell.clone()
                    } else {
                        format!("{cell:<w$}")
                    }
                })
                .collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect()
}
