//! The simulated GPU as a reader sees it: the live holdings in its folder (the format is
//! `inferlint_core::gpu::simdir`), summed per card. The number of cards comes from `<dir>/cards`
//! when present.

use std::path::Path;

use inferlint_core::gpu::simdir::{card_count, sim_uuid, Holding};
use inferlint_supervisor::procfs::ProcScanner;

use super::{Gpu, GpuError, RawProc};

/// A simulated card's size: an 80 GB-class GPU.
pub const SIM_TOTAL_MIB: u64 = 81_559;

/// The cards and the live holders on them.
pub fn node(dir: &Path) -> Result<(Vec<Gpu>, Vec<RawProc>), GpuError> {
    let holdings = sim_gpu_holdings(dir);
    let declared = card_count(dir).map_err(|e| GpuError::BadFile {
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
                uuid: Some(sim_uuid(i)),
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

/// Every holding in `dir` whose process is still the one that wrote it.
pub fn sim_gpu_holdings(dir: &Path) -> Vec<Holding> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<Holding> = entries
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name();
            let name = name.to_str()?;
            if !(name.starts_with("holding-") && name.ends_with(".json")) {
                return None;
            }
            let h: Holding = serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
            let stat = ProcScanner::system().stat(i32::try_from(h.pid).ok()?)?;
            // A zombie holds no memory; another start time is a recycled pid.
            (!matches!(stat.state, 'Z' | 'X' | 'x') && stat.starttime == h.start_time).then_some(h)
        })
        .collect();
    out.sort_by_key(|h| (h.gpu, h.pid));
    out
}

/// `(pid, MiB)` of every live holder in `dir` (the GPU reader's view of the simulated card).
pub fn sim_gpu_readings(dir: &Path) -> Vec<(u32, u64)> {
    sim_gpu_holdings(dir)
        .into_iter()
        .map(|h| (h.pid, h.mib))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_holder_counts_and_a_stale_file_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let guard = inferlint_sim::gpu::hold(dir.path(), 1234, 0).unwrap();
        assert_eq!(
            sim_gpu_readings(dir.path()),
            vec![(std::process::id(), 1234)]
        );
        // Same pid, another start time: a recycled pid, not the holder.
        let me = std::process::id();
        let stale = Holding {
            pid: me,
            start_time: ProcScanner::system().stat(me as i32).unwrap().starttime + 1,
            mib: 99,
            gpu: 0,
        };
        std::fs::write(
            dir.path().join("holding-stale.json"),
            serde_json::to_vec(&stale).unwrap(),
        )
        .unwrap();
        // A pid that does not exist.
        let gone = Holding {
            pid: u32::MAX - 7,
            start_time: 1,
            mib: 5,
            gpu: 1,
        };
        std::fs::write(
            dir.path().join("holding-gone.json"),
            serde_json::to_vec(&gone).unwrap(),
        )
        .unwrap();
        std::fs::write(dir.path().join("holding-garbage.json"), b"\x00not json").unwrap();
        assert_eq!(sim_gpu_readings(dir.path()), vec![(me, 1234)]);
        drop(guard);
        assert!(sim_gpu_readings(dir.path()).is_empty());
    }

    #[test]
    fn a_missing_folder_reads_as_no_holder() {
        assert!(sim_gpu_readings(Path::new("/nonexistent/inferlint-sim-gpu")).is_empty());
    }
}
