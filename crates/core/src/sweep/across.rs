//! What holds across a sweep's points (docs/design/sweeps.md#across-the-points): a point served
//! from a cache an earlier point of the same prompts filled, the knee, past which the points
//! measure the server's ceiling or the client, not the load they asked for, and repeats that
//! disagree (`spread.rs`).

use serde::{Deserialize, Serialize};

use super::{Point, PointServer, Reset};
use crate::fmt::{pct, thousands};
use crate::result::{Status, Tripwire};

/// A point whose prompt tokens came from the prefix cache at this share or more, with prompts an
/// earlier point sent, inherited that point's cache. vLLM's own bench warns from 1 % on random
/// data (docs/design/sweeps.md#across-the-points).
pub const INHERITED_HIT_RATE: f64 = 0.01;

/// What a finding across the points is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// Its prompts were served from a cache an earlier point filled.
    InheritedCache,
    /// The first point whose server ran fewer requests than asked, or whose client fell short.
    Knee,
    /// A point past the knee.
    PastKnee,
    /// The reset before it did not take.
    ResetFailed,
    /// Its value's repeats (`--repeat`) disagree by more than run-to-run noise.
    Spread,
    /// The server it ran on differs from the previous point's (a restart drew another KV
    /// pool, or another engine version answered).
    ServerChanged,
}

/// One finding across the points, about one point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: FindingKind,
    /// The point it is about (1-based).
    pub point: usize,
    /// The earlier point it names, where it names one.
    pub names: Option<usize>,
    /// A few words for the table (`cache of point 1`).
    pub short: String,
    /// The sentence the terminal and the report print.
    pub message: String,
}

/// The findings across the points, in point order.
pub fn across(points: &[Point]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (k, p) in points.iter().enumerate() {
        if let Some(Reset::Refused(why) | Reset::Unavailable(why)) = &p.reset {
            out.push(Finding {
                kind: FindingKind::ResetFailed,
                point: p.index,
                names: None,
                short: "cache not reset".to_string(),
                message: format!(
                    "point {} ({}): the cache reset before it did not take ({why}); it may be served from the earlier points' cache",
                    p.index, p.label
                ),
            });
        }
        if let Some(f) = inherited(&points[..k], p) {
            out.push(f);
        }
    }
    out.extend(knee(points));
    out.extend(super::spread::spread(points));
    out.extend(server_changed(points));
    out.sort_by_key(|f| f.point);
    out
}

/// Point `p` served from a cache an earlier point with the same prompts filled, with no reset
/// that took between them.
fn inherited(earlier: &[Point], p: &Point) -> Option<Finding> {
    let rate = p.figures.cache_hit_rate?;
    if rate < INHERITED_HIT_RATE {
        return None;
    }
    // The latest reset that took before `p` clears what came before it.
    if p.reset == Some(Reset::Done) {
        return reset_did_not_take(earlier, p, rate);
    }
    let since = earlier
        .iter()
        .rposition(|q| q.reset == Some(Reset::Done))
        .unwrap_or(0);
    let filler = earlier
        .get(since..)?
        .iter()
        .find(|q| p.prompts.repeats(&q.prompts))?;
    Some(Finding {
        kind: FindingKind::InheritedCache,
        point: p.index,
        names: Some(filler.index),
        short: format!("cache of point {}", filler.index),
        message: format!(
            "point {} ({}): {} of its prompt tokens came from the prefix cache that point {} ({}) filled with the same prompts ({}, seed {}); its TTFT and throughput are inflated",
            p.index,
            p.label,
            pct(rate, 1),
            filler.index,
            filler.label,
            p.prompts.dataset.as_deref().unwrap_or("?"),
            p.prompts.seed.map_or("?".to_string(), |s| s.to_string()),
        ),
    })
}

/// A reset that answered success, after which the point's prompts, the same as an earlier
/// point's, still came from the cache: the answer is not taken for the reset.
fn reset_did_not_take(earlier: &[Point], p: &Point, rate: f64) -> Option<Finding> {
    let sent = earlier.iter().find(|q| p.prompts.repeats(&q.prompts))?;
    Some(Finding {
        kind: FindingKind::ResetFailed,
        point: p.index,
        names: Some(sent.index),
        short: "cache not reset".to_string(),
        message: format!(
            "point {} ({}): the cache reset before it answered success, but {} of its prompt tokens still came from the cache, with the prompts point {} sent: the reset did not take",
            p.index,
            p.label,
            pct(rate, 1),
            sent.index
        ),
    })
}

/// Each point whose server differs from the previous point's in what limits the figures: the
/// engine's version, the KV pool, a running cap. Points of one start never differ; a sweep
/// restarted between its points may (T4 and T11 say why across the starts).
fn server_changed(points: &[Point]) -> Vec<Finding> {
    let mut out = Vec::new();
    for pair in points.windows(2) {
        let (prev, p) = (&pair[0], &pair[1]);
        let (Some(a), Some(b)) = (&prev.server, &p.server) else {
            continue;
        };
        let what = server_differences(a, b);
        if what.is_empty() {
            continue;
        }
        out.push(Finding {
            kind: FindingKind::ServerChanged,
            point: p.index,
            names: Some(prev.index),
            short: format!("server changed after point {}", prev.index),
            message: format!(
                "point {} ({}) ran on another server than point {} (start {} → {}): {}; the curve compares two servers there",
                p.index,
                p.label,
                prev.index,
                a.boot,
                b.boot,
                what.join(", ")
            ),
        });
    }
    out
}

/// What differs between two starts of the server, in words (`KV pool 12,405 → 13,575 tokens`).
fn server_differences(a: &PointServer, b: &PointServer) -> Vec<String> {
    let num = |x: Option<u64>| x.map_or("?".to_string(), |v| thousands(v as i64));
    let text = |x: &Option<String>| x.as_deref().unwrap_or("?").to_string();
    let mut what = Vec::new();
    if a.version != b.version {
        what.push(format!(
            "engine version {} → {}",
            text(&a.version),
            text(&b.version)
        ));
    }
    if a.kv_pool_tokens != b.kv_pool_tokens {
        what.push(format!(
            "KV pool {} → {} tokens",
            num(a.kv_pool_tokens),
            num(b.kv_pool_tokens)
        ));
    }
    if a.running_cap != b.running_cap {
        what.push(format!(
            "running cap {} → {}",
            num(a.running_cap),
            num(b.running_cap)
        ));
    }
    what
}

/// The first point whose server ran fewer requests than asked (T8) or whose client could not
/// send what it asked (T21), and every point after it.
fn knee(points: &[Point]) -> Vec<Finding> {
    let short_of = |p: &Point| {
        p.results
            .iter()
            .any(|r| matches!(r.tripwire, Tripwire::T8 | Tripwire::T21) && r.status == Status::Fail)
    };
    let Some(k) = points.iter().position(short_of) else {
        return Vec::new();
    };
    let at = &points[k];
    let why = at
        .results
        .iter()
        .find(|r| matches!(r.tripwire, Tripwire::T8 | Tripwire::T21) && r.status == Status::Fail)
        .map(|r| r.message.clone())
        .unwrap_or_default();
    let mut out = vec![Finding {
        kind: FindingKind::Knee,
        point: at.index,
        names: None,
        short: "the knee".to_string(),
        message: format!(
            "point {} ({}) is the knee: {why}; from here on the points measure the server's ceiling or the client, not the load they asked for",
            at.index, at.label
        ),
    }];
    out.extend(points[k + 1..].iter().map(|p| Finding {
        kind: FindingKind::PastKnee,
        point: p.index,
        names: Some(at.index),
        short: format!("past the knee (point {})", at.index),
        message: format!(
            "point {} ({}) is past the knee (point {}): it measures the server's ceiling or the client",
            p.index, p.label, at.index
        ),
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Figures, PromptsKey};
    use super::*;
    use crate::result::CheckResult;

    fn point(index: usize, hit: Option<f64>, reset: Option<Reset>, t8: Status) -> Point {
        Point {
            index,
            label: format!("--max-concurrency {index}"),
            value: index.to_string(),
            repeat: None,
            folder: String::new(),
            asked_concurrency: Some(index as u64),
            asked_rate: None,
            prompts: PromptsKey {
                dataset: Some("random".into()),
                seed: Some(0),
                fresh: true,
            },
            reset,
            figures: Figures {
                cache_hit_rate: hit,
                ..Figures::default()
            },
            results: vec![CheckResult::new(Tripwire::T8, t8, "requested n")],
            load_exit: Some(0),
            interrupted: false,
            timings: Default::default(),
            server: None,
        }
    }

    #[test]
    fn a_later_point_with_the_same_prompts_names_the_point_that_filled_the_cache() {
        let pts = [
            point(1, Some(0.0), None, Status::Pass),
            point(2, Some(0.43), None, Status::Pass),
            point(3, Some(0.5), None, Status::Pass),
        ];
        let f = across(&pts);
        let inherited: Vec<(usize, Option<usize>)> = f
            .iter()
            .filter(|f| f.kind == FindingKind::InheritedCache)
            .map(|f| (f.point, f.names))
            .collect();
        assert_eq!(inherited, [(2, Some(1)), (3, Some(1))]);
        assert!(f[0].message.contains("43.0%"), "{}", f[0].message);
    }

    #[test]
    fn a_reset_that_took_clears_the_inheritance_and_one_that_did_not_is_named() {
        let pts = [
            point(1, Some(0.0), None, Status::Pass),
            point(2, Some(0.0), Some(Reset::Done), Status::Pass),
            point(3, Some(0.2), Some(Reset::Done), Status::Pass),
        ];
        // Point 3's hits are its own prompts', but the same as point 1's: a reset that answered
        // success and did not take is named; one number changed (no hits) and all is clear.
        let f = across(&pts);
        assert_eq!(
            f.iter()
                .map(|f| (f.kind, f.point, f.names))
                .collect::<Vec<_>>(),
            [(FindingKind::ResetFailed, 3, Some(1))]
        );
        let mut clean = pts.clone();
        clean[2].figures.cache_hit_rate = Some(0.0);
        assert!(across(&clean).is_empty());
        let pts = [
            point(1, Some(0.0), None, Status::Pass),
            point(
                2,
                Some(0.3),
                Some(Reset::Refused("success: false".into())),
                Status::Pass,
            ),
        ];
        let kinds: Vec<FindingKind> = across(&pts).iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            [FindingKind::ResetFailed, FindingKind::InheritedCache]
        );
    }

    #[test]
    fn the_first_point_that_ran_fewer_than_asked_is_the_knee() {
        let pts = [
            point(1, None, None, Status::Pass),
            point(2, None, None, Status::Fail),
            point(3, None, None, Status::Fail),
        ];
        let f = across(&pts);
        assert_eq!(
            f.iter().map(|f| (f.kind, f.point)).collect::<Vec<_>>(),
            [(FindingKind::Knee, 2), (FindingKind::PastKnee, 3)]
        );
        // One number changed: point 2 reached its concurrency, the knee moves to 3.
        let pts = [
            point(1, None, None, Status::Pass),
            point(2, None, None, Status::Pass),
            point(3, None, None, Status::Fail),
        ];
        assert_eq!(across(&pts)[0].point, 3);
    }

    #[test]
    fn a_restart_that_drew_another_pool_is_named_and_one_that_did_not_is_not() {
        // The pools of the recorded pair of starts with one set of flags (T4's evidence,
        // tests/fixtures/vllm-0.28/boot_pool_level_{lo,hi}.log): 12,405 and 13,575 tokens.
        let server = |boot, pool| PointServer {
            boot,
            version: Some("0.28.0".into()),
            kv_pool_tokens: Some(pool),
            running_cap: None,
        };
        let mut pts = vec![
            point(1, None, None, Status::Pass),
            point(2, None, None, Status::Pass),
            point(3, None, None, Status::Pass),
        ];
        pts[0].server = Some(server(1, 12_405));
        pts[1].server = Some(server(2, 12_405));
        pts[2].server = Some(server(3, 13_575));
        let f = across(&pts);
        assert_eq!(
            f.iter()
                .map(|f| (f.kind, f.point, f.names))
                .collect::<Vec<_>>(),
            [(FindingKind::ServerChanged, 3, Some(2))]
        );
        assert!(
            f[0].message
                .contains("(start 2 → 3): KV pool 12,405 → 13,575 tokens"),
            "{}",
            f[0].message
        );
        // One number changed: the third start drew the same pool.
        pts[2].server = Some(server(3, 12_405));
        assert!(across(&pts).is_empty());
    }
}
