//! One test at a time, across threads and processes: an exclusive `flock(2)` on a file in cargo's
//! scratch folder for the tests. flock's lock belongs to the open file description, so two opens
//! in one process exclude each other as two processes do: the tests that must not overlap (two
//! supervised runs on two cores, one real vLLM at a time) are kept apart under `cargo test`'s
//! threads and under `cargo nextest run`'s process per test alike. The kernel drops the lock when
//! its holder dies, so a crashed test never blocks the next.
#![allow(dead_code)]

use std::fs::{File, OpenOptions};
use std::path::PathBuf;

use nix::fcntl::{Flock, FlockArg};

/// Held while the test runs; the lock goes with it.
pub struct Turn(#[allow(dead_code)] Flock<File>);

/// The lock file of the turn called `name`.
pub fn lock_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("turn-{name}.lock"))
}

/// Waits for the turn called `name`: one holder at a time in every test binary of this package.
pub fn turn(name: &str) -> Turn {
    let path = lock_path(name);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    match Flock::lock(file, FlockArg::LockExclusive) {
        Ok(lock) => Turn(lock),
        Err((_, e)) => panic!("cannot lock {}: {e}", path.display()),
    }
}
