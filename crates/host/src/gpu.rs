//! GPU readings (docs/design/gpus.md): the cards and their memory, from NVML when
//! `libnvidia-ml.so.1` loads, else from `nvidia-smi`, or from the simulated GPU
//! (`INFERLINT_GPU=sim:<dir>`), and the processes holding memory on them, attributed through
//! `/proc`. What a reading means (the cards a run judges, the "N consecutive clear readings"
//! rule) is the model in `inferlint_core::gpu`, re-exported here.
//!
//! `INFERLINT_GPU` chooses the source: `sim:<dir>`, `nvml`, `nvidia-smi`; unset means NVML when
//! it loads, else `nvidia-smi`. The kill guarantee never depends on any of this: GPU readings
//! are an extra verification.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod clock_reading;
mod holders;
pub mod nvml;
mod read;
pub mod sim;

pub use clock_reading::read_clocks;
pub(crate) use holders::user_name_cached;
pub use inferlint_core::gpu::*;
pub use read::{read_node, read_node_in, read_scope, read_scope_in};

/// The environment variable that chooses the GPU source.
pub const GPU_ENV: &str = "INFERLINT_GPU";
/// nvidia-smi's time limit.
pub const SMI_TIMEOUT: Duration = Duration::from_secs(30);

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
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        return Err(failed("its output pipes could not be opened".to_string()));
    };
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
/// when an old driver rejects one (docs/design/gpus.md#gpu-facts:
/// the full query, then without `compute_cap`).
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

/// The reading of docs/design/gpus.md#two-consecutive-clear-readings: the largest used MiB over all
/// cards; None when unreadable or when there is no card.
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
        GpuSource::Sim(dir) => sim::sim_gpu_readings(dir),
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
