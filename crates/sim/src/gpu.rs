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

use inferlint_core::gpu::{parse_cuda_visible, Gpu, GpuScope, ScopeOrigin};

use super::os;
use super::settings::GPU_ENV;

pub use inferlint_core::gpu::simdir::{
    card_count, set_cards, sim_uuid, BadCards, Holding, CARDS_FILE,
};

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
    let node: Vec<Gpu> = (0..cards)
        .map(|i| Gpu {
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
    let scope = GpuScope {
        ids: Some(parse_cuda_visible(value).0),
        origin: ScopeOrigin::CudaVisibleDevices,
    };
    // In CUDA's order (`2,1` makes card 2 device 0), up to the first entry naming no card.
    let mut visible = Vec::new();
    for id in scope.ids.iter().flatten() {
        let one = GpuScope {
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
    std::fs::write(&tmp, serde_json::to_vec(&h).map_err(std::io::Error::other)?)?;
    std::fs::rename(&tmp, &path)?;
    Ok(HoldGuard { path })
}

/// The throttle a throttling engine declares (`clocks.json`), removed when dropped: the card
/// reads throttled only while the engine that throttles it runs, as a holding counts only while
/// its holder does. A killed engine leaves the file behind; the next throttling engine writes it
/// again and an unthrottled one's readings are its own test's concern (a fresh folder).
#[derive(Debug)]
pub struct ThrottleGuard {
    path: PathBuf,
}

impl Drop for ThrottleGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Declares that the simulated cards in `dir` run at `clocks` while the guard lives.
pub fn throttle(
    dir: &Path,
    clocks: &inferlint_core::gpu::simdir::SimClocks,
) -> std::io::Result<ThrottleGuard> {
    inferlint_core::gpu::simdir::write_sim_clocks(dir, clocks)?;
    Ok(ThrottleGuard {
        path: dir.join(inferlint_core::gpu::simdir::CLOCKS_FILE),
    })
}

#[cfg(test)]
mod throttle_tests {
    use super::*;
    use inferlint_core::gpu::simdir::{read_sim_clocks, SimClocks};

    #[test]
    fn the_throttle_lasts_as_long_as_its_guard() {
        let dir = tempfile::tempdir().unwrap();
        let hot = SimClocks {
            reasons: inferlint_core::gpu::clocks::SW_THERMAL,
            ..Default::default()
        };
        let guard = throttle(dir.path(), &hot).unwrap();
        assert_eq!(read_sim_clocks(dir.path()).unwrap(), Some(hot));
        drop(guard);
        assert_eq!(read_sim_clocks(dir.path()).unwrap(), None);
    }
}
