//! A run's verdicts, assembled in one place (docs/design/run.md#the-verdicts).
//!
//! A run's facts are its boot logs, what the live run judged as it happened (the gate's and the
//! stop's T2, the probe's and the deaths' T7), and one or more windows: what the server and the
//! load did between two snapshots. [`assemble`] turns them into the ordered list every output
//! shows: the live run's terminal summary and exit status, `results.json`, JUnit, the report,
//! `report --json`, `window` and the Python API. None of those builds, merges or rewrites a
//! verdict of its own.

use crate::bootlog::BootFacts;
use crate::checks::{self, gaps::Gaps, Facts};
use crate::result::{CheckResult, Tripwire};

/// One window: the facts the run checks read, and why any of them is missing.
#[derive(Clone, Copy, Debug)]
pub struct Window<'a> {
    pub facts: Facts<'a>,
    /// Why an input of the run checks is missing (each one left out is "can't tell").
    pub gaps: &'a Gaps,
}

impl Window<'_> {
    /// Whether the window holds nothing to judge: no snapshot, recording or result file, and no
    /// reason one is missing (a run that stopped before its load). Such a window adds no
    /// verdict, not even a "can't tell": there was no load to tell about.
    pub fn is_empty(&self) -> bool {
        let f = &self.facts;
        let g = self.gaps;
        f.before.is_none()
            && f.after.is_none()
            && f.series.is_none()
            && f.bench.is_none()
            && g.snapshots.is_none()
            && g.after.is_none()
            && g.recording.is_none()
    }
}

/// Everything a run's verdicts are decided on.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunFacts<'a> {
    /// The run's own boot log (T12), when there is one.
    pub first_log: Option<&'a str>,
    /// The boot facts of each start, the run's own first (T5, T6; T4 and T11 across two or more).
    pub boot: &'a [(String, BootFacts)],
    /// What only the live run could judge, in the order it judged it: the gate's T2, the
    /// probe's and the deaths' T7, the stop's T2.
    pub live: &'a [CheckResult],
    /// The load's window, when the run got that far (or a saved folder has its files).
    pub window: Option<Window<'a>>,
}

/// A run's verdicts in their printed order: the boot-log checks, the live run's results (one per
/// tripwire, [`merge`]d), T15, then the window's checks (docs/reference.md, "report": scripts
/// read these lines in order).
pub fn assemble(f: &RunFacts<'_>) -> Vec<CheckResult> {
    let mut results = checks::boot_all(f.first_log, f.boot);
    merge(&mut results, f.live);
    let Some(w) = f.window.filter(|w| !w.is_empty()) else {
        return results;
    };
    // T15 compares the load tool's account with the server's: it sits with the live run's
    // results, before the window's own checks, as the original printed it.
    let mut t15_at = results.len();
    for r in window(&w) {
        if results.iter().any(|x| x.tripwire == r.tripwire) {
            continue;
        }
        if r.tripwire == Tripwire::T15 {
            results.insert(t15_at, r);
            t15_at += 1;
        } else {
            results.push(r);
        }
    }
    results
}

/// A window's verdicts in their printed order: [`checks::run_all`] with a "can't tell" in place
/// of every check a missing input left out.
pub fn window(w: &Window<'_>) -> Vec<CheckResult> {
    let f = &w.facts;
    checks::gaps::complete(
        checks::run_all(f),
        w.gaps,
        f.engine,
        f.requested,
        f.bench.is_some(),
    )
}

/// Adds results to a list by the one rule for a tripwire judged twice: the later T2 wins (the
/// stop's readings supersede the gate's), for any other tripwire the worse result (the later one
/// when equal). A tripwire not yet in the list is appended.
pub fn merge(results: &mut Vec<CheckResult>, more: &[CheckResult]) {
    for r in more {
        match results.iter().position(|x| x.tripwire == r.tripwire) {
            Some(i) if supersedes(r, &results[i]) => results[i] = r.clone(),
            Some(_) => {}
            None => results.push(r.clone()),
        }
    }
}

/// Whether `later` replaces `earlier` of the same tripwire ([`merge`]'s rule).
fn supersedes(later: &CheckResult, earlier: &CheckResult) -> bool {
    later.tripwire == Tripwire::T2 || later.status <= earlier.status
}

/// One result per tripwire, by [`merge`]'s rule, in tripwire order (JUnit's test cases).
pub fn one_per_tripwire(results: &[CheckResult]) -> Vec<CheckResult> {
    let mut merged = Vec::new();
    merge(&mut merged, results);
    merged.sort_by_key(|r| r.tripwire.number());
    merged
}

/// `check-log`'s verdicts for labelled logs: per log T12/T7, T5, T6 and the "could not read"
/// results; with two logs or more each message starts with the log's label and T4 and T11 follow.
pub fn boot_logs(logs: &[(String, &BootFacts)]) -> Vec<CheckResult> {
    let many = logs.len() >= 2;
    let mut results = Vec::new();
    for (label, f) in logs {
        let mut per_log = vec![
            checks::t12::from_facts(f),
            checks::t5::check(f),
            checks::t6::check(f),
        ];
        per_log.extend(checks::t12::unparsed(f));
        per_log.extend(checks::t12::unreadable(f));
        for r in per_log {
            results.push(if many {
                let msg = format!("{label}: {}", r.message);
                r.with_message(msg).with_log(label)
            } else {
                r
            });
        }
    }
    if many {
        results.extend(checks::t4_t11::check_t4(logs));
        results.extend(checks::t4_t11::check_t11(logs));
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;

    fn r(t: Tripwire, s: Status, m: &str) -> CheckResult {
        CheckResult::new(t, s, m)
    }

    #[test]
    fn the_stops_t2_supersedes_the_gates_and_the_worse_of_others_wins() {
        let mut out = Vec::new();
        merge(
            &mut out,
            &[
                r(Tripwire::T2, Status::Pass, "gate"),
                r(Tripwire::T7, Status::Fail, "probe"),
                r(Tripwire::T7, Status::Pass, "later"),
                r(Tripwire::T2, Status::Fail, "stop"),
            ],
        );
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].message, "stop");
        assert_eq!(out[1].message, "probe");
        let mut out = vec![r(Tripwire::T2, Status::Fail, "gate")];
        merge(&mut out, &[r(Tripwire::T2, Status::Pass, "stop")]);
        assert_eq!(out[0].message, "stop", "the stop's reading is the run's T2");
    }

    #[test]
    fn junit_takes_one_per_tripwire_in_order_by_the_same_rule() {
        let all = [
            r(Tripwire::T7, Status::Fail, "deaths"),
            r(Tripwire::T2, Status::Pass, "gate"),
            r(Tripwire::T7, Status::Pass, "probe"),
            r(Tripwire::T2, Status::Warn, "stop"),
        ];
        let one = one_per_tripwire(&all);
        let got: Vec<&str> = one.iter().map(|r| r.message.as_str()).collect();
        assert_eq!(got, ["stop", "deaths"]);
    }

    #[test]
    fn without_a_window_only_the_boot_and_live_results_count() {
        let live = [r(Tripwire::T2, Status::Fail, "card not clear")];
        let got = assemble(&RunFacts {
            live: &live,
            ..RunFacts::default()
        });
        assert_eq!(got, live);
    }
}
