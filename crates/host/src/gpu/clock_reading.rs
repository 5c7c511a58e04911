//! The cards' clocks, read from the chosen source (docs/design/gpus.md#clocks): NVML, nvidia-smi's
//! clock query (the older drivers' field name when the newer one is refused), or the simulated
//! GPU's `clocks.json`. Only the run's own cards are kept, by the scope T2 judges.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use inferlint_core::gpu::clocks::{parse_smi_line, ClockSample, QUERY, QUERY_OLD};
use inferlint_core::gpu::simdir::{read_sim_clocks, sim_uuid};

use super::{run_smi, GpuError, GpuScope, GpuSource};

/// nvidia-smi's limit for one clock query: a reading a second must not pile up.
const SMI_CLOCK_TIMEOUT: Duration = Duration::from_secs(5);

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// One reading of the scope's cards.
pub fn read_clocks(source: &GpuSource, scope: &GpuScope) -> Result<Vec<ClockSample>, GpuError> {
    let t = now();
    let all = match source {
        GpuSource::Nvml => super::nvml::clocks(t)?,
        GpuSource::NvidiaSmi(exe) => smi_clocks(exe, t)?,
        GpuSource::Sim(dir) => sim_clocks(dir, t)?,
        GpuSource::None => return Err(GpuError::NoTool),
    };
    Ok(all
        .into_iter()
        .filter(|s| scope.includes(&card_of(s)))
        .collect())
}

/// The card a reading is of, as the scope matches cards (by index or uuid).
fn card_of(s: &ClockSample) -> super::Gpu {
    super::Gpu {
        index: s.gpu,
        uuid: s.uuid.clone(),
        name: String::new(),
        memory_total_mib: None,
        memory_used_mib: None,
        memory_free_mib: None,
        driver: None,
        compute_cap: None,
    }
}

fn smi_clocks(exe: &Path, t: f64) -> Result<Vec<ClockSample>, GpuError> {
    let ask = |q: &str| {
        run_smi(
            exe,
            &[&format!("--query-gpu={q}"), "--format=csv,noheader,nounits"],
            SMI_CLOCK_TIMEOUT,
        )
    };
    let text = ask(QUERY).or_else(|_| ask(QUERY_OLD))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            parse_smi_line(l, t).map_err(|e| GpuError::Failed {
                tool: "nvidia-smi".into(),
                detail: e.to_string(),
            })
        })
        .collect()
}

/// The simulated cards: `clocks.json` in the folder, when the simulator throttles; else every
/// card at its maximum, unthrottled.
fn sim_clocks(dir: &Path, t: f64) -> Result<Vec<ClockSample>, GpuError> {
    let throttle = read_sim_clocks(dir).map_err(|e| GpuError::BadFile {
        line: 1,
        detail: e.detail,
        path: e.path,
    })?;
    let cards = super::sim::gpus(dir)?;
    Ok(cards
        .iter()
        .map(|g| {
            let mut s = throttle.clone().unwrap_or_default().sample(g.index, t);
            s.uuid = Some(sim_uuid(g.index));
            s
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_runs_own_cards_are_read() {
        let dir = tempfile::tempdir().unwrap();
        inferlint_core::gpu::simdir::set_cards(dir.path(), 3).unwrap();
        let source = GpuSource::Sim(dir.path().to_path_buf());
        let cards = |scope: &GpuScope| -> Vec<u32> {
            read_clocks(&source, scope)
                .unwrap()
                .iter()
                .map(|s| s.gpu)
                .collect()
        };
        assert_eq!(cards(&GpuScope::all()), [0, 1, 2]);
        let none = |_: &str| None;
        let one = GpuScope::resolve(Some("1"), &none).unwrap();
        assert_eq!(cards(&one), [1]);
        let by_uuid = GpuScope::resolve(Some(&sim_uuid(2)), &none).unwrap();
        assert_eq!(cards(&by_uuid), [2]);
    }
}
