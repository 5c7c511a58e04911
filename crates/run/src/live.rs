//! What the run shows while it runs. Every printed line (steps, verdicts, the load's output)
//! goes through a [`Sink`]; so do the live status (boot progress, server state during the load)
//! and alerts (a preemption, a server death, a falling ceiling, with the time into the run).
//!
//! With a terminal the status is one line redrawn in place (indicatif); without one (Slurm
//! `.out` files, CI) it is a plain timestamped line every few seconds, and nothing printed holds
//! a control code. `NO_COLOR` turns colour off.

use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

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

/// The terminal: a redrawn status line with a TTY, plain timestamped lines without.
pub struct Terminal {
    bar: Option<ProgressBar>,
    color: bool,
    plain_every: Duration,
    last_plain: Mutex<Option<Instant>>,
    out: Mutex<()>,
}

impl Terminal {
    /// Chooses by whether stdout is a terminal; `NO_COLOR` (any non-empty value) disables
    /// colour. Without a terminal, status lines are printed every `plain_every`.
    pub fn new(plain_every: Duration) -> Terminal {
        let tty = console::Term::stdout().features().is_attended();
        Terminal::with_mode(tty, plain_every)
    }

    pub fn with_mode(tty: bool, plain_every: Duration) -> Terminal {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let color = tty && !no_color && console::colors_enabled();
        let bar = tty.then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout());
            let template = if color {
                "{spinner:.cyan} {wide_msg}"
            } else {
                "{spinner} {wide_msg}"
            };
            bar.set_style(
                ProgressStyle::with_template(template)
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Terminal {
            bar,
            color,
            plain_every,
            last_plain: Mutex::new(None),
            out: Mutex::new(()),
        }
    }

    fn print(&self, text: &str) {
        let _guard = self.out.lock().unwrap_or_else(|e| e.into_inner());
        match &self.bar {
            Some(bar) => bar.suspend(|| {
                let _ = writeln!(std::io::stdout(), "{text}");
            }),
            None => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{text}");
                let _ = out.flush();
            }
        }
    }

    fn stamp() -> String {
        chrono::Local::now().format("%H:%M:%S").to_string()
    }
}

impl Sink for Terminal {
    fn line(&self, text: &str) {
        if self.bar.is_some() {
            self.print(text);
        } else {
            self.print(&strip_controls(text));
        }
    }

    fn status(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(strip_controls(text)),
            None => {
                let mut last = self.last_plain.lock().unwrap_or_else(|e| e.into_inner());
                let due = last.is_none_or(|t| t.elapsed() >= self.plain_every);
                if due {
                    *last = Some(Instant::now());
                    drop(last);
                    self.print(&format!("[{}] {}", Self::stamp(), strip_controls(text)));
                }
            }
        }
    }

    fn alert(&self, text: &str) {
        let text = strip_controls(text);
        if self.bar.is_some() && self.color {
            self.print(
                &console::style(format!("! {text}"))
                    .yellow()
                    .bold()
                    .to_string(),
            );
        } else if self.bar.is_some() {
            self.print(&format!("! {text}"));
        } else {
            self.print(&format!("[{}] ! {text}", Self::stamp()));
        }
    }

    fn echo(&self, text: &str) {
        if self.bar.is_some() {
            self.print(text);
        } else {
            self.print(&strip_controls(text));
        }
    }

    fn clear_status(&self) {
        if let Some(bar) = &self.bar {
            bar.set_message("");
            bar.finish_and_clear();
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
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
