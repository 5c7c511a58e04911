//! GPU readings (spec §5.3–§5.4): the cards and their memory, from NVML when
//! `libnvidia-ml.so.1` loads, else from `nvidia-smi`, or from the simulated GPU
//! (`INFERLINT_GPU=sim:<dir>`); and the "N consecutive clear readings" waiter. Which cards a
//! run judges and who holds memory on them: [`scope`] (docs/supervision.md, "Which GPUs a run
//! judges").
//!
//! `INFERLINT_GPU` chooses the source: `sim:<dir>`, `nvml`, `nvidia-smi`; unset means NVML when
//! it loads, else `nvidia-smi`. The kill guarantee never depends on any of this: GPU readings
//! are an extra verification.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

mod holders;
pub mod nvml;
mod read;
pub mod scope;
mod sim;

pub use holders::{command_of, parse_nspid};
pub use read::{compute_apps_on_cards, parse_list_gpus, read_node_in, MigInstance, RawProc};
pub use scope::{
    parse_cuda_visible, read_node, read_scope, read_scope_in, GpuHolder, GpuId, GpuScope,
    NodeReading, ResolvedScope, ScopeError, ScopeOrigin, ScopeReading, ScopeView, Selection,
};

/// The default limit of a clear reading.
pub const DEFAULT_MAX_USED_MIB: u64 = 800;
/// The environment variable that chooses the GPU source.
pub const GPU_ENV: &str = "INFERLINT_GPU";
/// nvidia-smi's time limit.
pub const SMI_TIMEOUT: Duration = Duration::from_secs(30);

/// One card.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Gpu {
    pub index: u32,
    /// `GPU-…` (or `MIG-…`) as NVML and nvidia-smi print it; None when the source cannot tell.
    pub uuid: Option<String>,
    pub name: String,
    pub memory_total_mib: Option<u64>,
    pub memory_used_mib: Option<u64>,
    pub memory_free_mib: Option<u64>,
    pub driver: Option<String>,
    pub compute_cap: Option<String>,
}

impl Gpu {
    /// The architecture family of its compute capability.
    pub fn family(&self) -> Option<&'static str> {
        self.compute_cap.as_deref().and_then(family)
    }

    /// The JSON form in T2's evidence: every field plus `family`.
    pub fn to_json(&self) -> Value {
        json!({
            "index": self.index,
            "uuid": self.uuid,
            "name": self.name,
            "memory_total_mib": self.memory_total_mib,
            "memory_used_mib": self.memory_used_mib,
            "memory_free_mib": self.memory_free_mib,
            "driver": self.driver,
            "compute_cap": self.compute_cap,
            "family": self.family(),
        })
    }
}

/// The family of a compute capability: 6.x Pascal, 7.0/7.2 Volta, 7.5 Turing, 8.9 Ada
/// Lovelace, other 8.x Ampere, 9.x Hopper, 10.x/11.x/12.x Blackwell, else none.
pub fn family(cap: &str) -> Option<&'static str> {
    let (major, minor) = cap.trim().split_once('.')?;
    let major: u32 = major.parse().ok()?;
    let minor: u32 = minor.parse().ok()?;
    match (major, minor) {
        (6, _) => Some("Pascal"),
        (7, 0) | (7, 2) => Some("Volta"),
        (7, 5) => Some("Turing"),
        (8, 9) => Some("Ada Lovelace"),
        (8, _) => Some("Ampere"),
        (9, _) => Some("Hopper"),
        (10..=12, _) => Some("Blackwell"),
        _ => None,
    }
}

/// Why the GPUs could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("nvidia-smi is missing")]
    NoTool,
    #[error("{tool} failed: {detail}")]
    Failed { tool: String, detail: String },
    #[error("nvidia-smi line {line}: {text:?} is not a GPU row")]
    Parse { line: usize, text: String },
    #[error("{} line {line}: {detail}", path.display())]
    BadFile {
        path: PathBuf,
        line: usize,
        detail: String,
    },
}

/// The query `gpu-inspect` and the readings use (§5.4).
pub const QUERY_GPU: &str =
    "index,name,memory.total,memory.used,memory.free,driver_version,compute_cap";

/// A value, or None for nvidia-smi's `[N/A]`, `[Not Supported]`, … and empty fields.
fn value(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty() && !s.starts_with('[')).then(|| s.to_string())
}

/// A MiB value (tolerating a ` MiB` unit).
fn mib(s: &str) -> Option<u64> {
    let v = value(s)?;
    let v = v.trim_end_matches("MiB").trim();
    v.parse::<u64>()
        .ok()
        .or_else(|| v.parse::<f64>().ok().map(|f| f.round() as u64))
}

/// The query the scope readings use: §5.4's fields plus the card's UUID.
pub const QUERY_GPU_UUID: &str =
    "index,uuid,name,memory.total,memory.used,memory.free,driver_version,compute_cap";

/// Parses `--query-gpu=index,name,memory.total,memory.used,memory.free,driver_version[,compute_cap]
/// --format=csv,noheader,nounits`. A comma inside the name is kept: the name is everything
/// between the index and the fixed trailing fields. A header line is skipped.
pub fn parse_query_gpu(text: &str, with_compute_cap: bool) -> Result<Vec<Gpu>, GpuError> {
    let fields = if with_compute_cap {
        QUERY_GPU
    } else {
        QUERY_GPU.trim_end_matches(",compute_cap")
    };
    parse_query_gpu_fields(text, &fields.split(',').collect::<Vec<_>>())
}

/// Parses `--query-gpu=FIELDS` output (any order of `index`, `uuid`, `name`, `memory.total`,
/// `memory.used`, `memory.free`, `driver_version`, `compute_cap`; others are ignored). A header
/// line (`index, uuid, memory.used [MiB], …`) replaces `fields` for the rows after it, so
/// output with or without `noheader,nounits` reads alike. `index` is required; a comma inside
/// the name is kept (the name takes the columns the other fields leave).
pub fn parse_query_gpu_fields(text: &str, fields: &[&str]) -> Result<Vec<Gpu>, GpuError> {
    let mut cols: Vec<String> = fields.iter().map(|f| f.trim().to_string()).collect();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let parts: Vec<&str> = line.split(',').collect();
        if parts[0].trim() == "index" {
            cols = parts
                .iter()
                .map(|p| {
                    let p = p.trim();
                    p.split(" [").next().unwrap_or(p).to_string()
                })
                .collect();
            continue;
        }
        let bad = || GpuError::Parse {
            line: i + 1,
            text: line.to_string(),
        };
        let name_at = cols.iter().position(|c| c == "name");
        let extra = parts.len().checked_sub(cols.len()).ok_or_else(bad)?;
        if extra > 0 && name_at.is_none() {
            return Err(bad());
        }
        let get = |key: &str| -> Option<String> {
            let k = cols.iter().position(|c| c == key)?;
            match name_at {
                Some(n) if k == n => Some(parts[n..=n + extra].join(",").trim().to_string()),
                Some(n) if k > n => Some(parts[k + extra].to_string()),
                _ => Some(parts[k].to_string()),
            }
        };
        let index: u32 = get("index")
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(bad)?;
        // A row of another query (a stand-in that ignores the fields) must not lend its
        // name to the UUID.
        let uuid = get("uuid").as_deref().and_then(value);
        if uuid.as_deref().is_some_and(|u| {
            let l = u.to_ascii_lowercase();
            !(l.starts_with("gpu-") || l.starts_with("mig-"))
        }) {
            return Err(bad());
        }
        out.push(Gpu {
            index,
            uuid,
            name: get("name").unwrap_or_default(),
            memory_total_mib: get("memory.total").as_deref().and_then(mib),
            memory_used_mib: get("memory.used").as_deref().and_then(mib),
            memory_free_mib: get("memory.free").as_deref().and_then(mib),
            driver: get("driver_version").as_deref().and_then(value),
            compute_cap: get("compute_cap").as_deref().and_then(value),
        });
    }
    Ok(out)
}

/// One row of `--query-compute-apps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComputeApp {
    pub gpu_uuid: Option<String>,
    pub pid: u32,
    /// `[Not Found]` (a pid of another PID namespace) reads as None.
    pub process_name: Option<String>,
    pub used_mib: Option<u64>,
}

/// Parses `--query-compute-apps` output with a header (`pid, process_name, used_gpu_memory
/// [MiB]`, values with ` MiB`) or, without one, as `gpu_uuid,pid,process_name,used_memory`
/// (`noheader,nounits`). Rows that do not fit are skipped.
pub fn parse_compute_apps(text: &str) -> Vec<ComputeApp> {
    let mut cols: Vec<String> = vec![
        "gpu_uuid".into(),
        "pid".into(),
        "process_name".into(),
        "used_memory".into(),
    ];
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('$') || line.starts_with('#') {
            continue;
        }
        let parts: Vec<&str> = line.split(", ").collect();
        if parts.iter().any(|p| p.trim() == "pid") {
            cols = parts
                .iter()
                .map(|p| {
                    let p = p.trim();
                    let p = p.split(" [").next().unwrap_or(p);
                    match p {
                        "used_gpu_memory" => "used_memory".to_string(),
                        other => other.to_string(),
                    }
                })
                .collect();
            continue;
        }
        if parts.len() != cols.len() {
            continue;
        }
        let get = |k: &str| cols.iter().position(|c| c == k).map(|i| parts[i]);
        let Some(pid) = get("pid").and_then(|p| p.trim().parse().ok()) else {
            continue;
        };
        out.push(ComputeApp {
            gpu_uuid: get("gpu_uuid").and_then(value),
            pid,
            process_name: get("process_name").and_then(value),
            used_mib: get("used_memory").and_then(mib),
        });
    }
    out
}

/// Where GPU readings come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuSource {
    /// The simulator's holdings folder.
    Sim(PathBuf),
    Nvml,
    NvidiaSmi(PathBuf),
    /// Nothing: no NVML and no nvidia-smi.
    None,
}

/// `nvidia-smi` on PATH, else `/usr/lib/wsl/lib/nvidia-smi`.
pub fn locate_nvidia_smi() -> Option<PathBuf> {
    locate_in(std::env::var_os("PATH").as_deref())
}

fn locate_in(path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if let Some(path) = path {
        for dir in std::env::split_paths(path) {
            let p = dir.join("nvidia-smi");
            if is_executable(&p) {
                return Some(p);
            }
        }
    }
    let wsl = PathBuf::from("/usr/lib/wsl/lib/nvidia-smi");
    is_executable(&wsl).then_some(wsl)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The source chosen by `INFERLINT_GPU` (see the module docs).
pub fn source_from_env() -> GpuSource {
    match std::env::var(GPU_ENV).ok().as_deref().map(str::trim) {
        Some(v) if v.starts_with("sim:") && v.len() > 4 => GpuSource::Sim(PathBuf::from(&v[4..])),
        Some("nvml") => GpuSource::Nvml,
        Some("nvidia-smi") => locate_nvidia_smi().map_or(GpuSource::None, GpuSource::NvidiaSmi),
        _ => {
            if nvml::available() {
                GpuSource::Nvml
            } else {
                locate_nvidia_smi().map_or(GpuSource::None, GpuSource::NvidiaSmi)
            }
        }
    }
}

/// Runs nvidia-smi with `args` (bounded by `timeout`); its stdout on exit 0.
pub fn run_smi(exe: &Path, args: &[&str], timeout: Duration) -> Result<String, GpuError> {
    let failed = |detail: String| GpuError::Failed {
        tool: "nvidia-smi".into(),
        detail,
    };
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| failed(e.to_string()))? {
            break st;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(failed(format!("no answer within {}s", timeout.as_secs())));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let out = reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    if !status.success() {
        let first = err.lines().chain(out.lines()).next().unwrap_or("").trim();
        return Err(failed(format!("{status}: {first}")));
    }
    Ok(out)
}

/// The cards via nvidia-smi: asks with `uuid` and `compute_cap`, and again with fewer fields
/// when an old driver rejects one (§5.4's query, then without `compute_cap`).
pub fn read_gpus_smi(exe: &Path) -> Result<Vec<Gpu>, GpuError> {
    let q = |fields: &str| {
        run_smi(
            exe,
            &[
                &format!("--query-gpu={fields}"),
                "--format=csv,noheader,nounits",
            ],
            SMI_TIMEOUT,
        )
        .and_then(|text| parse_query_gpu_fields(&text, &fields.split(',').collect::<Vec<_>>()))
    };
    q(QUERY_GPU_UUID)
        .or_else(|_| q(QUERY_GPU))
        .or_else(|_| q(QUERY_GPU.trim_end_matches(",compute_cap")))
}

/// The cards from the chosen source.
pub fn read_gpus(source: &GpuSource) -> Result<Vec<Gpu>, GpuError> {
    match source {
        GpuSource::Sim(dir) => sim::gpus(dir),
        GpuSource::Nvml => nvml::gpus(),
        GpuSource::NvidiaSmi(exe) => read_gpus_smi(exe),
        GpuSource::None => Err(GpuError::NoTool),
    }
}

/// The reading of §5.3: the largest used MiB over all cards; None when unreadable or when
/// there is no card.
pub fn max_used_mib(source: &GpuSource) -> Option<u64> {
    let gpus = read_gpus(source).ok()?;
    gpus.iter()
        .map(|g| g.memory_used_mib)
        .collect::<Option<Vec<u64>>>()?
        .into_iter()
        .max()
}

/// GPU memory per pid (for reporting leftovers), when the source can tell.
pub fn mib_by_pid(source: &GpuSource) -> BTreeMap<u32, u64> {
    let apps = match source {
        GpuSource::Sim(dir) => crate::sim::gpu::sim_gpu_readings(dir),
        GpuSource::Nvml => nvml::compute_apps().unwrap_or_default(),
        GpuSource::NvidiaSmi(exe) => run_smi(
            exe,
            &[
                "--query-compute-apps=gpu_uuid,pid,process_name,used_memory",
                "--format=csv,noheader,nounits",
            ],
            SMI_TIMEOUT,
        )
        .map(|t| {
            parse_compute_apps(&t)
                .into_iter()
                .filter_map(|a| Some((a.pid, a.used_mib?)))
                .collect()
        })
        .unwrap_or_default(),
        GpuSource::None => Vec::new(),
    };
    let mut out = BTreeMap::new();
    for (pid, m) in apps {
        *out.entry(pid).or_insert(0) += m;
    }
    out
}

// ---------------------------------------------------------------------------------------------
// "N consecutive clear readings" (§5.3)

/// Settings of the waiter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClearOptions {
    pub max_used_mib: u64,
    pub consecutive: u32,
    pub timeout_s: f64,
    pub interval_s: f64,
    /// False when no GPU can be read at all: then only the processes decide, and the result
    /// can never be a pass (see [`ClearResult::gpu_unreadable`]).
    pub require_gpu: bool,
}

impl Default for ClearOptions {
    fn default() -> Self {
        ClearOptions {
            max_used_mib: DEFAULT_MAX_USED_MIB,
            consecutive: 2,
            timeout_s: 120.0,
            interval_s: 2.0,
            require_gpu: true,
        }
    }
}

/// One reading: seconds since the start, the largest used MiB (None = unreadable), and the
/// number of live server processes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reading {
    pub elapsed_s: f64,
    pub used: Option<u64>,
    pub n_live: usize,
}

impl Reading {
    /// `[elapsed rounded to ms, used or null, n_live]`.
    pub fn to_json(&self) -> Value {
        json!([
            crate::result::json_f64((self.elapsed_s * 1000.0).round() / 1000.0),
            self.used,
            self.n_live
        ])
    }

    pub fn is_clear(&self, max_used_mib: u64) -> bool {
        self.n_live == 0 && self.used.is_some_and(|u| u <= max_used_mib)
    }
}

/// The waiter's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct ClearResult {
    pub clear: bool,
    pub readings: Vec<Reading>,
    /// `2 consecutive clear readings`, or `not clear after 10s: last reading 21768 MiB used,
    /// 1 server processes alive`.
    pub reason: String,
    /// No GPU could be read (the waiter judged the processes only).
    pub gpu_unreadable: bool,
}

impl ClearResult {
    pub fn readings_json(&self) -> Value {
        Value::Array(self.readings.iter().map(Reading::to_json).collect())
    }
}

use crate::clock::Clock;

/// `--consecutive` below 1.
#[derive(Debug, thiserror::Error)]
#[error("--consecutive must be at least 1 (got {0})")]
pub struct BadConsecutive(pub u32);

/// Takes readings every `interval_s` until `consecutive` clear ones in a row (any unclear
/// reading resets the count), or until `timeout_s` has elapsed. At least one reading is taken.
pub fn wait_until_clear(
    opts: &ClearOptions,
    n_live: &mut dyn FnMut() -> usize,
    used: &mut dyn FnMut() -> Option<u64>,
    clock: &mut dyn Clock,
) -> Result<ClearResult, BadConsecutive> {
    if opts.consecutive < 1 {
        return Err(BadConsecutive(opts.consecutive));
    }
    let start = clock.now().mono_s();
    let elapsed = |clock: &dyn Clock| clock.now().mono_s() - start;
    let mut readings = Vec::new();
    let mut run = 0;
    loop {
        let r = Reading {
            elapsed_s: elapsed(clock),
            used: used(),
            n_live: n_live(),
        };
        readings.push(r);
        let clear = if opts.require_gpu {
            r.is_clear(opts.max_used_mib)
        } else {
            r.n_live == 0
        };
        run = if clear { run + 1 } else { 0 };
        if run >= opts.consecutive {
            return Ok(ClearResult {
                clear: opts.require_gpu,
                readings,
                reason: format!("{} consecutive clear readings", opts.consecutive),
                gpu_unreadable: !opts.require_gpu,
            });
        }
        if elapsed(clock) >= opts.timeout_s {
            return Ok(ClearResult {
                clear: false,
                reason: not_clear_reason(opts.timeout_s, &r),
                readings,
                gpu_unreadable: !opts.require_gpu,
            });
        }
        let left = opts.timeout_s - elapsed(clock);
        clock.sleep(opts.interval_s.min(left.max(0.0)));
    }
}

/// T2's FAIL reason once the wait ran out: `not clear after 10s: last reading 21768 MiB used, 1
/// server processes alive` (the spec's wording, which scripts read).
pub fn not_clear_reason(timeout_s: f64, last: &Reading) -> String {
    let used = last.used.map_or("?".to_string(), |u| u.to_string());
    format!(
        "not clear after {}s: last reading {used} MiB used, {} server processes alive",
        crate::fmt::g(timeout_s),
        last.n_live
    )
}
