//! The server the run started: its output streamed into `boot.log` and through the boot-log
//! analyzer, and the wait for it to be ready, driven by events (a line, an exit, a `/health`
//! answer), never by a fixed sleep.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use inferlint_core::engine::Engine;

use super::interrupt::{Interrupt, Level};
use super::live::{cut, elapsed, Sink};
use super::proc::{wait_exit, Lines, Proc};
use inferlint_supervisor::ExitKind;

/// The line a server prints when it is up (uvicorn's, which vLLM, SGLang and TensorRT-LLM
/// all run).
pub const READY_MARKER: &str = "Application startup complete";

/// `/health` is asked this often once the ready line is in, until it answers 200.
pub const FAST_HEALTH_POLL: Duration = Duration::from_millis(20);
/// … and this often before, for servers that print no ready line.
pub const SLOW_HEALTH_POLL: Duration = Duration::from_millis(1000);
/// Without a ready line, `/health` must answer 200 this many times in a row.
const HEALTH_WITHOUT_LINE: usize = 3;

/// What the server's output told the run, line by line.
#[derive(Clone, Debug, PartialEq)]
pub enum LogEvent {
    /// The last line worth showing as "what the server is doing".
    Line(String),
    /// The ready line.
    Ready,
    /// A failure the analyzer recognised, as its one-line summary; `serving` when it came
    /// after the ready line (T7) rather than during boot (T12).
    Failure { summary: String, serving: bool },
    /// The failure reported before no longer holds (the server kept answering).
    FailureCleared,
    /// A boot fact as it appeared, keyed by what it is (`version`, `pool`, `block`, …).
    Fact(&'static str, String),
    /// Warm-up work after the ready line (a graph compiled, CUDA graphs captured): its line.
    WarmupWork(String),
}

/// Streams the server's lines through the analyzer and sends what they say. Runs until the
/// server's output closes. (The raw output itself goes to `boot.log` from the supervisor's
/// pumps, which keep writing even if inferlint dies.)
pub fn watch_log(
    mut lines: Lines,
    hint: Option<Engine>,
) -> (
    mpsc::UnboundedReceiver<LogEvent>,
    tokio::task::JoinHandle<()>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let mut watcher = super::boot::Watcher::new(hint);
        while let Some(line) = lines.recv().await {
            for ev in watcher.feed(&line) {
                let _ = tx.send(ev);
            }
        }
    });
    (rx, task)
}

/// How the wait for readiness ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Readiness {
    /// Ready: the ready line and then `/health` 200.
    Ready {
        seconds: f64,
        without_line: bool,
    },
    /// The server exited first.
    Exited(ExitKind),
    /// The analyzer recognised a start-up failure (the server may still be alive).
    Failed(String),
    /// The ready timeout passed.
    TimedOut(Duration),
    Interrupted,
}

/// Waits until the server is ready, it exits, a failure line arrives, the timeout passes or the
/// run is interrupted, showing the boot's progress in the status line meanwhile.
#[allow(clippy::too_many_arguments)]
pub async fn wait_ready(
    proc: &Proc,
    events: &mut mpsc::UnboundedReceiver<LogEvent>,
    url: &str,
    timeout: Duration,
    sink: &Arc<dyn Sink>,
    interrupt: &Interrupt,
) -> Readiness {
    let t0 = Instant::now();
    let deadline = t0 + timeout;
    let mut ready_line = false;
    let mut healthy_in_row = 0usize;
    let mut facts: Vec<(&'static str, String)> = Vec::new();
    let mut last_line = String::new();
    let exit = wait_exit(proc.exit_watch());
    tokio::pin!(exit);
    let mut events_open = true;
    let mut ticker = tokio::time::interval(Duration::from_millis(250));
    let mut health: std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>> =
        Box::pin(poll_health(url.to_string(), t0));
    let show = |facts: &[(&'static str, String)], last: &str| {
        let mut s = format!("boot {}", elapsed(t0.elapsed()));
        for (_, f) in facts {
            s.push_str("  ");
            s.push_str(f);
        }
        if !last.is_empty() {
            s.push_str("  | ");
            s.push_str(&cut(last, 100));
        }
        s
    };
    loop {
        tokio::select! {
            biased;
            ev = events.recv(), if events_open => match ev {
                Some(LogEvent::Ready) => {
                    ready_line = true;
                    health = Box::pin(poll_health(url.to_string(), Instant::now()));
                }
                Some(LogEvent::Failure { summary, .. }) => return Readiness::Failed(summary),
                Some(LogEvent::Fact(key, text)) => {
                    match facts.iter_mut().find(|(k, _)| *k == key) {
                        Some(f) => f.1 = text,
                        None => facts.push((key, text)),
                    }
                    sink.status(&show(&facts, &last_line));
                }
                Some(LogEvent::Line(l)) => last_line = l,
                Some(LogEvent::FailureCleared | LogEvent::WarmupWork(_)) => {}
                None => events_open = false,
            },
            e = &mut exit => return Readiness::Exited(e),
            _ = interrupt.reached(Level::Graceful) => return Readiness::Interrupted,
            _ = tokio::time::sleep_until(deadline) => return Readiness::TimedOut(timeout),
            _ = ticker.tick() => sink.status(&show(&facts, &last_line)),
            ok = &mut health => {
                if ok && ready_line {
                    return Readiness::Ready { seconds: t0.elapsed().as_secs_f64(), without_line: false };
                }
                healthy_in_row = if ok { healthy_in_row + 1 } else { 0 };
                if healthy_in_row >= HEALTH_WITHOUT_LINE {
                    return Readiness::Ready { seconds: t0.elapsed().as_secs_f64(), without_line: true };
                }
                let next = Instant::now() + if ready_line { FAST_HEALTH_POLL } else { SLOW_HEALTH_POLL };
                health = Box::pin(poll_health(url.to_string(), next));
            },
        }
    }
}

/// Asks `/health` at `at` (a hung server gets 2 s).
async fn poll_health(url: String, at: Instant) -> bool {
    tokio::time::sleep_until(at).await;
    inferlint_http::probe::healthy(&url, Duration::from_secs(2)).await
}
