//! What the server's output says while it boots and serves, line by line: the ready line, a
//! failure the boot-log analyzer recognises, boot facts as they appear, and the last line worth
//! showing. A thin adapter from [`inferlint_core::bootlog::Analyzer`]'s events to the run's.

use inferlint_core::bootlog::analyzer::{Analyzer, BootEventKind};
use inferlint_core::bootlog::Phase;
use inferlint_core::engine::Engine;
use inferlint_core::fmt::thousands;

use super::server::LogEvent;

/// Turns server output lines into [`LogEvent`]s.
pub struct Watcher {
    analyzer: Analyzer,
    engine: Option<Engine>,
    last_line: String,
}

impl Watcher {
    pub fn new(hint: Option<Engine>) -> Watcher {
        Watcher {
            analyzer: Analyzer::new(hint),
            engine: hint,
            last_line: String::new(),
        }
    }

    pub fn feed(&mut self, line: &str) -> Vec<LogEvent> {
        let mut out = Vec::new();
        for ev in self.analyzer.feed_line(line) {
            match ev.kind {
                BootEventKind::EngineDetected { engine } => self.engine = Some(engine),
                BootEventKind::VersionSeen { version } => {
                    let name = self.engine.map(|e| e.name()).unwrap_or("version");
                    out.push(LogEvent::Fact("version", format!("{name} {version}")));
                }
                BootEventKind::KvPoolSized { tokens } => out.push(LogEvent::Fact(
                    "pool",
                    format!("KV pool {} tokens", thousands(tokens as i64)),
                )),
                BootEventKind::BlockSizeForced { tokens } => {
                    out.push(LogEvent::Fact("block", format!("block size {tokens}")))
                }
                BootEventKind::BackendSelected { backend, drafter } => {
                    let key = if drafter { "drafter" } else { "backend" };
                    let text = if drafter {
                        format!("draft attention {backend}")
                    } else {
                        format!("attention {backend}")
                    };
                    out.push(LogEvent::Fact(key, text));
                }
                BootEventKind::Ready => out.push(LogEvent::Ready),
                BootEventKind::FailureFound { failure } => {
                    let serving = failure.phase == Phase::Serving;
                    out.push(LogEvent::Failure {
                        summary: failure.summary(),
                        serving,
                    });
                }
                BootEventKind::FailureCleared => out.push(LogEvent::FailureCleared),
                BootEventKind::WarmupWork { line } => out.push(LogEvent::WarmupWork(line)),
            }
        }
        let last = self.analyzer.last_line();
        if !last.is_empty() && last != self.last_line {
            self.last_line = last.to_string();
            out.push(LogEvent::Line(self.last_line.clone()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_ready_and_failures() {
        let mut w = Watcher::new(Some(Engine::Vllm));
        let ev = w.feed("INFO:     Application startup complete.");
        assert!(ev.contains(&LogEvent::Ready), "{ev:?}");
        let mut w = Watcher::new(Some(Engine::Vllm));
        w.feed("(EngineCore pid=1) INFO 09-05 10:57:48 [core.py:1] starting");
        let ev = w.feed(
            "(EngineCore pid=1) ERROR 09-05 10:57:48 [core.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        );
        assert!(
            ev.iter().any(|e| matches!(e, LogEvent::Failure { summary, serving: false } if summary.starts_with("out_of_memory during boot"))),
            "{ev:?}"
        );
    }
}
