//! Reading the node's cards and the processes on them from a source (NVML, nvidia-smi, the
//! simulated GPU), with each driver pid attributed through `/proc`.

use std::path::Path;

use super::holders::Attributor;
use super::{
    compute_apps_on_cards, parse_list_gpus, GpuError, GpuScope, GpuSource, NodeReading,
    ScopeReading,
};

/// Reads every card and its compute processes, attributing pids through the real `/proc`.
pub fn read_node(source: &GpuSource, scope: &GpuScope) -> Result<NodeReading, GpuError> {
    read_node_in(source, scope, Path::new("/proc"))
}

/// [`read_node`] with another `/proc` root (tests).
pub fn read_node_in(
    source: &GpuSource,
    scope: &GpuScope,
    proc_root: &Path,
) -> Result<NodeReading, GpuError> {
    let (gpus, raw, mig, real) = match source {
        GpuSource::Sim(dir) => {
            let (gpus, raw) = super::sim::node(dir)?;
            (gpus, Some(raw), Vec::new(), false)
        }
        GpuSource::Nvml => {
            let (gpus, raw, mig) = super::nvml::node()?;
            (gpus, raw, mig, true)
        }
        GpuSource::NvidiaSmi(exe) => {
            let gpus = super::read_gpus_smi(exe)?;
            let mig = if scope.names_mig_instance() {
                super::run_smi(exe, &["-L"], super::SMI_TIMEOUT)
                    .map(|t| parse_list_gpus(&t))
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            let raw = super::run_smi(
                exe,
                &[
                    "--query-compute-apps=gpu_uuid,pid,process_name,used_memory",
                    "--format=csv,noheader,nounits",
                ],
                super::SMI_TIMEOUT,
            )
            .ok()
            .map(|t| compute_apps_on_cards(&t, &gpus, &mig));
            (gpus, raw, mig, true)
        }
        GpuSource::None => return Err(GpuError::NoTool),
    };
    let mut who = Attributor::new(proc_root, real);
    let holders = raw.map(|rs| rs.iter().map(|r| who.attribute(r)).collect());
    Ok(NodeReading { gpus, holders, mig })
}

/// Reads the scope's cards and their compute processes from the source (NVML, nvidia-smi, sim).
pub fn read_scope(source: &GpuSource, scope: &GpuScope) -> Result<ScopeReading, GpuError> {
    read_scope_in(source, scope, Path::new("/proc"))
}

/// [`read_scope`] with another `/proc` root (tests).
pub fn read_scope_in(
    source: &GpuSource,
    scope: &GpuScope,
    proc_root: &Path,
) -> Result<ScopeReading, GpuError> {
    Ok(read_node_in(source, scope, proc_root)?
        .scoped(scope)
        .reading)
}
