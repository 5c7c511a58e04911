//! The server's parts on other nodes (docs/design/nodes.md): started right after the head's
//! part, each under its node agent; stopped together with it; recorded in `run.json`.

use std::time::Duration;

use tokio::time::Instant;

use inferlint_core::checks::t2::{self, NodeT2};
use inferlint_core::result::CheckResult;
use inferlint_supervisor::Graces;

use super::super::nodes::{agent_argv, Launcher, NodeT2Timeouts, RemoteNode};
use super::super::redact;
use super::Run;

/// The folder of node K's files inside the run folder.
pub fn node_dir(k: u32) -> String {
    format!("nodes/{k}")
}

impl Run {
    /// Starts every `--serve-node` part; false (with the problem set) when one cannot start.
    pub(super) fn start_nodes(&mut self) -> bool {
        let parts = self.inputs.serve_nodes.clone();
        if parts.is_empty() {
            return true;
        }
        let Some(launcher) = self.inputs.node_launcher.clone() else {
            self.set_problem(super::super::nodes::NO_LAUNCHER);
            return false;
        };
        let exe = match self.shepherd() {
            Ok(s) => s.program,
            Err(e) => {
                self.set_problem(e);
                return false;
            }
        };
        // Each node's part carries its own marker, so that a teardown on one node (or on a
        // host that holds several parts, as in the tests) ends only its own part.
        let run_id = self
            .server
            .run_id
            .clone()
            .unwrap_or_else(inferlint_supervisor::new_run_id);
        for part in parts {
            let flag = format!("--serve-node {}", part.index);
            let command = match inferlint_core::argv::split_command(&flag, &part.command) {
                Ok(c) => c,
                Err(e) => {
                    self.set_problem(e.to_string());
                    return false;
                }
            };
            let agent = agent_argv(
                &exe,
                &format!("{run_id}-node{}", part.index),
                self.inputs.stop_grace,
                NodeT2Timeouts {
                    gate: (self.inputs.gpu_check != crate::GpuCheck::Off)
                        .then_some(self.inputs.gate_timeout),
                    stop: self.inputs.teardown_timeout,
                },
                &command,
            );
            if !self.start_node(&launcher, &part, &command, &agent) {
                return false;
            }
        }
        true
    }

    fn start_node(
        &mut self,
        launcher: &Launcher,
        part: &super::super::nodes::NodePart,
        command: &[String],
        agent: &[String],
    ) -> bool {
        let argv = match launcher.argv(part.index, agent) {
            Ok(a) => a,
            Err(e) => {
                self.set_problem(e);
                return false;
            }
        };
        let log = self
            .out
            .join(node_dir(part.index))
            .join(super::super::folder::BOOT_LOG);
        self.line(&format!(
            "== start node {}'s part (output in {})",
            part.index,
            log.display()
        ));
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let shown = redact::redact_command(command, &self.secrets);
        match RemoteNode::spawn(part, shown, &argv, log, tx) {
            Ok(node) => {
                if let Some(d) = &self.server.deaths {
                    d.add_node(part.index, rx);
                }
                self.server.nodes.push(node);
                true
            }
            Err(e) => {
                self.set_problem(format!(
                    "cannot start node {}'s part ({}): {e}",
                    part.index, argv[0]
                ));
                false
            }
        }
    }

    /// After the head's part is ready: true once every node's part runs too (the nodes' parts
    /// are the server as well). A part that does not start (its node's gate refused, its
    /// command failed) or the ready timeout ends the wait with the problem set.
    pub(super) async fn nodes_running(&mut self, started: Instant) -> bool {
        if self.server.nodes.is_empty() {
            return true;
        }
        let left = self.inputs.ready_timeout.saturating_sub(started.elapsed());
        tokio::select! {
            () = super::super::nodes::all_started(&self.server.nodes) => true,
            k = super::super::nodes::first_ended(&self.server.nodes) => {
                self.timings.boot_s = started.elapsed().as_secs_f64();
                self.node_ended_before_ready(k);
                false
            }
            () = tokio::time::sleep(left) => {
                self.set_problem("a node's part did not start within the ready timeout");
                false
            }
        }
    }

    /// The problem of a node's part that ended before the server was ready.
    pub(super) fn node_ended_before_ready(&mut self, k: u32) {
        self.set_problem(format!(
            "node {k}'s part ended before the server was ready (its output is in {}/boot.log)",
            node_dir(k)
        ));
    }

    /// The T2 of the head and of every node, by core's rule for a run across nodes.
    pub(super) fn t2_across_nodes(&self, head: CheckResult) -> CheckResult {
        let nodes: Vec<NodeT2> = self
            .record
            .nodes
            .iter()
            .map(|n| NodeT2 {
                node: n.node,
                host: n.hostname.clone(),
                // A part its node's gate refused never ran: that refusal is its T2.
                t2: n
                    .t2
                    .clone()
                    .or_else(|| n.gate_t2.clone().filter(|g| !g.is_ok())),
            })
            .collect();
        t2::across_nodes(head, &nodes)
    }

    /// Waits for every node's teardown, prints what each left and records the nodes.
    pub(super) async fn finish_nodes(&mut self, graces: Graces) {
        if self.server.nodes.is_empty() {
            return;
        }
        // Each agent's teardown, then its T2 readings on its node (bounded as the head's are).
        let limit = graces.total() + self.t2_timeout() + Duration::from_secs(5);
        let mut nodes = std::mem::take(&mut self.server.nodes);
        let finished = futures_util::future::join_all(nodes.iter_mut().map(|n| n.finish(limit)));
        let deaths = self
            .server
            .deaths
            .as_ref()
            .map(|d| d.deaths())
            .unwrap_or_default();
        for (mut rec, leftovers) in finished.await {
            rec.deaths = deaths
                .iter()
                .filter(|d| d.node == Some(rec.node))
                .map(|d| d.summary.clone())
                .collect();
            let host = rec.hostname.clone().unwrap_or_else(|| "?".into());
            match rec.teardown_left {
                Some(left) => self.line(&format!(
                    "node {} ({host}): stopped, {left} process(es) left",
                    rec.node
                )),
                None => self.line(&format!(
                    "node {} ({host}): no teardown report from its agent (exit {})",
                    rec.node,
                    rec.exit_code.map_or("unknown".into(), |c| c.to_string())
                )),
            }
            for l in &leftovers {
                self.line(&format!("node {}: {l}", rec.node));
            }
            if let Some(gate) = rec.gate_t2.as_ref().filter(|g| !g.is_ok()) {
                self.line(&format!(
                    "node {} ({host}): the gate: {}",
                    rec.node,
                    gate.line()
                ));
            }
            if let Some(t2) = &rec.t2 {
                self.line(&format!("node {} ({host}): {}", rec.node, t2.line()));
            }
            if let Some(e) = &rec.error {
                self.set_problem(format!("node {}'s part could not start: {e}", rec.node));
            }
            if rec.teardown_left.is_none_or(|n| n > 0) {
                self.set_problem(format!(
                    "node {}'s part may not be stopped: {}",
                    rec.node,
                    rec.teardown_left
                        .map_or("its agent sent no teardown report".into(), |n| format!(
                            "{n} process(es) left"
                        ))
                ));
            }
            self.record.nodes.push(rec);
        }
        self.save_record();
    }
}
