//! Step 8 of the run: the load command under its own process group, its output echoed and
//! copied to `load.log`, the recorder sampling the server meanwhile, and the live line and
//! alerts drawn from the recording.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::record::{record_observed, RecordEvent, RecordOptions, RecordSummary};
use inferlint_core::engine::Engine;
use inferlint_core::observed::LoadObserved;
use inferlint_core::series::SeriesSample;
use inferlint_core::snapshot::Snapshot;
use inferlint_http::scrape::Scraper;

use super::client_cpu::CpuMeter;
use super::deaths::DeathWatch;
use super::gpu_clocks::ClockSampler;
use super::interrupt::{Interrupt, Level};
use super::live::{elapsed, Sink};
use super::monitor::Monitor;
use super::proc::{Proc, ProcOptions};
use super::redact::Secrets;
use super::server::LogEvent;
use inferlint_host::gpu::{GpuScope, GpuSource};
use inferlint_supervisor::{ExitKind, Graces, ShepherdProgram, StopMode};

/// How long a load asked to stop (SIGINT, so it can flush its result) gets before SIGKILL.
pub const LOAD_GRACE: Duration = Duration::from_secs(5);
/// The load shepherd's own teardown report, written only if it had to act alone.
pub const LOAD_TEARDOWN: &str = "load.teardown.json";
/// How long the recorder gets to finish after it is told to stop.
pub const RECORDER_WAIT: Duration = Duration::from_secs(10);

/// What happened to the load.
pub struct LoadOutcome {
    /// None when it could not be started (`start_error` says why) or outlived SIGKILL.
    pub exit: Option<ExitKind>,
    pub start_error: Option<String>,
    /// When it started (result files written since then are its own).
    pub started: SystemTime,
    pub seconds: f64,
    /// The server exited during the load (code).
    pub server_died: Option<ExitKind>,
    /// Why the load was stopped early: the server could no longer serve it.
    pub server_broken: Option<String>,
    /// It was stopped because of an interrupt.
    pub interrupted: bool,
    /// Scrapes of the recording that failed while the load ran, and the last one's error.
    pub scrape_failures: usize,
    pub last_scrape_error: Option<String>,
    /// The server's warm-up lines and the client's CPU while the load ran (T20, T21).
    pub observed: LoadObserved,
    /// The load-tool processes a script ran, each a point of a sweep written as a loop (empty
    /// unless they were followed); the last ones still to be closed by the after snapshot.
    pub script_points: Vec<crate::script_points::ScriptPoint>,
}

/// The recorder, running until told to stop.
pub struct Recorder {
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<RecordSummary, String>>,
    events: mpsc::UnboundedReceiver<Event>,
    pub path: PathBuf,
}

enum Event {
    /// A reading, with its scrape where the load's points are followed.
    Sample(SeriesSample, Option<Box<Snapshot>>),
    Failed(String),
}

impl Recorder {
    /// Starts sampling `url` every `interval` into `path`.
    pub fn start(
        url: &str,
        path: &Path,
        interval: Duration,
        engine: Option<Engine>,
        scraper: Arc<Scraper>,
        keep_scrapes: bool,
    ) -> Recorder {
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let (ev_tx, events) = mpsc::unbounded_channel();
        let url = url.to_string();
        let out = path.to_path_buf();
        let opts = RecordOptions {
            interval,
            engine,
            scraper: Some(scraper),
            ..RecordOptions::default()
        };
        let task = tokio::spawn(async move {
            let stop = async move {
                let _ = stop_rx.await;
            };
            record_observed(&url, &out, opts, stop, move |ev| {
                let _ = ev_tx.send(match ev {
                    RecordEvent::Sample(s, snap) => {
                        Event::Sample(s.clone(), keep_scrapes.then(|| Box::new(snap.clone())))
                    }
                    RecordEvent::ScrapeFailed(e) => Event::Failed(e.to_string()),
                });
            })
            .await
            .map_err(|e| e.to_string())
        });
        Recorder {
            stop: Some(stop_tx),
            task,
            events,
            path: path.to_path_buf(),
        }
    }

    /// Stops it, waiting at most [`RECORDER_WAIT`].
    pub async fn stop(mut self) -> Result<RecordSummary, String> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        match tokio::time::timeout(RECORDER_WAIT, &mut self.task).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Err(format!("the recorder failed: {e}")),
            Err(_) => {
                self.task.abort();
                Err("the recorder did not stop within 10 s".to_string())
            }
        }
    }
}

/// What the load needs to run.
pub struct LoadSpec<'a> {
    pub argv: &'a [String],
    pub out: &'a Path,
    pub engine: Engine,
    pub requested: Option<u64>,
    pub sink: Arc<dyn Sink>,
    pub interrupt: &'a Interrupt,
    pub secrets: &'a Secrets,
    pub shepherd: ShepherdProgram,
    /// The server's exit, when the run started it.
    pub server_exit: Option<watch::Receiver<Option<ExitKind>>>,
    /// What the server's log says meanwhile (a failure while serving is alerted).
    pub server_events: Option<&'a mut mpsc::UnboundedReceiver<LogEvent>>,
    /// The deaths in the server's tree (printed by the watch itself; a death that breaks the
    /// server stops the load).
    pub deaths: Option<&'a DeathWatch>,
    /// Where the run's cards are read during the load (T27), and which cards are the run's.
    pub gpu: Option<(GpuSource, GpuScope)>,
}

/// Runs the load to its end (or until interrupted), feeding the live line from `recorder`.
pub async fn run_load(spec: LoadSpec<'_>, recorder: &mut Recorder) -> LoadOutcome {
    let outcome = LoadOutcome::new(SystemTime::now());
    let (mut load, mut watched) = match Running::start(spec, outcome) {
        Ok(started) => started,
        Err(outcome) => return *outcome,
    };
    load.watch(&mut watched, recorder).await;
    load.finish().await
}

impl LoadOutcome {
    /// Nothing has happened yet to a load started at `started`.
    fn new(started: SystemTime) -> LoadOutcome {
        LoadOutcome {
            exit: None,
            start_error: None,
            started,
            seconds: 0.0,
            server_died: None,
            server_broken: None,
            interrupted: false,
            scrape_failures: 0,
            last_scrape_error: None,
            observed: LoadObserved::default(),
            script_points: Vec::new(),
        }
    }
}

/// A load while it runs: its process, the live line's monitor, what happened so far, and the
/// stop once one has begun.
struct Running<'a> {
    spec: LoadSpec<'a>,
    proc: Proc,
    monitor: Monitor,
    outcome: LoadOutcome,
    /// The load tree's CPU at each sample of the recording.
    cpu: CpuMeter,
    /// The load-tool processes of a script load, at each sample (when followed).
    points: crate::script_points::ScriptPoints,
    /// The cards' clocks, read on a thread of their own.
    clocks: Option<ClockSampler>,
    t0: Instant,
    /// Whether the load's output is still open.
    lines_open: bool,
    /// When the load was asked to stop (SIGINT); SIGKILL follows after [`LOAD_GRACE`].
    stopping: Option<Instant>,
}

/// What the load is watched through besides its output: its own exit, and the server's exit,
/// log and deaths (each None once closed, or when the run did not start the server).
struct Watched<'a> {
    exit: watch::Receiver<Option<ExitKind>>,
    server_exit: Option<watch::Receiver<Option<ExitKind>>>,
    server_events: Option<&'a mut mpsc::UnboundedReceiver<LogEvent>>,
    broken: Option<watch::Receiver<Option<String>>>,
}

impl<'a> Running<'a> {
    /// Starts the load command under its shepherd; the outcome alone when it cannot start.
    fn start(
        mut spec: LoadSpec<'a>,
        mut outcome: LoadOutcome,
    ) -> Result<(Running<'a>, Watched<'a>), Box<LoadOutcome>> {
        let t0 = Instant::now();
        let opts = ProcOptions {
            shepherd: spec.shepherd.clone(),
            raw_output: Some(spec.out.join(super::folder::LOAD_LOG)),
            shepherd_report: Some(spec.out.join(LOAD_TEARDOWN)),
            graces: Graces::within(LOAD_GRACE),
        };
        let proc = match Proc::spawn(spec.argv, &opts) {
            Ok(p) => p,
            Err(e) => {
                outcome.start_error = Some(format!("cannot start the load command: {e}"));
                return Err(Box::new(outcome));
            }
        };
        let mut watched = Watched {
            exit: proc.exit_watch(),
            server_exit: spec.server_exit.clone(),
            server_events: spec.server_events.take(),
            broken: spec.deaths.map(|d| d.broken_watch()),
        };
        // Warm-up lines are known only where the server's log is read. What the server logged
        // before the load (the probe's requests) is still queued: its warm-up lines are not the
        // load's, its failures are alerted as before.
        let mut earlier = Vec::new();
        if let Some(rx) = watched.server_events.as_deref_mut() {
            outcome.observed.warmup_work = Some(Vec::new());
            while let Ok(ev) = rx.try_recv() {
                if !matches!(ev, LogEvent::WarmupWork(_)) {
                    earlier.push(ev);
                }
            }
        }
        let mut load = Running {
            monitor: Monitor::new(spec.engine, spec.requested),
            cpu: CpuMeter::new(proc.pid),
            points: crate::script_points::ScriptPoints::of_load(spec.argv),
            clocks: spec
                .gpu
                .take()
                .and_then(|(source, scope)| ClockSampler::start(source, scope)),
            spec,
            proc,
            outcome,
            t0,
            lines_open: true,
            stopping: None,
        };
        for ev in earlier {
            load.server_logged(ev);
        }
        Ok((load, watched))
    }

    /// Until the load's leader exits (or is forced after an interrupt): its output echoed, the
    /// recording fed to the live line, the server's failures alerted, and the load stopped when
    /// the server can no longer serve it.
    async fn watch(&mut self, w: &mut Watched<'_>, recorder: &mut Recorder) {
        loop {
            tokio::select! {
                line = self.proc.lines.recv(), if self.lines_open => match line {
                    Some(line) => self.echo(&line),
                    None => self.lines_open = false,
                },
                ev = recorder.events.recv() => self.recorded(ev),
                ev = async {
                    match w.server_events.as_deref_mut() {
                        Some(rx) => rx.recv().await,
                        None => std::future::pending().await,
                    }
                } => match ev {
                    Some(ev) => self.server_logged(ev),
                    None => w.server_events = None,
                },
                changed = async {
                    match w.server_exit.as_mut() {
                        Some(rx) => rx.changed().await.map(|_| *rx.borrow()),
                        None => std::future::pending().await,
                    }
                } => match changed {
                    Ok(Some(e)) => {
                        w.server_exit = None;
                        self.server_exited(e);
                    }
                    Ok(None) => {}
                    Err(_) => w.server_exit = None,
                },
                why = async {
                    match w.broken.as_mut() {
                        Some(rx) => rx.wait_for(|b| b.is_some()).await.map(|b| b.clone()).ok().flatten(),
                        None => std::future::pending().await,
                    }
                } => {
                    w.broken = None;
                    if let Some(why) = why {
                        self.stop_unserved(why);
                    }
                },
                _ = w.exit.changed() => {
                    if w.exit.borrow().is_some() {
                        break;
                    }
                },
                _ = self.spec.interrupt.reached(Level::Graceful), if self.stopping.is_none() => {
                    self.interrupted();
                },
                _ = self.spec.interrupt.reached(Level::Force) => {
                    self.outcome.interrupted = true;
                    self.proc.stop(StopMode::Force);
                    let _ = tokio::time::timeout(Duration::from_secs(10), self.proc.wait()).await;
                    break;
                },
                _ = async {
                    match self.stopping {
                        Some(t) => tokio::time::sleep_until(t + LOAD_GRACE).await,
                        None => std::future::pending().await,
                    }
                } => self.grace_over(),
            }
        }
    }

    /// One line of the load's output, secrets scrubbed.
    fn echo(&self, line: &str) {
        self.spec.sink.echo(&self.spec.secrets.scrub(line));
    }

    /// A sample (or a failed scrape) of the recording: the live line and its alerts.
    fn recorded(&mut self, ev: Option<Event>) {
        let at = self.t0.elapsed();
        let update = match ev {
            Some(Event::Sample(s, snap)) => {
                self.cpu
                    .reading(&self.proc.members(), Instant::now(), s.is_busy());
                if let Some(snap) = snap {
                    self.points.sample(&self.proc.member_argvs(), *snap);
                }
                self.monitor.sample(&s, at)
            }
            Some(Event::Failed(e)) => {
                self.outcome.scrape_failures += 1;
                let update = self.monitor.scrape_failed(&e, at);
                self.outcome.last_scrape_error = Some(e);
                update
            }
            None => Default::default(),
        };
        for a in &update.alerts {
            self.spec.sink.alert(a);
        }
        if let Some(s) = update.status {
            self.spec.sink.status(&s);
        }
    }

    /// A line of the server's log: a failure while serving is alerted, and so is the first
    /// warm-up line (T20), which is kept with the others.
    fn server_logged(&mut self, ev: LogEvent) {
        match ev {
            LogEvent::Failure { summary, .. } => self.spec.sink.alert(&format!(
                "{} into the load: the server logged {}",
                elapsed(self.t0.elapsed()),
                self.spec.secrets.scrub(&summary)
            )),
            LogEvent::WarmupWork(line) => {
                let line = self.spec.secrets.scrub(&line);
                let work = self
                    .outcome
                    .observed
                    .warmup_work
                    .get_or_insert_with(Vec::new);
                if work.is_empty() {
                    self.spec.sink.alert(&format!(
                        "{} into the load: the server is warming up (\"{}\"): the measured window includes it (T20)",
                        elapsed(self.t0.elapsed()),
                        inferlint_core::fmt::shorten(&line, 100)
                    ));
                }
                work.push(line);
            }
            _ => {}
        }
    }

    /// The server exited during the load: said (unless the death watch said it), and the load
    /// stopped.
    fn server_exited(&mut self, e: ExitKind) {
        self.outcome.server_died = Some(e);
        // The shepherd reports the leader's death before its exit: the watch has printed it,
        // with how it ended. Without one, say it here.
        let printed = self.spec.deaths.is_some_and(|d| {
            d.drain_now();
            d.leader_reported()
        });
        if !printed {
            self.spec.sink.alert(&format!(
                "{} into the load: the server exited with code {}",
                elapsed(self.t0.elapsed()),
                e.shell_code()
            ));
        }
        let why = format!(
            "the server exited with code {} {} into the load",
            e.shell_code(),
            elapsed(self.t0.elapsed())
        );
        self.stop_unserved(why);
    }

    /// Stops the load because the server can no longer serve it: SIGINT first, as for an
    /// interrupt, so a benchmark client saves what it measured until then.
    fn stop_unserved(&mut self, why: String) {
        if self.outcome.server_broken.is_none() {
            self.outcome.server_broken = Some(why);
        }
        if self.stopping.is_none() {
            self.stopping = Some(Instant::now());
            self.spec
                .sink
                .line("the server can no longer serve: stopping the load");
            self.proc.signal_group(nix::sys::signal::Signal::SIGINT);
        }
    }

    /// The first Ctrl-C: the load is asked to stop.
    fn interrupted(&mut self) {
        self.outcome.interrupted = true;
        self.stopping = Some(Instant::now());
        self.spec
            .sink
            .line("interrupted: stopping the load (Ctrl-C again to force)");
        // SIGINT first: a benchmark client saves what it has measured.
        self.proc.signal_group(nix::sys::signal::Signal::SIGINT);
    }

    /// The load outlived its grace after SIGINT: forced.
    fn grace_over(&mut self) {
        self.proc.stop(StopMode::Force);
        self.stopping = Some(Instant::now() + Duration::from_secs(3600));
    }

    /// The leader is gone: its tree torn down too, what it printed last kept, and the outcome.
    async fn finish(mut self) -> LoadOutcome {
        self.proc.stop(StopMode::Force);
        let drain_until = Instant::now() + Duration::from_secs(2);
        while self.lines_open {
            match tokio::time::timeout_at(drain_until, self.proc.lines.recv()).await {
                Ok(Some(line)) => self.echo(&line),
                _ => self.lines_open = false,
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(15), self.proc.done()).await;
        self.outcome.exit = self.proc.exited();
        self.outcome.seconds = self.t0.elapsed().as_secs_f64();
        self.outcome.observed.client_cpu = self.cpu.result();
        if let Some(c) = self.clocks.take() {
            c.finish(&mut self.outcome.observed);
        }
        // Those still open are closed by the run's after snapshot, taken after this.
        self.outcome.script_points = self.points.finish(None);
        self.outcome
    }
}
