//! Property tests for the block arithmetic that decides T14 and T9
//! (docs/design/tripwires.md#block-arithmetic): the gauge's denominator recovered from readings
//! k/N, the refusal to trust fewer than 5 distinct readings, Python's `limit_denominator` against a
//! brute-force search, and the per-sample ceiling `floor(1/share)` against the same quantity
//! computed in exact integers.
//!
//! Each property runs a modest number of cases so that `cargo test` stays fast; for a long run:
//! `PROPTEST_CASES=100000 cargo test --release --test proptests proptest_blocks::`.

use crate::proptest_support;

use std::collections::BTreeSet;

use inferlint_core::checks::blocks::{
    infer_blocks, limit_denominator, predicted_ceiling, MAX_DENOMINATOR, MIN_DISTINCT_READINGS,
    TOLERANCE,
};
use inferlint_core::checks::{t14, t9};
use inferlint_core::prom::Metrics;
use inferlint_core::series::{Readings, Series, SeriesHeader, SeriesSample};
use inferlint_core::snapshot::Snapshot;
use inferlint_core::{Engine, Status};
use proptest::prelude::*;

fn cases(default: u32) -> ProptestConfig {
    proptest_support::config(default, "tests/proptest-regressions/proptest_blocks.txt")
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Block counts up to 65,536, with the large end and the edges well represented.
fn block_count() -> impl Strategy<Value = u64> {
    prop_oneof![
        1u64..=65_536,
        60_000u64..=65_536,
        5u64..=200,
        Just(65_536u64),
        Just(65_535u64),
        Just(65_521u64), // the largest prime in range
    ]
}

/// `count` distinct numerators in 1..=n drawn from `picks` (fewer when n is small).
fn distinct_numerators(n: u64, picks: &[u64], count: usize) -> BTreeSet<u64> {
    let mut ks = BTreeSet::new();
    for p in picks {
        if ks.len() == count {
            break;
        }
        ks.insert(1 + p % n);
    }
    ks
}

/// A gauge reading as vLLM exports it: the float nearest k/N (Python's repr round-trips it).
fn reading(k: u64, n: u64) -> f64 {
    k as f64 / n as f64
}

/// A vLLM snapshot whose cache-info series reports `num_gpu_blocks`.
fn cache_info_snapshot(num_gpu_blocks: u64) -> Snapshot {
    let text = format!(
        "vllm:cache_config_info{{block_size=\"16\",engine=\"0\",num_gpu_blocks=\"{num_gpu_blocks}\"}} 1.0\n"
    );
    Snapshot::from_text(&text, "after.prom").expect("a one-line snapshot")
}

fn series_of(rows: &[(f64, f64)]) -> Series {
    let samples = rows
        .iter()
        .enumerate()
        .map(|(i, &(usage, running))| {
            SeriesSample::from(Readings {
                t_wall: 1000.0 + i as f64 * 0.25,
                running: Some(running),
                waiting: Some(0.0),
                kv_usage: Some(usage),
                ..Readings::default()
            })
        })
        .collect();
    Series::from_samples(
        SeriesHeader {
            url: "http://127.0.0.1:8000".into(),
            interval_s: 0.25,
            engine: Some(Engine::Vllm),
        },
        samples,
    )
}

proptest! {
    #![proptest_config(cases(256))]

    /// With ≥ 5 distinct readings k/N, one of them with k coprime to N, the inferred block count
    /// is N, trusted; zeros, readings above 1 and repeats change nothing.
    #[test]
    fn recovers_n_from_five_or_more_distinct_readings(
        n in block_count(),
        picks in prop::collection::vec(any::<u64>(), 5..40),
        coprime_end in any::<bool>(),
        noise in prop::collection::vec(prop_oneof![Just(0.0), Just(-0.5), Just(1.5), Just(f64::NAN)], 0..4),
        repeats in 0usize..4,
    ) {
        prop_assume!(n >= MIN_DISTINCT_READINGS as u64);
        let mut ks = distinct_numerators(n, &picks, picks.len());
        // 1 and N−1 are coprime to N: the readings' common denominator is then N itself.
        ks.insert(if coprime_end { 1 } else { (n - 1).max(1) });
        prop_assume!(ks.len() >= MIN_DISTINCT_READINGS);
        let mut readings: Vec<f64> = ks.iter().map(|&k| reading(k, n)).collect();
        let first: Vec<f64> = readings.iter().copied().take(repeats).collect();
        readings.extend(first);
        readings.extend(noise);
        let inf = infer_blocks(&readings);
        prop_assert_eq!(inf.blocks, Some(n), "{:?}", inf);
        prop_assert!(inf.trusted);
        prop_assert_eq!(inf.trusted_blocks(), Some(n));
        prop_assert_eq!(inf.distinct, ks.len());
        prop_assert_eq!(inf.reason, None);
        prop_assert!(inf.worst_residual <= TOLERANCE * n as f64);
    }

    /// Whatever the numerators, the inferred count is N / gcd(N, k₁, …, k_m): the readings cannot
    /// tell N from that divisor of it, and the inference says no more than the readings do.
    #[test]
    fn infers_n_over_the_numerators_common_factor(
        n in block_count(),
        picks in prop::collection::vec(any::<u64>(), 1..40),
        scale in 1u64..=8,
    ) {
        // Multiples of `scale` (≤ N) as numerators make common factors frequent.
        let scale = scale.min(n);
        let ks: BTreeSet<u64> = picks.iter().map(|p| (1 + p % (n / scale)) * scale).collect();
        let common = ks.iter().fold(n, |g, &k| gcd(g, k));
        let expected = n / common;
        let readings: Vec<f64> = ks.iter().map(|&k| reading(k, n)).collect();
        let inf = infer_blocks(&readings);
        prop_assert_eq!(inf.blocks, Some(expected), "{:?}", inf);
        prop_assert_eq!(inf.distinct, ks.len());
        prop_assert_eq!(inf.trusted, ks.len() >= MIN_DISTINCT_READINGS);
    }

    /// Below 5 distinct readings the count is never trusted, whatever fits, and the reason says
    /// why. T14 then says it can't tell rather than guess, unless the readings' denominators
    /// come to exactly one block fewer than the server reports: that answers its one question
    /// (R - 1 or R) without guessing (docs/tripwires.md, T14). Against any other count it is
    /// never a pass.
    #[test]
    fn refuses_to_guess_below_five_distinct_readings(
        n in block_count(),
        picks in prop::collection::vec(any::<u64>(), 1..5),
        repeats in 0usize..10,
        off_by in prop_oneof![Just(0i64), -3i64..=3],
    ) {
        let ks = distinct_numerators(n, &picks, MIN_DISTINCT_READINGS - 1);
        let d = ks.len();
        prop_assert!((1..MIN_DISTINCT_READINGS).contains(&d));
        let mut readings: Vec<f64> = ks.iter().map(|&k| reading(k, n)).collect();
        for i in 0..repeats {
            readings.push(readings[i % d]);
        }
        let inf = infer_blocks(&readings);
        prop_assert!(!inf.trusted);
        prop_assert_eq!(inf.trusted_blocks(), None);
        prop_assert_eq!(inf.distinct, d);
        let reason = format!("only {d} distinct readings; a divisor of N could fit by luck");
        prop_assert_eq!(inf.reason.as_deref(), Some(reason.as_str()));

        let rows: Vec<(f64, f64)> = readings.iter().map(|&u| (u, 1.0)).collect();
        let reported = (n as i64 + 1 + off_by).max(0) as u64;
        let r = t14::check(&series_of(&rows), &cache_info_snapshot(reported), Engine::Vllm);
        // The readings' common denominator: N over the numerators' common factor, so a count
        // one below the reported one may be a divisor of N (2/6 against 4 reported blocks).
        let shown = inf.blocks.filter(|&b| b >= 2 && reported == b + 1);
        if let Some(b) = shown {
            prop_assert_eq!(r.status, Status::Pass);
            let head = format!(
                "gauge denominator is {b} = num_gpu_blocks ({reported}) - 1 null block: each of \
                 the {d} distinct readings is a multiple of 1/{b}, and "
            );
            prop_assert!(r.message.starts_with(&head), "{}", r.message);
            let tail = format!(" is not a multiple of 1/{reported}");
            prop_assert!(r.message.ends_with(&tail), "{}", r.message);
        } else {
            prop_assert_eq!(r.status, Status::Unknown);
            prop_assert_eq!(r.message, format!("block count not inferable: {reason}"));
        }
    }

    /// T14 on a recording of readings k/N and a snapshot reporting N + 1 blocks: PASS with N;
    /// reporting any other count: FAIL naming N.
    #[test]
    fn t14_compares_the_recovered_count_with_the_reported_one(
        n in block_count(),
        picks in prop::collection::vec(any::<u64>(), 8..30),
        off_by in prop_oneof![Just(0i64), -3i64..=3],
    ) {
        prop_assume!(n >= MIN_DISTINCT_READINGS as u64);
        let mut ks = distinct_numerators(n, &picks, picks.len());
        ks.insert(1);
        prop_assume!(ks.len() >= MIN_DISTINCT_READINGS);
        let reported = (n as i64 + 1 + off_by).max(0) as u64;
        let rows: Vec<(f64, f64)> = ks.iter().map(|&k| (reading(k, n), 1.0)).collect();
        let r = t14::check(&series_of(&rows), &cache_info_snapshot(reported), Engine::Vllm);
        prop_assert_eq!(&r.evidence_json()["inferred_usable_blocks"], &serde_json::json!(n));
        if reported == n + 1 {
            prop_assert_eq!(r.status, Status::Pass);
            prop_assert_eq!(
                r.message,
                format!("gauge denominator is {n} = num_gpu_blocks ({reported}) - 1 null block")
            );
        } else {
            prop_assert_eq!(r.status, Status::Fail);
            let prefix = format!("gauge denominator is {n}, expected num_gpu_blocks - 1 = ");
            prop_assert!(r.message.starts_with(&prefix), "{}", r.message);
        }
    }

    /// Readings that are no fraction with a small denominator: whatever is inferred is
    /// consistent (every reading within the tolerance of a multiple of 1/N, N in range).
    #[test]
    fn an_inferred_count_always_fits_every_reading(
        readings in prop::collection::vec(prop_oneof![0.0f64..=1.0, any::<f64>()], 0..20),
    ) {
        let inf = infer_blocks(&readings);
        let distinct: BTreeSet<u64> = readings
            .iter()
            .filter(|u| **u > 0.0 && **u <= 1.0)
            .map(|u| u.to_bits())
            .collect();
        prop_assert_eq!(inf.distinct, distinct.len());
        match inf.blocks {
            Some(n) => {
                prop_assert!((1..=MAX_DENOMINATOR).contains(&n));
                let nf = n as f64;
                for bits in &distinct {
                    let u = f64::from_bits(*bits);
                    prop_assert!((u * nf - (u * nf).round()).abs() <= TOLERANCE * nf, "{} on {}", u, n);
                }
                prop_assert_eq!(inf.trusted, distinct.len() >= MIN_DISTINCT_READINGS);
            }
            None => prop_assert!(!inf.trusted),
        }
    }

    /// `limit_denominator` finds a closest fraction with denominator ≤ max_den, as a search over
    /// every denominator in exact integers finds it (x in [2^-11, 1], where x is a multiple of
    /// 2^-64 and the arithmetic below is exact).
    #[test]
    fn limit_denominator_finds_a_closest_fraction(
        x in (1.0f64 / 2048.0)..=1.0,
        max_den in 1u64..=3000,
    ) {
        let (p, q) = limit_denominator(x, max_den);
        prop_assert!(q >= 1 && q <= max_den);
        prop_assert_eq!(gcd(p, q), 1);
        // x = m / 2^64 exactly.
        let m = (x * 2f64.powi(64)) as u128;
        prop_assert_eq!(m as f64 / 2f64.powi(64), x);
        let scale: u128 = 1 << 64;
        // |x − a/b| = |m·b − a·2^64| / (b·2^64): compare the numerators across denominators.
        let dist = |a: u128, b: u128| -> (u128, u128) { ((m * b).abs_diff(a * scale), b) };
        let closer = |(n1, d1): (u128, u128), (n2, d2): (u128, u128)| n1 * d2 < n2 * d1;
        let got = dist(u128::from(p), u128::from(q));
        for b in 1..=u128::from(max_den) {
            let a = (m * b + scale / 2) / scale;
            prop_assert!(!closer(dist(a, b), got), "{}/{} is closer to {} than {}/{}", a, b, x, p, q);
        }
    }

    /// An exact fraction p/q with q ≤ 65,536 comes back as itself, reduced.
    #[test]
    fn limit_denominator_returns_an_exact_fraction(q in 1u64..=65_536, p in any::<u64>()) {
        let p = 1 + p % q;
        let g = gcd(p, q);
        prop_assert_eq!(limit_denominator(p as f64 / q as f64, MAX_DENOMINATOR), (p / g, q / g));
    }

    /// With the usable block count B known, the ceiling at a sample of `used` blocks and
    /// `running` requests is floor(1/share), share = used / (B·running), in exact integers:
    /// (B·running) div used. An exact 1/8 gives 8, never 7.
    #[test]
    fn ceiling_with_known_blocks_is_exact(
        b in block_count(),
        used in any::<u64>(),
        running in 1u64..=1024,
    ) {
        let used = 1 + used % b;
        let got = predicted_ceiling(reading(used, b), running as f64, Some(b));
        prop_assert_eq!(got, Ok(b * running / used));
    }

    /// Without B, `floor(running/usage + 1e-9)` on the exported reading equals the same exact
    /// quantity (for ceilings up to a million: the 1e-9 absorbs the reading's rounding, and a
    /// non-integer 1/share is at least 1/used below the next integer).
    #[test]
    fn ceiling_without_blocks_matches_exact_rationals(
        b in block_count(),
        used in any::<u64>(),
        running in 1u64..=256,
    ) {
        let used = 1 + used % b;
        let exact = b * running / used;
        prop_assume!(exact <= 1_000_000);
        prop_assert_eq!(predicted_ceiling(reading(used, b), running as f64, None), Ok(exact));
    }

    /// T9 with the usable block count: its lowest and highest ceilings are those of the exact
    /// arithmetic over the saturated samples (usage ≥ 0.9), or over every busy one when none is
    /// saturated; PASS when they agree, WARN when they differ.
    #[test]
    fn t9_ceilings_are_the_exact_ones(
        b in 10u64..=65_536,
        rows in prop::collection::vec((any::<u64>(), 1u64..=64), 1..30),
        idle in prop::collection::vec(0u64..=3, 0..5),
    ) {
        let rows: Vec<(u64, u64)> = rows.iter().map(|&(u, r)| (1 + u % b, r)).collect();
        let saturated: Vec<(u64, u64)> =
            rows.iter().copied().filter(|&(u, _)| 10 * u >= 9 * b).collect();
        let (basis_rows, basis) = if saturated.is_empty() {
            (rows.clone(), "busy")
        } else {
            (saturated, "saturated")
        };
        let ceilings: Vec<u64> = basis_rows.iter().map(|&(u, r)| b * r / u).collect();
        let (lo, hi) = (*ceilings.iter().min().unwrap(), *ceilings.iter().max().unwrap());

        let mut samples: Vec<(f64, f64)> =
            rows.iter().map(|&(u, r)| (reading(u, b), r as f64)).collect();
        // Idle samples (nothing running, or nothing in the cache) take no part.
        for (i, k) in idle.iter().enumerate() {
            samples.insert(i % (samples.len() + 1), if *k % 2 == 0 { (0.0, *k as f64) } else { (0.5, 0.0) });
        }
        let r = t9::check(&series_of(&samples), Some(b), None, Engine::Vllm);
        prop_assert_eq!(&r.evidence_json()["ceiling_min"], &serde_json::json!(lo));
        prop_assert_eq!(&r.evidence_json()["ceiling_max"], &serde_json::json!(hi));
        prop_assert_eq!(&r.evidence_json()["basis"], &serde_json::json!(basis));
        prop_assert_eq!(&r.evidence_json()["samples"], &serde_json::json!(basis_rows.len()));
        // A moving ceiling warns where its lowest could bind: reached by the most that ran.
        let ran = rows.iter().map(|&(_, r)| r).max().unwrap();
        let warns = lo != hi && ran >= lo;
        prop_assert_eq!(r.status, if warns { Status::Warn } else { Status::Pass });
    }
}

/// The one reading-count boundary, spelled out: 4 distinct readings of 1/52 steps are refused
/// and 5 are trusted (a plain test beside the properties, so a change of the constant shows).
#[test]
fn five_is_the_boundary() {
    let four: Vec<f64> = [1, 3, 5, 7].iter().map(|&k| reading(k, 52)).collect();
    let five: Vec<f64> = [1, 3, 5, 7, 9].iter().map(|&k| reading(k, 52)).collect();
    assert!(!infer_blocks(&four).trusted);
    assert_eq!(infer_blocks(&five).trusted_blocks(), Some(52));
    // The metrics parser and the series reader hand these readings over unchanged.
    let m = Metrics::parse(&format!("vllm:kv_cache_usage_perc {}\n", reading(9, 52))).unwrap();
    assert_eq!(
        m.single("vllm:kv_cache_usage_perc").unwrap(),
        Some(reading(9, 52))
    );
}
