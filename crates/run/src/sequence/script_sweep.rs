//! A sweep written as a loop (docs/design/sweeps.md#a-sweep-written-as-a-loop): the load is a
//! script that ran two or more load-tool processes; each is a point, judged as a window of its
//! own from the counters around it, its own command, the recording's slice and the result file
//! it wrote, then the points together, as `run --sweep` judges its own.

use std::path::PathBuf;
use std::time::SystemTime;

use inferlint_core::bench::BenchResult;
use inferlint_core::checks::gaps::Gaps;
use inferlint_core::load::{self, intent};
use inferlint_core::series::Series;
use inferlint_core::sweep::{self, Between, Figures, Point, PointTimings, PromptsKey, Sweep};
use inferlint_core::verdict;

use super::sweep::SWEEP_JSON;
use super::window::Window;
use super::Run;
use crate::folder;
use crate::script_points::ScriptPoint;

impl Run {
    /// The points of a script load, judged; None when it ran fewer than two load tools. Each
    /// point gets a folder as `run --sweep`'s do (`points/NN-…/`: its snapshots, `results.json`,
    /// `report.html`; its readings stay in the run's recording).
    pub(super) fn script_sweep(&mut self, w: &Window) -> Option<Sweep> {
        if w.script_points.len() < 2 {
            return None;
        }
        let n = w.script_points.len();
        let own = self.runs_its_own_sweep(w);
        self.line(&if own {
            format!(
                "== the load tool ran a sweep of its own, {n} points: each is judged on its own"
            )
        } else {
            format!("== the load ran {n} load-tool processes: each is a point, judged on its own")
        });
        let argvs: Vec<Vec<String>> = w.script_points.iter().map(|p| p.argv.clone()).collect();
        let labels: Vec<String> = sweep::script_labels(&argvs)
            .into_iter()
            .zip(&w.script_points)
            .map(|(l, p)| p.own.as_ref().map_or(l, |o| o.label.clone()))
            .collect();
        let mut points = Vec::new();
        let from = if own { "the load tool" } else { "the script" };
        for (k, (p, label)) in w.script_points.iter().zip(labels).enumerate() {
            let index = k + 1;
            let label = match p.repeat {
                Some(t) => format!("{label} (trial {t})"),
                None => label,
            };
            self.line(&format!("== point {index} of {n} (from {from}): {label}"));
            if let Some(why) = p.own.as_ref().and_then(|o| o.unbounded.as_ref()) {
                self.line(&format!(
                    "note: the recording cannot bound this point: {why}"
                ));
            }
            let folder = sweep::point_folder(index, &label);
            let pw = self.script_window(w, p, self.out.join("points").join(&folder));
            let load = intent(&pw.load);
            let results =
                verdict::window(&pw.facts(self.boot.facts.as_ref(), &load, self.engine()));
            for r in &results {
                self.line(&r.line());
            }
            self.write_point_files(&pw, &results);
            points.push(Point {
                index,
                value: label
                    .split_once(' ')
                    .map_or(label.clone(), |(_, v)| v.to_string()),
                label,
                repeat: p.repeat,
                folder: format!("points/{folder}"),
                asked_concurrency: pw.requested,
                asked_rate: load.request_rate,
                prompts: PromptsKey::of(&load),
                reset: None,
                figures: Figures::of(pw.bench.as_ref(), &results),
                results,
                load_exit: None,
                interrupted: w.exit.is_none() && self.interrupt.interrupted(),
                // Its load's time and the readings around it cannot be told apart.
                timings: PointTimings::default(),
                server: self.point_server(),
            });
        }
        let option = if own { "(load tool)" } else { "(script)" };
        let sweep = Sweep::new(option, Between::Nothing, points);
        if let Err(e) = folder::write_atomic(&self.out.join(SWEEP_JSON), sweep.to_json().as_bytes())
        {
            self.line(&format!("note: cannot write {SWEEP_JSON}: {e}"));
        }
        self.record.sweep = Some(SWEEP_JSON.to_string());
        self.save_record();
        Some(sweep)
    }

    /// One point as a window of its own, in `dir` (made, its snapshots saved there): the
    /// readings around it, the recording's slice, the result file its command named.
    fn script_window(&mut self, w: &Window, p: &ScriptPoint, dir: PathBuf) -> Window {
        if let Err(e) = std::fs::create_dir_all(&dir) {
            self.line(&format!("note: cannot create {}: {e}", dir.display()));
        }
        for (name, snap) in [(folder::BEFORE, &p.before), (folder::AFTER, &p.after)] {
            if let Some(Err(e)) = snap.as_ref().map(|s| s.save(&dir.join(name))) {
                self.line(&format!("note: cannot write the point's {name}: {e}"));
            }
        }
        let bench = match &p.own {
            Some(o) => Some((o.bench.clone(), o.bench_path.clone())),
            None => result_of(p),
        };
        Window {
            dir,
            load: p.argv.clone(),
            before: p.before.clone(),
            after: p.after.clone(),
            series: slice(w.series.as_ref(), p),
            gaps: Gaps {
                snapshots: (p.before.is_none() || p.after.is_none())
                    .then(|| "a snapshot around the point is missing".to_string()),
                ..Gaps::default()
            },
            requested: p
                .own
                .as_ref()
                .map_or_else(|| load::requested_concurrency(&p.argv), |o| o.requested),
            bench_path: bench.as_ref().map(|(_, path)| path.clone()),
            bench: bench.map(|(b, _)| b),
            ..Window::default()
        }
    }
}

/// The recording's readings between a point's two snapshots.
fn slice(series: Option<&Series>, p: &ScriptPoint) -> Option<Series> {
    let s = series?;
    let from = p.before.as_ref()?.t_mono_ns?;
    let to = p.after.as_ref()?.t_mono_ns?;
    let samples = s
        .samples
        .iter()
        .filter(|x| x.t_mono_ns().is_some_and(|t| t >= from && t <= to))
        .cloned()
        .collect();
    let mut window = s.with_samples(samples);
    window.skipped_lines = 0;
    Some(window)
}

/// The result file a point's command named and wrote while it ran (modified between its start
/// and its end), read in its client's format.
fn result_of(p: &ScriptPoint) -> Option<(BenchResult, PathBuf)> {
    let dir = std::env::current_dir().ok()?;
    let rewrite = load::rewrite(&p.argv, &dir);
    // Only a command that names its result itself: the rewrite adds nothing to it.
    if rewrite.argv.len() != p.argv.len() {
        return None;
    }
    let path = load::find_result(&rewrite.result, p.seen)?;
    let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
    let ended = p
        .after
        .as_ref()
        .map(|s| SystemTime::UNIX_EPOCH + std::time::Duration::from_secs_f64(s.t_wall.max(0.0)))?;
    if modified > ended + std::time::Duration::from_secs(1) {
        return None;
    }
    let r = super::finish::read_result(&path, rewrite.tool, &rewrite.result).ok()?;
    Some((r, path))
}
