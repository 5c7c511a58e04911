//! The deaths in the server's tree, judged (docs/supervision.md, "Every death is an event"):
//! those after the server was ready fail T7 (once), and one that broke the server while it was
//! to serve the load is the run's problem, so no verdict over that load passes unremarked.

use super::super::deaths::t7_deaths;
use super::Run;
use inferlint_core::evidence::T7Evidence;
use inferlint_core::result::{CheckResult, Tripwire};

impl Run {
    /// Records the deaths seen so far in `run.json`; the first time there are any after ready,
    /// one T7 FAIL names the first (an engine's death is followed by its workers' and its
    /// server's: one incident, one verdict), and a broken server becomes the problem line.
    pub(super) fn record_deaths(&mut self) {
        let Some(w) = &self.server.deaths else {
            return;
        };
        w.drain_now();
        let all = w.deaths();
        let interrupted_ms = self.interrupt.since_first().map(|since| {
            let at = std::time::SystemTime::now() - since;
            at.duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0)
        });
        let after_ready = t7_deaths(&all, interrupted_ms);
        self.record.deaths = all;
        if self.server.deaths_judged {
            return;
        }
        let Some(first) = after_ready.first() else {
            return;
        };
        self.server.deaths_judged = true;
        let mut message = first.summary.clone();
        if after_ready.len() > 1 {
            message.push_str(&format!(
                "; {} more process(es) of the server ended after it",
                after_ready.len() - 1
            ));
        }
        let r = CheckResult::fail(Tripwire::T7, message).with_evidence(T7Evidence {
            deaths: Some(inferlint_core::result::to_json_value(&after_ready)),
            ..Default::default()
        });
        self.verdict.extra.push(r.clone());
        self.record_result(r);
        if let Some(b) = after_ready.iter().find(|d| d.server_broken) {
            self.set_problem(if b.phase == "load" {
                format!(
                    "the server could not serve the whole load: {}; the load was stopped, so \
                     the checks cover only what it served before",
                    b.summary
                )
            } else {
                format!("the server broke after it was ready: {}", b.summary)
            });
        }
    }
}
