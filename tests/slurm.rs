//! The real Slurm test: `.ci/slurm-test.sh` starts a one-node Slurm cluster as root on loopback,
//! submits `examples/slurm/*.sbatch` running this binary, cancels one mid-load, lets one hit its
//! time limit, and checks that every run folder is complete and no process of a run survives.
//! It needs root and installs Slurm and munge with apt-get when they are missing, so it is
//! ignored by default: `cargo test --test supervision slurm:: -- --ignored`.

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

/// The two-node lane: `.ci/slurm-two-node.sh` starts two Slurm nodes on this host (a network and
/// UTS namespace each) and a real vLLM spanning them (multi-node data parallel, node 2's part by
/// `srun --relative=1` under `inferlint node`); it needs root, Slurm and the real-vLLM install
/// of `.ci/real-vllm.sh`, and takes minutes.
#[test]
#[ignore = "needs root, Slurm and the real-vLLM install; run with --ignored"]
fn a_server_across_two_slurm_nodes_leaves_nothing_on_either() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join(".ci/slurm-two-node.sh"))
        .env("INFERLINT", env!("CARGO_BIN_EXE_inferlint"))
        .env("TWO_NODE_REQUIRED", "1")
        .output()
        .expect("bash runs the two-node lane");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the two-node lane failed ({:?}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains("all checks passed"), "{stdout}\n{stderr}");
    assert!(stdout.contains("cluster stopped"), "{stdout}\n{stderr}");
}
