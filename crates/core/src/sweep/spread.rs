//! Repeats of one point that disagree (docs/design/sweeps.md#across-the-points): with
//! `--repeat N`, each value of the sweep runs N times in a row, and a value whose runs differ by
//! more than run-to-run noise has no one figure; its runs are noise, not a trend.

use super::across::{Finding, FindingKind};
use super::{Figures, Point};
use crate::fmt::{g_prec, pct};

/// The coefficient of variation (sample standard deviation over the mean) of a figure across a
/// point's repeats above which they disagree: AIPerf's multi-run reporting calls 5–10 % good
/// repeatability and asks for more runs, or a look at the source of variance, above 10 %
/// (docs/design/sweeps.md#across-the-points).
pub const SPREAD_CV: f64 = 0.10;

/// A figure of a point, as [`Figures`] holds it.
type Reading = fn(&Figures) -> Option<f64>;

/// The figures compared across repeats, with the words and the unit the finding uses.
const FIGURES: [(&str, &str, Reading); 2] = [
    ("output tok/s", "", |f| f.output_tokens_per_s),
    ("TTFT p50", " ms", |f| f.ttft_p50_ms),
];

/// The findings on every run of a value whose repeats disagree, in point order.
pub(super) fn spread(points: &[Point]) -> Vec<Finding> {
    let mut out = Vec::new();
    for group in repeats(points) {
        let spreads: Vec<String> = FIGURES
            .iter()
            .filter_map(|(name, unit, get)| {
                let values: Vec<f64> = group
                    .iter()
                    .filter(|p| !p.interrupted)
                    .filter_map(|p| get(&p.figures))
                    .collect();
                let cv = cv(&values).filter(|&cv| cv > SPREAD_CV)?;
                let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                Some(format!(
                    "{name} {}–{}{unit} (CV {})",
                    g_prec(lo, 4),
                    g_prec(hi, 4),
                    pct(cv, 1)
                ))
            })
            .collect();
        if spreads.is_empty() {
            continue;
        }
        let first = group[0];
        let value_label = first.label.split(" (").next().unwrap_or(&first.label);
        for p in &group {
            out.push(Finding {
                kind: FindingKind::Spread,
                point: p.index,
                names: (p.index != first.index).then_some(first.index),
                short: "repeats disagree".to_string(),
                message: format!(
                    "point {} ({}): the {} runs of {value_label} disagree: {}, above the {} that repeats of one load stay within; its figures are noise, not a trend",
                    p.index,
                    p.label,
                    group.len(),
                    spreads.join(", "),
                    pct(SPREAD_CV, 0),
                ),
            });
        }
    }
    out
}

/// The runs of each repeated value, in order: consecutive points of one value with a repeat.
fn repeats(points: &[Point]) -> Vec<Vec<&Point>> {
    let mut groups: Vec<Vec<&Point>> = Vec::new();
    for p in points.iter().filter(|p| p.repeat.is_some()) {
        match groups.last_mut() {
            Some(g) if g[0].value == p.value && p.repeat > g[g.len() - 1].repeat => g.push(p),
            _ => groups.push(vec![p]),
        }
    }
    groups.retain(|g| g.len() > 1);
    groups
}

/// The sample coefficient of variation (n − 1), as AIPerf's aggregate reports it; None for
/// fewer than two values or a mean of zero.
fn cv(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if mean == 0.0 || !mean.is_finite() {
        return None;
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(var.sqrt() / mean.abs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::PromptsKey;

    fn run(index: usize, value: &str, repeat: u32, tok_s: f64, ttft: f64) -> Point {
        Point {
            index,
            label: format!("--max-concurrency {value} ({repeat} of 3)"),
            value: value.to_string(),
            repeat: Some(repeat),
            folder: String::new(),
            asked_concurrency: None,
            asked_rate: None,
            prompts: PromptsKey::default(),
            reset: None,
            figures: Figures {
                output_tokens_per_s: Some(tok_s),
                ttft_p50_ms: Some(ttft),
                ..Figures::default()
            },
            results: Vec::new(),
            load_exit: Some(0),
            interrupted: false,
            timings: Default::default(),
            server: None,
        }
    }

    #[test]
    fn repeats_within_the_noise_agree_and_one_number_more_disagrees() {
        let mut pts = vec![
            run(1, "2", 1, 100.0, 200.0),
            run(2, "2", 2, 104.0, 205.0),
            run(3, "2", 3, 97.0, 198.0),
            run(4, "8", 1, 300.0, 400.0),
            run(5, "8", 2, 310.0, 390.0),
            run(6, "8", 3, 295.0, 410.0),
        ];
        assert!(spread(&pts).is_empty());
        // One repeat of the second value twice as fast: all three of its runs are named.
        pts[4].figures.output_tokens_per_s = Some(600.0);
        let f = spread(&pts);
        let got: Vec<(usize, Option<usize>)> = f.iter().map(|f| (f.point, f.names)).collect();
        assert_eq!(got, [(4, None), (5, Some(4)), (6, Some(4))]);
        assert!(
            f[1].message
                .contains("the 3 runs of --max-concurrency 8 disagree: output tok/s 295–600 (CV"),
            "{}",
            f[1].message
        );
        assert!(!f[1].message.contains("TTFT"), "{}", f[1].message);
    }

    #[test]
    fn points_without_repeats_or_figures_are_not_compared() {
        let mut a = run(1, "2", 1, 100.0, 200.0);
        let mut b = run(2, "2", 2, 300.0, 200.0);
        assert_eq!(spread(&[a.clone(), b.clone()]).len(), 2);
        b.figures.output_tokens_per_s = None;
        assert!(
            spread(&[a.clone(), b.clone()]).is_empty(),
            "one value is no spread"
        );
        a.repeat = None;
        b.repeat = None;
        b.figures.output_tokens_per_s = Some(300.0);
        assert!(spread(&[a, b]).is_empty(), "a sweep without --repeat");
        assert_eq!(cv(&[1.0, 1.0]), Some(0.0));
        assert_eq!(cv(&[0.0, 0.0]), None);
    }
}
