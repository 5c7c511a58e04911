//! The run folder: its file names, atomic writes, `run.json` (what ran, where, when, and how it
//! ended), `results.json` and the JUnit XML test suite for CI systems.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use inferlint_core::output::to_json_string;
use inferlint_core::result::{CheckResult, Status, Tripwire};

pub const BOOT_LOG: &str = "boot.log";

/// The log of the server's `n`th start in the run: `boot.log`, then `boot-2.log`, … (a sweep
/// that restarts the server between its points starts it once per point).
pub fn boot_log_name(n: u32) -> String {
    if n <= 1 {
        BOOT_LOG.to_string()
    } else {
        format!("boot-{n}.log")
    }
}
pub const BEFORE: &str = "before.snapshot.json";
pub const AFTER: &str = "after.snapshot.json";
pub const SERIES: &str = "run.series.jsonl";
pub const LOAD_LOG: &str = "load.log";
pub const RESULTS: &str = "results.json";
pub const REPORT: &str = "report.html";
pub const RUN_JSON: &str = "run.json";

pub use inferlint_core::files::write_atomic;

/// The default folder name: `xray-%Y%m%d-%H%M%S` in local time.
pub fn default_folder_name() -> String {
    chrono::Local::now()
        .format("xray-%Y%m%d-%H%M%S")
        .to_string()
}

/// The current time as RFC 3339 in UTC with milliseconds.
pub fn now_rfc3339() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// The GPUs a run judged, as `run.json` records them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GpuScopeRecord {
    /// `GPUs 0,1 (from CUDA_VISIBLE_DEVICES)`, `every GPU`.
    pub judged: String,
    /// The indices of the cards that matched (empty when no GPU could be read).
    pub cards: Vec<u32>,
    /// `CUDA_VISIBLE_DEVICES` given to the server (only with `--gpus`).
    pub server_cuda_visible_devices: Option<String>,
    /// Processes not of this run holding memory on those cards, at the gate or the stop.
    pub others_holding: Vec<String>,
    /// Server processes not started by this run, left alone.
    pub servers_left_alone: Vec<String>,
}

impl GpuScopeRecord {
    /// Adds what one judgement saw (each line once).
    pub fn add(&mut self, others: Vec<String>, left_alone: Vec<String>) {
        for o in others {
            if !self.others_holding.contains(&o) {
                self.others_holding.push(o);
            }
        }
        for l in left_alone {
            if !self.servers_left_alone.contains(&l) {
                self.servers_left_alone.push(l);
            }
        }
    }
}

/// `run.json`: the record of what ran. Written when the run starts (`ended_at` null, so a run
/// killed outright still says what it was) and again, whole, when it ends.
#[derive(Clone, Debug, Serialize)]
pub struct RunRecord {
    pub schema: &'static str,
    pub inferlint_version: &'static str,
    pub host: String,
    /// The GPUs nvidia-smi (or the simulated GPU) listed; null when none could be read.
    pub gpus: Value,
    /// The GPUs the run judged and who else used them (docs/supervision.md, "Sharing the
    /// node"); null until the gate has read them.
    pub gpu_scope: Option<GpuScopeRecord>,
    /// Attach mode: the pids of the server listening on the URL's port and those below it
    /// (empty when they cannot be seen from here).
    pub attached_server: Vec<i32>,
    pub engine: Option<String>,
    pub engine_version: Option<String>,
    pub url: String,
    /// The commands exactly as given and as run, secrets masked.
    pub serve_command: Option<String>,
    pub load_command: Option<String>,
    pub load_command_run: Option<String>,
    pub boot_log: Option<String>,
    pub requested: Option<u64>,
    pub interval_s: f64,
    pub started_at: String,
    pub ended_at: Option<String>,
    /// `running` while the run goes on, then `finished`.
    pub state: &'static str,
    /// `completed`, `interrupted`, `problem: …`, `load failed (exit N)`.
    pub exit_reason: Option<String>,
    pub exit_code: Option<i32>,
    pub load_exit_code: Option<i32>,
    pub result_file: Option<String>,
    pub report: Option<String>,
    /// Where the time went, in seconds (filled in at the end).
    pub timings: Option<super::Timings>,
    /// Processes of the server's tree that ended before the stop (docs/supervision.md).
    pub deaths: Vec<super::deaths::Death>,
    /// The server's parts on other nodes (`--serve-node`); absent for a one-node run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<super::nodes::NodeRecord>,
    /// What the run saw of the load while it ran: the server's warm-up lines, the client's CPU
    /// (T20, T21); null until the load has run.
    pub during_load: Option<inferlint_core::observed::LoadObserved>,
    /// Whether the server ran with its development endpoints on (vLLM's
    /// `VLLM_SERVER_DEV_MODE=1`, for the cache reset between a sweep's points); absent when not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dev_endpoints: bool,
    /// The sweep's file (`sweep.json`), for a sweep.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<String>,
}

impl RunRecord {
    pub fn new(url: &str, interval_s: f64) -> RunRecord {
        RunRecord {
            schema: "inferlint.run/1",
            inferlint_version: inferlint_core::VERSION,
            host: inferlint_host::host_name(),
            gpus: Value::Null,
            gpu_scope: None,
            attached_server: Vec::new(),
            engine: None,
            engine_version: None,
            url: url.to_string(),
            serve_command: None,
            load_command: None,
            load_command_run: None,
            boot_log: None,
            requested: None,
            interval_s,
            started_at: now_rfc3339(),
            ended_at: None,
            state: "running",
            exit_reason: None,
            exit_code: None,
            load_exit_code: None,
            result_file: None,
            report: None,
            timings: None,
            deaths: Vec::new(),
            nodes: Vec::new(),
            during_load: None,
            dev_endpoints: false,
            sweep: None,
        }
    }

    /// Writes `run.json` into the folder atomically.
    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        let mut text = to_json_string(self);
        text.push('\n');
        write_atomic(&dir.join(RUN_JSON), text.as_bytes())
    }
}

/// Writes `results.json`: the results as a JSON array indented as `--json` prints it.
pub fn write_results(dir: &Path, results: &[CheckResult]) -> std::io::Result<PathBuf> {
    let path = dir.join(RESULTS);
    let mut text = to_json_string(results);
    text.push('\n');
    write_atomic(&path, text.as_bytes())?;
    Ok(path)
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 forbids most control characters even when escaped.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// The results as a JUnit XML test suite: one test case per tripwire (core's merge of a
/// tripwire judged twice, [`inferlint_core::verdict::one_per_tripwire`]); FAIL
/// is a `<failure>`, UNKNOWN an `<error>`, N/A `<skipped>`; PASS and WARN pass (a WARN keeps
/// its message in `<system-out>`).
pub fn junit_xml(results: &[CheckResult], suite: &str, seconds: f64) -> String {
    let cases = inferlint_core::verdict::one_per_tripwire(results);
    let count = |s: Status| cases.iter().filter(|r| r.status == s).count();
    let (failures, errors, skipped) = (
        count(Status::Fail),
        count(Status::Unknown),
        count(Status::NotApplicable),
    );
    let mut x = String::new();
    x.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!(
        "<testsuites name=\"inferlint\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{seconds:.3}\">\n",
        cases.len()
    ));
    x.push_str(&format!(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{seconds:.3}\" timestamp=\"{}\" hostname=\"{}\">\n",
        xml_escape(suite),
        cases.len(),
        chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S"),
        xml_escape(&inferlint_host::host_name()),
    ));
    for r in &cases {
        let name = case_name(r.tripwire);
        let msg = xml_escape(&r.message);
        x.push_str(&format!(
            "    <testcase classname=\"inferlint.tripwires\" name=\"{}\"",
            xml_escape(&name)
        ));
        match r.status {
            Status::Pass => x.push_str("/>\n"),
            Status::Warn => x.push_str(&format!(
                ">\n      <system-out>WARN: {msg}</system-out>\n    </testcase>\n"
            )),
            Status::Fail => x.push_str(&format!(
                ">\n      <failure type=\"TRIPWIRE-FAILED\" message=\"{msg}\">{}</failure>\n    </testcase>\n",
                xml_escape(&r.line())
            )),
            Status::Unknown => x.push_str(&format!(
                ">\n      <error type=\"UNKNOWN\" message=\"{msg}\">{}</error>\n    </testcase>\n",
                xml_escape(&r.line())
            )),
            Status::NotApplicable => x.push_str(&format!(
                ">\n      <skipped message=\"{msg}\"/>\n    </testcase>\n"
            )),
        }
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// `T1 silent-preemption`: the code and the catalogue's slug.
fn case_name(t: Tripwire) -> String {
    format!("{} {}", t.code(), inferlint_core::catalogue::entry(t).slug)
}

/// Writes the JUnit file (parent folders created), atomically.
pub fn write_junit(
    path: &Path,
    results: &[CheckResult],
    suite: &str,
    seconds: f64,
) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    write_atomic(path, junit_xml(results, suite, seconds).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junit_maps_statuses() {
        let results = vec![
            CheckResult::pass(Tripwire::T2, "gate"),
            CheckResult::fail(Tripwire::T1, "22 preemptions during the run"),
            CheckResult::unknown(Tripwire::T10, "x < y & \"z\""),
            CheckResult::not_applicable(Tripwire::T14, "does not apply"),
            CheckResult::warn(Tripwire::T9, "ceiling moved"),
            CheckResult::fail(Tripwire::T2, "stop failed"),
        ];
        let x = junit_xml(&results, "run", 1.5);
        assert!(x.contains("tests=\"5\" failures=\"2\" errors=\"1\" skipped=\"1\""));
        assert!(x.contains(
            "<failure type=\"TRIPWIRE-FAILED\" message=\"22 preemptions during the run\">"
        ));
        assert!(x.contains("message=\"x &lt; y &amp; &quot;z&quot;\""));
        assert!(x.contains("<skipped message=\"does not apply\"/>"));
        assert!(x.contains("WARN: ceiling moved"));
        // The last T2 (the stop's) is the one reported.
        assert!(x.contains("stop failed"));
        assert!(!x.contains(">gate<") && !x.contains("\"gate\""));
        // Tripwire order (by the cases' names: the timestamp says T14 from 14:00 to 14:59).
        let at = |t: &str| x.find(&format!("name=\"{t} ")).unwrap();
        assert!(at("T1") < at("T14"));
    }

    #[test]
    fn run_record_round_trips_as_json() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = RunRecord::new("http://127.0.0.1:8000", 0.25);
        r.exit_code = Some(1);
        r.save(dir.path()).unwrap();
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(RUN_JSON)).unwrap())
                .unwrap();
        assert_eq!(v["schema"], "inferlint.run/1");
        assert_eq!(v["state"], "running");
        assert_eq!(v["exit_code"], 1);
        assert!(v["ended_at"].is_null());
    }
}
