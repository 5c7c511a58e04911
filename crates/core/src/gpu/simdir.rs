//! The simulated GPU's folder (`INFERLINT_GPU=sim:<dir>`), shared by the simulator that writes
//! it and the GPU reader that reads it: one `holding-<pid>.json` per holder (its pid, start time,
//! MiB and card), `cards`, the number of simulated cards, and `clocks.json`, the clocks of a
//! simulated card that throttles (absent: every card at its maximum, unthrottled). A holding counts only while the
//! very process that wrote it is alive; that check is the reader's (inferlint-run's `gpu::sim`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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

/// The file of a throttling simulated GPU's clocks.
pub const CLOCKS_FILE: &str = "clocks.json";

/// What the simulated cards' clock readings say (every card alike).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimClocks {
    /// The clock event reasons' bitmask (`crate::gpu::clocks`).
    pub reasons: u64,
    pub sm_mhz: f64,
    pub sm_max_mhz: f64,
    pub power_w: f64,
    pub power_limit_w: f64,
    pub temp_c: f64,
}

impl Default for SimClocks {
    /// An 80 GB-class card at its maximum SM clock, well under its power limit.
    fn default() -> SimClocks {
        SimClocks {
            reasons: 0,
            sm_mhz: 1980.0,
            sm_max_mhz: 1980.0,
            power_w: 410.0,
            power_limit_w: 700.0,
            temp_c: 58.0,
        }
    }
}

impl SimClocks {
    /// Card `gpu`'s reading at `t_wall`.
    pub fn sample(&self, gpu: u32, t_wall: f64) -> crate::gpu::clocks::ClockSample {
        crate::gpu::clocks::ClockSample {
            t_wall,
            gpu,
            uuid: None,
            reasons: Some(self.reasons),
            sm_mhz: Some(self.sm_mhz),
            sm_max_mhz: Some(self.sm_max_mhz),
            power_w: Some(self.power_w),
            power_limit_w: Some(self.power_limit_w),
            temp_c: Some(self.temp_c),
        }
    }
}

/// A `clocks.json` that is not one.
#[derive(Debug, thiserror::Error)]
#[error("{} line 1: {detail}", path.display())]
pub struct BadSimClocks {
    pub path: PathBuf,
    pub detail: String,
}

/// The throttle `<dir>/clocks.json` declares; None without the file.
pub fn read_sim_clocks(dir: &Path) -> Result<Option<SimClocks>, BadSimClocks> {
    let path = dir.join(CLOCKS_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| BadSimClocks {
            path,
            detail: e.to_string(),
        })
}

/// Declares that the simulated cards run at these clocks.
pub fn write_sim_clocks(dir: &Path, c: &SimClocks) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(CLOCKS_FILE), serde_json::to_vec(c)?)
}
