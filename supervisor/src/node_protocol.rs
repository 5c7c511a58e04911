//! What a node agent and the run that started it say to each other: JSON lines, one object a
//! line, over the agent's own stdin and stdout — on another node that is the stream of the
//! launcher that started it (Slurm's `srun` forwards a step's stdin and stdout), so no network
//! protocol of our own is involved (docs/design/nodes.md).
//!
//! The agent writes [`NodeEvent`]s (each object carries an `event` key) and reads
//! [`NodeCommand`]s. End of file on its stdin, or a stdout that can no longer be written, means
//! the run that reads it is gone: the agent stops its tree as if told `{"stop":"graceful"}`,
//! forcing after the graces.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::member_exit::MemberExit;
use crate::teardown::TeardownReport;
use crate::{ExitKind, StopMode};

/// Run → agent: `{"stop":"graceful"}` or `{"stop":"force"}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeCommand {
    /// Run the staged teardown (Force escalates a graceful one already running).
    Stop(StopMode),
}

/// The leftovers of a teardown that share a title, for a one-line summary per kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TitleCount {
    pub title: String,
    pub count: usize,
}

/// Agent → run, one per line; `event` names the variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum NodeEvent {
    /// The command runs under the agent's shepherd.
    Started {
        /// The node's hostname.
        hostname: String,
        /// The agent's own pid.
        pid: i32,
        /// The command's (leader's) pid.
        leader_pid: i32,
        run_id: String,
        /// `cgroup PATH` or `process group N`.
        backend: String,
    },
    /// The command could not be started; nothing runs (a `done` follows).
    Failed { error: String },
    /// One line of the command's output.
    Output {
        /// `stdout` or `stderr`.
        stream: String,
        line: String,
    },
    /// A member of the tree ended before the stop (the leader too, before its `exited`).
    MemberExited {
        /// The name the process showed: its title (`VLLM::Worker_DP1`), else its program.
        title: String,
        /// The signal that ended it by name (`SIGKILL`), when one did.
        signal: Option<String>,
        /// Its exit code, when it exited.
        code: Option<i32>,
        #[serde(flatten)]
        exit: MemberExit,
    },
    /// The command (the leader) exited; the agent stops what is left of its tree next.
    Exited { status: ExitKind },
    /// The staged teardown is over.
    Teardown {
        /// How many processes were left (0 = clean).
        left: usize,
        /// Those left, counted per title.
        left_by_title: Vec<TitleCount>,
        report: TeardownReport,
    },
    /// A result the agent's caller computed on its node (the binary's T2 on the node's GPUs:
    /// the gate before the command starts, the check after the teardown), passed through as it
    /// is: this crate knows nothing of GPUs.
    Checked {
        /// When it was computed: `gate` or `stop`.
        phase: String,
        result: serde_json::Value,
    },
    /// The agent's last word; it exits with `exit_code` next.
    Done { exit_code: i32 },
}

impl NodeEvent {
    /// The event for one member's end.
    pub fn member_exited(exit: MemberExit) -> NodeEvent {
        let (signal, code) = match exit.status {
            Some(ExitKind::Code(c)) => (None, Some(c)),
            Some(k) => (k.signal_name(), None),
            None => (None, None),
        };
        NodeEvent::MemberExited {
            title: exit.name().to_string(),
            signal,
            code,
            exit,
        }
    }

    /// The event for a teardown's report.
    pub fn teardown(report: TeardownReport) -> NodeEvent {
        let mut by_title: Vec<TitleCount> = Vec::new();
        for l in &report.leftovers {
            let title = l
                .cmdline
                .split_whitespace()
                .next()
                .unwrap_or("?")
                .to_string();
            match by_title.iter_mut().find(|t| t.title == title) {
                Some(t) => t.count += 1,
                None => by_title.push(TitleCount { title, count: 1 }),
            }
        }
        NodeEvent::Teardown {
            left: report.leftovers.len(),
            left_by_title: by_title,
            report,
        }
    }

    /// One JSON line, newline included.
    pub fn to_line(&self) -> Vec<u8> {
        crate::protocol::encode(self)
    }

    /// Reads one line; None when it is not an event (a launcher's own chatter on the stream).
    pub fn parse(line: &str) -> Option<NodeEvent> {
        serde_json::from_str(line.trim()).ok()
    }
}

impl NodeCommand {
    /// One JSON line, newline included.
    pub fn to_line(&self) -> Vec<u8> {
        crate::protocol::encode(self)
    }

    /// Reads one line; None when it is not a command.
    pub fn parse(line: &str) -> Option<NodeCommand> {
        serde_json::from_str(line.trim()).ok()
    }
}

/// Writes events to a stream and remembers when it was lost: a write that fails once (EPIPE,
/// the reader gone) fails every later one at once, without trying.
pub struct EventWriter<W: Write> {
    out: W,
    lost: bool,
}

impl<W: Write> EventWriter<W> {
    pub fn new(out: W) -> Self {
        EventWriter { out, lost: false }
    }

    /// Writes and flushes one event; Err when the stream is (or was before) lost.
    pub fn send(&mut self, ev: &NodeEvent) -> io::Result<()> {
        if self.lost {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let r = self
            .out
            .write_all(&ev.to_line())
            .and_then(|()| self.out.flush());
        if r.is_err() {
            self.lost = true;
        }
        r
    }

    pub fn is_lost(&self) -> bool {
        self.lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::teardown::Leftover;
    use nix::sys::signal::Signal;

    fn exit(status: Option<ExitKind>) -> MemberExit {
        MemberExit {
            pid: 4711,
            starttime: 9,
            argv: vec!["VLLM::Worker_DP1".into()],
            comm: "VLLM::Worker_DP".into(),
            leader: false,
            status,
            oom_kill: false,
            at_unix_ms: 1,
            parent: None,
        }
    }

    #[test]
    fn commands_are_one_key() {
        assert_eq!(
            NodeCommand::parse(r#"{"stop":"graceful"}"#),
            Some(NodeCommand::Stop(StopMode::Graceful))
        );
        assert_eq!(
            NodeCommand::parse(" {\"stop\":\"force\"}\n"),
            Some(NodeCommand::Stop(StopMode::Force))
        );
        assert_eq!(NodeCommand::parse(r#"{"stop":"later"}"#), None);
        assert_eq!(
            NodeCommand::Stop(StopMode::Force).to_line(),
            b"{\"stop\":\"force\"}\n"
        );
    }

    #[test]
    fn a_death_names_title_and_signal_and_travels_back() {
        let ev = NodeEvent::member_exited(exit(Some(ExitKind::Signal(Signal::SIGKILL))));
        let line = String::from_utf8(ev.to_line()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["event"], "member_exited");
        assert_eq!(v["title"], "VLLM::Worker_DP1");
        assert_eq!(v["signal"], "SIGKILL");
        assert_eq!(v["pid"], 4711);
        assert_eq!(v["status"]["signal"], 9);
        assert_eq!(NodeEvent::parse(&line), Some(ev));
        let coded = NodeEvent::member_exited(exit(Some(ExitKind::Code(3))));
        let v: serde_json::Value = serde_json::from_slice(&coded.to_line()).unwrap();
        assert_eq!((v["code"].as_i64(), v["signal"].is_null()), (Some(3), true));
        assert_eq!(NodeEvent::parse("srun: error: something"), None);
    }

    #[test]
    fn leftovers_are_counted_per_title() {
        let left = |pid, cmd: &str| Leftover {
            pid,
            cmdline: cmd.into(),
        };
        let report = TeardownReport {
            actor: "shepherd".into(),
            requested: StopMode::Graceful,
            escalated: false,
            backend: "process group 1".into(),
            stages: vec![],
            signalled: vec![],
            found: vec![],
            leftovers: vec![
                left(1, "VLLM::Worker_DP1"),
                left(2, "VLLM::Worker_DP1"),
                left(3, "sleep 300"),
            ],
            elapsed_ms: 5,
            cgroup_removed: None,
            leader_exit: None,
            pipes_at_eof: Some(true),
            shm: crate::shm::ShmCleanup::default(),
        };
        let NodeEvent::Teardown {
            left,
            left_by_title,
            ..
        } = NodeEvent::teardown(report)
        else {
            panic!("not a teardown event")
        };
        assert_eq!(left, 3);
        assert_eq!(
            left_by_title,
            vec![
                TitleCount {
                    title: "VLLM::Worker_DP1".into(),
                    count: 2
                },
                TitleCount {
                    title: "sleep".into(),
                    count: 1
                }
            ]
        );
    }

    #[test]
    fn a_lost_stream_stays_lost() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = EventWriter::new(Broken);
        let ev = NodeEvent::Done { exit_code: 0 };
        assert!(w.send(&ev).is_err() && w.is_lost());
        let mut ok = EventWriter::new(Vec::new());
        ok.send(&ev).unwrap();
        assert_eq!(ok.out, b"{\"event\":\"done\",\"exit_code\":0}\n");
    }
}
