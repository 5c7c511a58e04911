//! The other nodes of a run that spans nodes (docs/design/nodes.md): each `--serve-node K CMD`
//! part runs under a node agent (`inferlint node -- CMD`) started through a launcher — Slurm's
//! `srun --relative=K` by default, a `--node-launcher` template otherwise — and is seen here
//! through the agent's JSON-line events: its output goes to `nodes/K/boot.log`, its members'
//! deaths to the run's death watch (named by node), its teardown report to `run.json`.
//!
//! The agent's stdin is the only stop channel: `{"stop":"graceful"}` at the run's stop, and
//! end of file if this process dies, however — the agent then ends its tree by itself.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use inferlint_core::result::CheckResult;
use inferlint_supervisor::node_protocol::{NodeCommand, NodeEvent, TitleCount};
use inferlint_supervisor::{ExitKind, MemberExit, StopMode};
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::ChildStdin;
use tokio::sync::{mpsc, oneshot, watch};

/// Names the launcher template when `--node-launcher` does not.
pub const LAUNCHER_ENV: &str = "INFERLINT_NODE_LAUNCHER";

/// The launcher a run with `--serve-node` needs and did not get.
pub const NO_LAUNCHER: &str = "--serve-node needs Slurm (SLURM_JOB_ID is not set) or a launcher: --node-launcher TEMPLATE or INFERLINT_NODE_LAUNCHER";

/// One other node's part of the server: its Slurm relative index and its command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodePart {
    pub index: u32,
    pub command: String,
}

/// How the agents reach their nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Launcher {
    /// `srun --nodes=1 --ntasks=1 --relative=K --overlap --kill-on-bad-exit=1 --quiet`.
    Slurm,
    /// A command line with `{node}` for K; `{cmd}` for the agent's command as one word (for
    /// `sh -c`), else the agent's words are appended.
    Template(String),
}

impl Launcher {
    /// The launcher for this run: the template given, else [`LAUNCHER_ENV`], else Slurm's when
    /// `SLURM_JOB_ID` is set; else the error to print (a usage error).
    pub fn choose(
        template: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Launcher, String> {
        let named = template
            .map(str::to_string)
            .or_else(|| env(LAUNCHER_ENV))
            .filter(|t| !t.trim().is_empty());
        match named {
            Some(t) => Ok(Launcher::Template(t)),
            None if env("SLURM_JOB_ID").is_some_and(|v| !v.is_empty()) => Ok(Launcher::Slurm),
            None => Err(NO_LAUNCHER.into()),
        }
    }

    /// The whole command line that starts node `index`'s agent.
    pub fn argv(&self, index: u32, agent: &[String]) -> Result<Vec<String>, String> {
        match self {
            Launcher::Slurm => {
                let mut v: Vec<String> = [
                    "srun",
                    "--nodes=1",
                    "--ntasks=1",
                    &format!("--relative={index}"),
                    "--overlap",
                    "--kill-on-bad-exit=1",
                    "--quiet",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                v.extend(agent.iter().cloned());
                Ok(v)
            }
            Launcher::Template(t) => {
                let words = shlex::split(t)
                    .ok_or_else(|| format!("--node-launcher '{t}': its quotes do not balance"))?;
                let joined = shlex::try_join(agent.iter().map(String::as_str))
                    .map_err(|e| format!("the node command cannot be quoted: {e}"))?;
                let has_cmd = words.iter().any(|w| w.contains("{cmd}"));
                let mut v: Vec<String> = words
                    .iter()
                    .map(|w| {
                        w.replace("{node}", &index.to_string())
                            .replace("{cmd}", &joined)
                    })
                    .collect();
                if !has_cmd {
                    v.extend(agent.iter().cloned());
                }
                Ok(v)
            }
        }
    }
}

/// How long a node agent's T2 readings may take: its gate before the part starts (None: no
/// gate, `--no-gpu-check`) and its check after the teardown.
#[derive(Clone, Copy, Debug)]
pub struct NodeT2Timeouts {
    pub gate: Option<Duration>,
    pub stop: Duration,
}

/// `inferlint node --run-id ID --grace-ms MS [--gate-timeout-ms MS] --gpu-timeout-ms MS -- CMD…`:
/// the agent's own command line.
pub fn agent_argv(
    exe: &Path,
    run_id: &str,
    grace: Duration,
    t2: NodeT2Timeouts,
    command: &[String],
) -> Vec<String> {
    let mut v = vec![
        exe.display().to_string(),
        "node".into(),
        "--run-id".into(),
        run_id.into(),
        "--grace-ms".into(),
        grace.as_millis().to_string(),
    ];
    if let Some(gate) = t2.gate {
        v.extend(["--gate-timeout-ms".into(), gate.as_millis().to_string()]);
    }
    v.extend([
        "--gpu-timeout-ms".into(),
        t2.stop.as_millis().to_string(),
        "--".into(),
    ]);
    v.extend(command.iter().cloned());
    v
}

/// What `run.json` keeps of a node (docs/design/formats.md#runjson).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NodeRecord {
    /// The Slurm relative index (`--serve-node K`).
    pub node: u32,
    /// The node's hostname, as its agent said (null if it never started).
    pub hostname: Option<String>,
    /// The part's command, secrets masked.
    pub command: String,
    /// The agent's pid on its node and the part's leader pid.
    pub agent_pid: Option<i32>,
    pub leader_pid: Option<i32>,
    /// How many processes the node's teardown left (null: no teardown report arrived).
    pub teardown_left: Option<usize>,
    pub left_by_title: Vec<TitleCount>,
    /// What each death on the node said (`run.json`'s `deaths` has them in full).
    pub deaths: Vec<String>,
    /// The agent's exit code from its `done` event, else the launcher's.
    pub exit_code: Option<i32>,
    /// Why the part could not start, when it could not.
    pub error: Option<String>,
    /// The T2 gate on the node's GPUs before its part started (null: no gate, or none arrived).
    pub gate_t2: Option<CheckResult>,
    /// T2 on the node's GPUs, as its agent judged it after its teardown (null: none arrived).
    pub t2: Option<CheckResult>,
}

/// What the agent has said so far.
#[derive(Default)]
struct Heard {
    record: NodeRecord,
    /// What its teardown left: processes, and `/dev/shm` files removed or kept.
    teardown_lines: Vec<String>,
    /// The agent's `done` came.
    done: bool,
}

/// Resolves with the index of the first node whose agent's stream ends; never without nodes.
pub async fn first_ended(nodes: &[RemoteNode]) -> u32 {
    if nodes.is_empty() {
        return std::future::pending().await;
    }
    let waits = nodes.iter().map(|n| {
        Box::pin(async move {
            n.ended().await;
            n.index
        })
    });
    futures_util::future::select_all(waits).await.0
}

/// Resolves once every node's agent has said its part runs (`started`); polls what they said.
pub async fn all_started(nodes: &[RemoteNode]) {
    loop {
        let all = nodes.iter().all(|n| {
            n.heard
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .record
                .leader_pid
                .is_some()
        });
        if all {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One node's agent, as the head holds it.
pub struct RemoteNode {
    pub index: u32,
    stdin: Option<ChildStdin>,
    heard: Arc<Mutex<Heard>>,
    over: watch::Receiver<bool>,
    /// The launcher's exit status, once it exited (its task owns the child).
    exit: watch::Receiver<Option<Option<std::process::ExitStatus>>>,
    /// Kills the launcher.
    kill: Option<oneshot::Sender<()>>,
    /// The run asked this node to stop: an end of its stream is not a death from here on.
    stopping: Arc<AtomicBool>,
}

/// The end of a node's stream without the agent's last word, before the run stopped it: the
/// agent (and with it the node's part, which its shepherd ends) is gone. A death of the part's
/// leader, so the death watch prints it, T7 fails named by the node, and the load stops.
fn agent_death(pid: i32, status: Option<std::process::ExitStatus>) -> MemberExit {
    use std::os::unix::process::ExitStatusExt;
    let status = status.map(|s| ExitKind::from_wait_status(s.into_raw()));
    MemberExit::seen_gone(
        pid,
        vec!["inferlint node".into()],
        "inferlint",
        true,
        status,
    )
}

impl RemoteNode {
    /// Starts `argv` (the launcher and the agent) with its output going to `log`; the part's
    /// deaths go to `deaths`.
    pub fn spawn(
        part: &NodePart,
        command_shown: String,
        argv: &[String],
        log: PathBuf,
        deaths: mpsc::UnboundedSender<MemberExit>,
    ) -> Result<RemoteNode, String> {
        let (prog, args) = argv.split_first().ok_or("empty launcher")?;
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut cmd = tokio::process::Command::new(prog);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group: a terminal's Ctrl-C reaches only the head, which stops the node
            // through the agent's stdin, once.
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| format!("{prog}: {e}"))?;
        let heard = Arc::new(Mutex::new(Heard {
            record: NodeRecord {
                node: part.index,
                command: command_shown,
                ..NodeRecord::default()
            },
            ..Heard::default()
        }));
        let (over_tx, over) = watch::channel(false);
        let log = Arc::new(Mutex::new(file));
        if let Some(err) = child.stderr.take() {
            let log = log.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(err).lines();
                while let Ok(Some(l)) = lines.next_line().await {
                    append(&log, &l);
                }
            });
        }
        let stdout = child.stdout.take().ok_or("the launcher's stdout")?;
        let stdin = child.stdin.take();
        let launcher_pid = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
        let (exit_tx, exit) = watch::channel(None);
        let (kill, kill_rx) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let mut kill_rx = kill_rx;
            let status = tokio::select! {
                s = child.wait() => s.ok(),
                Ok(()) = &mut kill_rx => {
                    let _ = child.start_kill();
                    child.wait().await.ok()
                }
            };
            exit_tx.send_replace(Some(status));
        });
        let stopping = Arc::new(AtomicBool::new(false));
        let (h, stop_asked, mut launcher_exit) = (heard.clone(), stopping.clone(), exit.clone());
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(l)) = lines.next_line().await {
                match NodeEvent::parse(&l) {
                    Some(ev) => hear(&h, &log, &deaths, ev),
                    // The launcher's own words (srun's errors) belong in the node's log.
                    None => append(&log, &l),
                }
            }
            let (said_done, agent_pid) = {
                let g = h.lock().unwrap_or_else(|e| e.into_inner());
                (g.done, g.record.agent_pid)
            };
            if !said_done && !stop_asked.load(Ordering::SeqCst) {
                // How it ended, as its launcher's exit tells (srun's, or the agent's own).
                let status = tokio::time::timeout(
                    Duration::from_secs(2),
                    launcher_exit.wait_for(Option::is_some),
                )
                .await
                .ok()
                .and_then(|r| r.ok().and_then(|s| s.flatten()));
                let _ = deaths.send(agent_death(agent_pid.unwrap_or(launcher_pid), status));
            }
            let _ = over_tx.send(true);
        });
        Ok(RemoteNode {
            index: part.index,
            stdin,
            heard,
            over,
            exit,
            kill: Some(kill),
            stopping,
        })
    }

    /// Tells the agent to stop (returns at once; a lost stream is the agent's stop too).
    pub async fn stop(&mut self, mode: StopMode) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(s) = self.stdin.as_mut() {
            let _ = s.write_all(&NodeCommand::Stop(mode).to_line()).await;
            let _ = s.flush().await;
        }
    }

    /// Resolves when the agent's stream has ended (its part is over, or the agent is gone).
    pub async fn ended(&self) {
        let mut over = self.over.clone();
        let _ = over.wait_for(|o| *o).await;
    }

    /// Waits up to `limit` for the agent's last word and the launcher's exit, then closes its
    /// stdin (which stops an agent that did not hear the command) and, past a second limit,
    /// kills the launcher. Returns what `run.json` keeps and the teardown's lines to print.
    pub async fn finish(&mut self, limit: Duration) -> (NodeRecord, Vec<String>) {
        let mut over = self.over.clone();
        let _ = tokio::time::timeout(limit, over.wait_for(|o| *o)).await;
        self.stopping.store(true, Ordering::SeqCst);
        self.stdin = None;
        let mut exit = self.exit.clone();
        if tokio::time::timeout(Duration::from_secs(5), exit.wait_for(Option::is_some))
            .await
            .is_err()
        {
            if let Some(kill) = self.kill.take() {
                let _ = kill.send(());
            }
            let _ = exit.wait_for(Option::is_some).await;
        }
        let status = exit.borrow().flatten();
        let mut g = self.heard.lock().unwrap_or_else(|e| e.into_inner());
        if g.record.exit_code.is_none() {
            g.record.exit_code = status.and_then(|s| s.code());
        }
        (g.record.clone(), g.teardown_lines.clone())
    }
}

fn append(log: &Mutex<std::fs::File>, line: &str) {
    use std::io::Write;
    let mut f = log.lock().unwrap_or_else(|e| e.into_inner());
    let _ = writeln!(f, "{line}");
}

/// Takes one event in.
fn hear(
    heard: &Mutex<Heard>,
    log: &Mutex<std::fs::File>,
    deaths: &mpsc::UnboundedSender<MemberExit>,
    ev: NodeEvent,
) {
    let mut g = heard.lock().unwrap_or_else(|e| e.into_inner());
    match ev {
        NodeEvent::Output { line, .. } => append(log, &line),
        NodeEvent::Started {
            hostname,
            pid,
            leader_pid,
            ..
        } => {
            g.record.hostname = Some(hostname);
            g.record.agent_pid = Some(pid);
            g.record.leader_pid = Some(leader_pid);
        }
        NodeEvent::Failed { error } => g.record.error = Some(error),
        NodeEvent::MemberExited { exit, .. } => {
            let _ = deaths.send(exit);
        }
        NodeEvent::Exited { .. } => {}
        NodeEvent::Teardown {
            left,
            left_by_title,
            report,
        } => {
            g.record.teardown_left = Some(left);
            g.record.left_by_title = left_by_title;
            g.teardown_lines = report.lines();
        }
        NodeEvent::Checked { phase, result } if phase == "stop" => {
            g.record.t2 = Some(inferlint_core::checks::t2::from_agent(result));
        }
        NodeEvent::Checked { phase, result } if phase == "gate" => {
            g.record.gate_t2 = Some(inferlint_core::checks::t2::from_agent(result));
        }
        // A phase this run does not know (an agent newer than the run) is not a verdict here.
        NodeEvent::Checked { .. } => {}
        NodeEvent::Done { exit_code } => {
            g.record.exit_code = Some(exit_code);
            g.done = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_launcher_is_the_template_else_slurm_else_an_error() {
        assert_eq!(
            Launcher::choose(Some("ssh n{node}"), env(&[("SLURM_JOB_ID", "7")])),
            Ok(Launcher::Template("ssh n{node}".into()))
        );
        assert_eq!(
            Launcher::choose(None, env(&[(LAUNCHER_ENV, "env")])),
            Ok(Launcher::Template("env".into()))
        );
        assert_eq!(
            Launcher::choose(None, env(&[("SLURM_JOB_ID", "7")])),
            Ok(Launcher::Slurm)
        );
        assert_eq!(Launcher::choose(None, env(&[])), Err(NO_LAUNCHER.into()));
    }

    #[test]
    fn launch_lines() {
        let agent = agent_argv(
            Path::new("/bin/inferlint"),
            "r1-node1",
            Duration::from_secs(30),
            NodeT2Timeouts {
                gate: Some(Duration::from_secs(10)),
                stop: Duration::from_secs(60),
            },
            &["vllm".into(), "serve".into(), "m".into()],
        );
        assert_eq!(
            Launcher::Slurm.argv(1, &agent).unwrap().join(" "),
            "srun --nodes=1 --ntasks=1 --relative=1 --overlap --kill-on-bad-exit=1 --quiet \
             /bin/inferlint node --run-id r1-node1 --grace-ms 30000 --gate-timeout-ms 10000 \
             --gpu-timeout-ms 60000 -- vllm serve m"
        );
        let t = Launcher::Template("ip netns exec ns{node}".into());
        assert_eq!(
            t.argv(2, &agent).unwrap()[..5].join(" "),
            "ip netns exec ns2 /bin/inferlint"
        );
        let sh = Launcher::Template("sh -c '{cmd}'".into());
        let v = sh.argv(1, &agent).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(shlex::split(&v[2]).unwrap(), agent);
        assert!(Launcher::Template("sh -c 'x".into())
            .argv(1, &agent)
            .is_err());
    }
}
