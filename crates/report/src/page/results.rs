//! "Results": the verdict chips, the status note, the status glossary, the findings in full
//! and the passes folded.

use maud::{html, Markup};

use inferlint_core::catalogue;
use inferlint_core::result::{CheckResult, Status, Tripwire};

use super::super::{glossary, Report};
use super::{icon, pill};

fn chip_words(status: Status, n: usize) -> &'static str {
    match (status, n) {
        (Status::Fail, _) => "failed",
        (Status::Warn, 1) => "warning",
        (Status::Warn, _) => "warnings",
        (Status::Unknown, _) => "can't tell",
        (Status::Pass, _) => "passed",
        (Status::NotApplicable, 1) => "does not apply",
        (Status::NotApplicable, _) => "do not apply",
    }
}

/// The note under the chips: whether the server or the measurement failed.
pub fn status_note(report: &Report) -> Option<String> {
    let failed = |t: Tripwire| {
        report
            .results()
            .iter()
            .any(|r| r.tripwire == t && r.status == Status::Fail)
    };
    let server: Vec<&str> = [(Tripwire::T7, "T7"), (Tripwire::T12, "T12")]
        .iter()
        .filter(|(t, _)| failed(*t))
        .map(|(_, c)| *c)
        .collect();
    if !server.is_empty() {
        return Some(format!(
            "{}: the server itself failed. Any other failed tripwire is about the measurement.",
            server.join(" and ")
        ));
    }
    if report.results().iter().any(|r| r.status == Status::Fail) {
        let mut note = "The server worked; the failed tripwires are about the measurement. Some \
                        numbers from this run cannot be taken at face value."
            .to_string();
        let s = report.summary();
        if let (Some(n), Some(0.0)) = (s.finished, s.errors) {
            note.push_str(&format!(
                " The server finished {} requests with no errors.",
                inferlint_core::fmt::thousands_f(n, 0)
            ));
        }
        return Some(note);
    }
    None
}

pub fn section(report: &Report) -> Markup {
    let engine = report.engine();
    let mut shown: Vec<&CheckResult> = report
        .results()
        .iter()
        .filter(|r| matches!(r.status, Status::Fail | Status::Warn | Status::Unknown))
        .collect();
    shown.sort_by_key(|r| (r.status, r.tripwire));
    let mut folded: Vec<&CheckResult> = report
        .results()
        .iter()
        .filter(|r| matches!(r.status, Status::Pass | Status::NotApplicable))
        .collect();
    folded.sort_by_key(|r| (r.status, r.tripwire));
    let passed = folded.iter().filter(|r| r.status == Status::Pass).count();
    let na = folded.len() - passed;
    let mut summary = if shown.is_empty() {
        format!("All {passed} checks passed")
    } else {
        format!("{passed} passed")
    };
    if na > 0 {
        let verb = if na == 1 { "does" } else { "do" };
        summary.push_str(&format!("; {na} {verb} not apply to {}", engine.name()));
    }
    html! {
        section aria-labelledby="h-results" {
            h2 id="h-results" { "Results" }
            ul class="chips" aria-label="Results by status" {
                @for (status, n) in report.counts() {
                    @if status != Status::NotApplicable || n > 0 {
                        li class=(format!("{}{}", status.key(), if n == 0 { " zero" } else { "" })) {
                            (icon(status)) (n) " " (chip_words(status, n))
                        }
                    }
                }
            }
            @if let Some(note) = status_note(report) {
                p class="status-note" { (note) }
            }
            details class="gloss" id="statuses" {
                summary { "What Pass, Warning, Tripwire failed, Can't tell and Does not apply mean" }
                table {
                    thead { tr { th { "Result" } th { "What it means" } th { "What to do" } } }
                    tbody {
                        @for (status, means, todo) in glossary::status_rows() {
                            tr { td { (pill(status)) } td { (means) } td { (todo) } }
                        }
                    }
                }
            }
            @if !shown.is_empty() {
                div class="findings" {
                    @for r in &shown { (finding(r)) }
                }
            }
            @if !folded.is_empty() {
                details class="gloss passed" {
                    summary { (summary) }
                    ul class="passes" {
                        @for r in &folded {
                            li id=(format!("r-{}", r.tripwire.code())) {
                                (pill(r.status))
                                span class="t" { (r.tripwire.code()) }
                                span class="m" {
                                    (catalogue::entry(r.tripwire).name) ": " (r.message)
                                    @if let Some(g) = gpus_line(r) {
                                        " " (g)
                                    }
                                    small { (catalogue::entry(r.tripwire).why) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn finding(r: &CheckResult) -> Markup {
    let entry = catalogue::entry(r.tripwire);
    html! {
        article class=(format!("finding {}", r.status.key())) id=(format!("r-{}", r.tripwire.code())) {
            header {
                (pill(r.status))
                h3 { (r.tripwire.code()) " · " (entry.name) }
                span class="slug" { (entry.slug) }
            }
            p class="msg" { (r.message) }
            @if let Some(g) = gpus_line(r) {
                p class="msg" { (g) }
            }
            p class="why" { (entry.why) }
            p class="cmd" { "Check it again: " code { (entry.command) } }
            @let evidence = r.evidence_json();
            @if !evidence.is_empty() {
                details {
                    summary { "Evidence" }
                    table class="evidence" {
                        tbody {
                            @for (k, v) in &evidence {
                                tr { td { (k) } td { (evidence_value(v)) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// T2 of a run: which GPUs it judged and who else used them (docs/supervision.md, "Sharing the
/// node"), from the result's evidence; None for a T2 without it.
pub fn gpus_line(r: &CheckResult) -> Option<String> {
    if r.tripwire != Tripwire::T2 {
        return None;
    }
    let e = r.evidence.t2()?;
    let judged = e.gpus_judged.as_deref()?;
    let cards: Vec<String> = e.cards.iter().flatten().map(|c| c.to_string()).collect();
    let mut s = format!("Judged {judged}");
    if !cards.is_empty() {
        let noun = if cards.len() == 1 { "card" } else { "cards" };
        s.push_str(&format!(" ({noun} {})", cards.join(", ")));
    }
    s.push('.');
    let others = e.others_holding_these_gpus.clone().unwrap_or_default();
    if others.is_empty() {
        s.push_str(" Nothing else held memory on them.");
    } else {
        s.push_str(&format!(
            " Also holding memory on them: {}.",
            others.join("; ")
        ));
    }
    let left = e.servers_left_alone.as_ref().map_or(0, Vec::len);
    if left > 0 {
        let noun = if left == 1 { "process" } else { "processes" };
        s.push_str(&format!(
            " {left} server {noun} not started by this run, left alone."
        ));
    }
    Some(s)
}

fn evidence_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "–".into(),
        other => inferlint_core::fmt::shorten(&other.to_string(), 601),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_core::evidence::T2Evidence;

    #[test]
    fn t2_names_the_gpus_judged_and_the_others_on_them() {
        let strings = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect());
        let r = CheckResult::pass(Tripwire::T2, "2 consecutive clear readings").with_evidence(
            T2Evidence {
                gpus_judged: Some("GPU 1 (from --gpus)".into()),
                cards: Some(vec![1]),
                others_holding_these_gpus: strings(&["pid 4711 (alice) python, 300 MiB on GPU 1"]),
                servers_left_alone: strings(&["left alone: pid=9 …", "left alone: pid=10 …"]),
                ..Default::default()
            },
        );
        assert_eq!(
            gpus_line(&r).unwrap(),
            "Judged GPU 1 (from --gpus) (card 1). Also holding memory on them: pid 4711 (alice) python, 300 MiB on GPU 1. 2 server processes not started by this run, left alone."
        );
        let bare = CheckResult::pass(Tripwire::T2, "2 consecutive clear readings").with_evidence(
            T2Evidence {
                gpus_judged: Some("every GPU".into()),
                cards: Some(vec![0]),
                ..Default::default()
            },
        );
        assert_eq!(
            gpus_line(&bare).unwrap(),
            "Judged every GPU (card 0). Nothing else held memory on them."
        );
        // Older T2 results (teardown, gpu-inspect, earlier runs) carry no scope.
        assert!(gpus_line(&CheckResult::pass(Tripwire::T2, "x")).is_none());
        // Another tripwire's result, even one read back with T2's keys, names no GPUs.
        let t7: CheckResult = serde_json::from_value(serde_json::json!({
            "tripwire": "T7", "status": "pass", "message": "x",
            "evidence": {"gpus_judged": "every GPU"}
        }))
        .unwrap();
        assert!(gpus_line(&t7).is_none());
    }
}
