//! The real Slurm test: `.ci/slurm-test.sh` starts a one-node Slurm cluster as root on loopback,
//! submits `examples/slurm/*.sbatch` running this binary, cancels one mid-load, lets one hit its
//! time limit, and checks that every run folder is complete and no process of a run survives.
//! It needs root and installs Slurm and munge with apt-get when they are missing, so it is
//! ignored by default: `cargo test --test slurm -- --ignored`.

use std::path::PathBuf;
use std::process::Command;

#[test]
#[ignore = "needs root and Slurm (installed with apt-get if missing); run with --ignored"]
fn slurm_jobs_end_with_complete_run_folders_and_nothing_left() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join(".ci/slurm-test.sh"))
        .env("INFERLINT", env!("CARGO_BIN_EXE_inferlint"))
        .env("SLURM_TEST_REQUIRED", "1")
        .output()
        .expect("bash runs the Slurm test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the Slurm test failed ({:?}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains("all checks passed"), "{stdout}\n{stderr}");
    assert!(stdout.contains("cluster stopped"), "{stdout}\n{stderr}");
}
