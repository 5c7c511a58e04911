//! A card's clocks while a load ran (docs/design/gpus.md#clocks): the SM clock against its
//! maximum, the power draw against its limit, the temperature, and the driver's clock event
//! reasons, NVML's bitmask of why the clocks are below their maximum (`nvmlClocksEventReason*`,
//! older drivers' `nvmlClocksThrottleReason*`: the same bits). nvidia-smi prints the same fields
//! with `--query-gpu=index,uuid,clocks_event_reasons.active,clocks.sm,clocks.max.sm,power.draw,
//! power.limit,temperature.gpu --format=csv,noheader,nounits` (older drivers:
//! `clocks_throttle_reasons.active`); a field it cannot read is `[N/A]` or `[Not Supported]`,
//! which is None here, never 0.

use serde::{Deserialize, Serialize};

/// The card is idle: nothing to run, so the clocks are low on purpose.
pub const GPU_IDLE: u64 = 0x1;
/// The clocks are held by an application clock setting.
pub const APPLICATIONS_CLOCKS: u64 = 0x2;
/// Software power capping: the card's power limit.
pub const SW_POWER_CAP: u64 = 0x4;
/// Hardware slowdown (temperature or power brake, set by the hardware).
pub const HW_SLOWDOWN: u64 = 0x8;
/// Sync boost: clocks matched across a group of cards.
pub const SYNC_BOOST: u64 = 0x10;
/// Software thermal slowdown: the GPU or memory over its software temperature limit.
pub const SW_THERMAL: u64 = 0x20;
/// Hardware thermal slowdown.
pub const HW_THERMAL: u64 = 0x40;
/// Hardware power brake (an external power brake assertion).
pub const HW_POWER_BRAKE: u64 = 0x80;
/// Display clock setting.
pub const DISPLAY_CLOCK: u64 = 0x100;

/// The reasons that slow a busy card below what it could run: power and thermal limits. Idle,
/// application clocks, sync boost and the display setting are settings, not throttling.
pub const THROTTLING: u64 = SW_POWER_CAP | HW_SLOWDOWN | SW_THERMAL | HW_THERMAL | HW_POWER_BRAKE;

/// Each throttling bit and NVML's name for it, in bit order.
const NAMES: &[(u64, &str)] = &[
    (SW_POWER_CAP, "SwPowerCap"),
    (HW_SLOWDOWN, "HwSlowdown"),
    (SW_THERMAL, "SwThermalSlowdown"),
    (HW_THERMAL, "HwThermalSlowdown"),
    (HW_POWER_BRAKE, "HwPowerBrakeSlowdown"),
];

/// The throttling reasons set in `mask`, by NVML's names.
pub fn throttle_names(mask: u64) -> Vec<&'static str> {
    NAMES
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, n)| *n)
        .collect()
}

/// One card read once.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClockSample {
    /// Unix seconds of the reading.
    pub t_wall: f64,
    pub gpu: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// The clock event reasons' bitmask; None where the driver cannot tell.
    pub reasons: Option<u64>,
    pub sm_mhz: Option<f64>,
    pub sm_max_mhz: Option<f64>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub temp_c: Option<f64>,
}

impl ClockSample {
    /// Whether the card had work: its reasons say it was not idle.
    pub fn busy(&self) -> Option<bool> {
        self.reasons.map(|r| r & GPU_IDLE == 0)
    }

    /// The throttling bits set, where the reasons are known.
    pub fn throttled(&self) -> Option<u64> {
        self.reasons.map(|r| r & THROTTLING)
    }
}

/// The nvidia-smi query that gives a [`ClockSample`] per line; the older drivers' name of the
/// reasons field in [`QUERY_OLD`].
pub const QUERY: &str = "index,uuid,clocks_event_reasons.active,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu";
pub const QUERY_OLD: &str = "index,uuid,clocks_throttle_reasons.active,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu";

/// A line of nvidia-smi's clock query that is not one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{what}: {line:?}")]
pub struct BadClockLine {
    pub what: String,
    pub line: String,
}

/// One line of [`QUERY`]'s CSV (`--format=csv,noheader,nounits`), read at `t_wall`.
pub fn parse_smi_line(line: &str, t_wall: f64) -> Result<ClockSample, BadClockLine> {
    let bad = |what: &str| BadClockLine {
        what: what.to_string(),
        line: line.to_string(),
    };
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    if f.len() != 8 {
        return Err(bad("expected 8 comma-separated fields"));
    }
    let gpu = f[0].parse().map_err(|_| bad("the index is not a number"))?;
    let reasons = match value(f[2]) {
        None => None,
        Some(v) => Some(
            u64::from_str_radix(v.trim_start_matches("0x").trim_start_matches("0X"), 16)
                .map_err(|_| bad("the clock event reasons are not a hexadecimal mask"))?,
        ),
    };
    let num = |s: &str, what: &str| -> Result<Option<f64>, BadClockLine> {
        value(s)
            .map(|v| v.parse::<f64>().map_err(|_| bad(what)))
            .transpose()
    };
    Ok(ClockSample {
        t_wall,
        gpu,
        uuid: value(f[1]).map(str::to_string),
        reasons,
        sm_mhz: num(f[3], "clocks.sm is not a number")?,
        sm_max_mhz: num(f[4], "clocks.max.sm is not a number")?,
        power_w: num(f[5], "power.draw is not a number")?,
        power_limit_w: num(f[6], "power.limit is not a number")?,
        temp_c: num(f[7], "temperature.gpu is not a number")?,
    })
}

/// A field nvidia-smi could read: not empty, `[N/A]`, `[Not Supported]` or `N/A`.
fn value(s: &str) -> Option<&str> {
    let s = s.trim();
    (!s.is_empty() && !s.starts_with('[') && s != "N/A").then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_power_capped_line_and_an_unsupported_field() {
        let s = parse_smi_line(
            "0, GPU-5b1e5e66-0000-0000-0000-000000000000, 0x0000000000000004, 1580, 1980, 998.52, 1000.00, 71",
            1.0,
        )
        .unwrap();
        assert_eq!(s.reasons, Some(SW_POWER_CAP));
        assert_eq!(s.throttled(), Some(SW_POWER_CAP));
        assert_eq!(s.busy(), Some(true));
        assert_eq!((s.sm_mhz, s.sm_max_mhz), (Some(1580.0), Some(1980.0)));
        assert_eq!(
            throttle_names(0x4 | 0x40),
            ["SwPowerCap", "HwThermalSlowdown"]
        );
        let na = parse_smi_line(
            "1, GPU-x, [N/A], 210, 1980, [Not Supported], [N/A], 40",
            1.0,
        )
        .unwrap();
        assert_eq!((na.reasons, na.power_w), (None, None));
        assert_eq!(na.busy(), None);
        assert!(parse_smi_line("0, GPU-x, 0xZZ, 1, 2, 3, 4, 5", 1.0).is_err());
        assert!(parse_smi_line("0, GPU-x", 1.0).is_err());
        // Idle and application clocks are settings, not throttling.
        let idle =
            parse_smi_line("0, GPU-x, 0x0000000000000003, 210, 1980, 60, 1000, 35", 1.0).unwrap();
        assert_eq!((idle.busy(), idle.throttled()), (Some(false), Some(0)));
    }
}
