//! Step 8 of the run: the load command under its own process group, its output echoed and
//! copied to `load.log`, the recorder sampling the server meanwhile, and the live line and
//! alerts drawn from the recording.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::record::{record_observed, RecordEvent, RecordOptions, RecordSummary};
use crate::scrape::Scraper;
use inferlint_core::engine::Engine;
use inferlint_core::series::SeriesSample;

use super::deaths::DeathWatch;
use super::interrupt::{Interrupt, Level};
use super::live::{elapsed, Sink};
use super::monitor::Monitor;
use super::proc::{Proc, ProcOptions};
use super::redact::Secrets;
use super::server::LogEvent;
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
}

/// The recorder, running until told to stop.
pub struct Recorder {
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<RecordSummary, String>>,
    events: mpsc::UnboundedReceiver<Event>,
    pub path: PathBuf,
}

enum Event {
    Sample(SeriesSample),
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
                    RecordEvent::Sample(s) => Event::Sample(s.clone()),
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
}

/// Stops the load because the server can no longer serve it: SIGINT first, as for an
/// interrupt, so a benchmark client saves what it measured until then.
fn stop_unserved(
    why: String,
    outcome: &mut LoadOutcome,
    stopping: &mut Option<Instant>,
    proc: &Proc,
    sink: &dyn Sink,
) {
    if outcome.server_broken.is_none() {
        outcome.server_broken = Some(why);
    }
    if stopping.is_none() {
        *stopping = Some(Instant::now());
        sink.line("the server can no longer serve: stopping the load");
        proc.signal_group(nix::sys::signal::Signal::SIGINT);
    }
}

/// Runs the load to its end (or until interrupted), feeding the live line from `recorder`.
pub async fn run_load(spec: LoadSpec<'_>, recorder: &mut Recorder) -> LoadOutcome {
    let started = SystemTime::now();
    let t0 = Instant::now();
    let mut outcome = LoadOutcome {
        exit: None,
        start_error: None,
        started,
        seconds: 0.0,
        server_died: None,
        server_broken: None,
        interrupted: false,
        scrape_failures: 0,
        last_scrape_error: None,
    };
    let opts = ProcOptions {
        shepherd: spec.shepherd.clone(),
        raw_output: Some(spec.out.join(super::folder::LOAD_LOG)),
        shepherd_report: Some(spec.out.join(LOAD_TEARDOWN)),
        graces: Graces::within(LOAD_GRACE),
    };
    let mut proc = match Proc::spawn(spec.argv, &opts) {
        Ok(p) => p,
        Err(e) => {
            outcome.start_error = Some(format!("cannot start the load command: {e}"));
            return outcome;
        }
    };
    let mut monitor = Monitor::new(spec.engine, spec.requested);
    let mut exit_rx = proc.exit_watch();
    let mut server_exit = spec.server_exit.clone();
    let mut server_events = spec.server_events;
    let mut lines_open = true;
    let mut stopping: Option<Instant> = None;
    let mut broken = spec.deaths.map(|d| d.broken_watch());
    loop {
        tokio::select! {
            line = proc.lines.recv(), if lines_open => match line {
                Some(line) => spec.sink.echo(&spec.secrets.scrub(&line)),
                None => lines_open = false,
            },
            ev = recorder.events.recv() => {
                let at = t0.elapsed();
                let update = match ev {
                    Some(Event::Sample(s)) => monitor.sample(&s, at),
                    Some(Event::Failed(e)) => {
                        outcome.scrape_failures += 1;
                        let update = monitor.scrape_failed(&e, at);
                        outcome.last_scrape_error = Some(e);
                        update
                    }
                    None => Default::default(),
                };
                for a in &update.alerts {
                    spec.sink.alert(a);
                }
                if let Some(s) = update.status {
                    spec.sink.status(&s);
                }
            },
            ev = async {
                match server_events.as_deref_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            } => match ev {
                Some(LogEvent::Failure { summary, .. }) => spec.sink.alert(&format!(
                    "{} into the load: the server logged {}",
                    elapsed(t0.elapsed()),
                    spec.secrets.scrub(&summary)
                )),
                Some(_) => {}
                None => server_events = None,
            },
            changed = async {
                match server_exit.as_mut() {
                    Some(rx) => rx.changed().await.map(|_| *rx.borrow()),
                    None => std::future::pending().await,
                }
            } => {
                match changed {
                    Ok(Some(e)) => {
                        outcome.server_died = Some(e);
                        // The shepherd reports the leader's death before its exit: the watch
                        // has printed it, with how it ended. Without one, say it here.
                        let printed = spec.deaths.is_some_and(|d| {
                            d.drain_now();
                            d.leader_reported()
                        });
                        if !printed {
                            spec.sink.alert(&format!(
                                "{} into the load: the server exited with code {}",
                                elapsed(t0.elapsed()),
                                e.shell_code()
                            ));
                        }
                        server_exit = None;
                        let why = format!(
                            "the server exited with code {} {} into the load",
                            e.shell_code(),
                            elapsed(t0.elapsed())
                        );
                        stop_unserved(why, &mut outcome, &mut stopping, &proc, spec.sink.as_ref());
                    }
                    Ok(None) => {}
                    Err(_) => server_exit = None,
                }
            },
            why = async {
                match broken.as_mut() {
                    Some(rx) => rx.wait_for(|b| b.is_some()).await.map(|b| b.clone()).ok().flatten(),
                    None => std::future::pending().await,
                }
            } => {
                broken = None;
                if let Some(why) = why {
                    stop_unserved(why, &mut outcome, &mut stopping, &proc, spec.sink.as_ref());
                }
            },
            _ = exit_rx.changed() => {
                if exit_rx.borrow().is_some() {
                    break;
                }
            },
            _ = spec.interrupt.reached(Level::Graceful), if stopping.is_none() => {
                outcome.interrupted = true;
                stopping = Some(Instant::now());
                spec.sink.line("interrupted: stopping the load (Ctrl-C again to force)");
                // SIGINT first: a benchmark client saves what it has measured.
                proc.signal_group(nix::sys::signal::Signal::SIGINT);
            },
            _ = spec.interrupt.reached(Level::Force) => {
                outcome.interrupted = true;
                proc.stop(StopMode::Force);
                let _ = tokio::time::timeout(Duration::from_secs(10), proc.wait()).await;
                break;
            },
            _ = async {
                match stopping {
                    Some(t) => tokio::time::sleep_until(t + LOAD_GRACE).await,
                    None => std::future::pending().await,
                }
            } => {
                proc.stop(StopMode::Force);
                stopping = Some(Instant::now() + Duration::from_secs(3600));
            },
        }
    }
    // The leader is gone: tear its tree down too, and keep what it printed last.
    proc.stop(StopMode::Force);
    let drain_until = Instant::now() + Duration::from_secs(2);
    while lines_open {
        match tokio::time::timeout_at(drain_until, proc.lines.recv()).await {
            Ok(Some(line)) => spec.sink.echo(&spec.secrets.scrub(&line)),
            _ => lines_open = false,
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(15), proc.done()).await;
    outcome.exit = proc.exited();
    outcome.seconds = t0.elapsed().as_secs_f64();
    outcome
}
