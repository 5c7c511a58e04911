//! The GPU model: cards and their memory as NVML or nvidia-smi report them, nvidia-smi's CSV,
//! which cards a run judges ([`scope`]), who holds memory on them ([`GpuHolder`], [`NodeReading`]), the
//! "N consecutive clear readings" rule ([`clear`]), and the simulated GPU's folder format
//! ([`simdir`]). Reading a real machine (NVML, running nvidia-smi, `/proc`) is inferlint-run's
//! `gpu` module; everything here works on what a reader returned.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::{json, Value};

pub mod clear;
pub mod clocks;
mod holder;
mod reading;
pub mod scope;
pub mod simdir;

pub use clear::{
    not_clear_reason, wait_until_clear, BadConsecutive, ClearOptions, ClearResult, Reading,
};
pub use holder::{command_of, parse_nspid, GpuHolder};
pub use reading::{
    compute_apps_on_cards, parse_list_gpus, MigInstance, NodeReading, RawNode, RawProc,
    ScopeReading, ScopeView,
};
pub use scope::{
    parse_cuda_visible, GpuId, GpuScope, ResolvedScope, ScopeError, ScopeOrigin, Selection,
};

/// The default limit of a clear reading.
pub const DEFAULT_MAX_USED_MIB: u64 = 800;
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
        (7, 0 | 2) => Some("Volta"),
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

/// The query `gpu-inspect` and the readings use (docs/design/gpus.md#gpu-facts).
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

/// The query the scope readings use: the fields of docs/design/gpus.md#gpu-facts plus the
/// card's UUID.
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
