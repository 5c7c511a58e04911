//! What the run shows while it runs. Every printed line (steps, verdicts, the load's output)
//! goes through a [`Sink`]; so do the live status (boot progress, server state during the load)
//! and alerts (a preemption, a server death, a falling ceiling, with the time into the run).
//!
//! The terminal itself (a status line redrawn in place, or plain timestamped lines) is the
//! binary's `Sink`; here are the trait, [`Collect`] (memory, for the library and the tests) and
//! the text helpers every sink shares.

use std::sync::Mutex;
use std::time::Duration;

/// Where the run's output goes.
pub trait Sink: Send + Sync {
    /// A printed line: a step, a verdict, a note.
    fn line(&self, text: &str);
    /// The live status (replaces the previous one).
    fn status(&self, text: &str);
    /// Something that just happened and matters (printed at once).
    fn alert(&self, text: &str);
    /// One line of the load command's output.
    fn echo(&self, text: &str);
    /// Removes the status line (before the final lines).
    fn clear_status(&self) {}
}

/// Removes ANSI escape sequences and other control characters (tabs kept), so that a plain
/// log holds only text.
pub fn strip_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek() {
                Some('[') => {
                    chars.next();
                    // CSI: parameters and intermediates, then one final byte in @..~.
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    chars.next();
                    // OSC: up to BEL or ESC \.
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            chars.next();
                            break;
                        }
                    }
                }
                Some(_) => {
                    chars.next();
                }
                None => {}
            },
            '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Collects everything in memory: the library's sink, and the tests'.
#[derive(Default)]
pub struct Collect {
    pub lines: Mutex<Vec<String>>,
    pub statuses: Mutex<Vec<String>>,
    pub alerts: Mutex<Vec<String>>,
}

impl Collect {
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    pub fn alerts(&self) -> Vec<String> {
        self.alerts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Sink for Collect {
    fn line(&self, text: &str) {
        self.lines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text.to_string());
    }
    fn status(&self, text: &str) {
        self.statuses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text.to_string());
    }
    fn alert(&self, text: &str) {
        self.alerts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text.to_string());
    }
    fn echo(&self, text: &str) {
        self.line(text);
    }
}

/// Seconds as the live line shows them: `7.3s`, `2m05s`.
pub fn elapsed(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        let whole = s as u64;
        format!("{}m{:02}s", whole / 60, whole % 60)
    }
}

/// The text cut to `max` characters with an ellipsis.
pub use inferlint_core::fmt::shorten as cut;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_escapes_and_controls() {
        assert_eq!(strip_controls("\u{1b}[1;32mINFO\u{1b}[0m ok"), "INFO ok");
        assert_eq!(strip_controls("a\rb\u{7}c\td"), "abc\td");
        assert_eq!(strip_controls("\u{1b}]0;title\u{7}text"), "text");
        assert_eq!(
            strip_controls("\u{1b}[2K\u{1b}[1Gprogress 50%"),
            "progress 50%"
        );
    }

    #[test]
    fn elapsed_and_cut() {
        assert_eq!(elapsed(Duration::from_millis(7300)), "7.3s");
        assert_eq!(elapsed(Duration::from_secs(125)), "2m05s");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
    }

    #[test]
    fn collect_keeps_lines() {
        let c = Collect::default();
        c.line("== probe");
        c.alert("3 preemptions");
        c.echo("load says hi");
        assert_eq!(c.lines(), vec!["== probe", "load says hi"]);
        assert_eq!(c.alerts(), vec!["3 preemptions"]);
    }
}
