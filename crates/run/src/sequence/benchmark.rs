//! Steps 7 to 9 and 11 of the run: the snapshots around the load, the load recorded, its
//! result file, and the run checks.

use super::finish::read_result;
use super::Run;
use crate::deaths::Phase;
use crate::drive::{run_load, LoadSpec, Recorder};
use crate::folder;
use crate::redact;
use inferlint_core::checks::{self, t10};
use inferlint_core::load::{self, LoadTool, ResultLocation};
use inferlint_core::result::Tripwire;
use inferlint_core::snapshot::{Snapshot, SCRAPE_TIMEOUT};

impl Run {
    /// Scrapes once into a snapshot file of the run folder. A snapshot of another engine's
    /// metrics is kept as evidence but not used; why a snapshot is missing goes to the gaps.
    pub(super) async fn snapshot_to(&mut self, name: &str, what: &str) -> Option<Snapshot> {
        let why = match self.scraper.scrape(&self.url, None, SCRAPE_TIMEOUT).await {
            Ok(s) => {
                if let Err(e) = s.save(&self.out.join(name)) {
                    self.line(&format!("note: cannot write {name}: {e}"));
                }
                let engine = self.engine();
                match s.engine().filter(|&e| e != engine) {
                    None => return Some(s),
                    Some(other) => format!(
                        "the {what} snapshot shows {}'s metrics, not {}'s",
                        other.name(),
                        engine.name()
                    ),
                }
            }
            Err(e) => format!("the {what} snapshot failed ({e})"),
        };
        self.line(&format!("note: {why}"));
        if what == "after" {
            self.load.gaps.after = Some(why.clone());
        }
        if self.load.gaps.snapshots.is_none() {
            self.load.gaps.snapshots = Some(why);
        }
        None
    }

    /// Steps 8 and 9: the load, the recording, the after snapshot and the result file.
    pub(super) async fn load_step(&mut self) {
        let rewrite = load::rewrite(&self.inputs.load, &self.out);
        let requested_live = self
            .load
            .requested
            .or_else(|| load::requested_concurrency(&self.inputs.load));
        let shown = redact::redact_command(&rewrite.argv, &self.secrets);
        self.record.load_command_run = Some(shown.clone());
        self.record.requested = requested_live;
        self.save_record();
        self.line(&format!("== load: {shown}"));
        let engine = self.engine();
        let mut recorder = Recorder::start(
            &self.url,
            &self.out.join(folder::SERIES),
            self.inputs.interval,
            Some(engine),
            self.scraper.clone(),
        );
        let shepherd = match self.shepherd() {
            Ok(s) => s,
            Err(e) => {
                self.set_problem(e);
                return;
            }
        };
        let server_exit = self.server.started.as_ref().map(|s| s.proc.exit_watch());
        let server_events = self.server.started.as_mut().map(|s| &mut s.events);
        if let Some(d) = &self.server.deaths {
            d.set_phase(Phase::Load);
        }
        let outcome = run_load(
            LoadSpec {
                argv: &rewrite.argv,
                out: &self.out,
                engine,
                requested: requested_live,
                sink: self.sink.clone(),
                interrupt: &self.interrupt,
                secrets: &self.secrets,
                shepherd,
                server_exit,
                server_events,
                deaths: self.server.deaths.as_ref(),
            },
            &mut recorder,
        )
        .await;
        self.set_phase(Phase::AfterLoad);
        self.record_deaths();
        self.sink.clear_status();
        self.timings.load_s = outcome.seconds;
        self.load.observed = outcome.observed.clone();
        self.record.during_load = Some(outcome.observed.clone());
        // Whatever happened to the load: the after snapshot, then the recorder's end.
        self.load.after = self.snapshot_to(folder::AFTER, "after").await;
        if let Err(e) = recorder.stop().await {
            self.line(&format!("note: {e}"));
        }
        if let Some(e) = outcome.start_error {
            self.set_problem(e);
        }
        if let Some(exit) = outcome.exit {
            self.load.exit = Some(exit.shell_code());
            if !exit.success() {
                self.line(&format!(
                    "the load command exited with code {}",
                    exit.shell_code()
                ));
            }
        }
        self.record.load_exit_code = self.load.exit;
        if let Some(e) = outcome.server_died {
            self.set_problem(format!(
                "the server exited with code {} during the load",
                e.shell_code()
            ));
        }
        if let Some(why) = outcome.server_broken.filter(|_| !outcome.interrupted) {
            // Only without a death report (the shepherd itself was lost): said above otherwise.
            self.set_problem(format!("the server could not serve the whole load: {why}"));
        }
        // 9. The result file.
        let path = self
            .inputs
            .bench_result
            .clone()
            .or_else(|| load::find_result(&rewrite.result, outcome.started));
        if let Some(path) = path {
            match read_result(&path, rewrite.tool, &rewrite.result) {
                Ok(r) => {
                    self.load.bench = Some(r);
                    self.load.bench_path = Some(path.clone());
                    self.record.result_file = Some(path.display().to_string());
                }
                Err(e) => self.line(&format!("note: cannot read the load's result: {e}")),
            }
        } else if rewrite.result != ResultLocation::None {
            self.line("note: the load left no result file; T15 needs one (--bench-result)");
        }
        self.load.series = self.usable_series(
            outcome.scrape_failures,
            outcome.last_scrape_error.as_deref(),
        );
        self.load.requested = requested_live.or_else(|| {
            self.load
                .bench
                .as_ref()
                .and_then(|b| b.max_concurrency)
                .filter(|c| *c >= 1.0 && c.fract() == 0.0)
                .map(|c| c as u64)
        });
        self.record.requested = self.load.requested;
        // Untimed requests are known only for the engines' own clients.
        if rewrite.tool.and_then(LoadTool::engine).is_some() {
            let text = std::fs::read(self.out.join(folder::LOAD_LOG))
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            self.load.untimed = inferlint_core::bench::untimed_requests(&text);
        }
    }

    /// Step 11: T1, T10 (with the integer-second comparison), T14 or N/A, T9, T8, T15.
    pub(super) fn checks_step(&mut self) {
        self.line("== checks");
        let results = checks::run_all(&checks::Facts {
            before: self.load.before.as_ref(),
            after: self.load.after.as_ref(),
            series: self.load.series.as_ref(),
            boot: self.boot.facts.as_ref(),
            requested: self.load.requested,
            bench: self.load.bench.as_ref(),
            untimed_requests: self.load.untimed,
            load: Some(&inferlint_core::load::intent(&self.inputs.load)),
            observed: Some(&self.load.observed),
            engine: self.engine(),
        });
        let results = checks::gaps::complete(
            results,
            &self.load.gaps,
            self.engine(),
            self.load.requested,
            self.load.bench.is_some(),
        );
        for r in results {
            let r = if r.tripwire == Tripwire::T10 {
                t10::with_integer_second_comparison(&r)
            } else {
                r
            };
            if r.tripwire == Tripwire::T15 {
                self.verdict.extra.push(r.clone());
            }
            self.record_result(r);
        }
    }
}
