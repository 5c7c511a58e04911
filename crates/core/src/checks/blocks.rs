//! Block arithmetic on the KV usage gauge (docs/design/tripwires.md#block-arithmetic).
//!
//! vLLM's usage gauge is `used_blocks / usable_blocks`, so every reading is a fraction with the
//! same denominator. Recovering that denominator from the readings tells how many blocks the
//! gauge counts out of; knowing it lets the ceiling be computed in whole blocks, where floating
//! point would floor an exact 1/8 to 7.

use std::collections::BTreeSet;

/// The largest denominator considered (per reading and for their least common multiple).
pub const MAX_DENOMINATOR: u64 = 65_536;
/// The worst residual allowed, relative to the inferred denominator.
pub const TOLERANCE: f64 = 1e-6;
/// Distinct readings needed before an inferred denominator is trusted: with fewer, a divisor of
/// the true count can fit by luck (2/52, 4/52, 8/52 all fit 26).
pub const MIN_DISTINCT_READINGS: usize = 5;

const NOT_MULTIPLES: &str = "readings are not multiples of any 1/N with N within range";

/// What the usage readings say about the gauge's denominator.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockInference {
    /// The inferred number of blocks the gauge counts out of (None when no N fits).
    pub blocks: Option<u64>,
    /// Distinct readings with 0 < u ≤ 1.
    pub distinct: usize,
    /// `max |u·N − round(u·N)|` over the distinct readings (NaN when no N was found).
    pub worst_residual: f64,
    /// Whether `blocks` can be relied on.
    pub trusted: bool,
    /// Why the block count is not trusted (None when trusted).
    pub reason: Option<String>,
}

/// Infers the gauge's denominator from usage readings (docs/design/tripwires.md#block-arithmetic):
/// each distinct reading in (0, 1] is approximated by its best rational with denominator ≤ 65,536;
/// N is the least common multiple of those denominators; every reading must lie within 1e-6·N of a
/// multiple of 1/N; the result is trusted with at least 5 distinct readings.
pub fn infer_blocks(readings: &[f64]) -> BlockInference {
    infer_blocks_within(readings, MAX_DENOMINATOR, TOLERANCE)
}

/// [`infer_blocks`] with another largest denominator and tolerance (the checks use the
/// defaults; the Python API lets a caller choose, as 0.3.1's `max_blocks` and `tol` did).
pub fn infer_blocks_within(readings: &[f64], max_blocks: u64, tolerance: f64) -> BlockInference {
    let max_blocks = max_blocks.max(1);
    let distinct: BTreeSet<u64> = readings
        .iter()
        .filter(|u| **u > 0.0 && **u <= 1.0)
        .map(|u| u.to_bits())
        .collect();
    let values: Vec<f64> = distinct.iter().map(|b| f64::from_bits(*b)).collect();
    let d = values.len();
    let untrusted_reason = format!("only {d} distinct readings; a divisor of N could fit by luck");
    if d == 0 {
        return BlockInference {
            blocks: None,
            distinct: 0,
            worst_residual: f64::NAN,
            trusted: false,
            reason: Some(untrusted_reason),
        };
    }
    let not_inferable = || BlockInference {
        blocks: None,
        distinct: d,
        worst_residual: f64::NAN,
        trusted: false,
        reason: Some(NOT_MULTIPLES.to_string()),
    };
    let mut n: u64 = 1;
    for &u in &values {
        let (_, den) = limit_denominator(u, max_blocks);
        n = lcm(n, den);
        if n > max_blocks {
            return not_inferable();
        }
    }
    let nf = n as f64;
    let worst = values
        .iter()
        .map(|u| (u * nf - (u * nf).round_ties_even()).abs())
        .fold(0.0, f64::max);
    if worst > tolerance * nf {
        return BlockInference {
            worst_residual: worst,
            ..not_inferable()
        };
    }
    let trusted = d >= MIN_DISTINCT_READINGS;
    BlockInference {
        blocks: Some(n),
        distinct: d,
        worst_residual: worst,
        trusted,
        reason: (!trusted).then_some(untrusted_reason),
    }
}

impl BlockInference {
    /// The block count when it is trusted.
    pub fn trusted_blocks(&self) -> Option<u64> {
        self.blocks.filter(|_| self.trusted)
    }
}

/// The closest fraction to `x` with a denominator ≤ `max_den`, as Python's
/// `Fraction(x).limit_denominator(max_den)` finds it. `x` is taken as the nearest multiple of
/// 2^-64, which keeps every intermediate product inside 128 bits; the difference is far below
/// any tolerance used here. Returns `(numerator, denominator)`.
pub fn limit_denominator(x: f64, max_den: u64) -> (u64, u64) {
    assert!(max_den >= 1, "max_den must be positive");
    if !x.is_finite() || x <= 0.0 {
        return (0, 1);
    }
    let whole = x.floor();
    let frac = x - whole;
    let scale: u128 = 1 << 64;
    // `frac` < 1, so the product fits; rounding at 2^-64 is exact for every reading in (2^-11, 1].
    let num = (frac * 2f64.powi(64)).round() as u128;
    if num == 0 {
        return (whole as u64, 1);
    }
    let (p, q) = limit_fraction(num, scale, max_den as u128);
    ((whole as u128 * q + p) as u64, q as u64)
}

/// Python's `limit_denominator` on the fraction `num/den` (0 < num < den).
fn limit_fraction(num: u128, den: u128, max_den: u128) -> (u128, u128) {
    let g = gcd_u128(num, den);
    let (num, den) = (num / g, den / g);
    if den <= max_den {
        return (num, den);
    }
    let (mut p0, mut q0, mut p1, mut q1) = (0u128, 1u128, 1u128, 0u128);
    let (mut n, mut d) = (num, den);
    loop {
        let a = n / d;
        let q2 = q0 + a * q1;
        if q2 > max_den {
            break;
        }
        (p0, q0, p1, q1) = (p1, q1, p0 + a * p1, q2);
        (n, d) = (d, n - a * d);
    }
    let k = (max_den - q0) / q1;
    // The two candidates are p1/q1 and (p0+k·p1)/(q0+k·q1); they are 1/(q1·(q0+k·q1)) apart and
    // p1/q1 is d/(q1·den) from the value, so p1/q1 wins when 2·d·(q0+k·q1) ≤ den.
    if 2 * d * (q0 + k * q1) <= den {
        (p1, q1)
    } else {
        (p0 + k * p1, q0 + k * q1)
    }
}

fn gcd_u128(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Least common multiple, saturating at `u64::MAX` (anything that large is out of range anyway).
fn lcm(a: u64, b: u64) -> u64 {
    (a / gcd(a, b)).saturating_mul(b)
}

/// A sample with nothing running or nothing in the cache has no ceiling.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("no ceiling from an idle sample (usage {usage}, running {running}): it needs requests running and KV in use")]
pub struct IdleSample {
    pub usage: f64,
    pub running: f64,
}

/// How many requests of the size seen at this sample fit in the cache: `floor(1/share)` with
/// `share = usage/running` (docs/design/tripwires.md#block-arithmetic). With the usable block
/// count known the arithmetic is in whole blocks: `used = round(usage·B)`, ceiling =
/// `(B · int(running)) // used`; without it, `floor(running/usage + 1e-9)`.
pub fn predicted_ceiling(
    usage: f64,
    running: f64,
    usable_blocks: Option<u64>,
) -> Result<u64, IdleSample> {
    let idle = IdleSample { usage, running };
    if !(usage > 0.0 && running > 0.0 && usage.is_finite() && running.is_finite()) {
        return Err(idle);
    }
    match usable_blocks {
        Some(b) if b > 0 => {
            let running = running.trunc() as u64;
            if running == 0 {
                return Err(idle);
            }
            // A request in the cache holds at least one block, even when the reading rounds to 0.
            let used = ((usage * b as f64).round_ties_even() as u64).max(1);
            // Python's integers do not overflow; a garbage `running` of 1e30 must not either.
            // The 64-bit division where the product fits (a real one always does): 128-bit
            // division is a call, and T9 makes one for each busy sample of a day.
            Ok(match b.checked_mul(running) {
                Some(product) => product / used,
                None => u64::try_from(u128::from(b) * u128::from(running) / u128::from(used))
                    .unwrap_or(u64::MAX),
            })
        }
        _ => Ok((running / usage + 1e-9).floor() as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn limit_denominator_matches_python() {
        assert_eq!(limit_denominator(0.5, 65_536), (1, 2));
        assert_eq!(limit_denominator(1.0, 65_536), (1, 1));
        assert_eq!(limit_denominator(20.0 / 21.0, 65_536), (20, 21));
        assert_eq!(limit_denominator(4.0 / 42.0, 65_536), (2, 21));
        // Python: Fraction(3.141592653589793).limit_denominator(1000) == Fraction(355, 113)
        assert_eq!(limit_denominator(std::f64::consts::PI, 1000), (355, 113));
        // Python: Fraction(0.1).limit_denominator(7) == Fraction(1, 7)
        assert_eq!(limit_denominator(0.1, 7), (1, 7));
        // Python: Fraction(0.308).limit_denominator(65536) == Fraction(77, 250)
        assert_eq!(limit_denominator(0.308, 65_536), (77, 250));
    }

    #[test]
    fn recovers_denominators_from_twelve_seeded_samples() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(20_240_601);
        for n in [7u64, 44, 52, 53, 97, 400, 1021] {
            let readings: Vec<f64> = (0..12)
                .map(|_| rng.random_range(1..=n) as f64 / n as f64)
                .collect();
            let inf = infer_blocks(&readings);
            assert_eq!(inf.blocks, Some(n), "N={n}: {inf:?}");
            assert!(inf.trusted, "N={n}: {inf:?}");
            assert!(inf.worst_residual <= TOLERANCE * n as f64);
            assert_eq!(inf.reason, None);
        }
    }

    #[test]
    fn a_divisor_fits_by_luck_with_few_readings() {
        let inf = infer_blocks(&[2.0 / 52.0, 4.0 / 52.0, 8.0 / 52.0]);
        assert_eq!(inf.blocks, Some(26));
        assert!(!inf.trusted);
        assert_eq!(inf.distinct, 3);
        assert_eq!(inf.trusted_blocks(), None);
        assert_eq!(
            inf.reason.as_deref(),
            Some("only 3 distinct readings; a divisor of N could fit by luck")
        );
    }

    #[test]
    fn a_lower_limit_or_a_tighter_tolerance_refuses_what_the_defaults_find() {
        let readings: Vec<f64> = (1..=8).map(|k| f64::from(k) / 42.0).collect();
        assert_eq!(infer_blocks(&readings).blocks, Some(42));
        assert_eq!(
            infer_blocks_within(&readings, 42, TOLERANCE).blocks,
            Some(42)
        );
        let below = infer_blocks_within(&readings, 41, TOLERANCE);
        assert_eq!((below.blocks, below.distinct), (None, 8));
        // 0.3 + 1e-9 is 3/10 within 1e-6 but not within 1e-12 of it.
        let near: Vec<f64> = vec![0.1, 0.2, 0.3 + 1e-9, 0.4, 0.5];
        assert_eq!(
            infer_blocks_within(&near, MAX_DENOMINATOR, 1e-6).blocks,
            Some(10)
        );
        let strict = infer_blocks_within(&near, MAX_DENOMINATOR, 1e-12);
        assert_eq!(strict.blocks, None);
        assert!(strict.worst_residual > 1e-12 * 10.0);
    }

    #[test]
    fn non_fractions_infer_nothing() {
        let readings = [
            0.123456789,
            0.2718281828,
            0.3141592653,
            0.4142135623,
            0.5772156649,
        ];
        let inf = infer_blocks(&readings);
        assert_eq!(inf.blocks, None);
        assert!(!inf.trusted);
        assert_eq!(inf.reason.as_deref(), Some(NOT_MULTIPLES));
    }

    #[test]
    fn zeros_repeats_and_out_of_range_readings_are_left_out() {
        let mut readings = vec![0.0, 1.5, -0.25, f64::NAN];
        readings.extend((1..=6).map(|i| i as f64 / 42.0));
        readings.extend((1..=6).map(|i| i as f64 / 42.0));
        let inf = infer_blocks(&readings);
        assert_eq!(inf.distinct, 6);
        assert_eq!(inf.blocks, Some(42));
        assert!(inf.trusted);
        assert_eq!(infer_blocks(&[]).blocks, None);
        assert_eq!(infer_blocks(&[0.0]).distinct, 0);
    }

    #[test]
    fn ceilings() {
        assert_eq!(predicted_ceiling(0.125, 1.0, None), Ok(8));
        assert_eq!(predicted_ceiling(0.308, 1.0, None), Ok(3));
        assert_eq!(predicted_ceiling(0.423, 1.0, None), Ok(2));
        assert_eq!(predicted_ceiling(0.538, 1.0, None), Ok(1));
        assert_eq!(predicted_ceiling(0.25, 2.0, None), Ok(8));
        assert_eq!(predicted_ceiling(0.164, 1.0, None), Ok(6));
    }

    #[test]
    fn whole_blocks_keep_an_exact_eighth() {
        let usage: f64 = 6.0 / 48.0 + 1e-12;
        // Floating point alone floors this to 7 ...
        assert_eq!((1.0 / usage).floor(), 7.0);
        // ... whole blocks give 8.
        assert_eq!(predicted_ceiling(usage, 1.0, Some(48)), Ok(8));
        assert_eq!(predicted_ceiling(4.0 / 42.0, 1.0, Some(42)), Ok(10));
        assert_eq!(predicted_ceiling(12.0 / 42.0, 2.0, Some(42)), Ok(7));
    }

    #[test]
    fn an_absurd_running_count_saturates_instead_of_overflowing() {
        // Found by the fuzzer: running 1e30 with a known block count overflowed `b * running`.
        assert_eq!(predicted_ceiling(0.5, 1e30, Some(42)), Ok(u64::MAX));
        assert_eq!(
            predicted_ceiling(1.0, 1e18, Some(1 << 20)),
            Ok(1_000_000_000_000_000_000)
        );
    }

    #[test]
    fn an_idle_sample_has_no_ceiling() {
        assert!(predicted_ceiling(0.0, 3.0, None).is_err());
        assert!(predicted_ceiling(0.5, 0.0, Some(42)).is_err());
        assert!(predicted_ceiling(f64::NAN, 1.0, None).is_err());
        let e = predicted_ceiling(0.0, 1.0, None).unwrap_err();
        assert!(e.to_string().contains("idle sample"));
    }
}
