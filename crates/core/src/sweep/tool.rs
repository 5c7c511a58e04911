//! Sweeps a load tool runs itself, each point in a process of its own
//! (docs/design/sweeps.md#sweeps-a-load-tool-runs-itself). AIPerf runs every value of a list
//! option (`--concurrency 2,8`) and every trial of `--num-profile-runs` as
//! `python -m aiperf.orchestrator.subprocess_runner DIR/run_config.json`, one after another,
//! and writes that point's results into `DIR`. A run that follows the load's processes sees
//! each such process as a point, and reads what it runs from its `run_config.json`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::plan::set_option;

/// The module AIPerf runs each point of its own sweep in.
pub const AIPERF_POINT_MODULE: &str = "aiperf.orchestrator.subprocess_runner";

/// Why a point's run configuration could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ToolPointError {
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not an AIPerf run configuration: {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
}

/// One point of a load tool's own sweep, as if the user had run it alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolPoint {
    /// The load's command with the point's values, seed and result folder set.
    pub argv: Vec<String>,
    /// Which trial of its value it is, 1-based, where the tool repeats each value.
    pub repeat: Option<u32>,
}

/// The run configuration a process of a tool's own sweep runs, where it is one.
pub fn point_config(argv: &[String]) -> Option<PathBuf> {
    let at = argv
        .windows(2)
        .position(|w| w[0] == "-m" && w[1] == AIPERF_POINT_MODULE)?;
    argv.get(at + 2).map(PathBuf::from)
}

/// What AIPerf's `run_config.json` says of its point (the rest is the tool's own business).
#[derive(Deserialize)]
struct RunConfig {
    #[serde(default)]
    variation: Option<Variation>,
    #[serde(default)]
    trial: Option<u32>,
    #[serde(default)]
    random_seed: Option<u64>,
    #[serde(default)]
    artifact_dir: Option<String>,
}

#[derive(Deserialize)]
struct Variation {
    #[serde(default)]
    values: serde_json::Map<String, serde_json::Value>,
}

/// One AIPerf point read from its `run_config.json` at `path`, against the load's command.
pub fn aiperf_point(load: &[String], path: &Path) -> Result<ToolPoint, ToolPointError> {
    let text = std::fs::read_to_string(path).map_err(|source| ToolPointError::Read {
        path: path.display().to_string(),
        source,
    })?;
    aiperf_point_from(load, &text, path)
}

/// As [`aiperf_point`], from the file's text. Each of the variation's values
/// (`phases.profiling.concurrency: 2`) sets the option its last part names (`--concurrency 2`)
/// where the load gives that option; the point's seed is AIPerf's own (it adds the point's
/// index unless told not to), and its result folder is the configuration's.
pub fn aiperf_point_from(
    load: &[String],
    text: &str,
    path: &Path,
) -> Result<ToolPoint, ToolPointError> {
    let cfg: RunConfig = serde_json::from_str(text).map_err(|source| ToolPointError::Parse {
        path: path.display().to_string(),
        source,
    })?;
    let mut argv = load.to_vec();
    let values = cfg.variation.map(|v| v.values).unwrap_or_default();
    for (key, value) in &values {
        let option = key.rsplit('.').next().unwrap_or(key).replace('_', "-");
        let value = match value {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if crate::argv::has_flag(&argv, &format!("--{option}")) {
            argv = set_option(&argv, &option, &value);
        }
    }
    if let Some(seed) = cfg.random_seed {
        argv = set_option(&argv, "random-seed", &seed.to_string());
    }
    let dir = cfg
        .artifact_dir
        .map(PathBuf::from)
        .or_else(|| path.parent().map(Path::to_path_buf));
    if let Some(dir) = dir {
        let dir = dir.display().to_string();
        // AIPerf takes either name for its artifact folder: the point's replaces both.
        argv = set_option(&argv, "artifact-dir", &dir);
        if crate::argv::has_flag(&argv, "--output-artifact-dir") {
            argv = set_option(&argv, "output-artifact-dir", &dir);
        }
    }
    let trials = crate::argv::flag_value(load, "--num-profile-runs")
        .and_then(|n| n.parse::<u32>().ok())
        .unwrap_or(1);
    Ok(ToolPoint {
        argv,
        repeat: cfg.trial.filter(|_| trials > 1).map(|t| t + 1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        shlex::split(s).unwrap()
    }

    /// The second point of `aiperf profile --concurrency 2,4`, as AIPerf 0.13 wrote it (trimmed
    /// to the keys read; the rest of the file is the tool's whole configuration).
    const SECOND: &str = r#"{"benchmark_id": "x", "variation": {"index": 1,
        "label": "phases.profiling.concurrency=4", "values": {"phases.profiling.concurrency": 4}},
        "trial": 0, "artifact_dir": "/tmp/aip/art/concurrency_4", "label": "run_0001",
        "random_seed": 43}"#;

    #[test]
    fn a_point_process_is_named_by_its_module() {
        let p =
            argv("/venv/bin/python -m aiperf.orchestrator.subprocess_runner /a/run_config.json");
        assert_eq!(point_config(&p), Some(PathBuf::from("/a/run_config.json")));
        assert_eq!(
            point_config(&argv("aiperf profile --concurrency 2,4")),
            None
        );
        assert_eq!(
            point_config(&argv("python -m aiperf.orchestrator.subprocess_runner")),
            None
        );
    }

    #[test]
    fn the_point_is_the_load_with_its_own_value_seed_and_folder() {
        let load =
            argv("aiperf profile --model m --concurrency 2,4 --request-count 8 --artifact-dir art");
        let p = aiperf_point_from(&load, SECOND, Path::new("/x/run_config.json")).unwrap();
        assert_eq!(
            p.argv,
            argv("aiperf profile --model m --concurrency 4 --request-count 8 --artifact-dir /tmp/aip/art/concurrency_4 --random-seed 43")
        );
        assert_eq!(p.repeat, None, "one trial per value");
        // With several trials, the trial is the repeat; a value the command does not give is
        // not invented.
        let load = argv("aiperf profile --num-profile-runs 3 --concurrency 4");
        let text = SECOND
            .replace("\"trial\": 0", "\"trial\": 2")
            .replace("concurrency\": 4", "isl\": 9");
        let p = aiperf_point_from(&load, &text, Path::new("/x/run_config.json")).unwrap();
        assert_eq!(p.repeat, Some(3));
        assert!(!p.argv.iter().any(|w| w == "--isl"), "{:?}", p.argv);
        let bad = aiperf_point_from(&load, "{", Path::new("/x/run_config.json")).unwrap_err();
        assert!(
            bad.to_string()
                .starts_with("/x/run_config.json: not an AIPerf run configuration"),
            "{bad}"
        );
    }
}
