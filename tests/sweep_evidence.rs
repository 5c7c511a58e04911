//! Sweeps on the recordings of the real vLLM 0.32 CPU build (tests/fixtures/vllm-0.32-cpu/sweep/):
//! one seeded load at `--max-concurrency` 2, 4 and 16 on one server, without and with vLLM's own
//! cache reset between points. Each point's verdicts are decided again from its own files, the
//! points are judged together again by core, and a one-number mutation of point 2's counters
//! flips its cache finding alone (docs/design/evidence.md#mutations). Three runs of one point
//! (`--repeat 3`), without and with the reset, disagree and agree. AIPerf's own sweep
//! (`aiperf-own`) is judged point by point from each point's files.

use std::path::Path;

use inferlint_core::bench;
use inferlint_core::bench::BenchResult;
use inferlint_core::bootlog;
use inferlint_core::checks::{gaps::Gaps, Facts};
use inferlint_core::load::{intent, requested_concurrency};
use inferlint_core::series::Series;
use inferlint_core::snapshot::Snapshot;
use inferlint_core::sweep::{tool, FindingKind, Point, Sweep};
use inferlint_core::testkit::evidence;
use inferlint_core::verdict;
use inferlint_core::{CheckResult, Engine, Status, Tripwire};

const SWEEPS: &str = "vllm-0.32-cpu/sweep";

fn recorded(case: &str) -> Option<(std::path::PathBuf, Sweep)> {
    let dir = evidence(&format!("{SWEEPS}/{case}"))?;
    let text = std::fs::read_to_string(dir.join("sweep.json")).unwrap();
    Some((dir, serde_json::from_str(&text).unwrap()))
}

/// A point's window verdicts decided again from its files (its snapshots, recording, result
/// file), the run's boot log and the point's own load command.
fn judge(dir: &Path, p: &Point, after: Option<Snapshot>) -> Vec<CheckResult> {
    let folder = dir.join(&p.folder);
    let (before, after) = snapshots(&folder, after);
    let mut load = run_load(dir);
    // The point's command: the sweep's option set to its value, as the run set it.
    let at = load.iter().position(|w| w == "--max-concurrency").unwrap();
    load[at + 1].clone_from(&p.value);
    decide(
        dir,
        &PointFacts {
            before,
            after,
            series: Series::load(&folder.join("run.series.jsonl")).unwrap(),
            result: bench::load(&folder.join("bench.json")).unwrap(),
            untimed: std::fs::read_to_string(folder.join("load.log"))
                .map_or(0, |t| bench::untimed_requests(&t)),
            load,
        },
    )
}

/// What a point's window verdicts are decided on, read from its files.
struct PointFacts {
    before: Snapshot,
    after: Snapshot,
    series: Series,
    result: BenchResult,
    /// The point's own command.
    load: Vec<String>,
    untimed: u64,
}

/// The point's snapshots in `folder`, `after` in place of its own where given.
fn snapshots(folder: &Path, after: Option<Snapshot>) -> (Snapshot, Snapshot) {
    let snap = |name: &str| Snapshot::load(&folder.join(name)).unwrap();
    let after = after.unwrap_or_else(|| snap("after.snapshot.json"));
    (snap("before.snapshot.json"), after)
}

/// The run's load command, as run.json holds it.
fn run_load(dir: &Path) -> Vec<String> {
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    shlex::split(run["load_command"].as_str().unwrap()).unwrap()
}

/// A point's window verdicts, decided by core with the run's boot log.
fn decide(dir: &Path, f: &PointFacts) -> Vec<CheckResult> {
    let boot = bootlog::parse_file(&dir.join("boot.log"), Some(Engine::Vllm)).unwrap();
    let gaps = Gaps::default();
    verdict::window(&verdict::Window {
        facts: Facts {
            before: Some(&f.before),
            after: Some(&f.after),
            series: Some(&f.series),
            boot: Some(&boot),
            requested: requested_concurrency(&f.load),
            bench: Some(&f.result),
            untimed_requests: f.untimed,
            load: Some(&intent(&f.load)),
            observed: None,
            engine: Engine::Vllm,
        },
        gaps: &gaps,
    })
}

fn status(results: &[CheckResult], t: Tripwire) -> Option<Status> {
    results.iter().find(|r| r.tripwire == t).map(|r| r.status)
}

/// Each point's recorded status of `t`, in point order.
fn statuses(sweep: &Sweep, t: Tripwire) -> Vec<Option<Status>> {
    sweep.points.iter().map(|p| status(&p.results, t)).collect()
}

/// The verdicts decided again from a point's files are the ones the run recorded for it.
fn same_as_recorded(p: &Point, again: &[CheckResult], tripwires: &[Tripwire]) {
    for &t in tripwires {
        assert_eq!(
            status(again, t),
            status(&p.results, t),
            "point {} {t}",
            p.index
        );
    }
}

fn inherited(s: &Sweep) -> Vec<(usize, Option<usize>)> {
    s.findings
        .iter()
        .filter(|f| f.kind == FindingKind::InheritedCache)
        .map(|f| (f.point, f.names))
        .collect()
}

#[test]
fn without_a_reset_the_later_points_name_the_first_and_the_knee_is_the_third() {
    let Some((dir, sweep)) = recorded("nothing") else {
        return;
    };
    // Each point's T16 and T8, decided again from its files, are the recorded ones.
    for p in &sweep.points {
        same_as_recorded(p, &judge(&dir, p, None), &[Tripwire::T8, Tripwire::T16]);
    }
    assert_eq!(
        statuses(&sweep, Tripwire::T16),
        [Some(Status::Pass), Some(Status::Fail), Some(Status::Fail)]
    );
    // Judged together again by core: the recorded findings.
    let again = Sweep::new(&sweep.option, sweep.between, sweep.points.clone());
    assert_eq!(again.findings, sweep.findings);
    assert_eq!(inherited(&again), [(2, Some(1)), (3, Some(1))]);
    assert_eq!(again.knee, Some(3));
}

#[test]
fn a_mutation_of_point_2s_cache_hits_clears_its_finding_alone() {
    let Some((dir, sweep)) = recorded("nothing") else {
        return;
    };
    let p2 = &sweep.points[1];
    let folder = dir.join(&p2.folder);
    let before = Snapshot::load(&folder.join("before.snapshot.json")).unwrap();
    let after = Snapshot::load(&folder.join("after.snapshot.json")).unwrap();
    // The hits counter after point 2 set to its value before: no prompt token from the cache.
    let hits = |s: &Snapshot| {
        s.text
            .lines()
            .find(|l| l.starts_with("vllm:prefix_cache_hits_total{"))
            .unwrap()
            .to_string()
    };
    let mutated = after.text.replacen(&hits(&after), &hits(&before), 1);
    let mutated = Snapshot::from_text(&mutated, &after.source).unwrap();
    let results = judge(&dir, p2, Some(mutated));
    assert_eq!(status(&results, Tripwire::T16), Some(Status::Pass));
    let mut points = sweep.points.clone();
    points[1].figures = inferlint_core::sweep::Figures::of(
        Some(&bench::load(&folder.join("bench.json")).unwrap()),
        &results,
    );
    points[1].results = results;
    let again = Sweep::new(&sweep.option, sweep.between, points);
    assert_eq!(inherited(&again), [(3, Some(1))], "point 3's finding stays");
}

#[test]
fn with_vllms_reset_no_point_inherits_a_cache() {
    let Some((dir, sweep)) = recorded("reset-cache") else {
        return;
    };
    let resets: Vec<Option<&str>> = sweep
        .points
        .iter()
        .map(|p| {
            p.reset.as_ref().map(|r| {
                if *r == inferlint_core::sweep::Reset::Done {
                    "done"
                } else {
                    "not"
                }
            })
        })
        .collect();
    assert_eq!(resets, [None, Some("done"), Some("done")]);
    for p in &sweep.points {
        let again = judge(&dir, p, None);
        assert_eq!(
            status(&again, Tripwire::T16),
            Some(Status::Pass),
            "point {}",
            p.index
        );
    }
    let again = Sweep::new(&sweep.option, sweep.between, sweep.points.clone());
    assert!(inherited(&again).is_empty(), "{:?}", again.findings);
    assert_eq!(again.knee, Some(3));
    // The server said its development endpoints were on, and vLLM logged why.
    let boot = std::fs::read_to_string(dir.join("boot.log")).unwrap();
    assert!(boot.contains("SECURITY WARNING: Development endpoints are enabled!"));
}

/// The runs of a `--repeat` sweep, each point's figures read again from its own result file and
/// its verdicts decided again from its files, judged together again by core.
fn repeats_again(dir: &Path, sweep: &Sweep) -> Sweep {
    let points = sweep
        .points
        .iter()
        .map(|p| {
            let results = judge(dir, p, None);
            let bench = bench::load(&dir.join(&p.folder).join("bench.json")).unwrap();
            let mut q = p.clone();
            q.figures = inferlint_core::sweep::Figures::of(Some(&bench), &results);
            q.results = results;
            q
        })
        .collect();
    Sweep::new(&sweep.option, sweep.between, points)
}

fn spread(s: &Sweep) -> Vec<(usize, Option<usize>)> {
    s.findings
        .iter()
        .filter(|f| f.kind == FindingKind::Spread)
        .map(|f| (f.point, f.names))
        .collect()
}

#[test]
fn repeats_with_nothing_between_them_disagree_and_name_the_first() {
    let Some((dir, sweep)) = recorded("repeat-nothing") else {
        return;
    };
    assert_eq!(
        sweep.points.iter().map(|p| p.repeat).collect::<Vec<_>>(),
        [Some(1), Some(2), Some(3)]
    );
    let again = repeats_again(&dir, &sweep);
    assert_eq!(again.findings, sweep.findings);
    assert_eq!(inherited(&again), [(2, Some(1)), (3, Some(1))]);
    assert_eq!(spread(&again), [(1, None), (2, Some(1)), (3, Some(1))]);
}

#[test]
fn repeats_with_vllms_reset_between_them_agree_until_one_figure_moves() {
    let Some((dir, sweep)) = recorded("repeat-reset-cache") else {
        return;
    };
    let again = repeats_again(&dir, &sweep);
    assert!(inherited(&again).is_empty(), "{:?}", again.findings);
    assert!(spread(&again).is_empty(), "{:?}", again.findings);
    // One number changed: the third run's output tokens/s half as much again.
    let mut points = again.points.clone();
    let tok_s = points[2].figures.output_tokens_per_s.unwrap();
    points[2].figures.output_tokens_per_s = Some(tok_s * 1.5);
    let moved = Sweep::new(&sweep.option, sweep.between, points);
    assert_eq!(spread(&moved), [(1, None), (2, Some(1)), (3, Some(1))]);
}

/// One point of AIPerf's own sweep (`aiperf-own`: `--concurrency 2,16` on the real vLLM),
/// decided again as the run decided it: the load's command with the point's `run_config.json`
/// applied, the readings around its process, the run's recording between them, and its own
/// `profile_export_aiperf.json`.
fn aiperf_point(dir: &Path, p: &Point, after: Option<Snapshot>) -> Vec<CheckResult> {
    let (before, after) = snapshots(&dir.join(&p.folder), after);
    let art = dir.join("aiperf-art").join(format!(
        "concurrency_{}",
        p.label.rsplit(' ').next().unwrap()
    ));
    let point = tool::aiperf_point(&run_load(dir), &art.join("run_config.json")).unwrap();
    let all = Series::load(&dir.join("run.series.jsonl")).unwrap();
    // The run sliced by the monotonic clock, which saved snapshots keep as wall time.
    let (from, to) = (before.t_wall, after.t_wall);
    let series = all.with_samples(
        all.samples
            .iter()
            .filter(|s| s.t_wall >= from && s.t_wall <= to)
            .cloned()
            .collect(),
    );
    decide(
        dir,
        &PointFacts {
            before,
            after,
            series,
            result: bench::foreign::load_aiperf(&art.join("profile_export_aiperf.json")).unwrap(),
            load: point.argv,
            untimed: 0,
        },
    )
}

#[test]
fn aiperfs_own_sweep_is_judged_point_by_point_from_its_files() {
    let Some((dir, sweep)) = recorded("aiperf-own") else {
        return;
    };
    assert_eq!(sweep.option, "(load tool)");
    let decided = [Tripwire::T8, Tripwire::T15, Tripwire::T16, Tripwire::T17];
    for p in &sweep.points {
        same_as_recorded(p, &aiperf_point(&dir, p, None), &decided);
    }
    assert_eq!(
        statuses(&sweep, Tripwire::T8),
        [Some(Status::Pass), Some(Status::Fail)]
    );
    // Each point's requests are its own: T15 agrees on the count at both (AIPerf counts a few
    // output tokens fewer than the server: a warning, no blame on other traffic).
    for p in &sweep.points {
        let t15 = p
            .results
            .iter()
            .find(|r| r.tripwire == Tripwire::T15)
            .unwrap();
        assert!(t15.message.starts_with("requests agree"), "{}", t15.message);
    }
    assert_eq!(
        Sweep::new(&sweep.option, sweep.between, sweep.points.clone()).knee,
        Some(2)
    );
}

#[test]
fn a_mutation_of_one_aiperf_points_counts_flips_that_point_alone() {
    let Some((dir, sweep)) = recorded("aiperf-own") else {
        return;
    };
    let p1 = &sweep.points[0];
    let after = Snapshot::load(&dir.join(&p1.folder).join("after.snapshot.json")).unwrap();
    // Two more requests finished by the server during point 1 than AIPerf sent in it.
    let line = after
        .text
        .lines()
        .find(|l| {
            l.starts_with("vllm:request_success_total{") && l.contains("finished_reason=\"length\"")
        })
        .unwrap()
        .to_string();
    let (name, value) = line.rsplit_once(' ').unwrap();
    let more = format!("{name} {}", value.parse::<f64>().unwrap() + 2.0);
    let mutated =
        Snapshot::from_text(&after.text.replacen(&line, &more, 1), &after.source).unwrap();
    let t15 = |r: &[CheckResult]| status(r, Tripwire::T15);
    assert_eq!(
        t15(&aiperf_point(&dir, p1, Some(mutated))),
        Some(Status::Fail)
    );
    let p2 = &sweep.points[1];
    assert_eq!(
        t15(&aiperf_point(&dir, p2, None)),
        t15(&p2.results),
        "point 2 unchanged"
    );
}
