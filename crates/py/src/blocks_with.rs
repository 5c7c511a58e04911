//! Block inference with a caller's own limits (0.3.1's `max_blocks` and `tol` keywords). The
//! library fixes them at 65,536 and 1e-6 (the only values its checks use), so this is the same
//! algorithm over its public `limit_denominator`, for the keywords' other values only.

use crate::core::blocks::{limit_denominator, MIN_DISTINCT_READINGS};

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `(blocks, distinct, max_residual, trusted)`, as `blocks::infer_blocks` with other limits.
pub fn infer_blocks_with(
    readings: &[f64],
    max_blocks: u64,
    tol: f64,
) -> (Option<u64>, usize, f64, bool) {
    let mut values: Vec<f64> = readings
        .iter()
        .copied()
        .filter(|u| *u > 0.0 && *u <= 1.0)
        .collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    let d = values.len();
    if d == 0 {
        return (None, 0, 0.0, false);
    }
    let mut n: u64 = 1;
    for &u in &values {
        let (_, den) = limit_denominator(u, max_blocks.max(1));
        n = (n / gcd(n, den)).saturating_mul(den);
        if n > max_blocks {
            return (None, d, f64::INFINITY, false);
        }
    }
    let nf = n as f64;
    let worst = values
        .iter()
        .map(|u| (u * nf - (u * nf).round_ties_even()).abs())
        .fold(0.0, f64::max);
    if worst > tol * nf {
        return (None, d, worst, false);
    }
    (Some(n), d, worst, d >= MIN_DISTINCT_READINGS)
}
