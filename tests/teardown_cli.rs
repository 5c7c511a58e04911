//! `inferlint teardown` and `inferlint gpu-inspect`, run as a user runs them: a fake
//! `nvidia-smi` on PATH printing the recorded lines, synthetic `/proc` roots for exact output,
//! and a real teardown inside a PID namespace (so nothing outside the test is ever in reach)
//! with bystanders that must survive.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_inferlint");

/// A folder with an `nvidia-smi` script.
fn fake_smi(script_body: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("nvidia-smi");
    std::fs::write(&p, format!("#!/bin/sh\n{script_body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Prints the recorded RTX 4090 row, with `used` MiB used.
fn card(used: u64) -> tempfile::TempDir {
    fake_smi(&format!(
        "case \"$*\" in\n  *compute_cap*) echo \"0, NVIDIA GeForce RTX 4090, 24564, {used}, {free}, 616.56, 8.9\";;\n  *) echo \"0, NVIDIA GeForce RTX 4090, 24564, {used}, {free}, 616.56\";;\nesac",
        free = 24564u64.saturating_sub(used + 426)
    ))
}

fn path_with(dir: &Path) -> String {
    format!("{}:/usr/bin:/bin", dir.display())
}

fn write_proc(root: &Path, pid: i32, ppid: i32, comm: &str, argv: &[&str]) {
    let d = root.join(pid.to_string());
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("stat"), format!("{pid} ({comm}) S {ppid} {pid} 1 0")).unwrap();
    let mut cmd = Vec::new();
    for a in argv {
        cmd.extend_from_slice(a.as_bytes());
        cmd.push(0);
    }
    std::fs::write(d.join("cmdline"), cmd).unwrap();
    std::fs::write(d.join("comm"), format!("{comm}\n")).unwrap();
}

/// A process table with no server: the card's verdict depends on memory alone.
fn quiet_proc() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_proc(dir.path(), 1, 0, "init", &["/sbin/init"]);
    dir
}

/// vLLM + EngineCore, SGLang + scheduler, and a shell
/// (docs/design/evidence.md#finding-and-stopping-server-processes).
fn engine_table_proc() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write_proc(r, 1, 0, "init", &["/sbin/init"]);
    write_proc(r, 10, 1, "vllm", &["vllm", "serve", "m"]);
    write_proc(r, 11, 10, "VLLM::EngineCor", &["VLLM::EngineCore"]);
    write_proc(
        r,
        20,
        1,
        "python",
        &["python", "-m", "sglang.launch_server", "--model-path", "m"],
    );
    write_proc(r, 21, 20, "sglang::schedul", &["sglang::scheduler"]);
    write_proc(r, 30, 1, "bash", &["bash"]);
    dir
}

fn inferlint(args: &[&str], env: &[(&str, String)]) -> Output {
    let mut c = Command::new(BIN);
    c.args(args).env_remove("INFERLINT_ENGINE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn gpu_inspect_on_an_idle_card_passes() {
    let smi = card(0);
    let procs = quiet_proc();
    let o = inferlint(
        &[
            "gpu-inspect",
            "--consecutive",
            "1",
            "--proc-root",
            procs.path().to_str().unwrap(),
        ],
        &[
            ("PATH", path_with(smi.path())),
            ("INFERLINT_GPU", "nvidia-smi".into()),
        ],
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("GPU 0   NVIDIA GeForce RTX 4090\n"), "{out}");
    assert!(
        out.contains("        Ada Lovelace, compute capability 8.9, driver 616.56\n"),
        "{out}"
    );
    assert!(
        out.contains("        memory: 24,564 MiB total, 0 MiB used, 24,138 MiB free\n"),
        "{out}"
    );
    assert!(
        out.contains("[ T2] PASS  1 consecutive clear readings"),
        "{out}"
    );
}

#[test]
fn gpu_inspect_refuses_a_held_card() {
    let smi = card(21_768);
    let procs = quiet_proc();
    let o = inferlint(
        &[
            "gpu-inspect",
            "--timeout",
            "0",
            "--proc-root",
            procs.path().to_str().unwrap(),
        ],
        &[
            ("PATH", path_with(smi.path())),
            ("INFERLINT_GPU", "nvidia-smi".into()),
        ],
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(
            "[ T2] TRIPWIRE-FAILED  card not clear; refusing to boot. not clear after 0s: last reading 21768 MiB used, 0 server processes alive"
        ),
        "{out}"
    );
}

#[test]
fn gpu_inspect_json_has_the_cards_in_its_evidence() {
    let smi = card(0);
    let procs = quiet_proc();
    let o = inferlint(
        &[
            "gpu-inspect",
            "--consecutive",
            "1",
            "--json",
            "--proc-root",
            procs.path().to_str().unwrap(),
        ],
        &[
            ("PATH", path_with(smi.path())),
            ("INFERLINT_GPU", "nvidia-smi".into()),
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 1);
    assert_eq!(arr[0]["tripwire"], "T2");
    assert_eq!(arr[0]["status"], "pass");
    assert_eq!(arr[0]["evidence"]["gpus"][0]["family"], "Ada Lovelace");
    assert_eq!(arr[0]["evidence"]["readings"][0][1], 0);
}

#[test]
fn an_old_driver_is_asked_again_without_compute_cap() {
    let smi = fake_smi(
        "case \"$*\" in\n  *compute_cap*) echo 'Field \"compute_cap\" is not a valid field to query.' >&2; exit 2;;\n  *) echo '0, Tesla P100-PCIE-16GB, 16280, 0, 16270, 418.87';;\nesac",
    );
    let procs = quiet_proc();
    let o = inferlint(
        &[
            "gpu-inspect",
            "--consecutive",
            "1",
            "--proc-root",
            procs.path().to_str().unwrap(),
        ],
        &[
            ("PATH", path_with(smi.path())),
            ("INFERLINT_GPU", "nvidia-smi".into()),
        ],
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("GPU 0   Tesla P100-PCIE-16GB\n        driver 418.87\n"),
        "{out}"
    );
}

#[test]
fn no_nvidia_smi_or_a_failing_one_finds_no_gpu() {
    let procs = quiet_proc();
    let empty = tempfile::tempdir().unwrap();
    let failing = fake_smi(
        "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"; exit 9",
    );
    for dir in [empty.path(), failing.path()] {
        let o = inferlint(
            &["gpu-inspect", "--proc-root", procs.path().to_str().unwrap()],
            &[
                ("PATH", path_with(dir)),
                ("INFERLINT_GPU", "nvidia-smi".into()),
            ],
        );
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{out}");
        assert!(
            out.contains("no NVIDIA GPU found: nvidia-smi is missing or failed"),
            "{out}"
        );
        assert!(out.contains("[ T2] ????"), "{out}");
    }
}

#[test]
fn without_proc_both_commands_need_linux() {
    let smi = card(0);
    let env = [
        ("PATH", path_with(smi.path())),
        ("INFERLINT_GPU", "nvidia-smi".into()),
    ];
    let o = inferlint(&["gpu-inspect", "--proc-root", "/nonexistent/proc"], &env);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains(
        "[ T2] ????  Checking that the GPU is free needs Linux: it finds the server's processes in /proc. Run it where the server runs."
    ));
    let o = inferlint(&["teardown", "--proc-root", "/nonexistent/proc"], &env);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains(
        "[ T2] ????  teardown needs Linux: it finds the server's processes in /proc. Run it where the server runs."
    ));
}

#[test]
fn teardown_trtllm_dry_run_leaves_the_other_engines_alone() {
    let procs = engine_table_proc();
    let o = inferlint(
        &[
            "teardown",
            "--engine",
            "trtllm",
            "--dry-run",
            "--proc-root",
            procs.path().to_str().unwrap(),
        ],
        &[],
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert_eq!(
        out,
        "no server processes found (TensorRT-LLM)\n\
         left alone (--engine trtllm): 4 processes of SGLang and vLLM servers\n\
         dry run: nothing was signalled\n"
    );
}

#[test]
fn teardown_dry_run_lists_targets_and_the_pkill_comparison() {
    let procs = engine_table_proc();
    write_proc(
        procs.path(),
        40,
        30,
        "bash",
        &["bash", "-c", "sleep 1; pkill -f 'vllm serve'"],
    );
    write_proc(
        procs.path(),
        41,
        30,
        "tail",
        &["tail", "-f", "vllm serve.log"],
    );
    let o = inferlint(
        &[
            "teardown",
            "--engine",
            "vllm",
            "--dry-run",
            "--proc-root",
            procs.path().to_str().unwrap(),
        ],
        &[],
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert_eq!(
        out,
        "target  pid=10       vllm serve m\n\
         target  pid=11       VLLM::EngineCore\n\
         left alone (--engine vllm): 2 processes of SGLang servers\n\
         (pkill -f 'vllm serve' would miss 1 and wrongly hit 2)\n\
         dry run: nothing was signalled\n"
    );
}

#[test]
fn teardown_refuses_an_unknown_engine() {
    let o = inferlint(&["teardown", "--engine", "tgi", "--dry-run"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("unknown engine 'tgi' (known: vllm, sglang, trtllm, llamacpp)"));
}

/// Runs a bash script as PID 1 of a fresh PID namespace with its own /proc; None where that is
/// not allowed (not root).
fn in_pid_namespace(script: &str, dir: &Path, env: &[(&str, String)]) -> Option<Output> {
    let probe = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI runs as root: unshare --pid must work"
        );
        eprintln!("skipping: cannot create a PID namespace here");
        return None;
    }
    let path = dir.join("script.sh");
    std::fs::write(&path, script).unwrap();
    let mut c = Command::new("timeout");
    c.args(["60", "unshare", "--pid", "--fork", "--mount-proc", "bash"])
        .arg(&path)
        .current_dir(dir)
        .env("INFERLINT", BIN)
        .env_remove("INFERLINT_ENGINE");
    for (k, v) in env {
        c.env(k, v);
    }
    Some(c.output().unwrap())
}

const BYSTANDERS: &str = r#"
alive() { [ -e /proc/$1/stat ] && ! awk '{exit ($3 != "Z")}' /proc/$1/stat; }
: > "vllm serve.log"
bash -c 'sleep 30; pkill -f "vllm serve"' &
ONELINER=$!
tail -f "vllm serve.log" > /dev/null &
TAIL=$!
bash -c 'exec -a VLLM::EngineCore sleep 30' &
ENGINE=$!
bash -c 'trap "" TERM; exec -a VLLM::EngineCore sleep 31' &
STUBBORN=$!
sleep 0.3
# The caller's own shell looks like a server: it must never be a target.
bash -c 'exec -a VLLM::EngineCore bash -c "\"$INFERLINT\" teardown --consecutive 1 --timeout 5 --grace 1 > out.txt; echo \$? > rc.txt; echo alive > shell.txt"'
sleep 0.1
for p in $ONELINER $TAIL; do alive $p && echo "$p" >> bystanders.txt; done
for p in $ENGINE $STUBBORN; do alive $p && echo "$p" >> survivors.txt; done
echo "$ENGINE $STUBBORN" > engines.txt
true
"#;

#[test]
fn a_real_teardown_stops_engines_and_spares_bystanders() {
    let dir = tempfile::tempdir().unwrap();
    let gpu_dir = dir.path().join("gpu");
    std::fs::create_dir_all(&gpu_dir).unwrap();
    let env = [("INFERLINT_GPU", format!("sim:{}", gpu_dir.display()))];
    let Some(o) = in_pid_namespace(BYSTANDERS, dir.path(), &env) else {
        return;
    };
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap_or_default();
    let out = read("out.txt");
    let diag = format!(
        "{out}\nstderr: {}\nrc: {}",
        String::from_utf8_lossy(&o.stderr),
        read("rc.txt")
    );
    assert_eq!(read("rc.txt").trim(), "0", "{diag}");
    assert_eq!(read("shell.txt").trim(), "alive", "{diag}");
    assert_eq!(read("bystanders.txt").lines().count(), 2, "{diag}");
    assert_eq!(read("survivors.txt"), "", "{diag}");
    let engines: Vec<String> = read("engines.txt")
        .split_whitespace()
        .map(String::from)
        .collect();
    for e in &engines {
        assert!(
            out.contains(&format!("target  pid={e:<8} VLLM::EngineCore")),
            "{diag}"
        );
    }
    assert_eq!(out.matches("target  pid=").count(), 2, "{diag}");
    assert!(
        out.contains("(pkill -f 'vllm serve' would miss 2 and wrongly hit "),
        "{diag}"
    );
    assert!(
        out.contains("[ T2] PASS  1 consecutive clear readings"),
        "{diag}"
    );
}

#[test]
fn a_real_teardown_without_any_gpu_cannot_pass() {
    let dir = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let script = r#"
bash -c 'exec -a VLLM::EngineCore sleep 30' &
sleep 0.2
"$INFERLINT" teardown --consecutive 1 --timeout 2 --grace 1 > out.txt
echo $? > rc.txt
"#;
    let env = [
        ("INFERLINT_GPU", "nvidia-smi".to_string()),
        ("PATH", path_with(empty.path())),
    ];
    let Some(_) = in_pid_namespace(script, dir.path(), &env) else {
        return;
    };
    let out = std::fs::read_to_string(dir.path().join("out.txt")).unwrap();
    let rc = std::fs::read_to_string(dir.path().join("rc.txt")).unwrap();
    assert_eq!(rc.trim(), "2", "{out}");
    assert!(out.contains("target  pid="), "{out}");
    assert!(
        out.contains("no NVIDIA GPU found: nvidia-smi is missing or failed"),
        "{out}"
    );
    assert!(
        out.contains("[ T2] ????  no server process is alive, but no GPU could be read"),
        "{out}"
    );
}
