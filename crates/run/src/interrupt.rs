//! How a run is asked to end early. The first Ctrl-C (or SIGTERM, as Slurm's scancel sends)
//! stops the load gracefully and lets the run finish its after-snapshot, checks, report and
//! teardown; the second forces: everything still running is killed at once.

use tokio::sync::watch;

/// What has been asked so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    None = 0,
    /// Stop gracefully, still finish the run.
    Graceful = 1,
    /// Kill what runs, now.
    Force = 2,
}

/// A shared interrupt state: one sender (signal handlers, or a library user), many watchers.
#[derive(Clone)]
pub struct Interrupt {
    tx: watch::Sender<Level>,
    first_at: std::sync::Arc<std::sync::Mutex<Option<std::time::Instant>>>,
}

impl Default for Interrupt {
    fn default() -> Self {
        Interrupt::new()
    }
}

impl Interrupt {
    pub fn new() -> Interrupt {
        let (tx, _rx) = watch::channel(Level::None);
        Interrupt {
            tx,
            first_at: Default::default(),
        }
    }

    /// Raises the level by one step (a first signal → graceful, a second → force).
    pub fn escalate(&self) -> Level {
        self.mark();
        let mut now = Level::None;
        self.tx.send_modify(|l| {
            *l = match *l {
                Level::None => Level::Graceful,
                _ => Level::Force,
            };
            now = *l;
        });
        now
    }

    /// Sets at least this level.
    pub fn raise_to(&self, level: Level) {
        if level > Level::None {
            self.mark();
        }
        self.tx.send_if_modified(|l| {
            if *l < level {
                *l = level;
                true
            } else {
                false
            }
        });
    }

    fn mark(&self) {
        let mut g = self.first_at.lock().unwrap_or_else(|e| e.into_inner());
        g.get_or_insert_with(std::time::Instant::now);
    }

    /// How long ago the first interrupt came (None if none did): Slurm sends SIGKILL 30 s
    /// (KillWait) after its SIGTERM, so what is left of the run fits in what is left of that.
    pub fn since_first(&self) -> Option<std::time::Duration> {
        self.first_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map(|t| t.elapsed())
    }

    pub fn level(&self) -> Level {
        *self.tx.borrow()
    }

    pub fn interrupted(&self) -> bool {
        self.level() >= Level::Graceful
    }

    /// Completes once the level reaches `level`.
    pub async fn reached(&self, level: Level) {
        let mut rx = self.tx.subscribe();
        loop {
            if *rx.borrow_and_update() >= level {
                return;
            }
            if rx.changed().await.is_err() {
                // The sender lives in self, so this cannot happen; never complete then.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Listens for SIGINT and SIGTERM (SIGHUP too: a closed terminal) and escalates on each;
    /// a third signal exits at once (the shepherds then tear down what is left).
    pub fn listen_to_signals(&self) -> std::io::Result<()> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut int = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        let mut hup = signal(SignalKind::hangup())?;
        let this = self.clone();
        tokio::spawn(async move {
            let mut count = 0;
            loop {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                }
                count += 1;
                if count >= 3 {
                    std::process::exit(130);
                }
                this.escalate();
            }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn escalates_in_steps() {
        let i = Interrupt::new();
        assert_eq!(i.level(), Level::None);
        assert_eq!(i.escalate(), Level::Graceful);
        i.reached(Level::Graceful).await;
        assert_eq!(i.escalate(), Level::Force);
        assert_eq!(i.escalate(), Level::Force);
        i.raise_to(Level::Graceful);
        assert_eq!(i.level(), Level::Force);
    }
}
