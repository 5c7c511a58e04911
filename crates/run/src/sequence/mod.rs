//! The run's steps in order (docs/design/run.md), each printing its lines through the [`Sink`]. A
//! finding never stops the sequence; a problem (no server, a failed boot, a wrong engine) skips to
//! the stop, and the run folder is written whatever happened.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use inferlint_core::argv::{command_engine as serve_engine, split_command};
use inferlint_core::bootlog::BootFacts;
use inferlint_core::engine::Engine;
use inferlint_core::result::CheckResult;
use inferlint_http::scrape::Scraper;

mod attached;
mod boot_log;
mod deaths;
mod engine;
mod finish;
mod gaps;
mod nodes;
mod own_sweep;
mod script_sweep;
mod serve;
mod sweep;
mod window;

use window::Window;

use super::deaths::{DeathWatch, Phase};
use super::folder::RunRecord;
use super::interrupt::{Interrupt, Level};
use super::live::Sink;
use super::proc::{this_shepherd, Proc};
use super::redact::{self, Secrets};
use super::server::LogEvent;
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

/// The run's state as the steps fill it in: its setting (fixed once it starts), then what each
/// phase finds (the gate, the server and its boot log, the load) and what the run concludes.
struct Run {
    inputs: RunInputs,
    sink: Arc<dyn Sink>,
    interrupt: Interrupt,
    out: PathBuf,
    url: String,
    serve_argv: Option<Vec<String>>,
    secrets: Secrets,
    api_key: Option<String>,
    scraper: Arc<Scraper>,
    t0: Instant,
    /// `run.json`, filled in as the steps learn things.
    record: RunRecord,
    engine: Option<Engine>,
    gate: Gate,
    server: Server,
    boot: Boot,
    verdict: Verdict,
    timings: Timings,
}

/// What the GPU gate found.
#[derive(Default)]
struct Gate {
    /// The used MiB of the run's cards at the gate (the idle baseline of the stop's readings).
    used_mib: Option<u64>,
    /// The indices of the run's cards, once a reading matched them.
    scope_cards: Option<Vec<u32>>,
}

/// The server the run started (`--serve`), and what became of its processes.
#[derive(Default)]
struct Server {
    started: Option<Started>,
    /// The deaths in the server's tree.
    deaths: Option<DeathWatch>,
    /// Whether a T7 has judged them (once per run).
    deaths_judged: bool,
    /// The deaths of the servers this run started and stopped before the current one.
    earlier_deaths: Vec<inferlint_core::checks::t7_deaths::Death>,
    /// The run's marker (`INFERLINT_RUN_ID` of its server), once the server started.
    run_id: Option<String>,
    /// The server's parts on other nodes, under their agents.
    nodes: Vec<super::nodes::RemoteNode>,
}

/// What the boot log says.
#[derive(Default)]
struct Boot {
    /// Which start of the server the log is of (1 for the first; 0 before any).
    number: u32,
    /// The earlier starts' logs (a sweep restarted between points), first first: file name,
    /// text and facts.
    earlier: Vec<(String, String, BootFacts)>,
    facts: Option<BootFacts>,
    text: Option<String>,
    /// The version the server itself reports, when its log does not say.
    server_version: Option<String>,
}

impl Boot {
    /// The facts with the server's own version, which the log may not print.
    fn with_server_version(&self, mut facts: BootFacts) -> BootFacts {
        if let Some(v) = &self.server_version {
            facts.server_version = Some(v.clone());
            if facts.version.is_none() {
                facts.version = Some(v.clone());
            }
        }
        facts
    }
}

/// What the run concludes.
#[derive(Default)]
struct Verdict {
    results: Vec<CheckResult>,
    /// Results only the live run can produce, handed to the report (T2, T7, T15).
    extra: Vec<CheckResult>,
    problem: Option<String>,
    /// Whether a report may be written (not when no server answered at all).
    no_report: bool,
    /// The sweep's points and what holds across them, for a sweep.
    sweep: Option<inferlint_core::sweep::Sweep>,
}

impl Verdict {
    /// The first problem stays: it is the one that stopped the run.
    fn set_problem(&mut self, p: impl Into<String>) {
        if self.problem.is_none() {
            self.problem = Some(p.into());
        }
    }
}

/// Runs the whole sequence and returns its outcome; the run folder is complete when it returns.
pub async fn run(inputs: RunInputs, sink: Arc<dyn Sink>, interrupt: Interrupt) -> Outcome {
    // A command that does not split is no server to start: the run stops before anything
    // starts, with the command line's own words (core's one rule).
    let (serve_argv, unsplit) = match inputs.serve.as_deref().map(|s| split_command("--serve", s)) {
        Some(Ok(argv)) => (Some(argv), None),
        Some(Err(e)) => (None, Some(e.to_string())),
        None => (None, None),
    };
    let mut run = Run::new(inputs, serve_argv, sink, interrupt);
    let why = unsplit.or_else(|| {
        std::fs::create_dir_all(&run.out)
            .err()
            .map(|e| format!("cannot create the run folder {}: {e}", run.out.display()))
    });
    if let Some(why) = why {
        run.set_problem(why);
        run.line(&format!(
            "problem: {}",
            run.verdict.problem.as_deref().unwrap_or("")
        ));
        return run.outcome(None, Vec::new(), None);
    }
    run.record.gpus = gpus_json().await;
    run.save_record();
    let window = run.steps().await;
    run.record_deaths();
    run.stop_server().await;
    run.finish(window).await
}

impl Run {
    /// The run's setting before its first step: where the server answers, the secrets to mask
    /// (the commands', the environment's, the API key), and `run.json`'s first fields.
    fn new(
        inputs: RunInputs,
        serve_argv: Option<Vec<String>>,
        sink: Arc<dyn Sink>,
        interrupt: Interrupt,
    ) -> Run {
        let t0 = Instant::now();
        let named = inputs.engine.as_ref().map(|n| n.engine);
        let url = match &inputs.url {
            Some(u) if !u.trim().is_empty() => u.trim().trim_end_matches('/').to_string(),
            _ => match &serve_argv {
                Some(argv) => {
                    inferlint_core::url::server_url(argv, named.or_else(|| serve_engine(argv)))
                }
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
                    .and_then(|a| inferlint_core::argv::flag_value(a, "--api-key"))
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
        Run {
            sink,
            interrupt,
            out: inputs.out.clone(),
            url,
            serve_argv,
            secrets,
            api_key,
            scraper: Arc::new(Scraper::new()),
            t0,
            record,
            engine: None,
            gate: Gate::default(),
            server: Server::default(),
            boot: Boot::default(),
            verdict: Verdict::default(),
            timings: Timings::default(),
            inputs,
        }
    }
}

/// The GPUs as `run.json` lists them (null when none can be read).
async fn gpus_json() -> serde_json::Value {
    tokio::task::spawn_blocking(|| {
        let source = inferlint_host::gpu::source_from_env();
        match inferlint_host::gpu::read_gpus(&source) {
            Ok(gpus) if !gpus.is_empty() => {
                serde_json::Value::Array(gpus.iter().map(|g| g.to_json()).collect())
            }
            _ => serde_json::Value::Null,
        }
    })
    .await
    .unwrap_or(serde_json::Value::Null)
}

impl Run {
    fn line(&self, s: &str) {
        self.sink.line(s);
    }

    fn record_result(&mut self, r: CheckResult) {
        self.line(&r.line());
        self.verdict.results.push(r);
    }

    fn set_problem(&mut self, p: impl Into<String>) {
        self.verdict.set_problem(p);
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
        if let Some(d) = &self.server.deaths {
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

    /// The steps up to the stop: the engine, the server (started or found), its metrics and
    /// boot log, the probe, then the load's window and its checks. The window, when the run
    /// got that far.
    async fn steps(&mut self) -> Option<Window> {
        // 1. The engine.
        if !self.engine_step() {
            return None;
        }

        // 2./3. Start the server, or find the running one.
        if self.serve_argv.is_some() {
            if !self.start_server().await {
                self.boot_log_step().await;
                return None;
            }
        } else if !inferlint_http::probe::healthy(&self.url, Duration::from_secs(10)).await {
            self.set_problem(format!("no server answers at {}/health", self.url));
            self.verdict.no_report = true;
            return None;
        } else {
            self.name_attached_server().await;
        }

        // 4. Metrics and engine; 5. the boot log runs before a metrics problem stops the run.
        let metrics_ok = self.metrics_step().await;
        self.boot_log_step().await;
        if !metrics_ok || self.verdict.problem.is_some() || self.interrupted() {
            return None;
        }

        // 6. Probe.
        if self.inputs.probe && !self.probe_step().await {
            return None;
        }
        if self.interrupted() {
            return None;
        }
        // A server that broke after ready gets no load: it could not serve it.
        if self
            .server
            .deaths
            .as_ref()
            .is_some_and(|d| d.broken().is_some())
        {
            return None;
        }

        if let Some(s) = self.inputs.sweep.clone() {
            let sweep = self.sweep_step(&s).await;
            self.reparse_boot_log();
            self.verdict.sweep = Some(sweep);
            return None;
        }

        // 7.-9. The window: the snapshots around the load, the load recorded, its result.
        let window = self
            .window_step(self.out.clone(), self.inputs.load.clone())
            .await;

        // 10. The boot log again, now that it covers the run (TensorRT-LLM logs pauses there).
        self.reparse_boot_log();

        // 11. The window's checks; a script that ran several load tools, point by point.
        self.checks_step(&window);
        if let Some(sweep) = self.script_sweep(&window) {
            self.print_sweep(&sweep);
            self.verdict.sweep = Some(sweep);
        }
        Some(window)
    }

    /// Step 6: one request, then the probe's concurrency at once (T7's live half); false when
    /// interrupted.
    async fn probe_step(&mut self) -> bool {
        let n = self.inputs.probe_options.concurrency;
        self.line(&format!("== probe: one request, then {n} at once"));
        let mut opts = self.inputs.probe_options.clone();
        opts.api_key = self.api_key.clone();
        self.set_phase(Phase::Probe);
        let t = Instant::now();
        let r = tokio::select! {
            r = inferlint_http::probe::probe(&self.url, &opts) => Some(r),
            _ = self.interrupt.reached(Level::Graceful) => None,
        };
        self.timings.probe_s = t.elapsed().as_secs_f64();
        self.set_phase(Phase::Ready);
        match r {
            Some(r) => {
                self.verdict.extra.push(r.clone());
                self.record_result(r);
            }
            None => {
                self.interrupted();
                return false;
            }
        }
        true
    }
}
