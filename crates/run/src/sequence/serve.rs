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
        if self.inputs.gpu_check != GpuCheck::Off {
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
                return false;
            }
        }
        let log_path = self.out.join(folder::BOOT_LOG);
        self.line(&format!(
            "== start the server (output in {})",
            log_path.display()
        ));
        let argv = self.serve_argv.clone().unwrap_or_default();
        if argv.is_empty() {
            self.set_problem("the --serve command is empty (or its quotes do not balance)");
            return false;
        }
        let argv = self.pinned(argv);
        let shepherd = match self.shepherd() {
            Ok(s) => s,
            Err(e) => {
                self.set_problem(e);
                return false;
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
                self.set_problem(format!("cannot start the server ({}): {e}", argv[0]));
                return false;
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
        // The other nodes' parts start once the head's runs (the head's part is what they join).
        if !self.start_nodes() {
            return false;
        }
        let Some(s) = self.server.started.as_mut() else {
            return false;
        };
        // A node's part that ends before ready ends the wait: the head's part would wait for
        // it until the ready timeout. The head's part is then stopped at once (it does not
        // exit by itself, so it is not "failed" and given time to).
        let readiness = tokio::select! {
            r = server::wait_ready(
                &s.proc,
                &mut s.events,
                &self.url,
                self.inputs.ready_timeout,
                &self.sink,
                &self.interrupt,
            ) => r,
            k = crate::nodes::first_ended(&self.server.nodes) => {
                self.timings.boot_s = started.elapsed().as_secs_f64();
                self.node_ended_before_ready(k);
                return false;
            }
        };
        if matches!(readiness, Readiness::Ready { .. }) && !self.nodes_running(started).await {
            return false;
        }
        self.timings.boot_s = started.elapsed().as_secs_f64();
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
                // A failing server usually exits right after its traceback: give it a moment
                // to say so itself, then stop it.
                let Some(s) = self.server.started.as_mut() else {
                    // Started above; a server the run no longer holds is not ready either.
                    return false;
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
                    None => self
                        .set_problem(format!("the server failed before it was ready: {summary}")),
                }
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
