//! The supervisor ↔ shepherd protocol: newline-delimited JSON over a socketpair (fd 3 in the
//! shepherd). End of file on it means the other side is gone, by any cause.

use std::io::{self, Read};
use std::os::fd::OwnedFd;

use serde::{Deserialize, Serialize};

use crate::teardown::{Graces, TeardownReport};
use crate::{ExitKind, StopMode};

/// Supervisor → shepherd.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// Run the staged teardown (Force starts at stage 3; during a graceful one it escalates).
    Stop { mode: StopMode, graces: Graces },
}

/// Shepherd → supervisor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// The server runs: its leader, process group, start time and cgroup (if any).
    Spawned {
        pid: i32,
        pgid: i32,
        starttime: u64,
        session: i32,
        cgroup: Option<String>,
        /// Why no cgroup is used, when `--cgroup auto` fell back.
        cgroup_note: Option<String>,
    },
    /// The server could not be started (nothing runs).
    SpawnFailed { error: String },
    /// The leader exited.
    Exited { status: ExitKind },
    /// A member of the tree (the leader included, sent before its `Exited`) ended before any
    /// teardown began.
    MemberExited {
        exit: crate::member_exit::MemberExit,
    },
    /// Processes of the tree seen so far (sent as new ones appear), so the supervisor can
    /// still reach them by pidfd if the shepherd is killed.
    Members { ids: Vec<crate::procfs::ProcId> },
    /// A teardown started (stage names follow in the report).
    Stopping { mode: StopMode },
    /// The teardown is over; the shepherd exits next.
    TeardownDone { report: TeardownReport },
}

/// Encodes one message as a JSON line.
pub fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    #[allow(
        clippy::expect_used,
        reason = "the messages are plain structs with string keys, serialized to memory"
    )]
    let mut v = serde_json::to_vec(msg).expect("protocol messages serialize");
    v.push(b'\n');
    v
}

/// Writes one message (blocking; the peer reads continuously). Errors mean the peer is gone.
pub fn send<T: Serialize>(fd: &OwnedFd, msg: &T) -> io::Result<()> {
    crate::sys::send_all(fd, &encode(msg))
}

/// Splits a byte stream into JSON messages.
#[derive(Default)]
pub struct Decoder {
    buf: Vec<u8>,
}

impl Decoder {
    /// Feeds bytes and returns the complete messages (lines that do not parse are skipped).
    pub fn feed<T: for<'de> Deserialize<'de>>(&mut self, bytes: &[u8]) -> Vec<T> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=i).collect();
            if let Ok(m) = serde_json::from_slice(&line[..line.len() - 1]) {
                out.push(m);
            }
        }
        out
    }
}

/// Reads what is available from a blocking reader: `Ok(None)` is end of file.
pub fn read_some(r: &mut impl Read, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        match r.read(buf) {
            Ok(0) => return Ok(None),
            Ok(n) => return Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_in_pieces() {
        let msgs = vec![
            Event::Exited {
                status: ExitKind::Signal(nix::sys::signal::Signal::SIGTERM),
            },
            Event::Stopping {
                mode: StopMode::Force,
            },
        ];
        let bytes: Vec<u8> = msgs.iter().flat_map(encode).collect();
        let mut d = Decoder::default();
        let mut got: Vec<Event> = d.feed(&bytes[..7]);
        got.extend(d.feed::<Event>(&bytes[7..]));
        assert_eq!(got, msgs);
        let r = Request::Stop {
            mode: StopMode::Graceful,
            graces: Graces::default(),
        };
        let line = String::from_utf8(encode(&r)).unwrap();
        assert!(line.contains("\"leader\":15000"), "{line}");
        let back: Vec<Request> = Decoder::default().feed(line.as_bytes());
        assert_eq!(back, vec![r]);
    }
}
