//! GuideLLM's own sweep (docs/design/sweeps.md#guidellms-own-sweep): one process ran every
//! point, its report gives each point's span, and the recording's rows around each span stand
//! for the snapshots a point of its own process would have had. The points are then judged as
//! AIPerf's own points are (`script_sweep.rs`).

use std::time::{Duration, SystemTime};

use inferlint_core::load::{self, LoadTool};
use inferlint_core::sweep::guidellm::{bounds, guidellm_points, row_snapshot};

use super::window::Window;
use super::Run;
use crate::script_points::{OwnPoint, ScriptPoint};

impl Run {
    /// Fills the window's points from a GuideLLM report of two benchmarks or more; leaves them
    /// as they are for any other load.
    pub(super) fn guidellm_own_points(&mut self, w: &mut Window) {
        if load::load_tool(&w.load) != Some(LoadTool::Guidellm) || !w.script_points.is_empty() {
            return;
        }
        let Some(path) = w.bench_path.clone() else {
            return;
        };
        let points = match guidellm_points(&path) {
            Ok(p) if p.len() >= 2 => p,
            Ok(_) => return,
            Err(e) => {
                self.line(&format!(
                    "note: cannot split the GuideLLM report into points: {e}"
                ));
                return;
            }
        };
        let engine = self.engine();
        let mut out = Vec::with_capacity(points.len());
        for (k, p) in points.iter().enumerate() {
            let (before, after, unbounded) =
                match w.series.as_ref().map(|s| (s, bounds(s, &points, k))) {
                    Some((s, Ok((first, last)))) => (
                        Some(row_snapshot(first, engine, &s.source)),
                        Some(row_snapshot(last, engine, &s.source)),
                        None,
                    ),
                    Some((_, Err(why))) => (None, None, Some(why)),
                    None => (
                        None,
                        None,
                        Some("the run has no usable recording".to_string()),
                    ),
                };
            out.push(ScriptPoint {
                argv: w.load.clone(),
                before,
                after,
                seen: SystemTime::UNIX_EPOCH + Duration::from_secs_f64(p.start.max(0.0)),
                repeat: None,
                own: Some(OwnPoint {
                    label: p.label.clone(),
                    bench: p.result.clone(),
                    bench_path: path.clone(),
                    requested: p
                        .streams
                        .filter(|n| *n >= 1.0 && n.fract() == 0.0)
                        .map(|n| n as u64),
                    unbounded,
                }),
            });
        }
        w.script_points = out;
    }
}
