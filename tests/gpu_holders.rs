//! Who holds memory on the run's GPUs (docs/supervision.md, "Which GPUs a run judges"): the
//! recorded H200 node read through a stand-in nvidia-smi and a synthetic /proc (host pids,
//! a container's pid found through NSpid, a same-numbered stranger, `[Not Found]`), and the
//! simulated GPU with several cards and real holder processes of this test.

use crate::sim_support;
use crate::smi_support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use inferlint_host::gpu::{self, GpuHolder, GpuScope, GpuSource, ScopeOrigin};
use inferlint_sim::gpu as simgpu;

const H200: &str = "nvidia-smi/h200x8-query-gpu-and-compute-apps-before-after.txt";

/// The recorded output split into (query-gpu, compute-apps) for "## Before" and "## After".
fn h200_sections() -> Option<[(String, String); 2]> {
    let text = inferlint_core::testkit::evidence_text(H200)?;
    let (before, after) = text.split_once("## After").unwrap();
    let blocks = |part: &str| {
        let gpu = smi_support::block(part, "index, uuid");
        let apps = smi_support::block(part, "gpu_uuid, pid");
        (gpu, apps)
    };
    Some([blocks(before), blocks(after)])
}

/// A stand-in `nvidia-smi` that prints `gpu.txt` for --query-gpu and `apps.txt` for
/// --query-compute-apps (the recorded output, header and units included).
fn fake_smi(dir: &Path, gpu_txt: &str, apps_txt: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("gpu.txt"), gpu_txt).unwrap();
    std::fs::write(dir.join("apps.txt"), apps_txt).unwrap();
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
    exe
}

/// One process in a synthetic /proc: stat, status (Uid, NSpid), cmdline, comm, and fds
/// pointing at `fds` (dangling links are fine: only the link text is read).
fn write_proc(root: &Path, pid: u32, uid: u32, nspid: &[u32], argv: &[&str], fds: &[&str]) {
    let d = root.join(pid.to_string());
    std::fs::create_dir_all(d.join("fd")).unwrap();
    let comm: String = argv.first().map_or("x", |a| a).chars().take(15).collect();
    std::fs::write(
        d.join("stat"),
        format!("{pid} ({comm}) S 1 {pid} {pid} 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0"),
    )
    .unwrap();
    let ns: Vec<String> = nspid.iter().map(u32::to_string).collect();
    std::fs::write(
        d.join("status"),
        format!(
            "Name:\t{comm}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nNSpid:\t{}\n",
            ns.join("\t")
        ),
    )
    .unwrap();
    std::fs::write(d.join("comm"), format!("{comm}\n")).unwrap();
    let mut cmdline = argv.join("\0").into_bytes();
    cmdline.push(0);
    std::fs::write(d.join("cmdline"), cmdline).unwrap();
    for (i, target) in fds.iter().enumerate() {
        std::os::unix::fs::symlink(target, d.join("fd").join(i.to_string())).unwrap();
    }
}

fn on(holders: &Option<Vec<GpuHolder>>, card: u32) -> Vec<GpuHolder> {
    holders
        .iter()
        .flatten()
        .filter(|h| h.gpu == card)
        .cloned()
        .collect()
}

#[test]
fn the_recorded_h200_node_before_and_after_the_release() {
    let Some([(gpu_before, apps_before), (gpu_after, apps_after)]) = h200_sections() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let proc_root = tmp.path().join("proc");
    // Card 2's holder, a host pid we can see, holding the device open.
    write_proc(
        &proc_root,
        1425258,
        0,
        &[1425258],
        &["python3", "-m", "vllm.entrypoints.openai.api_server"],
        &["/dev/null", "/dev/nvidiactl", "/dev/nvidia2"],
    );
    // Card 0's pid exists here too, but it is another process: no NVIDIA device open.
    write_proc(
        &proc_root,
        1328667,
        0,
        &[1328667],
        &["sleep", "60"],
        &["/dev/null"],
    );
    // Card 7's pid (nvidia-smi said [Not Found]) is a container's pid 1758887, here 4242.
    write_proc(
        &proc_root,
        4242,
        0,
        &[4242, 1758887],
        &["VLLM::EngineCore", "", ""],
        &["/dev/nvidia7"],
    );
    let exe = fake_smi(tmp.path(), &gpu_before, &apps_before);
    let source = GpuSource::NvidiaSmi(exe);
    let scope = GpuScope {
        ids: Some(vec![gpu::GpuId::Uuid("GPU-4e9e74b7".into())]),
        origin: ScopeOrigin::Flag,
    };
    let node = gpu::read_node_in(&source, &scope, &proc_root).unwrap();
    assert_eq!(node.gpus.len(), 8);
    let view = node.scoped(&scope);
    let r = &view.reading;
    assert_eq!(r.gpus.len(), 1);
    assert_eq!(r.gpus[0].index, 2);
    assert_eq!(r.max_used_mib(), Some(105_851));
    let h = on(&r.holders, 2);
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!(
        (h[0].pid, h[0].used_mib, h[0].visible, h[0].uid),
        (1425258, Some(105_842), true, Some(0))
    );
    assert_eq!(
        h[0].command.as_deref(),
        Some("python3 -m vllm.entrypoints.openai.api_server")
    );
    assert_eq!(h[0].user.as_deref(), Some("root"), "uid 0 from /etc/passwd");
    assert_eq!(
        h[0].describe(),
        "pid 1425258 (root) python3 -m vllm.entrypoints.openai.api_server, 105842 MiB on GPU 2"
    );
    // Card 0's memory is not this run's: only a note.
    assert!(on(&r.holders, 0).is_empty());
    let busy = view.busy_outside(800).unwrap();
    assert!(
        busy.starts_with("GPU 0 (not judged) holds 130,013 MiB: a process outside this pid namespace, 130004 MiB on GPU 0; GPU 1 (not judged)"),
        "{busy}"
    );
    assert!(busy.contains("GPU 7 "), "{busy}");
    // Card 0's same-numbered stranger is not the holder; card 7's holder is found via NSpid.
    let all = node.holders.clone();
    let zero = on(&all, 0);
    assert!(!zero[0].visible, "{zero:?}");
    assert_eq!(
        zero[0].describe(),
        "a process outside this pid namespace, 130004 MiB on GPU 0"
    );
    let seven = on(&all, 7);
    assert_eq!(
        (seven[0].pid, seven[0].visible, seven[0].command.as_deref()),
        (4242, true, Some("VLLM::EngineCore"))
    );

    // After the release card 2 reads 0 MiB and nobody holds it.
    fake_smi(tmp.path(), &gpu_after, &apps_after);
    let r = gpu::read_scope_in(&source, &scope, &proc_root).unwrap();
    assert_eq!(r.max_used_mib(), Some(0));
    assert_eq!(r.holders, Some(vec![]));
    // Without the container's process, card 7's pid is outside this namespace.
    std::fs::remove_dir_all(proc_root.join("4242")).unwrap();
    let seven = gpu::read_scope_in(
        &source,
        &GpuScope {
            ids: Some(vec![gpu::GpuId::Index(7)]),
            origin: ScopeOrigin::Flag,
        },
        &proc_root,
    )
    .unwrap();
    let h = on(&seven.holders, 7);
    assert_eq!(
        (h[0].pid, h[0].visible, h[0].command.clone()),
        (1758887, false, None)
    );
}

#[test]
fn a_failing_process_query_means_no_attribution_not_no_holder() {
    let Some([(gpu_before, _), _]) = h200_sections() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let exe = fake_smi(tmp.path(), &gpu_before, "");
    // The process query fails (as on a driver that cannot list processes).
    let script = std::fs::read_to_string(&exe).unwrap().replace(
        "--query-compute-apps=*) cat",
        "--query-compute-apps=*) exit 3; cat",
    );
    std::fs::write(&exe, script).unwrap();
    let r = gpu::read_scope_in(&GpuSource::NvidiaSmi(exe), &GpuScope::all(), tmp.path()).unwrap();
    assert_eq!(r.gpus.len(), 8);
    assert_eq!(r.holders, None, "cannot attribute is not 'nobody'");
}

#[test]
fn nvidia_smi_rows_are_placed_on_cards_by_uuid() {
    let Some([(gpu_before, apps_before), _]) = h200_sections() else {
        return;
    };
    let gpus = gpu::parse_query_gpu_fields(&gpu_before, &["index"]).unwrap();
    let rows = gpu::compute_apps_on_cards(&apps_before, &gpus, &[]);
    assert_eq!(rows.len(), 8);
    let cards: Vec<u32> = rows.iter().map(|r| r.gpu).collect();
    assert_eq!(cards, vec![0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(rows[2].pid, 1425258);
    assert_eq!(rows[7].name, None, "[Not Found]");
    // A row of a card the query did not list is left out, not put on card 0.
    let rows = gpu::compute_apps_on_cards(&apps_before, &gpus[..2], &[]);
    assert_eq!(rows.iter().map(|r| r.gpu).collect::<Vec<_>>(), vec![0, 1]);

    // Rows without gpu_uuid (the two recorded vLLM engines) belong to a node's only card, and
    // to no card of a node with several.
    let Some(engines) =
        inferlint_core::testkit::evidence_text("nvidia-smi/compute-apps-vllm-enginecore.csv.txt")
    else {
        return;
    };
    let rows = gpu::compute_apps_on_cards(&engines, &gpus[3..4], &[]);
    assert_eq!(
        rows.iter()
            .map(|r| (r.gpu, r.pid, r.used_mib, r.name.as_deref()))
            .collect::<Vec<_>>(),
        vec![
            (3, 3858903, Some(6265), Some("VLLM::EngineCore")),
            (3, 3880364, Some(5530), Some("VLLM::EngineCore"))
        ]
    );
    assert!(gpu::compute_apps_on_cards(&engines, &gpus[3..5], &[]).is_empty());
}

#[test]
fn commands_and_nspid() {
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    assert_eq!(
        gpu::command_of(&s(&["VLLM::Worker_TP1", "padding"]), "VLLM::Worker_TP"),
        Some("VLLM::Worker_TP1".into())
    );
    assert_eq!(
        gpu::command_of(
            &s(&["/usr/bin/python3", "-m", "sglang.launch_server"]),
            "python3"
        ),
        Some("/usr/bin/python3 -m sglang.launch_server".into())
    );
    assert_eq!(
        gpu::command_of(&[], "kworker/0:1"),
        Some("[kworker/0:1]".into())
    );
    let long = "x".repeat(150);
    let c = gpu::command_of(&s(&["python", &long]), "python").unwrap();
    assert_eq!(c.chars().count(), 101);
    assert!(c.ends_with('…'));
    assert_eq!(
        gpu::parse_nspid("Name:\tx\nNSpid:\t4242\t7\n"),
        vec![4242, 7]
    );
    assert!(gpu::parse_nspid("Name:\tx\n").is_empty());
    let h = GpuHolder {
        gpu: 1,
        pid: 4711,
        used_mib: Some(21768),
        uid: Some(1001),
        user: Some("alice".into()),
        command: Some("VLLM::EngineCore".into()),
        visible: true,
    };
    assert_eq!(
        h.describe(),
        "pid 4711 (alice) VLLM::EngineCore, 21768 MiB on GPU 1"
    );
    let h = GpuHolder {
        user: None,
        used_mib: None,
        ..h
    };
    assert_eq!(
        h.describe(),
        "pid 4711 (uid 1001) VLLM::EngineCore, ? MiB on GPU 1"
    );
}

/// A process of this test (a `sleep`) recorded as a simulated holder of `mib` on `card`.
fn sleeping_holder(dir: &Path, mib: u64, card: u32) -> std::process::Child {
    let child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = child.id();
    // Just after exec the kernel has named the process but not yet laid out its arguments
    // (its cmdline reads empty): wait for them, as a holder found later would have them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.is_empty()) {
        assert!(
            std::time::Instant::now() < deadline,
            "sleep never showed its arguments"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let start: u64 = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let h = simgpu::Holding {
        pid,
        start_time: start,
        mib,
        gpu: card,
    };
    std::fs::write(
        dir.join(format!("holding-{pid}.json")),
        serde_json::to_vec(&h).unwrap(),
    )
    .unwrap();
    child
}

fn only(card: u32) -> GpuScope {
    GpuScope {
        ids: Some(vec![gpu::GpuId::Index(card)]),
        origin: ScopeOrigin::Flag,
    }
}

#[test]
fn simulated_cards_and_their_holders() {
    let dir = tempfile::tempdir().unwrap();
    simgpu::set_cards(dir.path(), 4).unwrap();
    let source = GpuSource::Sim(dir.path().to_path_buf());
    let gpus = gpu::read_gpus(&source).unwrap();
    assert_eq!(gpus.len(), 4);
    assert_eq!(gpus[3].uuid.as_deref(), Some(simgpu::sim_uuid(3).as_str()));
    assert_ne!(simgpu::sim_uuid(1), simgpu::sim_uuid(10));
    assert!(!simgpu::sim_uuid(10).starts_with(&simgpu::sim_uuid(1)));

    // This test holds card 1; a sleeping child holds card 0.
    let guard = simgpu::hold(dir.path(), 5_000, 1).unwrap();
    let mut sleeper = sleeping_holder(dir.path(), 7_000, 0);
    let me = std::process::id();
    let r1 = gpu::read_scope(&source, &only(1)).unwrap();
    assert_eq!(r1.max_used_mib(), Some(5_000));
    let h = r1.holders.clone().unwrap();
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!((h[0].gpu, h[0].pid, h[0].visible), (1, me, true));
    let uid = nix::unistd::getuid();
    assert_eq!(h[0].uid, Some(uid.as_raw()));
    let name = nix::unistd::User::from_uid(uid).unwrap().map(|u| u.name);
    assert_eq!(h[0].user, name);
    let exe = std::env::current_exe().unwrap();
    let exe_name = exe.file_name().unwrap().to_str().unwrap();
    assert!(h[0].command.as_deref().unwrap().contains(exe_name), "{h:?}");
    // Card 0 is judged without card 1's memory, and the other way round.
    let r0 = gpu::read_scope(&source, &only(0)).unwrap();
    assert_eq!(r0.max_used_mib(), Some(7_000));
    let h0 = r0.holders.unwrap();
    assert_eq!(h0.len(), 1);
    assert_eq!(h0[0].pid, sleeper.id());
    assert_eq!(h0[0].command.as_deref(), Some("sleep 30"));
    // Cards 2 and 3 are free; by UUID too.
    let by_uuid = GpuScope {
        ids: Some(vec![gpu::GpuId::Uuid(simgpu::sim_uuid(2))]),
        origin: ScopeOrigin::CudaVisibleDevices,
    };
    let r2 = gpu::read_scope(&source, &by_uuid).unwrap();
    assert_eq!((r2.gpus[0].index, r2.max_used_mib()), (2, Some(0)));
    assert_eq!(r2.holders, Some(vec![]));
    // The whole node: the largest card.
    assert_eq!(gpu::max_used_mib(&source), Some(7_000));
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(
        gpu::read_scope(&source, &only(0)).unwrap().max_used_mib(),
        Some(0)
    );
    drop(guard);
    assert_eq!(
        gpu::read_scope(&source, &only(1)).unwrap().max_used_mib(),
        Some(0)
    );
}

#[test]
fn a_bad_cards_file_names_the_file_and_without_one_old_folders_read_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let source = GpuSource::Sim(dir.path().to_path_buf());
    // No cards file: as many cards as the highest holding needs, at least one.
    assert_eq!(gpu::read_gpus(&source).unwrap().len(), 1);
    let _g = simgpu::hold(dir.path(), 10, 2).unwrap();
    assert_eq!(gpu::read_gpus(&source).unwrap().len(), 3);
    std::fs::write(dir.path().join("cards"), "four\n").unwrap();
    let err = gpu::read_gpus(&source).unwrap_err().to_string();
    assert!(
        err.contains("cards line 1") && err.contains("\"four\""),
        "{err}"
    );
    assert_eq!(gpu::max_used_mib(&source), None, "unreadable is can't tell");
    std::fs::write(dir.path().join("cards"), "0\n").unwrap();
    assert!(gpu::read_gpus(&source).is_err());
}

#[test]
fn a_holder_picks_its_card_as_cuda_would() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    simgpu::set_cards(d, 4).unwrap();
    assert_eq!(simgpu::visible_card(d, 1, None), Ok(1));
    assert_eq!(simgpu::visible_card(d, 0, Some("3,1")), Ok(3));
    assert_eq!(simgpu::visible_card(d, 1, Some("3,1")), Ok(1));
    let uuid2 = simgpu::sim_uuid(2);
    assert_eq!(
        simgpu::visible_card(d, 0, Some(&uuid2[..12])),
        Ok(2),
        "a unique prefix"
    );
    // Parsing stops at the first invalid entry, or at a card that does not exist.
    assert!(simgpu::visible_card(d, 1, Some("0,-1,2")).is_err());
    assert!(simgpu::visible_card(d, 1, Some("0,7,2")).is_err());
    assert_eq!(simgpu::visible_card(d, 0, Some("0,7,2")), Ok(0));
    let e = simgpu::visible_card(d, 0, Some("")).unwrap_err();
    assert!(e.contains("shows 0 simulated GPU"), "{e}");
}

#[test]
fn the_simulated_servers_workers_hold_the_cards_cuda_visible_devices_names() {
    use sim_support::*;
    let dir = tempfile::tempdir().unwrap();
    simgpu::set_cards(dir.path(), 4).unwrap();
    let sim = Sim::builder()
        .args(&["--tp", "2"])
        .env("INFERLINT_GPU", &format!("sim:{}", dir.path().display()))
        .env("CUDA_VISIBLE_DEVICES", "3,1")
        .start();
    let source = GpuSource::Sim(dir.path().to_path_buf());
    assert!(eventually(Duration::from_secs(10), || {
        gpu::read_gpus(&source)
            .map(|g| g[1].memory_used_mib != Some(0) && g[3].memory_used_mib != Some(0))
            .unwrap_or(false)
    }));
    let node = gpu::read_node(&source, &GpuScope::all()).unwrap();
    let used: Vec<Option<u64>> = node.gpus.iter().map(|g| g.memory_used_mib).collect();
    assert_eq!(used[0], Some(0));
    assert_eq!(used[2], Some(0));
    let who = |card: u32| -> Vec<String> {
        on(&node.holders, card)
            .iter()
            .filter_map(|h| h.command.clone())
            .collect()
    };
    // Worker 0 on the first visible card (3), worker 1 on the second (1).
    assert_eq!(who(3), vec!["VLLM::Worker_TP0"]);
    assert_eq!(who(1), vec!["VLLM::Worker_TP1"]);
    assert!(on(&node.holders, 1)
        .iter()
        .all(|h| sim.processes().contains(&h.pid)));
    let r1 = node.scoped(&only(1)).reading;
    assert_eq!(r1.gpus.len(), 1);
    assert!(on(&r1.holders, 3).is_empty());
}
