//! The simulated GPU: the simulator's holdings (`crate::sim::gpu`), summed per card. The
//! number of cards comes from `<dir>/cards` when present (see `crate::sim::gpu::card_count`).

use std::path::Path;

use super::read::RawProc;
use super::{Gpu, GpuError};

/// A simulated card's size: an 80 GB-class GPU.
pub const SIM_TOTAL_MIB: u64 = 81_559;

/// The cards and the live holders on them.
pub fn node(dir: &Path) -> Result<(Vec<Gpu>, Vec<RawProc>), GpuError> {
    let holdings = crate::sim::gpu::sim_gpu_holdings(dir);
    let declared = crate::sim::gpu::card_count(dir).map_err(|e| GpuError::BadFile {
        line: 1,
        detail: format!("{:?} is not a number of simulated GPUs (1 or more)", e.text),
        path: e.path,
    })?;
    // A holding on a card beyond the declared count still counts: memory is never dropped.
    let held = holdings.iter().map(|h| h.gpu + 1).max().unwrap_or(1);
    let cards = declared.unwrap_or(1).max(held);
    let gpus = (0..cards)
        .map(|i| {
            let used: u64 = holdings.iter().filter(|h| h.gpu == i).map(|h| h.mib).sum();
            Gpu {
                index: i,
                uuid: Some(crate::sim::gpu::sim_uuid(i)),
                name: "Simulated GPU".into(),
                memory_total_mib: Some(SIM_TOTAL_MIB),
                memory_used_mib: Some(used),
                memory_free_mib: Some(SIM_TOTAL_MIB.saturating_sub(used)),
                driver: Some("sim".into()),
                compute_cap: None,
            }
        })
        .collect();
    let procs = holdings
        .iter()
        .map(|h| RawProc {
            gpu: h.gpu,
            pid: h.pid,
            used_mib: Some(h.mib),
            name: None,
        })
        .collect();
    Ok((gpus, procs))
}

pub fn gpus(dir: &Path) -> Result<Vec<Gpu>, GpuError> {
    Ok(node(dir)?.0)
}
