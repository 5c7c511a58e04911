//! T12 unexplained-failure (and T7 crash-after-ready from the log): the failure classifier
//! (docs/design/bootlog.md#the-failure-classifier) run over a boot log. Also the "can't tell"
//! results for lines that could not be read.

use crate::bootlog::{self, BootFacts, Failure, Phase, LINE_CAP};
use crate::evidence::{T12Evidence, T7Evidence, UnparsedLine};
use crate::result::{CheckResult, Tripwire};

/// T12 (or T7 for a failure after ready) from a log's text.
pub fn check(text: &str, _facts: &BootFacts) -> CheckResult {
    verdict(bootlog::classify_failure(text).as_ref())
}

/// T12 (or T7) from the failure the analyzer already found while reading the log.
pub fn from_facts(facts: &BootFacts) -> CheckResult {
    verdict(facts.failure.as_ref())
}

/// The result for a classifier verdict.
pub fn verdict(failure: Option<&Failure>) -> CheckResult {
    let Some(f) = failure else {
        return CheckResult::pass(Tripwire::T12, "no failure in log");
    };
    let (kind, phase) = (
        Some(f.kind.as_str().to_string()),
        Some(f.phase.as_str().to_string()),
    );
    let (lineno, line) = (Some(f.lineno as u64), Some(f.line.clone()));
    match f.phase {
        Phase::Boot => CheckResult::fail(Tripwire::T12, f.summary()).with_evidence(T12Evidence {
            kind,
            phase,
            lineno,
            line,
            ..Default::default()
        }),
        Phase::Serving => CheckResult::fail(Tripwire::T7, f.summary()).with_evidence(T7Evidence {
            kind,
            phase,
            lineno,
            line,
            ..Default::default()
        }),
    }
}

/// T12 UNKNOWN `{n} recognised line(s) in an unknown format` when a known line did not parse.
pub fn unparsed(facts: &BootFacts) -> Option<CheckResult> {
    let n = facts.unparsed_count();
    if n == 0 {
        return None;
    }
    let lines: Vec<_> = facts
        .unparsed
        .iter()
        .map(|u| UnparsedLine {
            field: u.field.clone(),
            lineno: u.lineno as u64,
            line: u.line.clone(),
        })
        .collect();
    Some(
        CheckResult::unknown(
            Tripwire::T12,
            format!("{n} recognised line(s) in an unknown format"),
        )
        .with_evidence(T12Evidence {
            unparsed: Some(lines),
            ..Default::default()
        }),
    )
}

/// T12 UNKNOWN results for lines that could not be read whole: cut at the length cap, or not
/// valid UTF-8. A fact or a failure may hide in what was lost.
pub fn unreadable(facts: &BootFacts) -> Vec<CheckResult> {
    let mut out = Vec::new();
    if facts.lines_cut > 0 {
        out.push(
            CheckResult::unknown(
                Tripwire::T12,
                format!(
                    "{} line(s) longer than {} bytes were cut; what followed the cut could not be read",
                    facts.lines_cut,
                    crate::fmt::thousands(LINE_CAP as i64)
                ),
            )
            .with_evidence(T12Evidence {
                lines_cut: Some(facts.lines_cut),
                ..Default::default()
            }),
        );
    }
    if facts.lines_lossy > 0 {
        out.push(
            CheckResult::unknown(
                Tripwire::T12,
                format!(
                    "{} line(s) were not valid UTF-8 (binary data?) and were read with replacement characters",
                    facts.lines_lossy
                ),
            )
            .with_evidence(T12Evidence {
                lines_lossy: Some(facts.lines_lossy),
                ..Default::default()
            }),
        );
    }
    out
}
