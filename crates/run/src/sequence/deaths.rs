//! The deaths in the server's tree, judged (docs/supervision.md, "Every death is an event"):
//! those after the server was ready fail T7 (once), and one that broke the server while it was
//! to serve the load is the run's problem, so no verdict over that load passes unremarked.

use super::Run;
use inferlint_core::checks::t7_deaths;

impl Run {
    /// Records the deaths seen so far in `run.json`; the first time there are any after ready,
    /// T7's verdict on them (core's `t7_deaths`) is recorded, and a broken server becomes the
    /// problem line.
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
        let after_ready = t7_deaths::judged(&all, interrupted_ms);
        self.record.deaths = self
            .server
            .earlier_deaths
            .iter()
            .cloned()
            .chain(all)
            .collect();
        if self.server.deaths_judged {
            return;
        }
        let Some(r) = t7_deaths::check(&after_ready) else {
            return;
        };
        self.server.deaths_judged = true;
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
