//! NVML through nvml-wrapper: the library is loaded at run time, so a machine without the
//! driver builds and runs fine (the load fails with an error, once).

use std::sync::OnceLock;

use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};

use super::{Gpu, GpuError};
use super::{MigInstance, RawNode, RawProc};

fn handle() -> Option<&'static Nvml> {
    static NVML: OnceLock<Option<Nvml>> = OnceLock::new();
    NVML.get_or_init(|| Nvml::init().ok()).as_ref()
}

/// Whether `libnvidia-ml` loaded and initialised.
pub fn available() -> bool {
    handle().is_some()
}

fn err(e: impl std::fmt::Display) -> GpuError {
    GpuError::Failed {
        tool: "NVML".into(),
        detail: e.to_string(),
    }
}

fn nvml() -> Result<&'static Nvml, GpuError> {
    handle().ok_or_else(|| err("libnvidia-ml.so.1 did not load"))
}

fn mib(b: u64) -> u64 {
    b / (1024 * 1024)
}

fn card(d: &Device, i: u32, driver: &Option<String>) -> Gpu {
    let mem = d.memory_info().ok();
    Gpu {
        index: d.index().unwrap_or(i),
        uuid: d.uuid().ok(),
        name: d.name().unwrap_or_default(),
        memory_total_mib: mem.as_ref().map(|m| mib(m.total)),
        memory_used_mib: mem.as_ref().map(|m| mib(m.used)),
        memory_free_mib: mem.as_ref().map(|m| mib(m.free)),
        driver: driver.clone(),
        compute_cap: d
            .cuda_compute_capability()
            .ok()
            .map(|c| format!("{}.{}", c.major, c.minor)),
    }
}

/// The devices this process may open. NVML's count includes cards a device cgroup (Slurm's
/// `ConstrainDevices`, a container) forbids; their handles fail with NoPermission and are left
/// out, so the cards kept have their node-wide indices.
fn devices(nvml: &Nvml) -> Result<Vec<(u32, Device<'_>)>, GpuError> {
    let n = nvml.device_count().map_err(err)?;
    let mut out = Vec::new();
    for i in 0..n {
        match nvml.device_by_index(i) {
            Ok(d) => out.push((i, d)),
            Err(NvmlError::NoPermission) => {}
            Err(e) => return Err(err(e)),
        }
    }
    Ok(out)
}

pub fn gpus() -> Result<Vec<Gpu>, GpuError> {
    let nvml = nvml()?;
    let driver = nvml.sys_driver_version().ok();
    Ok(devices(nvml)?
        .iter()
        .map(|(i, d)| card(d, *i, &driver))
        .collect())
}

/// `(pid, MiB)` of every compute process on every card.
pub fn compute_apps() -> Result<Vec<(u32, u64)>, GpuError> {
    let nvml = nvml()?;
    let mut out = Vec::new();
    for (_, d) in devices(nvml)? {
        for p in d.running_compute_processes().map_err(err)? {
            if let UsedGpuMemory::Used(b) = p.used_gpu_memory {
                out.push((p.pid, mib(b)));
            }
        }
    }
    Ok(out)
}

/// One look at the node: every card, the compute processes per card (None when NVML cannot
/// list them, e.g. an old driver without the `_v3` symbol), and the MIG instances of cards in
/// MIG mode. A process of a MIG instance is listed on its parent card: with a full-GPU handle
/// only privileged callers see them (docs/supervision.md, "Which GPUs a run judges"), so the
/// instances' own handles are asked too.
pub fn node() -> Result<RawNode, GpuError> {
    let nvml = nvml()?;
    let driver = nvml.sys_driver_version().ok();
    let mut gpus = Vec::new();
    let mut procs: Option<Vec<RawProc>> = Some(Vec::new());
    let mut mig = Vec::new();
    for (i, d) in devices(nvml)? {
        let g = card(&d, i, &driver);
        let index = g.index;
        gpus.push(g);
        let mut handles = vec![d];
        let mig_on = handles[0].mig_mode().is_ok_and(|m| m.current == 1);
        if mig_on {
            let max = handles[0].mig_device_count().unwrap_or(0);
            for m in 0..max {
                // Empty slots answer NotFound.
                if let Ok(h) = handles[0].mig_device_by_index(m) {
                    if let Ok(uuid) = h.uuid() {
                        mig.push(MigInstance {
                            uuid,
                            parent: index,
                        });
                    }
                    handles.push(h);
                }
            }
        }
        // The parent may refuse while its instances answer (or the reverse): the card can
        // be attributed when any handle answered.
        let mut answered = false;
        for h in &handles {
            let Ok(list) = h.running_compute_processes() else {
                continue;
            };
            answered = true;
            let Some(out) = procs.as_mut() else { continue };
            for p in list {
                let used_mib = match p.used_gpu_memory {
                    UsedGpuMemory::Used(b) => Some(mib(b)),
                    UsedGpuMemory::Unavailable => None,
                };
                // A pid seen through the parent and an instance counts once.
                if !out.iter().any(|r| r.gpu == index && r.pid == p.pid) {
                    out.push(RawProc {
                        gpu: index,
                        pid: p.pid,
                        used_mib,
                        name: None,
                    });
                }
            }
        }
        if !answered {
            procs = None;
        }
    }
    Ok((gpus, procs, mig))
}

/// One clock reading of every card NVML lets this process open, at `t_wall`
/// (docs/design/gpus.md#clocks). A field the card refuses is None.
pub fn clocks(t_wall: f64) -> Result<Vec<inferlint_core::gpu::clocks::ClockSample>, GpuError> {
    use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
    let nvml = nvml()?;
    Ok(devices(nvml)?
        .iter()
        .map(|(i, d)| inferlint_core::gpu::clocks::ClockSample {
            t_wall,
            gpu: d.index().unwrap_or(*i),
            uuid: d.uuid().ok(),
            reasons: d.current_throttle_reasons().ok().map(|r| r.bits()),
            sm_mhz: d.clock_info(Clock::SM).ok().map(f64::from),
            sm_max_mhz: d.max_clock_info(Clock::SM).ok().map(f64::from),
            power_w: d.power_usage().ok().map(|mw| f64::from(mw) / 1000.0),
            power_limit_w: d
                .enforced_power_limit()
                .ok()
                .map(|mw| f64::from(mw) / 1000.0),
            temp_c: d.temperature(TemperatureSensor::Gpu).ok().map(f64::from),
        })
        .collect())
}
