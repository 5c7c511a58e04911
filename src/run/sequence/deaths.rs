//! The deaths in the server's tree, judged (docs/supervision.md, "Every death is an event"):
//! each one after the server was ready fails T7, and one that broke the server while it was
//! to serve the load is the run's problem, so no verdict over that load passes unremarked.

use super::super::deaths::Death;
use super::Run;
use crate::result::{CheckResult, Tripwire};

impl Run {
    /// Records the deaths seen so far in `run.json`; those after ready and not yet judged make
    /// one T7 FAIL (naming the first), and a broken server the problem line.
    pub(super) fn record_deaths(&mut self) {
        let Some(w) = &self.deaths else {
            return;
        };
        w.drain_now();
        let all = w.deaths();
        let new: Vec<Death> = all[self.deaths_judged.min(all.len())..]
            .iter()
            .filter(|d| d.after_ready())
            .cloned()
            .collect();
        self.deaths_judged = all.len();
        self.record.deaths = all;
        let Some(first) = new.first() else {
            return;
        };
        let mut message = first.summary.clone();
        if new.len() > 1 {
            message.push_str(&format!(
                "; {} more process(es) of the server ended after it",
                new.len() - 1
            ));
        }
        let r = CheckResult::fail(Tripwire::T7, message).with("deaths", &new);
        self.extra.push(r.clone());
        self.record_result(r);
        if let Some(b) = new.iter().find(|d| d.server_broken) {
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
