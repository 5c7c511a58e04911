//! What inferlint reads from the machine it runs on, synchronously and without the run's
//! sequence: [`gpu`] (NVML, nvidia-smi, the simulated GPU, and who holds each card), [`procs`]
//! (`/proc`, the server's processes, teardown), [`listener`] (who answers on the server's port),
//! [`neighbours`] (the node's other users, for the GPU gate), [`reconcile`] (stale runs that
//! `reap` ends) and [`names`] (what a run's processes carry). The run (`inferlint-run`), the
//! binary and the Python package read the machine through this crate only.
#![expect(
    missing_docs,
    reason = "public items (mostly struct fields and variants) moved here undocumented from inferlint-run; document them, then drop this"
)]
#![forbid(unsafe_code)]
// No unwrap or expect on what the inputs hold: bad input is an error naming the file and line,
// never a panic. Where an invariant makes one safe, the site allows it and says why.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod gpu;
pub mod listener;
pub mod names;
pub mod neighbours;
pub mod procs;
pub mod reconcile;

/// This machine's host name (empty when it cannot be read).
pub fn host_name() -> String {
    nix::unistd::gethostname().map_or_else(|_| String::new(), |h| h.to_string_lossy().into_owned())
}
