//! The terminal as `inferlint run` shows it (the run crate's [`Sink`]): with a terminal the status
//! is one line redrawn in place (indicatif); without one (Slurm `.out` files, CI) it is a plain
//! timestamped line every few seconds, and nothing printed holds a control code. `NO_COLOR` turns
//! colour off.

use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use inferlint_run::live::{strip_controls, Sink};

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

    fn with_mode(tty: bool, plain_every: Duration) -> Terminal {
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
