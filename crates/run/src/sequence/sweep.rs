//! A sweep (docs/design/sweeps.md): the load once per point against the one server, each point
//! a window of its own in `points/NN-OPTION-VALUE/` with its verdicts, the prefix cache reset
//! between points through the engine's own endpoint, then the points judged together
//! (`sweep.json`, the table).

use inferlint_core::engine::Engine;
use inferlint_core::result::{CheckResult, Tripwire};
use inferlint_core::sweep::{
    self, Between, Figures, Planned, Point, PointServer, PointTimings, PromptsKey, Reset, Sweep,
};
use inferlint_report::Report;

use super::window::Window;
use super::Run;
use crate::folder;
use crate::Sweeping;

/// The sweep's own file in the run folder.
pub const SWEEP_JSON: &str = "sweep.json";

impl Run {
    /// Runs every point of the sweep in order, and judges them together. It stops at a point
    /// after which nothing more can be measured: Ctrl-C, or a server that died.
    pub(super) async fn sweep_step(&mut self, s: &Sweeping) -> Sweep {
        let planned = s.plan.points();
        let n = planned.len();
        let each = match s.plan.repeat {
            1 => String::new(),
            k => format!(", each value {k} times"),
        };
        self.line(&format!(
            "== sweep: {} over {n} point(s){each}; between points: {}",
            s.plan.flag(),
            between_words(s.between)
        ));
        self.say_reset_blocker(s.between);
        let mut points: Vec<Point> = Vec::new();
        for (i, at) in planned.into_iter().enumerate() {
            if self.interrupted() || self.verdict.problem.is_some() {
                break;
            }
            let index = i + 1;
            let started = std::time::Instant::now();
            let reset = if index > 1 && s.between == Between::ResetCache {
                Some(self.reset_between().await)
            } else {
                None
            };
            if index > 1 && s.between == Between::Restart && !self.restart_between().await {
                break;
            }
            self.line(&format!("== point {index} of {n}: {}", s.plan.label(at)));
            let folder_name = s.plan.folder(index, at);
            let dir = self.out.join("points").join(&folder_name);
            if let Err(e) = std::fs::create_dir_all(&dir) {
                self.set_problem(format!("cannot create {}: {e}", dir.display()));
                break;
            }
            let argv = s.plan.argv(&self.inputs.load, at.value);
            let deaths_before = self.verdict.extra.len();
            let w = self.window_step(dir, argv).await;
            let mut results = self.checks_step(&w);
            // A death during the point is that point's: its T7 goes with its verdicts.
            results.extend(
                self.verdict.extra[deaths_before..]
                    .iter()
                    .filter(|r| r.tripwire == Tripwire::T7)
                    .cloned(),
            );
            self.write_point_files(&w, &results);
            let at = PointAt {
                index,
                planned: at,
                folder: &folder_name,
                reset,
                interrupted: self.interrupt.interrupted(),
                timings: PointTimings {
                    total_s: started.elapsed().as_secs_f64(),
                    load_s: self.timings.load_s,
                },
                server: self.point_server(),
            };
            points.push(at.point(s, &w, results));
        }
        if s.between == Between::Restart {
            self.print_boots_compared();
        }
        let sweep = Sweep::new(&s.plan.option, s.between, points);
        self.print_sweep(&sweep);
        if let Err(e) = folder::write_atomic(&self.out.join(SWEEP_JSON), sweep.to_json().as_bytes())
        {
            self.line(&format!("note: cannot write {SWEEP_JSON}: {e}"));
        }
        self.record.sweep = Some(SWEEP_JSON.to_string());
        self.save_record();
        sweep
    }

    /// Stops the server and starts it anew before the next point (`--between restart`): the
    /// stop and its T2 as at the end of a run, then the start as at its beginning (the gate,
    /// the boot into `boot-N.log`, its checks, the probe). False, with the problem set, when the
    /// new server could not serve.
    async fn restart_between(&mut self) -> bool {
        self.line("== between points: restart the server");
        self.record_deaths();
        self.server.earlier_deaths = std::mem::take(&mut self.record.deaths);
        self.stop_server().await;
        if let (Some(text), Some(facts)) = (self.boot.text.take(), self.boot.facts.take()) {
            let name = crate::folder::boot_log_name(self.boot.number);
            self.boot.earlier.push((name, text, facts));
        }
        if !self.start_server().await {
            self.boot_log_step().await;
            return false;
        }
        self.boot_log_step().await;
        if self.verdict.problem.is_some() || self.interrupted() {
            return false;
        }
        !self.inputs.probe || self.probe_step().await
    }

    /// T4 and T11 across the server's starts, as the run's verdicts will hold them (core
    /// decides them from every start's boot log, the first first).
    fn print_boots_compared(&self) {
        let current = self
            .boot
            .facts
            .as_ref()
            .map(|f| (crate::folder::boot_log_name(self.boot.number), f));
        let refs: Vec<(String, &inferlint_core::bootlog::BootFacts)> = self
            .boot
            .earlier
            .iter()
            .map(|(label, _, f)| (label.clone(), f))
            .chain(current)
            .collect();
        if refs.len() < 2 {
            return;
        }
        self.line(&format!("== the server's {} starts compared", refs.len()));
        let t4 = inferlint_core::checks::t4_t11::check_t4(&refs);
        let t11 = inferlint_core::checks::t4_t11::check_t11(&refs);
        for r in t4.iter().chain(&t11) {
            self.line(&r.line());
        }
    }

    /// The server the points now run on: its start in the run and its boot log's facts.
    pub(super) fn point_server(&self) -> Option<PointServer> {
        let facts = self.boot.facts.as_ref()?;
        Some(PointServer::of(self.boot.number.max(1), facts))
    }

    /// Why a reset of the cache between points cannot take on the server this run started, read
    /// from its command line before any point (llama.cpp's switches; vLLM's development
    /// endpoints are [`Run::dev_endpoints`]'s), or None.
    fn reset_blocker(&self) -> Option<String> {
        match (self.engine(), self.serve_argv.as_deref()) {
            (Engine::Llamacpp, Some(argv)) => {
                sweep::llamacpp_reset_blocker(argv, |k| std::env::var(k).ok())
            }
            _ => None,
        }
    }

    /// Says, before the first point, that the cache cannot be reset between the points.
    fn say_reset_blocker(&mut self, between: Between) {
        if between != Between::ResetCache {
            return;
        }
        if let Some(why) = self.reset_blocker() {
            self.line(&format!(
                "note: {why}; the cache cannot be reset between the sweep's points (--between restart starts each point on an empty one)"
            ));
        }
    }

    /// Resets the server's prefix cache before the next point, and says what the server answered.
    async fn reset_between(&mut self) -> Reset {
        if let Some(why) = self.reset_blocker() {
            self.line(&format!("reset the prefix cache: not done ({why})"));
            return Reset::Unavailable(why);
        }
        let r = inferlint_http::reset::reset_prefix_cache(
            &self.url,
            self.engine(),
            self.api_key.as_deref(),
        )
        .await;
        match &r {
            Reset::Done => self.line("reset the prefix cache: done"),
            Reset::Refused(why) | Reset::Unavailable(why) => {
                self.line(&format!("reset the prefix cache: not done ({why})"));
            }
        }
        r
    }

    /// The point's own `results.json` and `report.html`: its window, as `report` reads a run.
    pub(super) fn write_point_files(&mut self, w: &Window, results: &[CheckResult]) {
        if let Err(e) = folder::write_results(&w.dir, results) {
            self.line(&format!("note: cannot write the point's results.json: {e}"));
        }
        let mut inputs = self.report_inputs(Some(w));
        inputs.extra_results.clear();
        inputs.title = Some(format!(
            "{} (point {})",
            self.inputs.title.as_deref().unwrap_or("sweep"),
            w.dir.file_name().unwrap_or_default().to_string_lossy()
        ));
        if let Err(e) = Report::build(inputs).write(&w.dir.join(folder::REPORT)) {
            self.line(&format!("note: cannot write the point's report: {e}"));
        }
    }

    /// The findings across the points, then the table.
    pub(super) fn print_sweep(&self, sweep: &Sweep) {
        self.line("== sweep: the points together");
        for f in &sweep.findings {
            self.line(&format!("- {}", f.message));
        }
        for l in sweep::table(sweep) {
            self.line(&l);
        }
    }

    /// Whether the server this run starts gets its development endpoints (vLLM's
    /// `VLLM_SERVER_DEV_MODE=1`), which the cache reset between a sweep's points needs. They
    /// also serve `/collective_rpc` (a method call on every worker), `/sleep` and
    /// `/server_info`: only for a server that listens on loopback alone, or on the user's word
    /// (`--allow-dev-endpoints`).
    pub(super) fn dev_endpoints(&self, argv: &[String]) -> DevEndpoints {
        let wanted = self
            .inputs
            .sweep
            .as_ref()
            .is_some_and(|s| s.between == Between::ResetCache)
            && self.engine() == Engine::Vllm;
        if !wanted {
            return DevEndpoints::NotNeeded;
        }
        if inferlint_core::url::listens_on_loopback_only(argv) {
            DevEndpoints::On("it listens on loopback alone")
        } else if self.inputs.allow_dev_endpoints {
            DevEndpoints::On("--allow-dev-endpoints")
        } else {
            DevEndpoints::Refused
        }
    }
}

/// Whether the server started gets its development endpoints, and why.
pub(super) enum DevEndpoints {
    NotNeeded,
    On(&'static str),
    Refused,
}

/// What the line says is done between points.
fn between_words(b: Between) -> &'static str {
    match b {
        Between::ResetCache => "reset-cache (the prefix cache, through the engine's endpoint)",
        Between::Restart => {
            "restart (the server stopped and started anew; T4 and T11 compare its boots)"
        }
        Between::Nothing => "nothing (each point sees the cache the earlier ones filled)",
    }
}

/// Where a point stands in its sweep, and what happened around its window.
struct PointAt<'a> {
    index: usize,
    planned: Planned<'a>,
    folder: &'a str,
    reset: Option<Reset>,
    interrupted: bool,
    timings: PointTimings,
    server: Option<PointServer>,
}

impl PointAt<'_> {
    /// The point's record: its window's verdicts and figures.
    fn point(self, s: &Sweeping, w: &Window, results: Vec<CheckResult>) -> Point {
        let intent = inferlint_core::load::intent(&w.load);
        Point {
            index: self.index,
            label: s.plan.label(self.planned),
            value: self.planned.value.to_string(),
            repeat: self.planned.repeat,
            folder: format!("points/{}", self.folder),
            asked_concurrency: w.requested,
            asked_rate: intent.request_rate,
            prompts: PromptsKey::of(&intent),
            reset: self.reset,
            figures: Figures::of(w.bench.as_ref(), &results),
            results,
            load_exit: w.exit,
            interrupted: self.interrupted,
            timings: self.timings,
            server: self.server,
        }
    }
}
