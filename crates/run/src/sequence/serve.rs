//! Step 2 of the run: the GPU gate, the server under its shepherd, and the wait for ready.

use std::path::Path;
use std::time::Duration;

use inferlint_supervisor::ProcScanner;
use tokio::time::Instant;

use super::super::deaths::{DeathWatch, Phase};
use super::super::gate;
use super::super::proc::{graces_within, Lines, Proc, ProcOptions};
use super::super::server::{self, Readiness};
use super::super::{folder, GpuCheck};
use super::sweep::DevEndpoints;
use super::{Run, Started, FAILURE_EXIT_WAIT, SERVER_TEARDOWN};
use inferlint_host::reconcile::{reap_graces, reaped_line, reconcile};

impl Run {
    /// Step 2: the GPU gate, then the server under its own group, then the wait for ready.
    pub(super) async fn start_server(&mut self) -> bool {
        if !Path::new("/proc/self").exists() {
            self.set_problem("--serve needs Linux (or WSL): stopping the server reads /proc");
            return false;
        }
        self.reconcile().await;
        if self.inputs.gpu_check != GpuCheck::Off && !self.gate_step().await {
            return false;
        }
        let Some(started) = self.spawn_server() else {
            return false;
        };
        // The other nodes' parts start once the head's runs (the head's part is what they join).
        if !self.start_nodes() {
            return false;
        }
        let Some(readiness) = self.wait_for_ready(started).await else {
            return false;
        };
        if matches!(readiness, Readiness::Ready { .. }) && !self.nodes_running(started).await {
            return false;
        }
        self.timings.boot_s = started.elapsed().as_secs_f64();
        self.judge_readiness(readiness).await
    }

    /// The T2 gate: two clear readings of the run's GPUs, printed and recorded; false when the
    /// cards are not clear (no server is started on them).
    async fn gate_step(&mut self) -> bool {
        self.line("== is the GPU free?");
        for n in self.inputs.gpu_scope_notes.clone() {
            self.line(&format!("note: {n}"));
        }
        let t = Instant::now();
        let j = gate::before_start(
            self.inputs.gate_timeout,
            self.inputs.gpu_check,
            &self.inputs.gpu_scope,
        )
        .await;
        self.timings.gate_s = t.elapsed().as_secs_f64();
        for l in &j.lines {
            self.line(l);
        }
        self.gate.used_mib = j.used_mib();
        self.note_scope(&j);
        let clear = j.clear_to_start();
        let t2 = j.t2;
        self.verdict.extra.push(t2.clone());
        self.record_result(t2);
        self.save_record();
        if !clear {
            self.set_problem("the GPU is not free; start no server on it");
        }
        clear
    }

    /// Starts the head's part of the server under its shepherd, its output to `boot.log` and to
    /// the log watcher, its deaths to the death watch; the moment it started, or None (with
    /// the problem set) when it could not start.
    fn spawn_server(&mut self) -> Option<Instant> {
        self.boot.number += 1;
        let log_path = self.out.join(folder::boot_log_name(self.boot.number));
        self.line(&format!(
            "== start the server (output in {})",
            log_path.display()
        ));
        // The command split before the run began (core's `argv::split_command`).
        let argv = self.serve_argv.clone().unwrap_or_default();
        let argv = self.with_dev_endpoints(argv);
        let argv = self.pinned(argv);
        let shepherd = match self.shepherd() {
            Ok(s) => s,
            Err(e) => {
                self.set_problem(e);
                return None;
            }
        };
        let opts = ProcOptions {
            shepherd,
            raw_output: Some(log_path.clone()),
            shepherd_report: Some(self.out.join(SERVER_TEARDOWN)),
            graces: graces_within(self.inputs.stop_grace),
        };
        let started = Instant::now();
        let mut proc = match Proc::spawn(&argv, &opts) {
            Ok(p) => p,
            Err(e) => {
                let program = argv.first().map_or("", String::as_str);
                self.set_problem(format!("cannot start the server ({program}): {e}"));
                return None;
            }
        };
        // The run's marker, as the server's environment holds it: the readings after the stop
        // know the run's own processes by it.
        self.server.run_id =
            ProcScanner::system().environ_var(proc.pid, inferlint_host::names::RUN_ID_ENV);
        let lines = std::mem::replace(&mut proc.lines, Lines::closed());
        self.server.deaths = proc
            .take_member_exits()
            .map(|rx| DeathWatch::start(rx, self.sink.clone()));
        let (events, log_task) = server::watch_log(lines, Some(self.engine()));
        self.server.started = Some(Started {
            proc,
            events,
            log_task,
            failed: false,
        });
        Some(started)
    }

    /// Waits for the server to be ready. A node's part that ends before ready ends the wait:
    /// the head's part would wait for it until the ready timeout. The head's part is then
    /// stopped at once (it does not exit by itself, so it is not "failed" and given time to);
    /// None then.
    async fn wait_for_ready(&mut self, started: Instant) -> Option<Readiness> {
        let s = self.server.started.as_mut()?;
        tokio::select! {
            r = server::wait_ready(
                &s.proc,
                &mut s.events,
                &self.url,
                self.inputs.ready_timeout,
                &self.sink,
                &self.interrupt,
            ) => Some(r),
            k = crate::nodes::first_ended(&self.server.nodes) => {
                self.timings.boot_s = started.elapsed().as_secs_f64();
                self.node_ended_before_ready(k);
                None
            }
        }
    }

    /// Whether the wait ended with a server ready to serve; otherwise the problem that says why.
    async fn judge_readiness(&mut self, readiness: Readiness) -> bool {
        match readiness {
            Readiness::Ready { without_line, .. } => {
                self.set_phase(Phase::Ready);
                if without_line {
                    self.line(&format!(
                        "note: the server answers {}/health but printed no '{}' line",
                        self.url,
                        server::READY_MARKER
                    ));
                }
                true
            }
            Readiness::Exited(e) => {
                self.wait_log_end(Duration::from_secs(2)).await;
                self.set_problem(format!(
                    "the server exited with code {} before it was ready",
                    e.shell_code()
                ));
                false
            }
            Readiness::Failed(summary) => {
                self.failed_before_ready(&summary).await;
                false
            }
            Readiness::TimedOut(t) => {
                self.set_problem(format!(
                    "the server was not ready after {} s",
                    inferlint_core::fmt::g(t.as_secs_f64())
                ));
                false
            }
            Readiness::Interrupted => {
                self.set_problem("interrupted");
                false
            }
        }
    }

    /// A server whose log showed a start-up failure usually exits right after its traceback:
    /// it gets a moment to say so itself, and is stopped by the stop step otherwise.
    async fn failed_before_ready(&mut self, summary: &str) {
        let Some(s) = self.server.started.as_mut() else {
            return;
        };
        s.failed = true;
        let exited = tokio::time::timeout(FAILURE_EXIT_WAIT, s.proc.wait())
            .await
            .ok();
        match exited {
            Some(e) => {
                self.wait_log_end(Duration::from_secs(1)).await;
                self.set_problem(format!(
                    "the server exited with code {} before it was ready",
                    e.shell_code()
                ));
            }
            None => self.set_problem(format!("the server failed before it was ready: {summary}")),
        }
    }

    /// The command with vLLM's development endpoints on (`env VLLM_SERVER_DEV_MODE=1 CMD…`)
    /// where a sweep resets the cache between points and the server may have them
    /// ([`Run::dev_endpoints`]); said in the output and in run.json either way.
    fn with_dev_endpoints(&mut self, argv: Vec<String>) -> Vec<String> {
        match self.dev_endpoints(&argv) {
            DevEndpoints::NotNeeded => argv,
            DevEndpoints::On(why) => {
                self.line(&format!(
                    "note: the server runs with VLLM_SERVER_DEV_MODE=1 ({why}): its development endpoints (/reset_prefix_cache, /collective_rpc, /sleep, /server_info) are on, to reset the prefix cache between the sweep's points"
                ));
                self.record.dev_endpoints = true;
                let mut with = vec!["env".to_string(), "VLLM_SERVER_DEV_MODE=1".to_string()];
                with.extend(argv);
                with
            }
            DevEndpoints::Refused => {
                self.line("note: the server listens on an address other hosts can reach, so its development endpoints stay off (--allow-dev-endpoints turns them on: /reset_prefix_cache, /collective_rpc, /sleep, /server_info); the prefix cache cannot be reset between the sweep's points");
                argv
            }
        }
    }

    /// The command started on the run's GPUs when `--gpus` named them: `env
    /// CUDA_VISIBLE_DEVICES=… CUDA_DEVICE_ORDER=PCI_BUS_ID CMD…` (`env` execs the command, so
    /// the server keeps the pid the shepherd started). Integer ordinals, in PCI bus order,
    /// because vLLM refuses UUIDs there (docs/supervision.md, "Sharing the node").
    fn pinned(&mut self, argv: Vec<String>) -> Vec<String> {
        if !self.inputs.pin_server_gpus {
            return argv;
        }
        let ordinals: Option<Vec<String>> = match &self.gate.scope_cards {
            Some(cards) if !cards.is_empty() => Some(cards.iter().map(u32::to_string).collect()),
            _ => self.inputs.gpu_scope.ids.as_ref().and_then(|ids| {
                ids.iter()
                    .map(|id| match id {
                        inferlint_host::gpu::GpuId::Index(i) => Some(i.to_string()),
                        inferlint_host::gpu::GpuId::Uuid(_) => None,
                    })
                    .collect()
            }),
        };
        let Some(ordinals) = ordinals else {
            self.line("note: --gpus names UUIDs that no GPU reading resolved to an index; the server is started without CUDA_VISIBLE_DEVICES");
            return argv;
        };
        let list = ordinals.join(",");
        self.line(&format!(
            "note: the server gets CUDA_VISIBLE_DEVICES={list} (CUDA_DEVICE_ORDER=PCI_BUS_ID)"
        ));
        if let Some(r) = self.record.gpu_scope.as_mut() {
            r.server_cuda_visible_devices = Some(list.clone());
        }
        let mut out = vec![
            "env".to_string(),
            format!("CUDA_VISIBLE_DEVICES={list}"),
            "CUDA_DEVICE_ORDER=PCI_BUS_ID".to_string(),
        ];
        out.extend(argv);
        out
    }

    /// Records the run's GPUs and who else used them (run.json, the report's T2 evidence).
    pub(super) fn note_scope(&mut self, j: &gate::Judgement) {
        let Some(judged) = &j.judged else { return };
        let cards: Vec<u32> = judged
            .last
            .as_ref()
            .map(|r| r.gpus.iter().map(|g| g.index).collect())
            .unwrap_or_default();
        if self.gate.scope_cards.is_none() && judged.last.is_some() {
            self.gate.scope_cards = Some(cards.clone());
        }
        let rec = self
            .record
            .gpu_scope
            .get_or_insert_with(|| folder::GpuScopeRecord {
                judged: self.inputs.gpu_scope.describe(),
                cards,
                ..Default::default()
            });
        rec.add(
            judged
                .other_holders
                .iter()
                .map(inferlint_host::gpu::GpuHolder::describe)
                .collect(),
            judged
                .neighbours
                .iter()
                .map(inferlint_host::neighbours::Neighbour::line)
                .collect(),
        );
    }

    /// Before anything starts: what earlier runs whose inferlint processes were both killed
    /// left behind (an engine still holding the GPU, say) is torn down, and said. Only the
    /// user's own runs; silent when there are none.
    async fn reconcile(&mut self) {
        let done = tokio::task::spawn_blocking(|| {
            let scan = ProcScanner::system();
            reconcile(
                &scan,
                Some(inferlint_supervisor::sys::getuid()),
                None,
                false,
                &reap_graces(5.0),
            )
        })
        .await
        .unwrap_or_default();
        if done.runs == 0 {
            return;
        }
        self.line("== earlier runs left processes behind");
        for l in &done.lines {
            self.line(l);
        }
        if !done.leftovers {
            self.line(&reaped_line(&done));
        }
    }

    /// Waits (bounded) for the server's output to close, so its log is complete.
    pub(super) async fn wait_log_end(&mut self, limit: Duration) {
        if let Some(s) = self.server.started.as_mut() {
            if !s.log_task.is_finished() {
                let _ = tokio::time::timeout(limit, &mut s.log_task).await;
            }
        }
    }
}
