//! The run's window (docs/design/run.md#the-verdicts): the snapshots around the load, the load
//! recorded, its result file, and the window's checks. [`Run::window_step`] returns what it
//! found as a [`Window`]; nothing of it is kept in the run's own state.

use super::finish::read_result;
use super::Run;
use crate::deaths::Phase;
use crate::drive::{run_load, LoadSpec, Recorder};
use crate::folder;
use crate::redact;
use inferlint_core::bench::BenchResult;
use inferlint_core::checks::{self, gaps::Gaps};
use inferlint_core::load::{self, LoadTool, ResultLocation};
use inferlint_core::observed::LoadObserved;
use inferlint_core::series::Series;
use inferlint_core::snapshot::{Snapshot, SCRAPE_TIMEOUT};
use inferlint_core::verdict;
use std::path::PathBuf;

/// What one load did between its two snapshots, and why any of it is missing: the facts the
/// window's checks read.
#[derive(Debug, Default)]
pub(super) struct Window {
    /// The folder its files are in (the run's, or a sweep point's).
    pub(super) dir: PathBuf,
    /// The load command as given for this window (before its rewrite to save its result).
    pub(super) load: Vec<String>,
    pub(super) before: Option<Snapshot>,
    pub(super) after: Option<Snapshot>,
    pub(super) series: Option<Series>,
    /// Why the checks' inputs are missing, when they are (recorded as "can't tell").
    pub(super) gaps: Gaps,
    pub(super) bench: Option<BenchResult>,
    pub(super) bench_path: Option<PathBuf>,
    /// The concurrency the load asked for (`--requested`, its command, else its result file).
    pub(super) requested: Option<u64>,
    /// Requests the load tool sent outside its timing, which the server counted.
    pub(super) untimed: u64,
    /// The load command's exit status.
    pub(super) exit: Option<i32>,
    /// What the run saw of the load while it ran (T20, T21).
    pub(super) observed: LoadObserved,
    /// The load-tool processes a script load ran, each a point of a sweep written as a loop.
    pub(super) script_points: Vec<crate::script_points::ScriptPoint>,
}

impl Window {
    /// The window's facts as core's checks read them.
    pub(super) fn facts<'a>(
        &'a self,
        boot: Option<&'a inferlint_core::bootlog::BootFacts>,
        load: &'a inferlint_core::load::LoadIntent,
        engine: inferlint_core::engine::Engine,
    ) -> verdict::Window<'a> {
        verdict::Window {
            facts: checks::Facts {
                before: self.before.as_ref(),
                after: self.after.as_ref(),
                series: self.series.as_ref(),
                boot,
                requested: self.requested,
                bench: self.bench.as_ref(),
                untimed_requests: self.untimed,
                load: Some(load),
                observed: Some(&self.observed),
                engine,
            },
            gaps: &self.gaps,
        }
    }
}

impl Run {
    /// Steps 7 to 9: the before snapshot, the load recorded, the after snapshot and the result
    /// file, as one window.
    pub(super) async fn window_step(&mut self, dir: PathBuf, load: Vec<String>) -> Window {
        let mut w = Window {
            dir,
            load,
            requested: self.inputs.requested,
            ..Window::default()
        };
        let at = w.dir.join(folder::BEFORE);
        w.before = self.snapshot_to(&at, "before", &mut w.gaps).await;
        self.load_step(&mut w).await;
        w
    }

    /// Scrapes once into a snapshot file (the run's or a point's). A snapshot of another engine's
    /// metrics is kept as evidence but not used; why a snapshot is missing goes to the gaps.
    pub(super) async fn snapshot_to(
        &mut self,
        path: &std::path::Path,
        what: &str,
        gaps: &mut Gaps,
    ) -> Option<Snapshot> {
        let why = match self.scraper.scrape(&self.url, None, SCRAPE_TIMEOUT).await {
            Ok(s) => {
                if let Err(e) = s.save(path) {
                    let name = path.file_name().unwrap_or_default().to_string_lossy();
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
            gaps.after = Some(why.clone());
        }
        if gaps.snapshots.is_none() {
            gaps.snapshots = Some(why);
        }
        None
    }

    /// Steps 8 and 9: the load, the recording, the after snapshot and the result file.
    async fn load_step(&mut self, w: &mut Window) {
        let rewrite = load::rewrite(&w.load, &w.dir);
        let requested_live = w.requested.or_else(|| load::requested_concurrency(&w.load));
        let shown = redact::redact_command(&rewrite.argv, &self.secrets);
        self.record.load_command_run = Some(shown.clone());
        self.record.requested = requested_live;
        self.save_record();
        self.line(&format!("== load: {shown}"));
        let Some(outcome) = self.drive_load(&rewrite.argv, requested_live, w).await else {
            return;
        };
        self.note_load_outcome(&outcome, w);
        // 9. The result file; a tool's own sweep leaves one per point, each judged at its point.
        if self.runs_its_own_sweep(w) {
            self.line(&format!(
                "note: the load ran a sweep of its own ({} points): each point's result is judged at its point, none for the whole load",
                w.script_points.len()
            ));
        } else {
            self.read_load_result(&rewrite, outcome.started, w);
        }
        w.series = self.usable_series(
            w,
            outcome.scrape_failures,
            outcome.last_scrape_error.as_deref(),
        );
        // GuideLLM's own sweep: its points come from its report and the recording, both read now.
        self.guidellm_own_points(w);
        w.requested = requested_live.or_else(|| {
            w.bench
                .as_ref()
                .and_then(|b| b.max_concurrency)
                .filter(|c| *c >= 1.0 && c.fract() == 0.0)
                .map(|c| c as u64)
        });
        self.record.requested = w.requested;
        let text = std::fs::read(w.dir.join(folder::LOAD_LOG))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        // Untimed requests are known only for the engines' own clients.
        if rewrite.tool.and_then(LoadTool::engine).is_some() {
            w.untimed = inferlint_core::bench::untimed_requests(&text);
        }
        if let Some(b) = w.bench.as_mut() {
            inferlint_core::bench::name_failures(b, &text);
        }
    }

    /// Runs the load command while the recorder samples the server, then takes the after
    /// snapshot (whatever happened to the load) and ends the recorder. None (with the problem
    /// set) when the load could not be run at all.
    async fn drive_load(
        &mut self,
        argv: &[String],
        requested: Option<u64>,
        w: &mut Window,
    ) -> Option<crate::drive::LoadOutcome> {
        let engine = self.engine();
        // A script's load-tool processes are followed as points when the script is no load
        // tool itself (docs/design/sweeps.md#a-sweep-written-as-a-loop), and so are the point
        // processes of a tool that runs its own sweep.
        let follow =
            self.inputs.sweep.is_none() && crate::script_points::ScriptPoints::followed(argv);
        let mut recorder = Recorder::start(
            &self.url,
            &w.dir.join(folder::SERIES),
            self.inputs.interval,
            Some(engine),
            self.scraper.clone(),
            follow,
        );
        let shepherd = match self.shepherd() {
            Ok(s) => s,
            Err(e) => {
                self.set_problem(e);
                return None;
            }
        };
        let server_exit = self.server.started.as_ref().map(|s| s.proc.exit_watch());
        let server_events = self.server.started.as_mut().map(|s| &mut s.events);
        if let Some(d) = &self.server.deaths {
            d.set_phase(Phase::Load);
        }
        let outcome = run_load(
            LoadSpec {
                argv,
                out: &w.dir,
                engine,
                requested,
                sink: self.sink.clone(),
                interrupt: &self.interrupt,
                secrets: &self.secrets,
                shepherd,
                server_exit,
                server_events,
                deaths: self.server.deaths.as_ref(),
                gpu: Some((
                    inferlint_host::gpu::source_from_env(),
                    self.inputs.gpu_scope.clone(),
                )),
            },
            &mut recorder,
        )
        .await;
        self.set_phase(Phase::AfterLoad);
        self.record_deaths();
        self.sink.clear_status();
        self.timings.load_s = outcome.seconds;
        w.observed = outcome.observed.clone();
        self.record.during_load = Some(outcome.observed.clone());
        let at = w.dir.join(folder::AFTER);
        w.after = self.snapshot_to(&at, "after", &mut w.gaps).await;
        w.script_points = outcome.script_points.clone();
        // The first began after the before snapshot; the last end at the after snapshot.
        for p in &mut w.script_points {
            if p.before.is_none() {
                p.before.clone_from(&w.before);
            }
            if p.after.is_none() {
                p.after.clone_from(&w.after);
            }
        }
        if let Err(e) = recorder.stop().await {
            self.line(&format!("note: {e}"));
        }
        Some(outcome)
    }

    /// What the load's end says of the run: its exit status, and a server that died or broke
    /// during it.
    fn note_load_outcome(&mut self, outcome: &crate::drive::LoadOutcome, w: &mut Window) {
        if let Some(e) = &outcome.start_error {
            self.set_problem(e.clone());
        }
        if let Some(exit) = outcome.exit {
            w.exit = Some(exit.shell_code());
            if !exit.success() {
                self.line(&format!(
                    "the load command exited with code {}",
                    exit.shell_code()
                ));
            }
        }
        self.record.load_exit_code = w.exit;
        if let Some(e) = outcome.server_died {
            self.set_problem(format!(
                "the server exited with code {} during the load",
                e.shell_code()
            ));
        }
        if let Some(why) = outcome
            .server_broken
            .as_ref()
            .filter(|_| !outcome.interrupted)
        {
            // Only without a death report (the shepherd itself was lost): said above otherwise.
            self.set_problem(format!("the server could not serve the whole load: {why}"));
        }
    }

    /// The load's result file: `--bench-result`, else the one its rewrite asked for (written
    /// since `started`), read in its tool's format.
    /// Whether the window's load was a tool that ran a sweep of its own, two points or more.
    pub(super) fn runs_its_own_sweep(&self, w: &Window) -> bool {
        w.script_points.len() >= 2 && load::load_tool(&w.load).is_some()
    }

    fn read_load_result(
        &mut self,
        rewrite: &load::Rewrite,
        started: std::time::SystemTime,
        w: &mut Window,
    ) {
        let path = self
            .inputs
            .bench_result
            .clone()
            .or_else(|| load::find_result(&rewrite.result, started));
        if let Some(path) = path {
            match read_result(&path, rewrite.tool, &rewrite.result) {
                Ok(r) => {
                    w.bench = Some(r);
                    w.bench_path = Some(path.clone());
                    self.record.result_file = Some(path.display().to_string());
                }
                Err(e) => self.line(&format!("note: cannot read the load's result: {e}")),
            }
        } else if rewrite.result != ResultLocation::None {
            self.line("note: the load left no result file; T15 needs one (--bench-result)");
        }
    }

    /// The window's checks (T1, T10, T14 or N/A, T9, T8, T15, T16-T24), as core
    /// decides them, printed as they come.
    pub(super) fn checks_step(&mut self, w: &Window) -> Vec<inferlint_core::result::CheckResult> {
        self.line("== checks");
        let load = inferlint_core::load::intent(&w.load);
        let results = verdict::window(&w.facts(self.boot.facts.as_ref(), &load, self.engine()));
        for r in &results {
            self.line(&r.line());
        }
        results
    }
}
