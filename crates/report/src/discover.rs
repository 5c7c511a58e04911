//! Finding a run's files in its folder (docs/design/report.md#finding-a-runs-files) and reading
//! them into report [`Inputs`]. Files named by the user win; the rest are found by name.

use std::path::{Path, PathBuf};

use inferlint_core::bench::{self, BenchResult};
use inferlint_core::checks::gaps::Gaps;
use inferlint_core::engine::Engine;
use inferlint_core::series::Series;
use inferlint_core::snapshot::{ReadError, Snapshot};

use super::{BootLog, Inputs};

/// The files a report reads. Paths are as given or found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunFiles {
    pub folder: Option<PathBuf>,
    pub boot_logs: Vec<PathBuf>,
    pub before: Option<PathBuf>,
    pub after: Option<PathBuf>,
    pub series: Option<PathBuf>,
    pub bench: Option<PathBuf>,
    /// The load tool's output, for its untimed requests (T15).
    pub load_log: Option<PathBuf>,
    /// The folder is a run folder whose load was started (`run.json` and `load.log` are
    /// there): a snapshot or recording missing from it is a run check's "can't tell".
    pub load_started: bool,
}

/// Why a run's files could not be found or read.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    #[error("{0} is not a folder")]
    NotAFolder(String),
    #[error("give a run folder, or -o and the files to read")]
    NothingGiven,
    #[error("no run files in {0} (boot.log, *.snapshot.json, *.series.jsonl)")]
    NoRunFiles(String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Read(#[from] ReadError),
}

fn names_in(folder: &Path) -> Result<Vec<String>, DiscoverError> {
    let io = |source| DiscoverError::Io {
        path: folder.display().to_string(),
        source,
    };
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .map_err(io)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    Ok(names)
}

/// `name` if present, else the first name (sorted) matching `pred`.
fn find(names: &[String], exact: &str, pred: impl Fn(&str) -> bool) -> Option<String> {
    if names.iter().any(|n| n == exact) {
        return Some(exact.to_string());
    }
    names.iter().find(|n| pred(n)).cloned()
}

impl RunFiles {
    /// Fills in the files the user did not name from the run folder. With no folder, the given
    /// files are all there is; giving none at all is an error.
    pub fn discover(mut self) -> Result<RunFiles, DiscoverError> {
        let Some(folder) = self.folder.clone() else {
            if self.is_empty() {
                return Err(DiscoverError::NothingGiven);
            }
            return Ok(self);
        };
        if !folder.is_dir() {
            return Err(DiscoverError::NotAFolder(folder.display().to_string()));
        }
        let names = names_in(&folder)?;
        let at = |n: String| folder.join(n);
        if self.boot_logs.is_empty() {
            let log = find(&names, "boot.log", |n| {
                n.contains("boot") && n.ends_with(".log")
            });
            let first = log.as_deref() == Some("boot.log");
            self.boot_logs.extend(log.map(at));
            // A run that restarted its server (a sweep's `--between restart`) logged each later
            // start to `boot-N.log`: every start is the run's, in order.
            if first {
                self.boot_logs
                    .extend(later_starts(&names).into_iter().map(at));
            }
        }
        if self.before.is_none() {
            self.before = find(&names, "before.snapshot.json", |n| {
                n.contains("before") && n.ends_with(".json")
            })
            .map(at);
        }
        if self.after.is_none() {
            self.after = find(&names, "after.snapshot.json", |n| {
                n.contains("after") && n.ends_with(".json")
            })
            .map(at);
        }
        if self.series.is_none() {
            self.series =
                find(&names, "run.series.jsonl", |n| n.ends_with(".series.jsonl")).map(at);
        }
        if self.load_log.is_none() {
            self.load_log = names
                .iter()
                .any(|n| n == "load.log")
                .then(|| at("load.log".into()));
        }
        self.load_started = ["run.json", "load.log"]
            .iter()
            .all(|want| names.iter().any(|n| n == want));
        let found_run_files = !self.boot_logs.is_empty()
            || self.before.is_some()
            || self.after.is_some()
            || self.series.is_some();
        if self.bench.is_none() {
            self.bench = find_result(&folder, &names);
        }
        if !found_run_files {
            return Err(DiscoverError::NoRunFiles(folder.display().to_string()));
        }
        Ok(self)
    }

    fn is_empty(&self) -> bool {
        self.boot_logs.is_empty()
            && self.before.is_none()
            && self.after.is_none()
            && self.series.is_none()
            && self.bench.is_none()
    }

    /// Every input path, to refuse writing the report over one of them.
    pub fn paths(&self) -> Vec<&Path> {
        self.boot_logs
            .iter()
            .chain(&self.before)
            .chain(&self.after)
            .chain(&self.series)
            .chain(&self.bench)
            .chain(&self.load_log)
            .map(PathBuf::as_path)
            .collect()
    }

    /// The file names used, in order log, before, after, series, result ("Made from").
    pub fn sources(&self) -> Vec<String> {
        let labels = inferlint_core::bootlog::log_labels(&self.boot_logs);
        let name = |p: &PathBuf| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.display().to_string())
        };
        labels
            .into_iter()
            .chain(
                [&self.before, &self.after, &self.series, &self.bench]
                    .into_iter()
                    .flatten()
                    .map(name),
            )
            .collect()
    }

    /// Reads every file into report inputs. Errors name the file.
    pub fn load(&self, engine: Option<Engine>) -> Result<Inputs, DiscoverError> {
        let labels = inferlint_core::bootlog::log_labels(&self.boot_logs);
        let mut boot_logs = Vec::new();
        for (p, label) in self.boot_logs.iter().zip(labels) {
            let bytes = std::fs::read(p).map_err(|source| DiscoverError::Io {
                path: p.display().to_string(),
                source,
            })?;
            boot_logs.push(BootLog {
                label,
                text: String::from_utf8_lossy(&bytes).into_owned(),
            });
        }
        let snap = |p: &Option<PathBuf>| p.as_deref().map(Snapshot::load).transpose();
        let load_output = self
            .load_log
            .as_deref()
            .and_then(|p| std::fs::read(p).ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        let untimed = load_output.as_deref().map_or(0, bench::untimed_requests);
        let mut bench_result = self.bench.as_deref().map(bench::load).transpose()?;
        if let (Some(b), Some(text)) = (bench_result.as_mut(), load_output.as_deref()) {
            bench::name_failures(b, text);
        }
        let before = snap(&self.before)?;
        let after = snap(&self.after)?;
        let series = self.series.as_deref().map(Series::load).transpose()?;
        let missing = if self.load_started {
            missing_from_run_folder(before.is_some(), after.is_some(), series.as_ref())
        } else {
            Gaps::default()
        };
        Ok(Inputs {
            boot_logs,
            before,
            after,
            series,
            missing,
            requested: bench_result
                .as_ref()
                .and_then(|b| b.max_concurrency)
                .filter(|m| *m >= 1.0 && m.fract() == 0.0)
                .map(|m| m as u64),
            bench: bench_result,
            sources: self.sources(),
            engine,
            untimed_requests: untimed,
            load: self.folder.as_deref().and_then(recorded_load),
            observed: self.folder.as_deref().and_then(recorded_observation),
            nodes: self
                .folder
                .as_deref()
                .map(recorded_nodes)
                .unwrap_or_default(),
            run_folder: self.folder.as_ref().map(|f| f.display().to_string()),
            ..Inputs::default()
        })
    }
}

/// What the load of a run folder asked for, from the command `run.json` recorded (as given;
/// the command as run differs only in where it saves its result). None without a readable
/// `run.json` or a load command in it.
fn recorded_load(folder: &Path) -> Option<inferlint_core::load::LoadIntent> {
    let text = std::fs::read_to_string(folder.join("run.json")).ok()?;
    let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
    let command = doc.get("load_command")?.as_str()?;
    Some(inferlint_core::load::intent_of_command(command))
}

/// What the run of a run folder saw of its load (`during_load` in `run.json`); None without a
/// readable one. A value that does not read is left out, as a missing one: the checks it feeds
/// say they cannot tell.
fn recorded_observation(folder: &Path) -> Option<inferlint_core::observed::LoadObserved> {
    let text = std::fs::read_to_string(folder.join("run.json")).ok()?;
    let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
    serde_json::from_value(doc.get("during_load")?.clone()).ok()
}

/// The other nodes of a run that spanned nodes (`nodes` in `run.json`); empty without them or
/// when they do not read.
fn recorded_nodes(folder: &Path) -> Vec<crate::NodePart> {
    std::fs::read_to_string(folder.join("run.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|doc| serde_json::from_value(doc.get("nodes")?.clone()).ok())
        .unwrap_or_default()
}

/// Why a run folder's run checks cannot all be made: the files its load should have left that
/// are not there (a run killed before its after snapshot, a file deleted since).
fn missing_from_run_folder(before: bool, after: bool, series: Option<&Series>) -> Gaps {
    let absent = |what: &str, name: &str| format!("the run folder has no {what} ({name})");
    let no_after = (!after).then(|| absent("after snapshot", "after.snapshot.json"));
    Gaps {
        snapshots: if before {
            no_after.clone()
        } else {
            Some(absent("before snapshot", "before.snapshot.json"))
        },
        after: no_after,
        recording: match series {
            None => Some(absent("recording", "run.series.jsonl")),
            Some(s) if s.samples.is_empty() => Some("the recording has no readings".into()),
            Some(_) => None,
        },
    }
}

/// `bench.json`, then `bench.jsonl`, else the first other JSON file that reads as a load-tool
/// result with a completed count and output tokens.
fn find_result(folder: &Path, names: &[String]) -> Option<PathBuf> {
    for exact in ["bench.json", "bench.jsonl"] {
        if names.iter().any(|n| n == exact) {
            return Some(folder.join(exact));
        }
    }
    names
        .iter()
        .filter(|n| n.ends_with(".json") || n.ends_with(".jsonl"))
        .filter(|n| {
            !n.ends_with(".snapshot.json") && !n.ends_with(".series.jsonl") && *n != "results.json"
        })
        .map(|n| folder.join(n))
        .find(|p| bench::load(p).is_ok_and(|b: BenchResult| b.has_counts()))
}

/// Where the inputs came from another engine than the named one: the refusal's `what` and the
/// engine it came from.
pub fn engine_mismatch(
    inputs: &Inputs,
    files: &RunFiles,
    named: Engine,
) -> Option<(String, Engine)> {
    let shown = |p: &Option<PathBuf>, fallback: &str| {
        p.as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| fallback.to_string())
    };
    for (log, path) in inputs.boot_logs.iter().zip(&files.boot_logs) {
        if let Some(e) = inferlint_core::engine::detect_from_log(&log.text).filter(|e| *e != named)
        {
            return Some((path.display().to_string(), e));
        }
    }
    for (snap, path) in [
        (&inputs.before, &files.before),
        (&inputs.after, &files.after),
    ] {
        if let Some(e) = snap
            .as_ref()
            .and_then(|s| s.engine())
            .filter(|e| *e != named)
        {
            return Some((shown(path, "a snapshot"), e));
        }
    }
    if let Some(e) = inputs
        .series
        .as_ref()
        .and_then(|s| s.header.engine)
        .filter(|e| *e != named)
    {
        return Some((shown(&files.series, "the recording"), e));
    }
    None
}

/// Whether any input says which engine it came from.
pub fn engine_known(inputs: &Inputs) -> bool {
    inputs
        .boot_logs
        .iter()
        .any(|l| inferlint_core::engine::detect_from_log(&l.text).is_some())
        || inputs
            .before
            .iter()
            .chain(&inputs.after)
            .any(|s| s.engine().is_some())
        || inputs
            .series
            .as_ref()
            .is_some_and(|s| s.header.engine.is_some())
}

/// `boot-2.log`, `boot-3.log`, … in the order of their starts.
fn later_starts(names: &[String]) -> Vec<String> {
    let mut later: Vec<(u32, String)> = names
        .iter()
        .filter_map(|n| {
            let k = n
                .strip_prefix("boot-")?
                .strip_suffix(".log")?
                .parse()
                .ok()?;
            (k >= 2).then(|| (k, n.clone()))
        })
        .collect();
    later.sort();
    later.into_iter().map(|(_, n)| n).collect()
}
