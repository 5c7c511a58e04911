//! `inferlint gpu-inspect --gpus LIST`: only those cards are shown and judged, each with the
//! processes holding memory on it; memory on other cards is a note. On the simulated GPU
//! (held by this test) and on the recorded H200 node through a stand-in nvidia-smi.

use crate::smi_support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_inferlint");
const H200: &str = "nvidia-smi/h200x8-query-gpu-and-compute-apps-before-after.txt";

fn inspect(args: &[&str], env: &[(&str, String)]) -> (Option<i32>, String) {
    let procs = tempfile::tempdir().unwrap();
    // A process table without servers: T2's verdict depends on the cards alone.
    let d = procs.path().join("1");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("stat"), "1 (init) S 0 1 1 0").unwrap();
    std::fs::write(d.join("cmdline"), b"/sbin/init\0").unwrap();
    let mut c = Command::new(BIN);
    c.arg("gpu-inspect")
        .args(args)
        .args(["--proc-root", procs.path().to_str().unwrap()])
        .env_remove("CUDA_VISIBLE_DEVICES");
    for (k, v) in env {
        c.env(k, v);
    }
    let o: Output = c.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code(), text)
}

#[test]
fn on_the_simulated_gpu_only_the_named_card_is_judged() {
    let dir = tempfile::tempdir().unwrap();
    inferlint_sim::gpu::set_cards(dir.path(), 3).unwrap();
    let _held = inferlint_sim::gpu::hold(dir.path(), 21_768, 1).unwrap();
    let env = [("INFERLINT_GPU", format!("sim:{}", dir.path().display()))];
    let me = std::process::id();

    // Card 1 is held by this test: listed with its pid, and the card is refused.
    let (code, out) = inspect(&["--gpus", "1", "--timeout", "0"], &env);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("GPU 1   Simulated GPU\n"), "{out}");
    assert!(!out.contains("GPU 0   "), "only the named card: {out}");
    let held = format!("        held by pid {me} (");
    assert!(out.contains(&held), "{out}");
    assert!(out.contains(", 21768 MiB on GPU 1\n"), "{out}");
    assert!(out.contains("last reading 21768 MiB used"), "{out}");

    // Card 0 is free: it passes, and card 1's memory is a note, not a refusal.
    let (code, out) = inspect(&["--gpus", "0", "--consecutive", "1"], &env);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("GPU 0   Simulated GPU\n        driver sim\n        memory: 81,559 MiB total, 0 MiB used"), "{out}");
    assert!(out.contains("        held by no process\n"), "{out}");
    assert!(
        out.contains(&format!(
            "note: GPU 1 (not judged) holds 21,768 MiB: pid {me} ("
        )),
        "{out}"
    );
    assert!(
        out.contains("[ T2] PASS  1 consecutive clear readings"),
        "{out}"
    );

    // By UUID, in JSON: the evidence names the scope and the holders.
    let uuid = inferlint_sim::gpu::sim_uuid(1);
    let (code, out) = inspect(&["--gpus", &uuid, "--timeout", "0", "--json"], &env);
    assert_eq!(code, Some(1), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ev = &v[0]["evidence"];
    assert_eq!(ev["scope"], format!("GPU {uuid} (from --gpus)"));
    assert_eq!(ev["gpus"].as_array().unwrap().len(), 1);
    assert_eq!(ev["gpus"][0]["uuid"], uuid.as_str());
    assert_eq!(ev["holders"][0]["pid"], me);
    assert_eq!(ev["holders"][0]["gpu"], 1);
    assert_eq!(ev["holders"][0]["visible"], true);

    // Without --gpus every card is judged, as before.
    let (code, out) = inspect(&["--timeout", "0"], &env);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("GPU 0   ") && out.contains("GPU 2   "),
        "{out}"
    );
    assert!(!out.contains("held by"), "holders only with --gpus: {out}");
}

#[test]
fn a_bad_list_or_a_card_that_is_not_there() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("INFERLINT_GPU", format!("sim:{}", dir.path().display()))];
    let (code, out) = inspect(&["--gpus", "0,x"], &env);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--gpus: \"x\" is not a GPU index"), "{out}");
    let (code, out) = inspect(&["--gpus", "5", "--timeout", "0"], &env);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("no GPU of GPU 5 (from --gpus) found here"),
        "{out}"
    );
    assert!(
        out.contains("note: --gpus entry 5 names no GPU here"),
        "{out}"
    );
    assert!(out.contains("[ T2] ????"), "never a pass: {out}");
}

/// A stand-in nvidia-smi printing the recorded blocks of one section.
fn fake_smi(dir: &Path, section: &str) {
    let gpu = smi_support::block(section, "index, uuid");
    let apps = smi_support::block(section, "gpu_uuid, pid");
    std::fs::write(dir.join("gpu.txt"), gpu).unwrap();
    std::fs::write(dir.join("apps.txt"), apps).unwrap();
    let exe = dir.join("nvidia-smi");
    std::fs::write(
        &exe,
        format!(
            "#!/bin/sh\ncase \"$1\" in\n  --query-gpu=*) cat '{d}/gpu.txt' ;;\n  --query-compute-apps=*) cat '{d}/apps.txt' ;;\n  *) exit 9 ;;\nesac\n",
            d = dir.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn on_the_recorded_h200_node_before_and_after_the_release() {
    let Some(text) = inferlint_core::testkit::evidence_text(H200) else {
        return;
    };
    let (before, after) = text.split_once("## After").unwrap();
    let smi = tempfile::tempdir().unwrap();
    let env = [
        ("PATH", format!("{}:/usr/bin:/bin", smi.path().display())),
        ("INFERLINT_GPU", "nvidia-smi".to_string()),
    ];
    fake_smi(smi.path(), before);
    let (code, out) = inspect(&["--gpus", "GPU-4e9e74b7", "--timeout", "0"], &env);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("GPU 2   \n"), "{out}");
    assert!(
        out.contains("memory: 143,771 MiB total, 105,851 MiB used"),
        "{out}"
    );
    // Pid 1425258 is not on this machine (or is some other process): either way its 105842
    // MiB are listed on card 2 and nowhere else.
    let held: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("        held by "))
        .collect();
    assert_eq!(held.len(), 1, "{out}");
    assert!(held[0].ends_with(", 105842 MiB on GPU 2"), "{out}");
    assert!(out.contains("last reading 105851 MiB used"), "{out}");

    // After the release card 2 is free, while card 7's 58 GB stay a note.
    fake_smi(smi.path(), after);
    let (code, out) = inspect(&["--gpus", "2", "--consecutive", "1"], &env);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("memory: 143,771 MiB total, 0 MiB used"),
        "{out}"
    );
    assert!(out.contains("        held by no process\n"), "{out}");
    assert!(out.contains("GPU 7 (not judged) holds 58,071 MiB"), "{out}");
    assert!(out.contains("[ T2] PASS"), "{out}");
    // Card 4 still reads 244 MiB after the release: judged against the limit on that card alone.
    let (code, out) = inspect(
        &["--gpus", "4", "--timeout", "0", "--max-used-mib", "243"],
        &env,
    );
    assert_eq!(code, Some(1), "one MiB over the limit refuses: {out}");
    let (code, out) = inspect(
        &["--gpus", "4", "--consecutive", "1", "--max-used-mib", "244"],
        &env,
    );
    assert_eq!(code, Some(0), "at the limit is clear: {out}");
}
