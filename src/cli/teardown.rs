//! `inferlint teardown`: stop every inference server process found by structure (never by
//! substring, never inferlint or its ancestors), then wait until the card reads clear (T2).

use std::io::Write;
use std::path::PathBuf;

use inferlint_core::checks::t2;
use inferlint_host::gpu::{self, ClearOptions, GpuSource};
use inferlint_host::procs::{self, RealSystem, TeardownError, TeardownOptions};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A reading is clear only when every GPU uses at most this many MiB.
    #[arg(long, default_value_t = gpu::DEFAULT_MAX_USED_MIB)]
    pub max_used_mib: u64,
    /// Clear readings needed in a row (one low reading is not proof).
    #[arg(long, default_value_t = 2)]
    pub consecutive: u32,
    /// Seconds to wait for the clear readings.
    #[arg(long, default_value_t = 120.0)]
    pub timeout: f64,
    /// Seconds the servers get after SIGTERM before SIGKILL.
    #[arg(long, default_value_t = 15.0)]
    pub grace: f64,
    /// List what would be stopped; signal nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Stop only this engine's servers (vllm, sglang, trtllm, llamacpp); the card still counts all.
    #[arg(long)]
    pub engine: Option<String>,
    /// Also stop other users' servers (by default only your own).
    #[arg(long)]
    pub all_users: bool,
    /// Another /proc root (tests).
    #[arg(long, hide = true, default_value = "/proc")]
    pub proc_root: PathBuf,
}

use inferlint_core::checks::t2::needs_linux;

pub fn run(args: Args) -> anyhow::Result<i32> {
    let named = inferlint_core::engine::named_engine(args.engine.as_deref())?;
    if args.consecutive < 1 {
        anyhow::bail!(
            "--consecutive must be at least 1 (got {})",
            args.consecutive
        );
    }
    let mut out = std::io::stdout().lock();
    let source = gpu::source_from_env();
    let gpu_readable = !matches!(source, GpuSource::None);
    let opts = TeardownOptions {
        engine: named.as_ref().map(|n| n.engine),
        self_pid: std::process::id() as i32,
        uid: (!args.all_users).then(inferlint_supervisor::sys::getuid),
        grace_s: args.grace.max(0.0),
        poll_s: 0.5,
        clear: ClearOptions {
            max_used_mib: args.max_used_mib,
            consecutive: args.consecutive,
            timeout_s: args.timeout.max(0.0),
            interval_s: 2.0,
            require_gpu: gpu_readable,
        },
        dry_run: args.dry_run,
    };
    let mut system = RealSystem::new(&args.proc_root, source);
    let outcome = match procs::teardown(&mut system, &opts) {
        Ok(o) => o,
        Err(TeardownError::NoProc) => {
            let r = needs_linux("teardown");
            let _ = writeln!(out, "{}", r.line());
            return Ok(2);
        }
        Err(e) => return Err(e.into()),
    };

    let sel = &outcome.selection;
    for t in &sel.targets {
        let _ = writeln!(out, "{}", t.line());
    }
    if sel.targets.is_empty() {
        let _ = writeln!(out, "{}", procs::none_found_line(opts.engine));
    }
    if let Some(n) = &named {
        if let Some(l) =
            procs::left_alone_line(&format!("--engine {}", n.engine.key()), &sel.other_engines)
        {
            let _ = writeln!(out, "{l}");
        }
    }
    if let Some(l) =
        procs::left_alone_line("other users; --all-users includes them", &sel.other_users)
    {
        let _ = writeln!(out, "{l}");
    }
    if let Some(l) = outcome.pkill.line() {
        let _ = writeln!(out, "{l}");
    }
    let Some(clear) = &outcome.clear else {
        let _ = writeln!(out, "dry run: nothing was signalled");
        return Ok(0);
    };
    if clear.gpu_unreadable {
        let _ = writeln!(out, "no NVIDIA GPU found: nvidia-smi is missing or failed");
    }
    let mut signalled: Vec<i32> = Vec::new();
    for (pid, _) in &outcome.signals {
        if !signalled.contains(pid) {
            signalled.push(*pid);
        }
    }
    let result = t2::result(clear, "").with_evidence(inferlint_core::evidence::T2Evidence {
        readings: Some(clear.readings_json()),
        signalled: Some(signalled),
        ..Default::default()
    });
    let _ = writeln!(out, "{}", result.line());
    Ok(inferlint_core::output::exit_code(&[result], false))
}
