//! A simulated GPU for machines without one. With `INFERLINT_GPU=sim:<dir>` the engine process
//! (or, with `--tp`, each worker) writes `<dir>/holding-<pid>.json` naming its pid, its start
//! time (field 22 of /proc/PID/stat) and the MiB it holds. A reading counts a file only while
//! that very process is alive — the pid exists, is not a zombie and has the same start time —
//! so the memory is freed exactly when the holder dies, however it dies (SIGKILL included), and
//! a recycled pid does not inherit it. SIGKILL of the API server frees nothing.
//!
//! **Several cards.** `<dir>/cards` holds the number of simulated cards (one integer; written
//! by [`set_cards`]); without it the node has as many cards as the highest held index needs,
//! at least one. Card `i` has the fixed UUID [`sim_uuid`]`(i)`. A holder picks its card as CUDA
//! would ([`visible_card`]): the `rank`-th entry of its CUDA_VISIBLE_DEVICES (ordinals or the
//! simulated UUIDs, renumbered in list order, parsing stopped at the first invalid entry), or
//! card `rank` when the variable is unset.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::config::GPU_ENV;
use super::os;

/// One holding file's content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holding {
    pub pid: u32,
    pub start_time: u64,
    pub mib: u64,
    /// The simulated GPU's index.
    pub gpu: u32,
}

/// The file in a simulated GPU folder that holds its number of cards.
pub const CARDS_FILE: &str = "cards";

/// A `cards` file that does not hold a number of cards.
#[derive(Debug, thiserror::Error)]
#[error("{} line 1: {text:?} is not a number of simulated GPUs (1 or more)", path.display())]
pub struct BadCards {
    pub path: PathBuf,
    pub text: String,
}

/// The number of cards `<dir>/cards` declares; None without the file.
pub fn card_count(dir: &Path) -> Result<Option<u32>, BadCards> {
    let path = dir.join(CARDS_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    match text.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => Err(BadCards {
            path,
            text: text.trim().to_string(),
        }),
    }
}

/// Declares that the simulated node has `n` cards.
pub fn set_cards(dir: &Path, n: u32) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(CARDS_FILE), format!("{n}\n"))
}

/// The fixed UUID of simulated card `i`, shaped like NVML's (`GPU-` + 8-4-4-4-12 hex, ending
/// in `51a` for "simulated"): the card number leads, so `GPU-00000002` is a unique prefix, and
/// one card's UUID is never a prefix of another's.
pub fn sim_uuid(i: u32) -> String {
    format!("GPU-{i:08x}-0000-0000-0000-00000000051a")
}

/// The card a holder of tensor-parallel `rank` uses, as CUDA would pick it from
/// `cuda_visible_devices` (see the module docs). Without a `cards` file any ordinal below 64
/// exists.
pub fn visible_card(
    dir: &Path,
    rank: u32,
    cuda_visible_devices: Option<&str>,
) -> Result<u32, String> {
    let Some(value) = cuda_visible_devices else {
        return Ok(rank);
    };
    let cards = card_count(dir).map_err(|e| e.to_string())?.unwrap_or(64);
    let node: Vec<crate::gpu::Gpu> = (0..cards)
        .map(|i| crate::gpu::Gpu {
            index: i,
            uuid: Some(sim_uuid(i)),
            name: "Simulated GPU".into(),
            memory_total_mib: None,
            memory_used_mib: None,
            memory_free_mib: None,
            driver: None,
            compute_cap: None,
        })
        .collect();
    let scope = crate::gpu::GpuScope {
        ids: Some(crate::gpu::parse_cuda_visible(value).0),
        origin: crate::gpu::ScopeOrigin::CudaVisibleDevices,
    };
    // In CUDA's order (`2,1` makes card 2 device 0), up to the first entry naming no card.
    let mut visible = Vec::new();
    for id in scope.ids.iter().flatten() {
        let one = crate::gpu::GpuScope {
            ids: Some(vec![id.clone()]),
            origin: scope.origin,
        };
        match one.select(&node, &[]).cards.as_slice() {
            [card] if !visible.contains(card) => visible.push(*card),
            _ => break,
        }
    }
    visible.get(rank as usize).copied().ok_or_else(|| {
        format!(
            "CUDA_VISIBLE_DEVICES={value} shows {} simulated GPU(s); rank {rank} has none",
            visible.len()
        )
    })
}

/// [`visible_card`] with this process's CUDA_VISIBLE_DEVICES.
pub fn my_card(dir: &Path, rank: u32) -> Result<u32, String> {
    visible_card(
        dir,
        rank,
        std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref(),
    )
}

/// The folder named by `INFERLINT_GPU=sim:<dir>`, if set that way.
pub fn dir_from_env() -> Option<PathBuf> {
    let v = std::env::var(GPU_ENV).ok()?;
    let dir = v.strip_prefix("sim:")?;
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

/// A holding of this process; the file is removed when it is dropped (a clean exit). A killed
/// process leaves the file behind, and readers ignore it.
#[derive(Debug)]
pub struct HoldGuard {
    path: PathBuf,
}

impl Drop for HoldGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Records that this process holds `mib` MiB of simulated GPU `gpu`.
pub fn hold(dir: &Path, mib: u64, gpu: u32) -> std::io::Result<HoldGuard> {
    std::fs::create_dir_all(dir)?;
    let pid = std::process::id();
    let start_time =
        os::start_time(pid).ok_or_else(|| std::io::Error::other("cannot read /proc/self/stat"))?;
    let h = Holding {
        pid,
        start_time,
        mib,
        gpu,
    };
    let path = dir.join(format!("holding-{pid}.json"));
    let tmp = dir.join(format!(".holding-{pid}.json.tmp"));
    std::fs::write(&tmp, serde_json::to_vec(&h).expect("holding serialises"))?;
    std::fs::rename(&tmp, &path)?;
    Ok(HoldGuard { path })
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
            (os::is_alive(h.pid) && os::start_time(h.pid) == Some(h.start_time)).then_some(h)
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
        let guard = hold(dir.path(), 1234, 0).unwrap();
        assert_eq!(
            sim_gpu_readings(dir.path()),
            vec![(std::process::id(), 1234)]
        );
        // Same pid, another start time: a recycled pid, not the holder.
        let me = std::process::id();
        let stale = Holding {
            pid: me,
            start_time: os::start_time(me).unwrap() + 1,
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
