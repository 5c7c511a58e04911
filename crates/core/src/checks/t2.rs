//! T2 orphaned-engine: after a teardown, is the card clear? The readings come from the waiter
//! of [`crate::gpu::clear`]; this turns its outcome into the verdict (docs/design/tripwires.md#t2).

use crate::gpu::ClearResult;
use crate::result::{CheckResult, Tripwire};

/// T2 from a clear result: PASS, FAIL with `prefix` before the reason, or UNKNOWN when no GPU
/// could be read (the processes alone never prove the card free).
pub fn result(clear: &ClearResult, prefix: &str) -> CheckResult {
    if clear.gpu_unreadable {
        let procs_part = if clear.readings.last().is_some_and(|r| r.n_live == 0) {
            "no server process is alive"
        } else {
            "server processes are still alive"
        };
        return CheckResult::unknown(
            Tripwire::T2,
            format!("{prefix}{procs_part}, but no GPU could be read (nvidia-smi is missing or failed), so the card's memory is unknown"),
        );
    }
    if clear.clear {
        CheckResult::pass(Tripwire::T2, clear.reason.clone())
    } else {
        CheckResult::fail(Tripwire::T2, format!("{prefix}{}", clear.reason))
    }
}

/// T2 of a run, which owns its processes: as [`result`] where a GPU was read; where none
/// could be (no NVIDIA GPU here), FAIL while a process of the run's lives, else N/A, saying
/// how many server processes not started by the run were left alone.
pub fn run_result(clear: &ClearResult, prefix: &str, left_alone: usize) -> CheckResult {
    if !clear.gpu_unreadable {
        return result(clear, prefix);
    }
    if clear.readings.last().is_some_and(|r| r.n_live > 0) {
        return CheckResult::fail(Tripwire::T2, format!("{prefix}{}", clear.reason));
    }
    let alone = match left_alone {
        0 => "no inference server process is alive".to_string(),
        n => format!("no server process of this run is alive ({n} not started by it left alone)"),
    };
    CheckResult::not_applicable(
        Tripwire::T2,
        format!("no NVIDIA GPU here, so no GPU memory to free; {alone}"),
    )
}

/// T2 at a run's stop when its own tree is verified gone and the memory on its GPUs is held
/// only by processes it did not start (`holders`, described): WARN at once, naming them. No
/// process of the run outlived it, which is T2's question; waiting longer cannot free memory
/// the run may not signal, and a card shared with another process is worth a warning
/// (docs/design/gpus.md#held-by-others).
pub fn held_by_others(holders: &[String]) -> CheckResult {
    CheckResult::warn(
        Tripwire::T2,
        format!(
            "no process of this run is left, but its GPUs are held by {} process(es) not started by this run: {}",
            holders.len(),
            holders.join("; ")
        ),
    )
}

/// T2 where there is no /proc: `what` (the command or step) cannot find the server's processes.
pub fn needs_linux(what: &str) -> CheckResult {
    CheckResult::unknown(
        Tripwire::T2,
        format!(
            "{what} needs Linux: it finds the server's processes in /proc. Run it where the server runs."
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::Reading;
    use crate::result::Status;

    fn clear(clear: bool, unreadable: bool, n_live: usize) -> ClearResult {
        ClearResult {
            clear,
            readings: vec![Reading {
                elapsed_s: 0.0,
                used: (!unreadable).then_some(900),
                n_live,
            }],
            reason: if clear {
                "2 consecutive clear readings".into()
            } else {
                "not clear after 10s: last reading 900 MiB used, 1 server processes alive".into()
            },
            gpu_unreadable: unreadable,
        }
    }

    #[test]
    fn clear_passes_not_clear_fails_with_the_prefix_and_no_gpu_is_unknown() {
        let pass = result(&clear(true, false, 0), "x ");
        assert_eq!(
            (pass.status, pass.message.as_str()),
            (Status::Pass, "2 consecutive clear readings")
        );
        let fail = result(
            &clear(false, false, 1),
            "card not clear; refusing to boot. ",
        );
        assert_eq!(fail.status, Status::Fail);
        assert!(fail
            .message
            .starts_with("card not clear; refusing to boot. not clear after 10s"));
        let unknown = result(&clear(false, true, 0), "");
        assert_eq!(unknown.status, Status::Unknown);
        assert!(unknown
            .message
            .starts_with("no server process is alive, but no GPU could be read"));
        let alive = result(&clear(false, true, 2), "");
        assert!(alive
            .message
            .starts_with("server processes are still alive"));
    }

    #[test]
    fn a_run_without_a_gpu_fails_only_while_its_own_processes_live() {
        let read = run_result(&clear(true, false, 0), "", 3);
        assert_eq!(read.status, Status::Pass);
        let own_alive = run_result(&clear(false, true, 1), "p ", 0);
        assert_eq!(own_alive.status, Status::Fail);
        assert!(own_alive.message.starts_with("p not clear after 10s"));
        let gone = run_result(&clear(false, true, 0), "", 0);
        assert_eq!(
            (gone.status, gone.message.as_str()),
            (
                Status::NotApplicable,
                "no NVIDIA GPU here, so no GPU memory to free; no inference server process is alive"
            )
        );
        let others = run_result(&clear(false, true, 0), "", 2);
        assert!(others
            .message
            .ends_with("no server process of this run is alive (2 not started by it left alone)"));
    }
}
