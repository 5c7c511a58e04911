//! `serial::turn` keeps tests apart across threads and processes alike (docs/design/testing.md#turns).

use std::fs::OpenOptions;
use std::process::Command;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::serial;

/// While a turn is held, another open of its lock in this process cannot take it, nor can
/// another process (util-linux `flock -n`, as a second test binary or nextest's process per test
/// would); once it is dropped, both can.
#[test]
fn a_turn_excludes_threads_and_processes_until_it_is_dropped() {
    let name = format!("self-test-{}", std::process::id());
    let path = serial::lock_path(&name);
    let other_process = || {
        Command::new("flock")
            .arg("-n")
            .arg(&path)
            .arg("true")
            .status()
            .expect("util-linux flock runs")
            .code()
    };
    let held = serial::turn(&name);
    let file = OpenOptions::new().write(true).open(&path).unwrap();
    let file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Err((f, Errno::EWOULDBLOCK)) => f,
        Ok(_) => panic!("a second open took the turn while it was held"),
        Err((_, e)) => panic!("flock: {e}"),
    };
    assert_eq!(
        other_process(),
        Some(1),
        "another process took the held turn"
    );
    drop(held);
    assert_eq!(other_process(), Some(0), "the dropped turn stayed locked");
    let again = Flock::lock(file, FlockArg::LockExclusiveNonblock);
    assert!(
        again.is_ok(),
        "the dropped turn stayed locked in this process"
    );
    drop(again);
    let _ = std::fs::remove_file(&path);
}
