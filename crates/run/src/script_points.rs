//! A sweep written as a loop (docs/design/sweeps.md#a-sweep-written-as-a-loop): the load is a
//! script, and each load-tool process it starts (`vllm bench serve`, SGLang's bench_serving,
//! AIPerf, GuideLLM, …) is a point, bounded by the server's counters just before it appeared and
//! just after it was gone. Read at each of the recorder's samples, from the load tree's members.
//! A load tool that runs its own sweep a process per point (AIPerf) is followed the same way:
//! its point processes are the points (docs/design/sweeps.md#sweeps-a-load-tool-runs-itself).

use std::time::SystemTime;

use inferlint_core::load::{load_tool, LoadTool};
use inferlint_core::snapshot::Snapshot;
use inferlint_core::sweep::tool;
use inferlint_supervisor::ProcId;

/// One load-tool process the script ran, and the server's counters around it.
#[derive(Clone, Debug)]
pub struct ScriptPoint {
    pub argv: Vec<String>,
    /// The last reading before it was seen (None: it was there from the first).
    pub before: Option<Snapshot>,
    /// The first reading after it was gone (None until then; the run's after snapshot for one
    /// still running when the load ended).
    pub after: Option<Snapshot>,
    /// When it was first seen.
    pub seen: SystemTime,
    /// Which trial of its value it is, where the load tool repeats each value itself.
    pub repeat: Option<u32>,
    /// What the load tool's own report says of the point, where one process ran them all
    /// (GuideLLM); None for a point that is a process of its own.
    pub own: Option<OwnPoint>,
}

/// A point of a sweep a load tool ran in one process, as its report gives it.
#[derive(Clone, Debug)]
pub struct OwnPoint {
    /// The tool's own name for it (`constant@15.29`).
    pub label: String,
    /// The point's own counts, and the report they come from.
    pub bench: inferlint_core::bench::BenchResult,
    pub bench_path: std::path::PathBuf,
    /// The concurrency the point ran at, where its strategy fixes one.
    pub requested: Option<u64>,
    /// Why the recording cannot bound the point, where it cannot.
    pub unbounded: Option<String>,
}

/// A member of the load's tree, as the tracker reads it.
pub struct Member {
    pub id: ProcId,
    pub ppid: i32,
    pub argv: Vec<String>,
}

/// The points seen so far.
#[derive(Default)]
pub struct ScriptPoints {
    /// The load's command, where the load is a tool that runs its own points as processes.
    tool_load: Option<Vec<String>>,
    open: Vec<(ProcId, ScriptPoint)>,
    ending: Vec<ScriptPoint>,
    done: Vec<ScriptPoint>,
    last: Option<Snapshot>,
}

impl ScriptPoints {
    /// The points of the load `argv`: a script's load-tool processes, or the point processes
    /// of a load tool that runs its own sweep (AIPerf).
    pub fn of_load(argv: &[String]) -> ScriptPoints {
        ScriptPoints {
            tool_load: (load_tool(argv) == Some(LoadTool::Aiperf)).then(|| argv.to_vec()),
            ..ScriptPoints::default()
        }
    }

    /// Whether the load's processes are followed as points: a script, or a tool that runs its
    /// own sweep a process per point.
    pub fn followed(argv: &[String]) -> bool {
        matches!(load_tool(argv), None | Some(LoadTool::Aiperf))
    }

    /// What member `argv` runs as a point (its command as the user would run it alone, and
    /// its trial), or None when it is no point.
    fn point_of(&self, argv: &[String]) -> Option<(Vec<String>, Option<u32>)> {
        match &self.tool_load {
            None => load_tool(argv).map(|_| (argv.to_vec(), None)),
            Some(load) => {
                let cfg = tool::point_config(argv)?;
                // A configuration that cannot be read leaves the process's own command: the
                // point is still a window, judged on what can be told.
                Some(match tool::aiperf_point(load, &cfg) {
                    Ok(p) => (p.argv, p.repeat),
                    Err(_) => (argv.to_vec(), None),
                })
            }
        }
    }

    /// One reading: `snap` was scraped just before the tree's `members` were read. A point
    /// seen new begins at the reading before (it was not there then); one seen gone ends at the
    /// reading after (the server counts a request a moment after its client has its answer).
    /// Where one point ends and the next begins between the same readings (a loop with no
    /// pause), the two meet at one reading instead, so that no count is in both windows: at this
    /// reading when the one was seen gone here, at the one before when it was seen gone there
    /// (docs/design/sweeps.md#a-sweep-written-as-a-loop).
    pub fn sample(&mut self, members: &[Member], snap: Snapshot) {
        let (gone, still): (Vec<_>, Vec<_>) = std::mem::take(&mut self.open)
            .into_iter()
            .partition(|(id, _)| !members.iter().any(|m| m.id == *id));
        self.open = still;
        let mut new = Vec::new();
        for m in members {
            let known = self.open.iter().any(|(id, _)| *id == m.id)
                || new.iter().any(|(id, _)| *id == m.id);
            // A load tool's own children (workers it forks) are part of its point.
            let child_of_point = self.open.iter().any(|(id, _)| id.pid == m.ppid);
            if known || child_of_point {
                continue;
            }
            if let Some(point) = self.point_of(&m.argv) {
                new.push((m.id, point));
            }
        }
        let starting = !new.is_empty();
        // Seen gone at the previous reading: ends here, or where the next one begins.
        let ended_before = !self.ending.is_empty();
        for mut p in self.ending.drain(..) {
            p.after = if starting {
                self.last.clone()
            } else {
                Some(snap.clone())
            };
            self.done.push(p);
        }
        let ended_here = !gone.is_empty();
        for (_, mut p) in gone {
            if starting {
                p.after = Some(snap.clone());
                self.done.push(p);
            } else {
                self.ending.push(p);
            }
        }
        let before = if ended_here && !ended_before {
            Some(snap.clone())
        } else {
            self.last.clone()
        };
        for (id, (argv, repeat)) in new {
            self.open.push((
                id,
                ScriptPoint {
                    argv,
                    before: before.clone(),
                    after: None,
                    seen: SystemTime::now(),
                    repeat,
                    own: None,
                },
            ));
        }
        self.last = Some(snap);
    }

    /// Every point, in the order they started; one not yet closed ends at `after` (None: the
    /// run's after snapshot, taken once the load was over, closes it).
    pub fn finish(mut self, after: Option<&Snapshot>) -> Vec<ScriptPoint> {
        let open = std::mem::take(&mut self.open).into_iter().map(|(_, p)| p);
        for mut p in self.ending.drain(..).chain(open).collect::<Vec<_>>() {
            p.after = after.cloned();
            self.done.push(p);
        }
        self.done.sort_by_key(|p| p.seen);
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(t: f64) -> Snapshot {
        let at = inferlint_core::clock::ClockReading::at(t);
        Snapshot::from_reading("x", format!("vllm:generation_tokens_total {t}\n"), at, at).unwrap()
    }

    fn member(pid: i32, ppid: i32, argv: &str) -> Member {
        Member {
            id: ProcId { pid, starttime: 1 },
            ppid,
            argv: shlex::split(argv).unwrap(),
        }
    }

    #[test]
    fn each_load_tool_the_script_starts_is_a_point_between_the_readings_around_it() {
        let sh = member(
            10,
            1,
            "sh -c 'for c in 1 2; do vllm bench serve --max-concurrency $c; done'",
        );
        let mut p = ScriptPoints::default();
        p.sample(&[sh.clone_member()], snap(1.0));
        let first = member(11, 10, "vllm bench serve --max-concurrency 1");
        p.sample(&[sh.clone_member(), first.clone_member()], snap(2.0));
        // Its worker is part of it, not a point of its own.
        let worker = member(12, 11, "vllm bench serve --max-concurrency 1");
        p.sample(
            &[sh.clone_member(), first.clone_member(), worker],
            snap(3.0),
        );
        p.sample(&[sh.clone_member()], snap(4.0));
        let second = member(13, 10, "vllm bench serve --max-concurrency 2");
        p.sample(&[sh.clone_member(), second.clone_member()], snap(5.0));
        p.sample(&[sh.clone_member()], snap(6.0));
        let points = p.finish(Some(&snap(9.0)));
        assert_eq!(points.len(), 2);
        let at = |s: &Option<Snapshot>| s.as_ref().map(|s| s.t_wall);
        // Gone at 4 and the next seen at 5: the two meet at 4, no count in both.
        assert_eq!(
            (at(&points[0].before), at(&points[0].after)),
            (Some(1.0), Some(4.0))
        );
        assert_eq!(points[0].argv.last().map(String::as_str), Some("1"));
        // Gone at the last reading: closed by the run's after snapshot.
        assert_eq!(
            (at(&points[1].before), at(&points[1].after)),
            (Some(4.0), Some(9.0))
        );
        // One still running when the load was over is closed by the run's after snapshot.
        let mut p = ScriptPoints::default();
        p.sample(&[sh.clone_member()], snap(1.0));
        p.sample(&[sh.clone_member(), second.clone_member()], snap(2.0));
        let points = p.finish(Some(&snap(9.0)));
        assert_eq!(
            (at(&points[0].before), at(&points[0].after)),
            (Some(1.0), Some(9.0))
        );
    }

    #[test]
    fn a_point_that_ends_where_the_next_begins_shares_no_reading_interval() {
        let sh = member(10, 1, "sh -c 'for c in 1 2; do vllm bench serve; done'");
        let first = member(11, 10, "vllm bench serve --max-concurrency 1");
        let second = member(13, 10, "vllm bench serve --max-concurrency 2");
        let mut p = ScriptPoints::default();
        p.sample(&[sh.clone_member()], snap(1.0));
        p.sample(&[sh.clone_member(), first.clone_member()], snap(2.0));
        p.sample(&[sh.clone_member(), first.clone_member()], snap(3.0));
        // The first gone and the second there at the same reading: they meet at it.
        p.sample(&[sh.clone_member(), second.clone_member()], snap(4.0));
        p.sample(&[sh.clone_member()], snap(5.0));
        let points = p.finish(Some(&snap(9.0)));
        let at = |s: &Option<Snapshot>| s.as_ref().map(|s| s.t_wall);
        assert_eq!(
            (at(&points[0].before), at(&points[0].after)),
            (Some(1.0), Some(4.0))
        );
        assert_eq!(
            (at(&points[1].before), at(&points[1].after)),
            (Some(4.0), Some(9.0))
        );
    }

    impl Member {
        fn clone_member(&self) -> Member {
            Member {
                id: self.id,
                ppid: self.ppid,
                argv: self.argv.clone(),
            }
        }
    }
}
