//! T7 crash-after-ready from the server's own tree: a process of the run's server that ended
//! after the server was ready (docs/supervision.md, "Every death is an event"). The run's
//! supervisor sees each end and says what it means for the server; this is the verdict on them.

use serde::Serialize;

use crate::evidence::T7Evidence;
use crate::result::{to_json_value, CheckResult, Tripwire};

/// The phase key of a death before the server was ready (T12 speaks for the boot).
pub const BOOT_PHASE: &str = "boot";

/// One death in the server's tree, as `run.json` records it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Death {
    /// The node it ran on, for a run that spans nodes (the Slurm relative index of a
    /// `--serve-node` part); absent on the head.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    pub pid: i32,
    /// Its title or program name (`VLLM::EngineCore`, `vllm`).
    pub name: String,
    /// `boot`, `ready`, `probe`, `load` or `after_load`.
    pub phase: &'static str,
    /// Seconds into that phase.
    pub at_s: f64,
    /// How it ended; both null when the kernel could no longer tell.
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub oom_kill: bool,
    /// It was the server's leader (the `--serve` command).
    pub leader: bool,
    /// The server could no longer serve after it.
    pub server_broken: bool,
    /// What was printed, without the `! `.
    pub line: String,
    /// What T7 and the problem line say: `VLLM::EngineCore (pid 4711) was killed by SIGKILL
    /// 3.2s into the load`.
    pub summary: String,
    /// When the supervisor saw it, in milliseconds since the Unix epoch.
    #[serde(skip)]
    pub at_unix_ms: u64,
}

impl Death {
    /// After the server was ready: a T7 failure.
    pub fn after_ready(&self) -> bool {
        self.phase != BOOT_PHASE
    }
}

/// The deaths T7 judges: those after the server was ready and before any interrupt (after
/// Ctrl-C or `scancel`, whose SIGTERM reaches every process of a Slurm step, the server's end
/// is the stop's doing, not a failure of the server). `interrupted_ms`: when the first
/// interrupt came, in milliseconds since the Unix epoch.
pub fn judged(deaths: &[Death], interrupted_ms: Option<u64>) -> Vec<Death> {
    deaths
        .iter()
        .filter(|d| d.after_ready() && interrupted_ms.is_none_or(|i| d.at_unix_ms < i))
        .cloned()
        .collect()
}

/// T7 on the judged deaths: one FAIL naming the first (an engine's death is followed by its
/// workers' and its server's: one incident, one verdict), None when there is none.
pub fn check(after_ready: &[Death]) -> Option<CheckResult> {
    let first = after_ready.first()?;
    let mut message = first.summary.clone();
    if after_ready.len() > 1 {
        message.push_str(&format!(
            "; {} more process(es) of the server ended after it",
            after_ready.len() - 1
        ));
    }
    Some(
        CheckResult::fail(Tripwire::T7, message).with_evidence(T7Evidence {
            deaths: Some(to_json_value(after_ready)),
            ..Default::default()
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Status;

    fn death(pid: i32, phase: &'static str, at_unix_ms: u64) -> Death {
        Death {
            node: None,
            pid,
            name: "VLLM::EngineCore".into(),
            phase,
            at_s: 3.2,
            exit_code: None,
            signal: Some("SIGKILL".into()),
            oom_kill: false,
            leader: false,
            server_broken: true,
            line: String::new(),
            summary: format!(
                "VLLM::EngineCore (pid {pid}) was killed by SIGKILL 3.2s into the {phase}"
            ),
            at_unix_ms,
        }
    }

    #[test]
    fn boot_deaths_and_those_after_an_interrupt_are_not_judged() {
        let all = vec![
            death(1, "boot", 10),
            death(2, "load", 20),
            death(3, "load", 40),
        ];
        let pids = |v: Vec<Death>| v.iter().map(|d| d.pid).collect::<Vec<_>>();
        assert_eq!(pids(judged(&all, None)), vec![2, 3]);
        assert_eq!(pids(judged(&all, Some(30))), vec![2]);
        assert_eq!(pids(judged(&all, Some(20))), Vec::<i32>::new());
    }

    #[test]
    fn one_fail_names_the_first_and_counts_the_rest() {
        assert!(check(&[]).is_none());
        let one = check(&[death(2, "load", 20)]).unwrap();
        assert_eq!(one.status, Status::Fail);
        assert_eq!(
            one.message,
            "VLLM::EngineCore (pid 2) was killed by SIGKILL 3.2s into the load"
        );
        let three = check(&[
            death(2, "load", 20),
            death(3, "load", 21),
            death(4, "load", 22),
        ]);
        assert!(three
            .unwrap()
            .message
            .ends_with("; 2 more process(es) of the server ended after it"));
    }
}
