//! The run's steps in order (docs/design/run.md), each printing its lines through the [`Sink`]. A
//! finding never stops the sequence; a problem (no server, a failed boot, a wrong engine) skips to
//! the stop, and the run folder is written whatever happened.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::scrape::Scraper;
use inferlint_core::bench::BenchResult;
use inferlint_core::bootlog::BootFacts;
use inferlint_core::checks::{self, t10};
use inferlint_core::engine::{detect_from_argv, Engine};
use inferlint_core::result::{CheckResult, Tripwire};
use inferlint_core::series::Series;
use inferlint_core::snapshot::{Snapshot, SCRAPE_TIMEOUT};

mod attached;
mod deaths;
mod finish;
mod gaps;
mod serve;

use finish::read_result;

use super::deaths::{DeathWatch, Phase};
use super::drive::{run_load, LoadSpec, Recorder};
use super::folder::{self, RunRecord};
use super::interrupt::{Interrupt, Level};
use super::live::Sink;
use super::load::{self, LoadTool, ResultLocation};
use super::proc::{this_shepherd, Proc};
use super::redact::{self, Secrets};
use super::server::{self, LogEvent};
use super::{Outcome, RunInputs, Timings};
use inferlint_supervisor::ShepherdProgram;

/// The server the run started.
struct Started {
    proc: Proc,
    events: tokio::sync::mpsc::UnboundedReceiver<LogEvent>,
    log_task: tokio::task::JoinHandle<()>,
    /// Its log showed a start-up failure: it is already on its way out.
    failed: bool,
}

/// The server shepherd's own teardown report, written only if it had to act alone (inferlint
/// was killed).
pub const SERVER_TEARDOWN: &str = "server.teardown.json";

/// An interrupted run ends within this long of the first signal (Slurm's default KillWait).
const INTERRUPTED_BUDGET: Duration = Duration::from_secs(30);
/// What the run keeps, of that, for the readings, the report and the files after the stop.
const AFTER_STOP_RESERVE: Duration = Duration::from_secs(8);

/// How long a server whose log shows a start-up failure gets to exit by itself before the run
/// calls it failed, and then, once the stop has begun, before it is signalled. vLLM takes ~3 s
/// to wind down after a refused KV cache; a SIGTERM during that wind-down leaves its API server
/// hanging until the grace runs out (~19 s), so waiting for the exit is the faster stop.
const FAILURE_EXIT_WAIT: Duration = Duration::from_millis(300);
const FAILURE_SELF_EXIT: Duration = Duration::from_secs(8);

/// The run's state as the steps fill it in.
struct Run {
    inputs: RunInputs,
    sink: Arc<dyn Sink>,
    interrupt: Interrupt,
    out: PathBuf,
    url: String,
    serve_argv: Option<Vec<String>>,
    secrets: Secrets,
    api_key: Option<String>,
    record: RunRecord,
    results: Vec<CheckResult>,
    /// Results only the live run can produce, handed to the report (T2, T7, T15).
    extra: Vec<CheckResult>,
    problem: Option<String>,
    /// Whether a report may be written (not when no server answered at all).
    no_report: bool,
    engine: Option<Engine>,
    server: Option<Started>,
    /// The deaths in the server's tree, when the run started the server.
    deaths: Option<DeathWatch>,
    /// Whether a T7 has judged them (once per run).
    deaths_judged: bool,
    scraper: Arc<Scraper>,
    facts: Option<BootFacts>,
    boot_text: Option<String>,
    server_version: Option<String>,
    before: Option<Snapshot>,
    after: Option<Snapshot>,
    series: Option<Series>,
    /// Why the run checks' inputs are missing, when they are (recorded as "can't tell").
    gaps: checks::gaps::Gaps,
    bench: Option<BenchResult>,
    bench_path: Option<PathBuf>,
    requested: Option<u64>,
    untimed: u64,
    load_exit: Option<i32>,
    timings: Timings,
    t0: Instant,
    /// The run's marker (`INFERLINT_RUN_ID` of its server), once the server started.
    run_id: Option<String>,
    /// The used MiB of the run's cards at the gate (the idle baseline of the stop's readings).
    gate_used_mib: Option<u64>,
    /// The indices of the run's cards, once a reading matched them.
    scope_cards: Option<Vec<u32>>,
}

/// Runs the whole sequence and returns its outcome; the run folder is complete when it returns.
pub async fn run(inputs: RunInputs, sink: Arc<dyn Sink>, interrupt: Interrupt) -> Outcome {
    let t0 = Instant::now();
    let serve_argv = inputs
        .serve
        .as_deref()
        .map(|s| shlex::split(s).unwrap_or_default());
    let named = inputs.engine.as_ref().map(|n| n.engine);
    let url = match &inputs.url {
        Some(u) if !u.trim().is_empty() => u.trim().trim_end_matches('/').to_string(),
        _ => match &serve_argv {
            Some(argv) => super::url::server_url(argv, named.or_else(|| serve_engine(argv))),
            None => format!(
                "http://127.0.0.1:{}",
                named.unwrap_or(Engine::Vllm).default_port()
            ),
        },
    };
    let mut secrets = Secrets::default();
    if let Some(argv) = &serve_argv {
        secrets.add_argv(argv);
    }
    secrets.add_argv(&inputs.load);
    secrets.add_env(std::env::vars());
    let api_key = inputs
        .probe_options
        .api_key
        .clone()
        .or_else(|| {
            serve_argv
                .as_deref()
                .and_then(|a| super::url::flag_value(a, "--api-key"))
        })
        .or_else(|| std::env::var("OPENAI_API_KEY").ok())
        .filter(|k| !k.is_empty());
    if let Some(k) = &api_key {
        secrets.add(k);
    }
    let mut record = RunRecord::new(&url, inputs.interval.as_secs_f64());
    record.serve_command = serve_argv
        .as_deref()
        .map(|a| redact::redact_command(a, &secrets));
    record.load_command = Some(redact::redact_command(&inputs.load, &secrets));
    record.boot_log = inputs.boot_log.as_ref().map(|p| p.display().to_string());
    let out = inputs.out.clone();
    let mut run = Run {
        sink,
        interrupt,
        out,
        url,
        serve_argv,
        secrets,
        api_key,
        record,
        results: Vec::new(),
        extra: Vec::new(),
        problem: None,
        no_report: false,
        engine: None,
        server: None,
        deaths: None,
        deaths_judged: false,
        scraper: Arc::new(Scraper::new()),
        facts: None,
        boot_text: None,
        server_version: None,
        before: None,
        after: None,
        series: None,
        gaps: checks::gaps::Gaps::default(),
        bench: None,
        bench_path: None,
        requested: inputs.requested,
        untimed: 0,
        load_exit: None,
        timings: Timings::default(),
        t0,
        run_id: None,
        gate_used_mib: None,
        scope_cards: None,
        inputs,
    };
    if let Err(e) = std::fs::create_dir_all(&run.out) {
        run.problem = Some(format!(
            "cannot create the run folder {}: {e}",
            run.out.display()
        ));
        run.sink.line(&format!(
            "problem: {}",
            run.problem.as_deref().unwrap_or("")
        ));
        return run.outcome(None, Vec::new());
    }
    run.record.gpus = gpus_json().await;
    run.save_record();
    run.steps().await;
    run.record_deaths();
    run.stop_server().await;
    run.finish().await
}

/// The GPUs as `run.json` lists them (null when none can be read).
async fn gpus_json() -> serde_json::Value {
    tokio::task::spawn_blocking(|| {
        let source = crate::gpu::source_from_env();
        match crate::gpu::read_gpus(&source) {
            Ok(gpus) if !gpus.is_empty() => {
                serde_json::Value::Array(gpus.iter().map(|g| g.to_json()).collect())
            }
            _ => serde_json::Value::Null,
        }
    })
    .await
    .unwrap_or(serde_json::Value::Null)
}

/// The engine a `--serve` command starts; inferlint's own simulator is a vLLM.
fn serve_engine(argv: &[String]) -> Option<Engine> {
    detect_from_argv(argv).or_else(|| {
        let sim = argv.windows(3).any(|w| {
            Path::new(&w[0])
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("inferlint"))
                && w[1] == "sim"
                && w[2] == "serve"
        });
        sim.then_some(Engine::Vllm)
    })
}

impl Run {
    fn line(&self, s: &str) {
        self.sink.line(s);
    }

    fn record_result(&mut self, r: CheckResult) {
        self.line(&r.line());
        self.results.push(r);
    }

    fn set_problem(&mut self, p: impl Into<String>) {
        if self.problem.is_none() {
            self.problem = Some(p.into());
        }
    }

    fn save_record(&self) {
        if let Err(e) = self.record.save(&self.out) {
            self.line(&format!("note: cannot write run.json: {e}"));
        }
    }

    fn shepherd(&self) -> Result<ShepherdProgram, String> {
        match &self.inputs.shepherd {
            Some(s) => Ok(s.clone()),
            None => {
                this_shepherd().map_err(|e| format!("cannot find inferlint's own program: {e}"))
            }
        }
    }

    fn named(&self) -> Option<Engine> {
        self.inputs.engine.as_ref().map(|n| n.engine)
    }

    /// The engine to read things as: known, named, from the command, else vLLM.
    fn engine(&self) -> Engine {
        self.engine
            .or(self.named())
            .or_else(|| self.serve_argv.as_deref().and_then(serve_engine))
            .unwrap_or(Engine::Vllm)
    }

    fn set_phase(&self, phase: Phase) {
        if let Some(d) = &self.deaths {
            d.set_phase(phase);
        }
    }

    fn interrupted(&mut self) -> bool {
        if self.interrupt.interrupted() {
            self.set_problem("interrupted");
            true
        } else {
            false
        }
    }

    async fn steps(&mut self) {
        // 1. The engine.
        let named = self.named();
        let from_serve = self.serve_argv.as_deref().and_then(serve_engine);
        if let (Some(n), Some(s)) = (named, from_serve) {
            if n != s {
                self.set_problem(format!(
                    "the engine named is {}, but the --serve command is {}'s",
                    n.name(),
                    s.name()
                ));
                return;
            }
        }
        if let Some(n) = named {
            self.line(&format!("== engine: {}", n.name()));
            self.engine = Some(n);
        } else if let Some(s) = from_serve {
            self.line(&format!(
                "== engine: {} (from the --serve command)",
                s.name()
            ));
            self.engine = Some(s);
        }

        // 2./3. Start the server, or find the running one.
        if self.serve_argv.is_some() {
            if !self.start_server().await {
                self.boot_log_step().await;
                return;
            }
        } else if !crate::probe::healthy(&self.url, Duration::from_secs(10)).await {
            self.set_problem(format!("no server answers at {}/health", self.url));
            self.no_report = true;
            return;
        } else {
            self.name_attached_server().await;
        }

        // 4. Metrics and engine; 5. the boot log runs before a metrics problem stops the run.
        let metrics_ok = self.metrics_step().await;
        self.boot_log_step().await;
        if !metrics_ok || self.problem.is_some() || self.interrupted() {
            return;
        }

        // 6. Probe.
        if self.inputs.probe {
            let n = self.inputs.probe_options.concurrency;
            self.line(&format!("== probe: one request, then {n} at once"));
            let mut opts = self.inputs.probe_options.clone();
            opts.api_key = self.api_key.clone();
            self.set_phase(Phase::Probe);
            let r = tokio::select! {
                r = crate::probe::probe(&self.url, &opts) => Some(r),
                _ = self.interrupt.reached(Level::Graceful) => None,
            };
            self.set_phase(Phase::Ready);
            match r {
                Some(r) => {
                    self.extra.push(r.clone());
                    self.record_result(r);
                }
                None => {
                    self.interrupted();
                    return;
                }
            }
        }
        if self.interrupted() {
            return;
        }
        // A server that broke after ready gets no load: it could not serve it.
        if self.deaths.as_ref().is_some_and(|d| d.broken().is_some()) {
            return;
        }

        // 7. Before snapshot.
        self.before = self.snapshot_to(folder::BEFORE, "before").await;

        // 8. The load, recorded.
        self.load_step().await;

        // 10. The boot log again, now that it covers the run (TensorRT-LLM logs pauses there).
        self.reparse_boot_log();

        // 11. The run checks.
        self.checks_step();
    }

    /// Attach mode: which processes serve the URL (the listener on its port and everything
    /// below it), said once; the stop ends those processes (`attached.rs`).
    async fn name_attached_server(&mut self) {
        let url = self.url.clone();
        let found =
            tokio::task::spawn_blocking(move || super::listener::find(Path::new("/proc"), &url))
                .await;
        let line = match found {
            Ok(super::listener::Found::Tree(t)) => {
                let cmd: String = t[0].cmdline().chars().take(100).collect();
                self.record.attached_server = t.iter().map(|p| p.pid).collect();
                format!(
                    "== the server at {}: pid={} {cmd} (and {} processes below it; the run stops them when it ends)",
                    self.url,
                    t[0].pid,
                    t.len() - 1
                )
            }
            Ok(super::listener::Found::NotFound(why)) => {
                format!(
                    "note: cannot tell which processes serve {}: {why}; the run will stop nothing",
                    self.url
                )
            }
            Err(e) => format!("note: cannot tell which processes serve {}: {e}", self.url),
        };
        self.line(&line);
    }

    /// Step 4: one scrape to learn the engine from the metric names.
    async fn metrics_step(&mut self) -> bool {
        let snap = self.scraper.scrape(&self.url, None, SCRAPE_TIMEOUT).await;
        let (detected, error) = match &snap {
            Ok(s) => (s.engine(), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let Some(actual) = detected else {
            let known = self.engine;
            let fix = match known {
                Some(e) => e.metrics_hint().to_string(),
                None => Engine::ALL
                    .iter()
                    .map(|e| format!("for {}, {}", e.name(), e.metrics_hint()))
                    .collect::<Vec<_>>()
                    .join("; "),
            };
            let err = error.map(|e| format!(" ({e})")).unwrap_or_default();
            self.set_problem(format!(
                "no vLLM, SGLang or TensorRT-LLM metrics at {}{err}: {fix}",
                self.url
            ));
            return false;
        };
        if let Some(n) = self.named().filter(|&n| n != actual) {
            self.set_problem(format!(
                "the engine named is {}, but the server at {} is {}'s",
                n.name(),
                self.url,
                actual.name()
            ));
            return false;
        }
        // The server answering is not the one the run started (another server on the port).
        let started = self.serve_argv.as_deref().and_then(serve_engine);
        if let Some(s) = started.filter(|&s| s != actual) {
            self.set_problem(format!(
                "the --serve command is {}'s, but the server at {} is {}'s",
                s.name(),
                self.url,
                actual.name()
            ));
            return false;
        }
        if self.engine.is_none() {
            self.line(&format!("== engine: {} (from its metrics)", actual.name()));
        }
        self.engine = Some(actual);
        self.record.engine = Some(actual.key().to_string());
        true
    }

    /// The boot log's path: the run's own, or the one given in attach mode.
    fn boot_log_path(&self) -> Option<PathBuf> {
        if self.serve_argv.is_some() {
            let p = self.out.join(folder::BOOT_LOG);
            p.exists().then_some(p)
        } else {
            self.inputs.boot_log.clone()
        }
    }

    fn read_boot_log(&self) -> Option<Result<String, String>> {
        let path = self.boot_log_path()?;
        Some(
            std::fs::read(&path)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .map_err(|e| format!("cannot read the boot log {}: {e}", path.display())),
        )
    }

    /// Step 5: the boot log's engine, facts, version and checks (T12 or T7, T5, T6).
    async fn boot_log_step(&mut self) {
        let Some(text) = self.read_boot_log() else {
            return;
        };
        self.line("== boot log");
        let text = match text {
            Ok(t) => t,
            Err(e) => {
                self.set_problem(e);
                return;
            }
        };
        let hint = self.engine.or(self.named());
        let mut facts = inferlint_core::bootlog::parse_text(&text, hint);
        if let (Some(n), Some(actual)) = (self.named(), facts.engine) {
            if n != actual {
                self.set_problem(format!(
                    "the engine named is {}, but the boot log is {}'s",
                    n.name(),
                    actual.name()
                ));
                return;
            }
        }
        if facts.vllm_version.is_none() && self.server_version.is_none() {
            let alive = self
                .server
                .as_ref()
                .is_none_or(|s| s.proc.exited().is_none());
            if alive {
                self.server_version =
                    server::server_version(&self.url, self.api_key.as_deref()).await;
            }
        }
        if let Some(v) = &self.server_version {
            facts.server_version = Some(v.clone());
            if facts.version.is_none() {
                facts.version = Some(v.clone());
            }
        }
        if let Some(note) = inferlint_core::bootlog::untested_version_note(&facts) {
            let note = note.strip_prefix("note: ").unwrap_or(&note).to_string();
            self.line(&format!("note: {note}"));
        }
        self.record.engine_version = facts.version.clone();
        let label = folder::BOOT_LOG.to_string();
        let checks = checks::boot_all(Some(text.as_str()), &[(label, facts.clone())]);
        for r in checks {
            if r.tripwire == Tripwire::T7 {
                self.extra.push(r.clone());
            }
            self.record_result(r);
        }
        self.facts = Some(facts);
        self.boot_text = Some(text);
    }

    /// Step 10: the boot log read again after the load, keeping the server's version.
    fn reparse_boot_log(&mut self) {
        let Some(Ok(text)) = self.read_boot_log() else {
            return;
        };
        let mut facts = inferlint_core::bootlog::parse_text(&text, Some(self.engine()));
        if let Some(v) = &self.server_version {
            facts.server_version = Some(v.clone());
            if facts.version.is_none() {
                facts.version = Some(v.clone());
            }
        }
        self.facts = Some(facts);
        self.boot_text = Some(text);
    }

    /// Scrapes once into a snapshot file of the run folder. A snapshot of another engine's
    /// metrics is kept as evidence but not used; why a snapshot is missing goes to the gaps.
    async fn snapshot_to(&mut self, name: &str, what: &str) -> Option<Snapshot> {
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
            self.gaps.after = Some(why.clone());
        }
        if self.gaps.snapshots.is_none() {
            self.gaps.snapshots = Some(why);
        }
        None
    }

    /// Steps 8 and 9: the load, the recording, the after snapshot and the result file.
    async fn load_step(&mut self) {
        let rewrite = load::rewrite(&self.inputs.load, &self.out);
        let requested_live = self
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
        let server_exit = self.server.as_ref().map(|s| s.proc.exit_watch());
        let server_events = self.server.as_mut().map(|s| &mut s.events);
        if let Some(d) = &self.deaths {
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
                deaths: self.deaths.as_ref(),
            },
            &mut recorder,
        )
        .await;
        self.set_phase(Phase::AfterLoad);
        self.record_deaths();
        self.sink.clear_status();
        self.timings.load_s = outcome.seconds;
        // Whatever happened to the load: the after snapshot, then the recorder's end.
        self.after = self.snapshot_to(folder::AFTER, "after").await;
        if let Err(e) = recorder.stop().await {
            self.line(&format!("note: {e}"));
        }
        if let Some(e) = outcome.start_error {
            self.set_problem(e);
        }
        if let Some(exit) = outcome.exit {
            self.load_exit = Some(exit.shell_code());
            if !exit.success() {
                self.line(&format!(
                    "the load command exited with code {}",
                    exit.shell_code()
                ));
            }
        }
        self.record.load_exit_code = self.load_exit;
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
                    self.bench = Some(r);
                    self.bench_path = Some(path.clone());
                    self.record.result_file = Some(path.display().to_string());
                }
                Err(e) => self.line(&format!("note: cannot read the load's result: {e}")),
            }
        } else if rewrite.result != ResultLocation::None {
            self.line("note: the load left no result file; T15 needs one (--bench-result)");
        }
        self.series = self.usable_series(
            outcome.scrape_failures,
            outcome.last_scrape_error.as_deref(),
        );
        self.requested = requested_live.or_else(|| {
            self.bench
                .as_ref()
                .and_then(|b| b.max_concurrency)
                .filter(|c| *c >= 1.0 && c.fract() == 0.0)
                .map(|c| c as u64)
        });
        self.record.requested = self.requested;
        // Untimed requests are known only for the engines' own clients.
        if rewrite.tool.and_then(LoadTool::engine).is_some() {
            let text = std::fs::read(self.out.join(folder::LOAD_LOG))
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            self.untimed = inferlint_core::bench::untimed_requests(&text);
        }
    }

    /// Step 11: T1, T10 (with the integer-second comparison), T14 or N/A, T9, T8, T15.
    fn checks_step(&mut self) {
        self.line("== checks");
        let results = checks::run_all(&checks::Facts {
            before: self.before.as_ref(),
            after: self.after.as_ref(),
            series: self.series.as_ref(),
            boot: self.facts.as_ref(),
            requested: self.requested,
            bench: self.bench.as_ref(),
            untimed_requests: self.untimed,
            engine: self.engine(),
        });
        let results = checks::gaps::complete(
            results,
            &self.gaps,
            self.engine(),
            self.requested,
            self.bench.is_some(),
        );
        for r in results {
            let r = if r.tripwire == Tripwire::T10 {
                t10::with_integer_second_comparison(&r)
            } else {
                r
            };
            if r.tripwire == Tripwire::T15 {
                self.extra.push(r.clone());
            }
            self.record_result(r);
        }
    }
}
