//! `inferlint node` (hidden): the per-node agent of a run that spans nodes, started by `inferlint
//! run --serve-node K CMD` through a launcher (Slurm's `srun` by default), never by hand. It
//! runs CMD under a shepherd and speaks JSON lines on stdin and stdout
//! (docs/design/nodes.md; the messages are `inferlint_supervisor::node_protocol`).

use std::ffi::OsString;
use std::time::Duration;

use std::sync::Arc;

use inferlint_host::gpu::GpuScope;
use inferlint_run::GpuCheck;
use inferlint_supervisor::node_agent::{self, AfterTeardown, AgentOptions, BeforeStart};
use inferlint_supervisor::{CgroupMode, Graces};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The marker value this node's processes carry (the head gives its run id and the node)
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// The node's GPUs for the command (CUDA_VISIBLE_DEVICES)
    #[arg(long, value_name = "LIST")]
    pub gpus: Option<String>,
    /// The teardown's graces in milliseconds: one budget for all stages, or four numbers
    /// LEADER,AFTER_LEADER,GROUP,FORCE
    #[arg(long, value_name = "MS")]
    pub grace_ms: Option<String>,
    /// How long the T2 readings of the node's GPUs after the teardown may take (milliseconds);
    /// 0 sends no T2
    #[arg(long, value_name = "MS", default_value_t = 120_000)]
    pub gpu_timeout_ms: u64,
    /// How long the T2 gate on the node's GPUs may wait before the command starts
    /// (milliseconds); 0 starts it without a gate
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub gate_timeout_ms: u64,
    /// cgroup: auto, require or off
    #[arg(long, default_value = "auto")]
    pub cgroup: String,
    /// The command, after `--`
    #[arg(last = true, required = true, num_args = 1..)]
    pub command: Vec<OsString>,
}

/// The graces a `--grace-ms` value names.
pub fn parse_graces(text: &str) -> Result<Graces, String> {
    let n: Vec<u64> = text
        .split(',')
        .map(|x| x.trim().parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("--grace-ms '{text}' is not a number of milliseconds"))?;
    let d = Duration::from_millis;
    match n[..] {
        [budget] => Ok(Graces::within(d(budget))),
        [leader, after_leader, group, force] => Ok(Graces {
            leader: d(leader),
            after_leader: d(after_leader),
            group: d(group),
            force: d(force),
        }),
        _ => Err(format!(
            "--grace-ms '{text}' needs one budget or four numbers LEADER,AFTER_LEADER,GROUP,FORCE"
        )),
    }
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let graces = match &args.grace_ms {
        Some(t) => parse_graces(t).map_err(anyhow::Error::msg)?,
        None => Graces::default(),
    };
    let cgroup: CgroupMode = args.cgroup.parse().map_err(anyhow::Error::msg)?;
    // The node's GPUs as a one-node run resolves them: --gpus, else what the step was given.
    let scope = inferlint_host::gpu::GpuScope::from_env_noted(args.gpus.as_deref())?.scope;
    let mut env = Vec::new();
    if let Some(g) = args.gpus {
        env.push((OsString::from("CUDA_VISIBLE_DEVICES"), OsString::from(g)));
    }
    let before_start = (args.gate_timeout_ms > 0)
        .then(|| node_gate(Duration::from_millis(args.gate_timeout_ms), scope.clone()));
    let after_teardown = (args.gpu_timeout_ms > 0).then(|| {
        node_t2(
            Duration::from_millis(args.gpu_timeout_ms),
            scope,
            args.run_id.clone(),
        )
    });
    Ok(node_agent::run(AgentOptions {
        shepherd: inferlint_run::proc::this_shepherd()?,
        names: inferlint_host::names::names(),
        command: args.command,
        run_id: args.run_id,
        env,
        graces,
        cgroup,
        before_start,
        after_teardown,
    }))
}

/// The T2 gate on this node's GPUs before its part starts, as the head's gate judges the
/// head's (docs/design/nodes.md#the-gate-on-every-node): the part does not start on a card that
/// is not clear.
fn node_gate(timeout: Duration, scope: GpuScope) -> BeforeStart {
    BeforeStart(Arc::new(move || {
        let j = inferlint_run::gate::before_start_blocking(timeout, GpuCheck::Auto, &scope);
        let refused =
            (!j.clear_to_start()).then(|| format!("the GPU gate on this node: {}", j.t2.message));
        (serde_json::to_value(&j.t2).unwrap_or_default(), refused)
    }))
}

/// T2 on this node's GPUs once its part is torn down, judged as the head judges its own
/// (docs/design/nodes.md#t2-on-every-node), as the JSON of the check's result.
fn node_t2(timeout: Duration, scope: GpuScope, run_id: Option<String>) -> AfterTeardown {
    AfterTeardown(Arc::new(move |report| {
        let j =
            inferlint_run::gate::after_stop_blocking(timeout, report, run_id.clone(), &scope, None);
        serde_json::to_value(&j.t2).unwrap_or_default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graces_are_one_budget_or_four_stages() {
        let g = parse_graces("100,20,30,40").unwrap();
        assert_eq!(g.leader, Duration::from_millis(100));
        assert_eq!(g.force, Duration::from_millis(40));
        assert!(parse_graces("3000").unwrap().total() <= Duration::from_millis(3000));
        assert!(parse_graces("1,2").is_err());
        assert!(parse_graces("x").is_err());
    }
}
