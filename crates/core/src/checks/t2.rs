//! T2 orphaned-engine: after a teardown, is the card clear? The readings come from the waiter
//! of [`crate::gpu::clear`]; this turns its outcome into the verdict (docs/design/tripwires.md#t2).

use crate::gpu::ClearResult;
use crate::result::{CheckResult, Status, Tripwire};

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

/// One node's T2 after the stop of a run that spans nodes, as its agent judged it on the node's
/// GPUs (None when the agent sent none).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeT2 {
    /// The node's index (`--serve-node K`).
    pub node: u32,
    /// Its hostname, as its agent said.
    pub host: Option<String>,
    pub t2: Option<CheckResult>,
}

/// How much a part's status weighs in T2 across nodes: a failure anywhere fails the run, a node
/// that could not tell makes the whole unknown, and N/A (no GPU there) decides only when every
/// part is N/A.
fn weight(s: Status) -> u8 {
    match s {
        Status::Fail => 0,
        Status::Unknown => 1,
        Status::Warn => 2,
        Status::Pass => 3,
        Status::NotApplicable => 4,
    }
}

/// T2 of a run that spans nodes: the head's T2 and each node's, judged on that node's GPUs
/// (docs/design/nodes.md#t2-on-every-node). The verdict is the worst part's; the message leads
/// with it and names every node's part. A node whose agent sent no T2 cannot be told clear.
/// Without nodes, the head's T2 as it is.
pub fn across_nodes(head: CheckResult, nodes: &[NodeT2]) -> CheckResult {
    if nodes.is_empty() {
        return head;
    }
    let mut parts: Vec<(Option<&NodeT2>, CheckResult)> = vec![(None, head.clone())];
    for n in nodes {
        let t2 = n.t2.clone().unwrap_or_else(|| {
            CheckResult::unknown(
                Tripwire::T2,
                "its agent sent no T2 after its teardown, so its GPUs' memory is unknown",
            )
        });
        parts.push((Some(n), t2));
    }
    // Stable: the head leads among equals.
    parts.sort_by_key(|(_, r)| weight(r.status));
    let name = |n: Option<&NodeT2>| match n {
        None => "the head".to_string(),
        Some(n) => match &n.host {
            Some(h) => format!("node {} ({h})", n.node),
            None => format!("node {}", n.node),
        },
    };
    let (lead, lead_result) = &parts[0];
    let mut message = match lead {
        None => lead_result.message.clone(),
        Some(_) => format!("{}: {}", name(*lead), lead_result.message),
    };
    for (n, r) in &parts[1..] {
        message.push_str(&format!(
            "; {}, {}: {}",
            name(*n),
            r.status.label(),
            r.message
        ));
    }
    CheckResult::new(Tripwire::T2, lead_result.status, message)
        .with_evidence(lead_result.evidence.clone())
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

/// T2 when the readings could not be taken at all (`why`: the reader's error): can't tell.
pub fn unreadable(why: impl Into<String>) -> CheckResult {
    CheckResult::unknown(Tripwire::T2, why)
}

/// T2 when the user turned the GPU check off (`--no-gpu-check`): it does not apply.
pub fn skipped() -> CheckResult {
    CheckResult::not_applicable(Tripwire::T2, "the GPU check was skipped (--no-gpu-check)")
}

/// The gate's T2 when the run's GPUs (`scope`, as described to the user) name no GPU the
/// machine has: a server started there would run on cards nobody judged.
pub fn scope_names_no_gpu(prefix: &str, scope: &str) -> CheckResult {
    CheckResult::fail(
        Tripwire::T2,
        format!("{prefix}the run's GPUs ({scope}) name no GPU on this machine"),
    )
}

/// A node's T2 as its agent sent it (docs/design/nodes.md#t2-on-every-node); anything that does
/// not read back as a T2 result is can't tell.
pub fn from_agent(sent: serde_json::Value) -> CheckResult {
    serde_json::from_value::<CheckResult>(sent)
        .ok()
        .filter(|r| r.tripwire == Tripwire::T2)
        .unwrap_or_else(|| {
            CheckResult::unknown(
                Tripwire::T2,
                "its agent's T2 could not be read (not a T2 result)",
            )
        })
}

/// The exit status `gpu-inspect` gives a T2 (docs/reference.md, "gpu-inspect"): 0 when the
/// cards are clear, 1 when they are not, 2 when it cannot tell (no /proc, no reading).
pub fn inspect_exit_code(r: &CheckResult) -> i32 {
    match r.status {
        crate::result::Status::Pass => 0,
        crate::result::Status::Fail => 1,
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::Reading;

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

    fn node(k: u32, t2: Option<CheckResult>) -> NodeT2 {
        NodeT2 {
            node: k,
            host: Some(format!("n{}", k + 1)),
            t2,
        }
    }

    #[test]
    fn across_nodes_the_worst_part_decides_and_every_node_is_named() {
        let pass = |m: &str| CheckResult::pass(Tripwire::T2, m);
        let head = pass("card clear");
        let alone = across_nodes(head.clone(), &[]);
        assert_eq!(alone, head);
        let both = across_nodes(head.clone(), &[node(1, Some(pass("node card clear")))]);
        assert_eq!(both.status, Status::Pass);
        assert_eq!(
            both.message,
            "card clear; node 1 (n2), PASS: node card clear"
        );
        // One number changed: node 1's card is held.
        let held = CheckResult::fail(Tripwire::T2, "GPU 0 still holds 21768 MiB");
        let failed = across_nodes(head.clone(), &[node(1, Some(held))]);
        assert_eq!(failed.status, Status::Fail);
        assert_eq!(
            failed.message,
            "node 1 (n2): GPU 0 still holds 21768 MiB; the head, PASS: card clear"
        );
        // A node that said nothing cannot be told clear.
        let silent = across_nodes(head.clone(), &[node(1, Some(pass("x"))), node(2, None)]);
        assert_eq!(silent.status, Status::Unknown);
        assert!(
            silent
                .message
                .starts_with("node 2 (n3): its agent sent no T2"),
            "{}",
            silent.message
        );
        // N/A decides only when every part is N/A; a pass on a node with GPUs leads.
        let na = CheckResult::not_applicable(Tripwire::T2, "no NVIDIA GPU here");
        let all_na = across_nodes(na.clone(), &[node(1, Some(na.clone()))]);
        assert_eq!(all_na.status, Status::NotApplicable);
        let gpu_node = across_nodes(na, &[node(1, Some(pass("node card clear")))]);
        assert_eq!(gpu_node.status, Status::Pass);
        assert!(gpu_node
            .message
            .starts_with("node 1 (n2): node card clear; the head, N/A"));
    }
}
