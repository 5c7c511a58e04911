//! `inferlint gpu-inspect`: the cards, then T2 — is the GPU free? No server process alive and
//! every card's memory released, for N consecutive readings. With `--gpus LIST` only those cards
//! are shown and judged, each with the processes holding memory on it (docs/supervision.md,
//! "Which GPUs a run judges").

use std::io::Write;
use std::path::PathBuf;

use inferlint_core::checks::t2;
use inferlint_core::evidence::T2Evidence;
use inferlint_core::fmt::thousands;
use inferlint_host::gpu::{self, ClearOptions, Gpu, GpuScope, GpuSource, ScopeView};
use inferlint_host::procs::{self, ProcInfo, RealSystem, System, Target};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A reading is clear only when every GPU uses at most this many MiB.
    #[arg(long, default_value_t = gpu::DEFAULT_MAX_USED_MIB)]
    pub max_used_mib: u64,
    /// Clear readings needed in a row.
    #[arg(long, default_value_t = 2)]
    pub consecutive: u32,
    /// Seconds to wait for the clear readings.
    #[arg(long, default_value_t = 10.0)]
    pub timeout: f64,
    /// Print the result as JSON (with the cards in its evidence).
    #[arg(long)]
    pub json: bool,
    /// Only these GPUs (ordinals as nvidia-smi numbers them, GPU-/MIG- UUIDs or unique
    /// prefixes, or `all`), each listed with the processes holding memory on it.
    #[arg(long, value_name = "LIST")]
    pub gpus: Option<String>,
    /// Another /proc root (tests).
    #[arg(long, hide = true, default_value = "/proc")]
    pub proc_root: PathBuf,
}

/// The lines printed for one card.
pub fn gpu_lines(g: &Gpu) -> Vec<String> {
    let mut lines = vec![format!("GPU {}   {}", g.index, g.name)];
    let mut parts = Vec::new();
    if let Some(f) = g.family() {
        parts.push(f.to_string());
    }
    if let Some(c) = &g.compute_cap {
        parts.push(format!("compute capability {c}"));
    }
    if let Some(d) = &g.driver {
        parts.push(format!("driver {d}"));
    }
    if !parts.is_empty() {
        lines.push(format!("        {}", parts.join(", ")));
    }
    let n = |v: Option<u64>| v.map_or("?".to_string(), |m| thousands(m as i64));
    lines.push(format!(
        "        memory: {} MiB total, {} MiB used, {} MiB free",
        n(g.memory_total_mib),
        n(g.memory_used_mib),
        n(g.memory_free_mib)
    ));
    lines
}

/// The lines of a card's holders: one per process, or why there is none to show.
pub fn holder_lines(view: &ScopeView, card: u32) -> Vec<String> {
    match &view.reading.holders {
        None => vec!["        holders: unknown (this GPU source lists no processes)".to_string()],
        Some(hs) => {
            let on: Vec<String> = hs
                .iter()
                .filter(|h| h.gpu == card)
                .map(|h| format!("        held by {}", h.describe()))
                .collect();
            if on.is_empty() {
                vec!["        held by no process".to_string()]
            } else {
                on
            }
        }
    }
}

/// The real system, with the GPU reading limited to the scope's cards.
struct ScopedSystem {
    real: RealSystem,
    scope: GpuScope,
}

impl System for ScopedSystem {
    fn processes(&mut self) -> Option<Vec<ProcInfo>> {
        self.real.processes()
    }
    fn signal(&mut self, target: &Target, sig: procs::Signal) -> bool {
        self.real.signal(target, sig)
    }
    fn gpu_used_mib(&mut self) -> Option<u64> {
        gpu::read_scope(&self.real.gpu, &self.scope)
            .ok()?
            .max_used_mib()
    }
    fn now(&self) -> f64 {
        self.real.now()
    }
    fn sleep(&mut self, secs: f64) {
        self.real.sleep(secs)
    }
}

/// The scope's view of the node, the resolution notes first.
fn scoped_view(source: &GpuSource, list: &str) -> anyhow::Result<(GpuScope, Option<ScopeView>)> {
    let resolved = GpuScope::resolve_noted(Some(list), &|_| None)?;
    let view = gpu::read_node(source, &resolved.scope)
        .ok()
        .map(|node| node.scoped(&resolved.scope))
        .map(|mut v| {
            let mut notes = resolved.notes.clone();
            notes.append(&mut v.notes);
            v.notes = notes;
            v
        });
    Ok((resolved.scope, view))
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    if args.consecutive < 1 {
        anyhow::bail!(
            "--consecutive must be at least 1 (got {})",
            args.consecutive
        );
    }
    let mut out = std::io::stdout().lock();
    let source = gpu::source_from_env();
    let scoped = match args.gpus.as_deref() {
        Some(list) => Some(scoped_view(&source, list)?),
        None => None,
    };
    let gpus = match &scoped {
        Some((_, view)) => view.as_ref().map(|v| v.reading.gpus.clone()),
        None => gpu::read_gpus(&source).ok(),
    }
    .filter(|g| !g.is_empty());
    if !args.json {
        print_cards(
            &mut out,
            gpus.as_deref(),
            scoped.as_ref(),
            args.max_used_mib,
        );
    }
    let evidence = |readings| t2_evidence(readings, gpus.as_deref(), scoped.as_ref());
    if !args.proc_root.is_dir() {
        let r = t2::needs_linux("Checking that the GPU is free").with_evidence(evidence(None));
        let _ =
            inferlint_core::output::print_results(&mut out, std::slice::from_ref(&r), args.json);
        return Ok(t2::inspect_exit_code(&r));
    }
    let real = RealSystem::new(&args.proc_root, source);
    let self_pid = std::process::id() as i32;
    let (r, verdict_on_card) = if gpus.is_none() {
        // Nothing to read: one look at the processes, and no verdict on the card.
        let clear = processes_only(&args.proc_root, self_pid);
        let r = t2::result(&clear, "").with_evidence(evidence(Some(clear.readings_json())));
        (r, false)
    } else {
        let opts = ClearOptions {
            max_used_mib: args.max_used_mib,
            consecutive: args.consecutive,
            timeout_s: args.timeout.max(0.0),
            interval_s: 2.0,
            require_gpu: true,
        };
        let clear = match &scoped {
            Some((scope, _)) => {
                let mut system = ScopedSystem {
                    real,
                    scope: scope.clone(),
                };
                procs::wait_clear(&mut system, self_pid, &opts)?
            }
            None => procs::wait_clear(&mut { real }, self_pid, &opts)?,
        };
        let r = t2::result(&clear, "card not clear; refusing to boot. ")
            .with_evidence(evidence(Some(clear.readings_json())));
        (r, true)
    };
    let _ = inferlint_core::output::print_results(&mut out, std::slice::from_ref(&r), args.json);
    // Without a card to read, whatever the processes say, the card's state cannot be told.
    Ok(if verdict_on_card {
        t2::inspect_exit_code(&r)
    } else {
        2
    })
}

/// The cards' lines (and, with `--gpus`, who holds each and the scope's notes); a line that
/// says why there are none.
fn print_cards(
    out: &mut dyn Write,
    gpus: Option<&[Gpu]>,
    scoped: Option<&(GpuScope, Option<ScopeView>)>,
    max_used_mib: u64,
) {
    let view = scoped.and_then(|(_, v)| v.as_ref());
    match (gpus, scoped) {
        (Some(gs), _) => {
            for g in gs {
                for l in gpu_lines(g) {
                    let _ = writeln!(out, "{l}");
                }
                if let Some(v) = view {
                    for l in holder_lines(v, g.index) {
                        let _ = writeln!(out, "{l}");
                    }
                }
            }
        }
        (None, Some((scope, Some(_)))) => {
            let _ = writeln!(out, "no GPU of {} found here", scope.describe());
        }
        (None, _) => {
            let _ = writeln!(out, "no NVIDIA GPU found: nvidia-smi is missing or failed");
        }
    }
    if let Some(v) = view {
        for n in &v.notes {
            let _ = writeln!(out, "note: {n}");
        }
        if let Some(busy) = v.busy_outside(max_used_mib) {
            let _ = writeln!(out, "note: {busy}");
        }
    }
}

/// T2's evidence: the readings, the cards; with `--gpus` also which cards and who held them.
fn t2_evidence(
    readings: Option<serde_json::Value>,
    gpus: Option<&[Gpu]>,
    scoped: Option<&(GpuScope, Option<ScopeView>)>,
) -> T2Evidence {
    let gpus_json: Vec<serde_json::Value> = gpus.into_iter().flatten().map(Gpu::to_json).collect();
    let mut e = T2Evidence {
        readings,
        gpus: Some(serde_json::Value::from(gpus_json)),
        ..Default::default()
    };
    if let Some((scope, view)) = scoped {
        e.scope = Some(scope.describe());
        e.holders = Some(
            view.as_ref()
                .map(|v| inferlint_core::result::to_json_value(&v.reading.holders)),
        );
        e.notes = Some(view.as_ref().map_or(Vec::new(), |v| v.notes.clone()));
    }
    e
}

/// One look at the processes when no card can be read: a reading with no memory figure.
fn processes_only(proc_root: &std::path::Path, self_pid: i32) -> gpu::ClearResult {
    let n_live = procs::list_processes(proc_root)
        .map(|p| procs::all_servers(&p, self_pid).len())
        .unwrap_or(0);
    gpu::ClearResult {
        clear: false,
        readings: vec![gpu::Reading {
            elapsed_s: 0.0,
            used: None,
            n_live,
        }],
        reason: String::new(),
        gpu_unreadable: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_lines_match_the_spec() {
        let g = gpu::parse_query_gpu(
            "0, NVIDIA GeForce RTX 4090, 24564, 0, 24138, 616.56, 8.9",
            true,
        )
        .unwrap()
        .remove(0);
        assert_eq!(
            gpu_lines(&g),
            vec![
                "GPU 0   NVIDIA GeForce RTX 4090",
                "        Ada Lovelace, compute capability 8.9, driver 616.56",
                "        memory: 24,564 MiB total, 0 MiB used, 24,138 MiB free",
            ]
        );
        let g = gpu::parse_query_gpu("1, X, [N/A], 5, [N/A], [N/A]", false)
            .unwrap()
            .remove(0);
        assert_eq!(
            gpu_lines(&g),
            vec![
                "GPU 1   X",
                "        memory: ? MiB total, 5 MiB used, ? MiB free"
            ]
        );
    }
}
