//! The run checks a missing input left out. The checks run only on the data they need (both
//! snapshots for T1, T10 and T15; readings for T14, T9 and T8; the after snapshot for T14), so
//! a run whose `/metrics` failed during the load, or a run folder that lost a file, would
//! otherwise leave them out silently, and a run that could check nothing would pass. Each one
//! left out becomes "can't tell", with the reason, in the printed order. Used by `run` and by
//! `report RUN/`.

use crate::engine::Engine;
use crate::result::{CheckResult, Tripwire};

/// Why the run checks' inputs are missing; None where they are there.
#[derive(Clone, Debug, Default)]
pub struct Gaps {
    /// Why the before or the after snapshot is missing or unusable.
    pub snapshots: Option<String>,
    /// Why the after snapshot is missing or unusable (T14 reads its `num_gpu_blocks`).
    pub after: Option<String>,
    /// Why the recording has no usable reading.
    pub recording: Option<String>,
}

/// The run checks in the order they are printed.
pub const ORDER: [Tripwire; 18] = [
    Tripwire::T1,
    Tripwire::T10,
    Tripwire::T14,
    Tripwire::T9,
    Tripwire::T8,
    Tripwire::T15,
    Tripwire::T16,
    Tripwire::T17,
    Tripwire::T18,
    Tripwire::T19,
    Tripwire::T20,
    Tripwire::T21,
    Tripwire::T22,
    Tripwire::T23,
    Tripwire::T24,
    Tripwire::T25,
    Tripwire::T26,
    Tripwire::T27,
];

/// `results` with an UNKNOWN (or T14's N/A) in place of every run check the gaps left out, in
/// the printed order. `requested` and `bench` say whether T8 and T15 were due at all.
pub fn complete(
    results: Vec<CheckResult>,
    gaps: &Gaps,
    engine: Engine,
    requested: Option<u64>,
    bench: bool,
) -> Vec<CheckResult> {
    let mut out = Vec::with_capacity(results.len() + ORDER.len());
    for t in ORDER {
        let made: Vec<&CheckResult> = results.iter().filter(|r| r.tripwire == t).collect();
        if made.is_empty() {
            out.extend(missing(t, gaps, engine, requested, bench));
        } else {
            out.extend(made.into_iter().cloned());
        }
    }
    out.extend(results.into_iter().filter(|r| !ORDER.contains(&r.tripwire)));
    out
}

fn missing(
    t: Tripwire,
    gaps: &Gaps,
    engine: Engine,
    requested: Option<u64>,
    bench: bool,
) -> Option<CheckResult> {
    let unknown = |why: &str, what: String| {
        Some(CheckResult::unknown(t, format!("{why}; {what}")).with_missing_input())
    };
    let word = engine.eviction_word();
    match t {
        Tripwire::T1 => {
            let why = gaps.snapshots.as_deref()?;
            unknown(why, format!("{word}s cannot be ruled out"))
        }
        Tripwire::T10 => {
            let why = gaps.snapshots.as_deref()?;
            unknown(why, "the token rate needs both snapshots".into())
        }
        Tripwire::T14 => {
            if !crate::checks::t14::applies_to(engine) {
                // Never due for this engine: say so, as a recording with readings would.
                return gaps
                    .recording
                    .as_ref()
                    .map(|_| crate::checks::t14::not_applicable(engine));
            }
            let why = gaps.recording.as_deref().or(gaps.after.as_deref())?;
            unknown(
                why,
                "the usage gauge's denominator cannot be compared with num_gpu_blocks".into(),
            )
        }
        Tripwire::T9 => {
            let why = gaps.recording.as_deref()?;
            unknown(why, "the concurrency ceiling cannot be followed".into())
        }
        Tripwire::T8 => {
            let n = requested?;
            let why = gaps.recording.as_deref()?;
            unknown(
                why,
                format!("whether the server ran {n} requests at once cannot be told"),
            )
        }
        Tripwire::T15 => {
            if !bench {
                return None;
            }
            let why = gaps.snapshots.as_deref()?;
            unknown(
                why,
                "the server's request and token counts are unknown".into(),
            )
        }
        Tripwire::T24 => {
            // Due with a result file (its client's count), as T15 is.
            if !bench {
                return None;
            }
            let why = gaps.snapshots.as_deref()?;
            unknown(
                why,
                "the prompt tokens the server processed cannot be told".into(),
            )
        }
        Tripwire::T16 => {
            let why = gaps.snapshots.as_deref()?;
            unknown(
                why,
                "whether prompts came from the prefix cache cannot be told".into(),
            )
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;

    fn ids(rs: &[CheckResult]) -> Vec<(Tripwire, Status)> {
        rs.iter().map(|r| (r.tripwire, r.status)).collect()
    }

    #[test]
    fn nothing_is_added_when_nothing_is_missing() {
        let made = vec![
            CheckResult::pass(Tripwire::T1, "no preemptions"),
            CheckResult::pass(Tripwire::T10, "x"),
        ];
        let out = complete(made.clone(), &Gaps::default(), Engine::Vllm, Some(3), true);
        assert_eq!(ids(&out), ids(&made));
    }

    #[test]
    fn a_failed_after_snapshot_leaves_every_run_check_unknown_in_order() {
        let gaps = Gaps {
            snapshots: Some("the after snapshot failed (HTTP 500)".into()),
            after: Some("the after snapshot failed (HTTP 500)".into()),
            recording: Some("the recording has no readings".into()),
        };
        let out = complete(Vec::new(), &gaps, Engine::Vllm, Some(3), true);
        // T17 is made from the result file and T18 from the load's command: neither is ever
        // missing here. T24 is due with the result file, as T15 is.
        assert_eq!(
            out.iter().map(|r| r.tripwire).collect::<Vec<_>>(),
            [&ORDER[..7], &[Tripwire::T24]].concat()
        );
        assert!(out.iter().all(|r| r.status == Status::Unknown));
        assert_eq!(
            out[0].message,
            "the after snapshot failed (HTTP 500); preemptions cannot be ruled out"
        );
        // Without a requested concurrency or a result file, T8 and T15 were never due.
        let out = complete(Vec::new(), &gaps, Engine::Vllm, None, false);
        assert!(!out
            .iter()
            .any(|r| matches!(r.tripwire, Tripwire::T8 | Tripwire::T15)));
    }

    #[test]
    fn checks_made_are_kept_and_only_the_missing_ones_added() {
        // Readings, but no after snapshot: T9 and T8 were made; T14 needs the snapshot.
        let gaps = Gaps {
            snapshots: Some("the after snapshot failed (timed out)".into()),
            after: Some("the after snapshot failed (timed out)".into()),
            recording: None,
        };
        let made = vec![
            CheckResult::warn(Tripwire::T9, "w"),
            CheckResult::pass(Tripwire::T8, "p"),
        ];
        let out = complete(made, &gaps, Engine::Vllm, Some(3), false);
        assert_eq!(
            ids(&out),
            vec![
                (Tripwire::T1, Status::Unknown),
                (Tripwire::T10, Status::Unknown),
                (Tripwire::T14, Status::Unknown),
                (Tripwire::T9, Status::Warn),
                (Tripwire::T8, Status::Pass),
                (Tripwire::T16, Status::Unknown),
            ]
        );
    }

    #[test]
    fn t14_stays_not_applicable_for_engines_without_a_block_count() {
        let gaps = Gaps {
            recording: Some("no readings".into()),
            ..Gaps::default()
        };
        let out = complete(Vec::new(), &gaps, Engine::Sglang, None, false);
        assert_eq!(
            ids(&out),
            vec![
                (Tripwire::T14, Status::NotApplicable),
                (Tripwire::T9, Status::Unknown)
            ]
        );
    }
}
