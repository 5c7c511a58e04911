//! The end of the run: the server's stop and teardown (step 12), then the problem line, the
//! report, `results.json`, `run.json`, the JUnit file and the secrets check (steps 13-14).

use std::path::{Path, PathBuf};
use std::time::Duration;

use inferlint_supervisor::{Graces, StopMode, TeardownReport};
use tokio::time::Instant;

use super::super::folder;
use super::super::gate;
use super::super::interrupt::Level;
use super::super::proc::graces_within;
use super::super::Outcome;
use super::{Run, Window, AFTER_STOP_RESERVE, FAILURE_SELF_EXIT, INTERRUPTED_BUDGET};
use inferlint_core::bench::BenchResult;
use inferlint_core::load::{LoadTool, ResultLocation};
use inferlint_report::{self as report, BootLog, Report};

impl Run {
    /// Step 12: stop the server the run started (the staged teardown of its whole tree:
    /// SIGTERM, grace, SIGKILL), then T2 on the run's GPUs. Server processes the run did not
    /// start are listed, never signalled (docs/supervision.md, "Sharing the node").
    pub(super) async fn stop_server(&mut self) {
        if self.server.started.is_none() {
            self.stop_attached().await;
            return;
        }
        self.sink.clear_status();
        let t = Instant::now();
        self.sink.line("== stop the server");
        self.wait_for_failed_exit().await;
        let leader_died = self.leader_exit().await;
        // From here on, what ends is the stop's doing, not a death.
        if let Some(d) = &self.server.deaths {
            d.stop();
        }
        let (mode, graces) = self.stop_mode();
        // Every node's part stops with the head's, each by its own agent.
        for n in &mut self.server.nodes {
            n.stop(mode).await;
        }
        let Some(report) = self.teardown(mode, graces).await else {
            return;
        };
        self.name_leftovers(&report, leader_died);
        for l in report.lines() {
            self.sink.line(&l);
        }
        self.finish_nodes(graces).await;
        let j = gate::after_stop(
            self.t2_timeout(),
            &report,
            self.server.run_id.clone(),
            &self.inputs.gpu_scope,
            self.gate.used_mib,
        )
        .await;
        for l in &j.lines {
            self.sink.line(l);
        }
        self.note_scope(&j);
        let t2 = self.t2_across_nodes(j.t2);
        self.verdict.extra.push(t2.clone());
        self.record_result(t2);
        self.timings.stop_s = t.elapsed().as_secs_f64();
    }

    /// A server whose log showed a start-up failure gets a while to exit by itself before it
    /// is signalled: vLLM winds down by itself after a refused KV cache, faster than a SIGTERM
    /// during that wind-down would make it.
    async fn wait_for_failed_exit(&mut self) {
        let Some(server) = self.server.started.as_mut() else {
            return;
        };
        if !server.failed || self.interrupt.interrupted() || server.proc.exited().is_some() {
            return;
        }
        self.sink.line(&format!(
            "the server failed: waiting up to {} s for it to exit by itself",
            FAILURE_SELF_EXIT.as_secs()
        ));
        let waited = Instant::now();
        tokio::select! {
            _ = tokio::time::timeout(FAILURE_SELF_EXIT, server.proc.wait()) => {}
            _ = self.interrupt.reached(Level::Graceful) => {}
        }
        if let Some(e) = server.proc.exited() {
            self.sink.line(&format!(
                "it exited with code {} after {:.1} s",
                e.shell_code(),
                waited.elapsed().as_secs_f64()
            ));
        }
    }

    /// How the server's leader ended before the stop, if it did, and what of its tree escaped
    /// its process group (printed: killing the group would miss it).
    async fn leader_exit(&mut self) -> Option<inferlint_supervisor::ExitKind> {
        let server = self.server.started.as_mut()?;
        let mut leader_died = server.proc.exited();
        // The shepherd reports the leader's death before its exit: when the death watch has
        // it, the exit is a moment away, and what the leader left is named only once it came.
        let reported = self.server.deaths.as_ref().is_some_and(|d| {
            d.drain_now();
            d.leader_reported()
        });
        if leader_died.is_none() && reported {
            let _ = tokio::time::timeout(Duration::from_secs(2), server.proc.wait()).await;
            leader_died = server.proc.exited();
        }
        for (pid, cmd) in server.proc.outside_group() {
            let cmd = inferlint_core::fmt::first_chars(&cmd, 100);
            self.sink.line(&format!(
                "found outside the server's process group: pid={pid:<8} {cmd} (killing the group would miss it)"
            ));
        }
        leader_died
    }

    /// Graceful unless a second Ctrl-C forced it; after a SIGTERM (scancel), what is left of
    /// Slurm's 30 s KillWait bounds the graces, keeping room for the readings and the report.
    fn stop_mode(&self) -> (StopMode, Graces) {
        let mode = if self.interrupt.level() >= Level::Force {
            StopMode::Force
        } else {
            StopMode::Graceful
        };
        let graces = match self.interrupt.since_first() {
            Some(since) => graces_within(
                INTERRUPTED_BUDGET
                    .saturating_sub(since)
                    .saturating_sub(AFTER_STOP_RESERVE)
                    .max(Duration::from_secs(2))
                    .min(self.inputs.stop_grace),
            ),
            None => graces_within(self.inputs.stop_grace),
        };
        (mode, graces)
    }

    /// The supervisor's staged teardown of the head's tree (a second Ctrl-C during it forces
    /// it), then the end of the log's reader; what it signalled and found.
    async fn teardown(&mut self, mode: StopMode, graces: Graces) -> Option<TeardownReport> {
        let server = self.server.started.as_mut()?;
        server.proc.stop_with(mode, graces);
        let report: TeardownReport = tokio::select! {
            r = server.proc.done() => r,
            _ = self.interrupt.reached(Level::Force), if mode == StopMode::Graceful => {
                server.proc.stop(StopMode::Force);
                server.proc.done().await
            }
        };
        if !server.log_task.is_finished() {
            let _ = tokio::time::timeout(Duration::from_secs(2), &mut server.log_task).await;
        }
        self.sink.line(&format!(
            "stopped: {} process(es) signalled ({}) in {:.1} s",
            report.signalled.len(),
            report.backend,
            report.elapsed_ms as f64 / 1000.0
        ));
        Some(report)
    }

    /// The API server died before the stop (killed, crashed): what it left behind is named one
    /// by one, since these orphans are what holds the GPU afterwards.
    fn name_leftovers(
        &self,
        report: &TeardownReport,
        leader_died: Option<inferlint_supervisor::ExitKind>,
    ) {
        let (Some(e), Some(server)) = (leader_died, self.server.started.as_ref()) else {
            return;
        };
        for o in report.found.iter().filter(|o| o.pid != server.proc.pid) {
            let cmd = inferlint_core::fmt::first_chars(&o.cmdline, 100);
            self.sink.line(&format!(
                "left by the server's exit ({}): pid={:<8} {cmd} (stopped)",
                exit_words(e),
                o.pid
            ));
        }
    }

    /// How long the T2 readings after the stop may take, on the head and on each node.
    pub(super) fn t2_timeout(&self) -> Duration {
        if self.interrupt.interrupted() {
            // Two readings, no more: the run is being stopped.
            self.inputs.teardown_timeout.min(Duration::from_secs(4))
        } else {
            self.inputs.teardown_timeout
        }
    }

    /// Steps 13 and 14: the problem line, the report, `results.json`, `run.json`, JUnit.
    pub(super) async fn finish(mut self, window: Option<Window>) -> Outcome {
        self.sink.clear_status();
        if self.interrupt.interrupted() {
            self.set_problem("interrupted");
        }
        if let Some(p) = &self.verdict.problem {
            self.line(&format!("problem: {p}"));
        }
        // In attach mode the server's log is copied in, so the folder holds the whole run.
        if self.serve_argv.is_none() {
            if let (Some(text), Some(src)) = (&self.boot.text, &self.inputs.boot_log) {
                let dst = self.out.join(folder::BOOT_LOG);
                let same = std::fs::canonicalize(src).ok() == std::fs::canonicalize(&dst).ok();
                if !same {
                    let _ = folder::write_atomic(&dst, self.secrets.scrub(text).as_bytes());
                }
            }
        }
        // The run's verdicts are what core assembles from its facts (the boot log, the live
        // results, the window), the same list the report shows: not the lines as printed, which
        // judged some tripwires twice (the gate's and the stop's T2).
        let report = Report::build(self.report_inputs(window.as_ref()));
        self.verdict.results = report.results().to_vec();
        let mut report_path = None;
        let mut insights = Vec::new();
        let can_report = !self.verdict.no_report
            && (self.boot.text.is_some()
                || window
                    .as_ref()
                    .is_some_and(|w| w.before.is_some() && w.after.is_some()));
        if can_report {
            insights = report
                .insights()
                .iter()
                .map(|i| i.line())
                .collect::<Vec<_>>();
            if !insights.is_empty() {
                self.line("== what limited this run");
                for i in &insights {
                    self.line(&format!("- {i}"));
                }
            }
            let path = self.out.join(folder::REPORT);
            match report.write(&path) {
                Ok(()) => report_path = Some(path),
                Err(e) => self.line(&format!("note: cannot write the report: {e}")),
            }
        }
        if let Err(e) = folder::write_results(&self.out, &self.verdict.results) {
            self.line(&format!("note: cannot write results.json: {e}"));
        }
        let total = self.t0.elapsed().as_secs_f64();
        if let Some(junit) = &self.inputs.junit {
            if let Err(e) =
                folder::write_junit(junit, &self.verdict.results, "inferlint run", total)
            {
                self.line(&format!("note: cannot write {}: {e}", junit.display()));
            }
        }
        self.timings.total_s = total;
        let outcome = self.outcome(report_path, insights, window.as_ref());
        self.record.ended_at = Some(folder::now_rfc3339());
        self.record.state = "finished";
        self.record.exit_code = Some(outcome.exit_code(self.inputs.strict));
        self.record.exit_reason = Some(match (&outcome.problem, outcome.load_exit) {
            _ if outcome.interrupted => "interrupted".to_string(),
            (Some(p), _) => format!("problem: {p}"),
            (None, Some(c)) if c != 0 => format!("the load command exited with code {c}"),
            _ => "completed".to_string(),
        });
        self.record.report = outcome.report.as_ref().map(|p| p.display().to_string());
        self.record.timings = Some(outcome.timings);
        if let Some(d) = &self.server.deaths {
            self.record.deaths = d.deaths();
        }
        if self.record.engine.is_none() {
            self.record.engine = self.engine.map(|e| e.key().to_string());
        }
        self.save_record();
        self.write_sweep_page();
        if let Err(e) = self.secrets.scrub_folder(&self.out) {
            self.line(&format!(
                "note: cannot check the run folder for secrets: {e}"
            ));
        }
        outcome
    }

    /// A sweep's page, `sweep.html`, beside its `sweep.json` (docs/design/sweeps.md#the-sweep-page).
    fn write_sweep_page(&self) {
        use inferlint_report::sweep_page::{server_of, Curve, SweepPage};
        let Some(sweep) = &self.verdict.sweep else {
            return;
        };
        let mut page = SweepPage::new(vec![Curve {
            label: String::new(),
            sweep: sweep.clone(),
            href_base: String::new(),
            server: server_of(&self.out),
        }]);
        page.title.clone_from(&self.inputs.title);
        let path = self.out.join("sweep.html");
        match page.write(&path) {
            Ok(()) => self.line(&format!("sweep page: {}", path.display())),
            Err(e) => self.line(&format!("note: cannot write the sweep page: {e}")),
        }
    }

    /// What the report and the run's verdicts are made from: the boot log (secrets scrubbed),
    /// the live run's results, the window (when the load ran) and the nodes.
    pub(super) fn report_inputs(&self, window: Option<&Window>) -> report::Inputs {
        let empty = Window::default();
        let w = window.unwrap_or(&empty);
        let mut sources = Vec::new();
        if self.boot.text.is_some() {
            sources.push(folder::BOOT_LOG.to_string());
        }
        if w.before.is_some() {
            sources.push(folder::BEFORE.to_string());
        }
        if w.after.is_some() {
            sources.push(folder::AFTER.to_string());
        }
        if w.series.is_some() {
            sources.push(folder::SERIES.to_string());
        }
        if let Some(p) = &w.bench_path {
            sources.push(
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
        }
        // Every start's log, the first first (T4 and T11 compare them).
        let current = self
            .boot
            .text
            .as_ref()
            .map(|t| (folder::boot_log_name(self.boot.number), t));
        let boot_logs = self
            .boot
            .earlier
            .iter()
            .map(|(l, t, _)| (l.clone(), t))
            .chain(current)
            .map(|(label, t)| BootLog {
                label,
                text: self.secrets.scrub(t),
            })
            .collect();
        report::Inputs {
            boot_logs,
            before: w.before.clone(),
            after: w.after.clone(),
            series: w.series.clone(),
            bench: w.bench.clone(),
            requested: w.requested.or(self.inputs.requested),
            title: self.inputs.title.clone(),
            sources,
            extra_results: self.verdict.extra.clone(),
            server_version: self.boot.server_version.clone(),
            engine: Some(self.engine()),
            untimed_requests: w.untimed,
            load: Some(inferlint_core::load::intent(
                window.map_or(&self.inputs.load, |w| &w.load),
            )),
            observed: Some(w.observed.clone()),
            run_folder: Some(self.out.display().to_string()),
            generated_at: None,
            missing: w.gaps.clone(),
            nodes: self
                .record
                .nodes
                .iter()
                .map(|n| report::NodePart {
                    node: n.node,
                    hostname: n.hostname.clone(),
                    command: n.command.clone(),
                    teardown_left: n.teardown_left,
                    deaths: n.deaths.clone(),
                    t2: n.t2.clone(),
                })
                .collect(),
        }
    }

    pub(super) fn outcome(
        &self,
        report: Option<PathBuf>,
        insights: Vec<String>,
        window: Option<&Window>,
    ) -> Outcome {
        // A sweep's exit status and counts are over all its points, each point's verdicts
        // after the run's own.
        let points = self.verdict.sweep.iter().flat_map(|s| &s.points);
        let mut results = self.verdict.results.clone();
        results.extend(points.clone().flat_map(|p| p.results.iter().cloned()));
        let load_exit = window.and_then(|w| w.exit).or_else(|| {
            points
                .clone()
                .filter_map(|p| p.load_exit)
                .find(|&c| c != 0)
                .or_else(|| points.clone().find_map(|p| p.load_exit))
        });
        Outcome {
            results,
            load_exit,
            report,
            problem: self.verdict.problem.clone(),
            interrupted: self.interrupt.interrupted(),
            insights,
            out: self.out.clone(),
            timings: self.timings,
        }
    }
}

/// Reads the load's result file in its tool's format.
pub(super) fn read_result(
    path: &Path,
    tool: Option<LoadTool>,
    location: &ResultLocation,
) -> Result<BenchResult, String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let aiperf = tool == Some(LoadTool::Aiperf)
        || matches!(location, ResultLocation::AiperfIn(_))
        || name == "profile_export_aiperf.json";
    let guidellm = tool == Some(LoadTool::Guidellm) || name == "benchmarks.json";
    if aiperf {
        return inferlint_core::bench::foreign::load_aiperf(path).map_err(|e| e.to_string());
    }
    if guidellm {
        if let Ok(r) = inferlint_core::bench::foreign::load_guidellm(path) {
            return Ok(r);
        }
    }
    inferlint_core::bench::load(path).map_err(|e| e.to_string())
}

/// `exit code 1`, `killed by SIGKILL`.
fn exit_words(e: inferlint_supervisor::ExitKind) -> String {
    e.to_string()
}
