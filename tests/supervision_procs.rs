//! Finding and stopping server processes (docs/design/processes.md#finding-server-processes,
//! docs/design/evidence.md#finding-and-stopping-server-processes) on synthetic process tables,
//! synthetic `/proc` roots and a substituted machine: structural matching, descendants, never
//! self or ancestors, the usual pkill pattern and what it would hit, other users, the staged
//! attach-mode teardown and the clear readings.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use inferlint_core::engine::Engine;
use inferlint_host::gpu::ClearOptions;
use inferlint_host::procs::{self, ProcInfo, System, Target, TeardownOptions};
use nix::sys::signal::Signal;

fn p(pid: i32, ppid: i32, argv: &[&str]) -> ProcInfo {
    let comm = argv
        .first()
        .map(|a| a.rsplit('/').next().unwrap_or(a).chars().take(15).collect())
        .unwrap_or_default();
    ProcInfo {
        pid,
        ppid,
        state: 'S',
        starttime: 1000 + pid as u64,
        comm,
        argv: argv.iter().map(|s| s.to_string()).collect(),
        uid: Some(0),
        ..Default::default()
    }
}

fn renamed(pid: i32, ppid: i32, name: &str) -> ProcInfo {
    let mut x = p(pid, ppid, &[name]);
    x.comm = name.chars().take(15).collect();
    x
}

/// The table of docs/design/evidence.md#finding-and-stopping-server-processes: two vLLM servers
/// with renamed children, a shell one-liner that would pkill, a `tail -f` bystander and a third
/// server.
fn table() -> Vec<ProcInfo> {
    vec![
        p(1, 0, &["/sbin/init"]),
        p(100, 1, &["-bash"]),
        p(200, 100, &["vllm", "serve", "m", "--port", "8000"]),
        renamed(201, 200, "VLLM::EngineCore"),
        p(
            300,
            100,
            &["/opt/venv/bin/python", "/opt/venv/bin/vllm", "serve", "m2"],
        ),
        renamed(301, 300, "VLLM::Worker_TP0"),
        p(
            400,
            100,
            &["bash", "-c", "vllm serve m; pkill -f 'vllm serve'"],
        ),
        p(500, 100, &["tail", "-f", "logs/vllm serve.log"]),
        p(600, 100, &["vllm", "serve", "m3"]),
    ]
}

fn pids(ts: &[Target]) -> BTreeSet<i32> {
    ts.iter().map(|t| t.pid).collect()
}

fn set(v: &[i32]) -> BTreeSet<i32> {
    v.iter().copied().collect()
}

#[test]
fn synthetic_table_targets_and_the_naive_pattern() {
    let t = table();
    let sel = procs::select_servers(&t, 999, None, None);
    assert_eq!(pids(&sel.targets), set(&[200, 201, 300, 301, 600]));
    let pattern = procs::usual_pkill_pattern(&sel.targets);
    assert_eq!(pattern, "vllm serve");
    let cmp = procs::pkill_comparison(&t, &sel, pattern);
    assert_eq!(cmp.missed, vec![201, 301]);
    assert_eq!(cmp.wrongly_hit, vec![400, 500]);
    assert_eq!(
        cmp.line().as_deref(),
        Some("(pkill -f 'vllm serve' would miss 2 and wrongly hit 2)")
    );
    assert_eq!(
        set(&procs::pkill_hits(&t, "vllm serve")),
        set(&[200, 300, 400, 500, 600])
    );
}

#[test]
fn inferlint_under_a_server_protects_itself_and_its_ancestors() {
    let mut t = table();
    t.push(p(700, 600, &["inferlint", "teardown"]));
    let sel = procs::select_servers(&t, 700, None, None);
    assert_eq!(pids(&sel.targets), set(&[200, 201, 300, 301]));
    // A server-looking ancestor (a renamed shell) is never a target either.
    let mut t = table();
    t.push(renamed(800, 100, "VLLM::EngineCore"));
    t.push(p(801, 800, &["inferlint", "teardown"]));
    let sel = procs::select_servers(&t, 801, None, None);
    assert!(!pids(&sel.targets).contains(&800));
    assert!(!pids(&sel.targets).contains(&801));
}

#[test]
fn server_and_not_server_cases() {
    let servers: Vec<(ProcInfo, Engine)> = vec![
        (p(1, 0, &["vllm", "serve", "m"]), Engine::Vllm),
        (p(1, 0, &["/opt/venv/bin/vllm", "serve", "m"]), Engine::Vllm),
        (
            p(
                1,
                0,
                &["/usr/bin/python3.12", "/opt/venv/bin/vllm", "serve", "m"],
            ),
            Engine::Vllm,
        ),
        (
            p(
                1,
                0,
                &[
                    "python",
                    "-m",
                    "vllm.entrypoints.openai.api_server",
                    "--model",
                    "m",
                ],
            ),
            Engine::Vllm,
        ),
        (
            p(
                1,
                0,
                &["python3", "-u", "-m", "vllm.entrypoints.cli.main", "serve"],
            ),
            Engine::Vllm,
        ),
        (renamed(1, 0, "VLLM::EngineCore"), Engine::Vllm),
        (renamed(1, 0, "VLLM::Worker_TP0"), Engine::Vllm),
        (
            p(
                1,
                0,
                &["python", "-m", "sglang.launch_server", "--model-path", "m"],
            ),
            Engine::Sglang,
        ),
        (renamed(1, 0, "sglang::scheduler"), Engine::Sglang),
        (renamed(1, 0, "sglang::detokenizer"), Engine::Sglang),
        (
            p(
                1,
                0,
                &["/opt/venv/bin/sglang", "serve", "--model-path", "m"],
            ),
            Engine::Sglang,
        ),
        (
            p(
                1,
                0,
                &[
                    "/opt/venv/bin/python3",
                    "/opt/venv/bin/trtllm-serve",
                    "serve",
                    "m",
                ],
            ),
            Engine::Trtllm,
        ),
        (p(1, 0, &["trtllm-serve", "serve", "m"]), Engine::Trtllm),
    ];
    for (proc_, e) in &servers {
        assert_eq!(procs::server_engine(proc_), Some(*e), "{:?}", proc_.argv);
    }
    // comm alone (argv wiped) still names a renamed engine process.
    let mut wiped = p(1, 0, &[]);
    wiped.comm = "VLLM::EngineCor".into();
    assert_eq!(procs::server_engine(&wiped), Some(Engine::Vllm));
    let not_servers = [
        p(1, 0, &["vllm", "bench", "serve", "--model", "m"]),
        p(1, 0, &["bash", "-c", "vllm serve m"]),
        p(1, 0, &["grep", "vllm serve"]),
        p(1, 0, &["/opt/tools/vllm", "serve-docs"]),
        p(1, 0, &["tail", "-f", "logs/vllm serve.log"]),
        p(1, 0, &["bash", "-c", "pkill -f sglang.launch_server"]),
        p(1, 0, &["python", "-m", "mpi4py.futures.server"]),
        p(1, 0, &["python", "serve.py", "--model", "vllm"]),
    ];
    for proc_ in &not_servers {
        assert_eq!(procs::server_engine(proc_), None, "{:?}", proc_.argv);
    }
}

#[test]
fn sglang_patterns() {
    let module = vec![
        p(1, 0, &["/sbin/init"]),
        p(
            20,
            1,
            &["python", "-m", "sglang.launch_server", "--model-path", "m"],
        ),
        renamed(21, 20, "sglang::scheduler"),
        renamed(22, 20, "sglang::detokenizer"),
        p(30, 1, &["bash", "-c", "pkill -f sglang.launch_server"]),
    ];
    let sel = procs::select_servers(&module, 999, None, None);
    assert_eq!(pids(&sel.targets), set(&[20, 21, 22]));
    assert_eq!(
        procs::usual_pkill_pattern(&sel.targets),
        "sglang.launch_server"
    );
    let cmp = procs::pkill_comparison(&module, &sel, "sglang.launch_server");
    assert_eq!(cmp.wrongly_hit, vec![30]);
    let cli = vec![p(
        40,
        1,
        &["/opt/venv/bin/sglang", "serve", "--model-path", "m"],
    )];
    let sel = procs::select_servers(&cli, 999, None, None);
    assert_eq!(procs::usual_pkill_pattern(&sel.targets), "sglang serve");
}

#[test]
fn tensorrt_llm_descendants_are_included_an_unrelated_mpi_server_is_not() {
    let t = vec![
        p(1, 0, &["/sbin/init"]),
        p(
            50,
            1,
            &[
                "/opt/venv/bin/python3",
                "/opt/venv/bin/trtllm-serve",
                "serve",
                "m",
            ],
        ),
        p(51, 50, &["prte", "--singleton", "singleton.host.200.0"]),
        p(52, 51, &["python", "-R", "-m", "mpi4py.futures.server"]),
        p(60, 1, &["python", "-R", "-m", "mpi4py.futures.server"]),
    ];
    let sel = procs::select_servers(&t, 999, None, None);
    assert_eq!(pids(&sel.targets), set(&[50, 51, 52]));
    assert!(sel.targets.iter().all(|x| x.engine == Engine::Trtllm));
    assert!(sel.targets.iter().find(|x| x.pid == 52).unwrap().descendant);
    assert_eq!(procs::usual_pkill_pattern(&sel.targets), "trtllm-serve");
}

/// vLLM + EngineCore, SGLang + scheduler, and inferlint's own bash.
fn engine_table() -> Vec<ProcInfo> {
    vec![
        p(1, 0, &["/sbin/init"]),
        p(10, 1, &["vllm", "serve", "m"]),
        renamed(11, 10, "VLLM::EngineCore"),
        p(
            20,
            1,
            &["python", "-m", "sglang.launch_server", "--model-path", "m"],
        ),
        renamed(21, 20, "sglang::scheduler"),
        p(30, 1, &["bash"]),
        p(31, 30, &["inferlint", "teardown"]),
    ]
}

#[test]
fn naming_an_engine_selects_its_servers_and_leaves_the_others() {
    let t = engine_table();
    let sel = procs::select_servers(&t, 31, Some(Engine::Sglang), None);
    assert_eq!(pids(&sel.targets), set(&[20, 21]));
    assert_eq!(pids(&sel.other_engines), set(&[10, 11]));
    let sel = procs::select_servers(&t, 31, Some(Engine::Trtllm), None);
    assert!(sel.targets.is_empty());
    assert_eq!(
        procs::none_found_line(Some(Engine::Trtllm)),
        "no server processes found (TensorRT-LLM)"
    );
    assert_eq!(
        procs::left_alone_line("--engine trtllm", &sel.other_engines).as_deref(),
        Some("left alone (--engine trtllm): 4 processes of SGLang and vLLM servers")
    );
    assert_eq!(
        procs::none_found_line(None),
        "no server processes found (vLLM, SGLang or TensorRT-LLM)"
    );
}

#[test]
fn other_users_servers_are_left_alone_unless_all_users() {
    let mut t = table();
    let mut theirs = p(900, 1, &["vllm", "serve", "their-model"]);
    theirs.uid = Some(1000);
    let mut their_engine = renamed(901, 900, "VLLM::EngineCore");
    their_engine.uid = Some(1000);
    t.push(theirs);
    t.push(their_engine);
    let mine = procs::select_servers(&t, 999, None, Some(0));
    assert!(!pids(&mine.targets).contains(&900));
    assert_eq!(pids(&mine.other_users), set(&[900, 901]));
    let all = procs::select_servers(&t, 999, None, None);
    assert!(pids(&all.targets).is_superset(&set(&[900, 901])));
}

#[test]
fn target_lines_are_padded_and_cut() {
    let long = "x".repeat(150);
    let t = procs::all_servers(&[p(1030, 1, &["vllm", "serve", &long])], 1);
    let line = t[0].line();
    assert!(
        line.starts_with("target  pid=1030     vllm serve xxx"),
        "{line}"
    );
    assert_eq!(line.len(), "target  pid=1030     ".len() + 100);
}

// ---- synthetic /proc roots ----

fn write_proc(root: &Path, pid: &str, stat: Option<&str>, cmdline: &[u8], uid: Option<u32>) {
    let d = root.join(pid);
    std::fs::create_dir_all(&d).unwrap();
    if let Some(s) = stat {
        std::fs::write(d.join("stat"), s).unwrap();
    }
    std::fs::write(d.join("cmdline"), cmdline).unwrap();
    if let Some(u) = uid {
        std::fs::write(
            d.join("status"),
            format!("Name:\tx\nUid:\t{u}\t{u}\t{u}\t{u}\n"),
        )
        .unwrap();
    }
}

#[test]
fn synthetic_proc_root_is_read_like_the_real_one() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write_proc(r, "1", Some("1 (init) S 0"), b"/sbin/init\0", None);
    write_proc(r, "100", Some("100 (bash) S 1 100 100"), b"-bash\0", None);
    write_proc(
        r,
        "200",
        Some("200 (vllm) S 100 200 100"),
        b"vllm\0serve\0m\0",
        None,
    );
    write_proc(
        r,
        "201",
        Some("201 (VLLM::EngineCore) S 200 200 100"),
        b"VLLM::EngineCore          \0\0",
        None,
    );
    std::fs::create_dir_all(r.join("self")).unwrap();
    // A process that vanished between the listing and the read: no stat.
    write_proc(r, "999", None, b"", None);
    let list = procs::list_processes(r).unwrap();
    let got: BTreeSet<i32> = list.iter().map(|x| x.pid).collect();
    assert_eq!(got, set(&[1, 100, 200, 201]));
    let engine = list.iter().find(|x| x.pid == 201).unwrap();
    assert_eq!(engine.argv, vec!["VLLM::EngineCore"]);
    assert_eq!(engine.ppid, 200);
    let sel = procs::select_servers(&list, 999_999, None, None);
    assert_eq!(pids(&sel.targets), set(&[200, 201]));
    assert!(procs::list_processes(&r.join("missing")).is_none());
}

#[test]
fn synthetic_proc_other_users_come_from_status() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write_proc(r, "1", Some("1 (init) S 0"), b"/sbin/init\0", Some(0));
    write_proc(
        r,
        "50",
        Some("50 (vllm) S 1"),
        b"vllm\0serve\0m\0",
        Some(1000),
    );
    let list = procs::list_processes(r).unwrap();
    let sel = procs::select_servers(&list, 999_999, None, Some(0));
    assert!(sel.targets.is_empty());
    assert_eq!(pids(&sel.other_users), set(&[50]));
}

// ---- the teardown on a substituted machine ----

/// A process table that reacts to signals like real processes do, a GPU whose memory is held
/// by live processes, and a virtual clock.
struct World {
    procs: Vec<ProcInfo>,
    ignores_term: Vec<i32>,
    /// MiB each pid holds; `base` MiB stay used regardless.
    gpu: HashMap<i32, u64>,
    base: Option<u64>,
    t: f64,
    signals: Vec<(i32, Signal)>,
}

impl World {
    fn new(procs: Vec<ProcInfo>) -> Self {
        World {
            procs,
            ignores_term: Vec::new(),
            gpu: HashMap::new(),
            base: Some(0),
            t: 0.0,
            signals: Vec::new(),
        }
    }
}

impl System for World {
    fn processes(&mut self) -> Option<Vec<ProcInfo>> {
        Some(self.procs.clone())
    }
    fn signal(&mut self, target: &Target, sig: Signal) -> bool {
        let Some(i) = self.procs.iter().position(|x| x.pid == target.pid) else {
            return false;
        };
        self.signals.push((target.pid, sig));
        if sig == Signal::SIGKILL || !self.ignores_term.contains(&target.pid) {
            self.procs.remove(i);
        }
        true
    }
    fn gpu_used_mib(&mut self) -> Option<u64> {
        let live: u64 = self
            .gpu
            .iter()
            .filter(|(p, _)| self.procs.iter().any(|x| x.pid == **p))
            .map(|(_, m)| m)
            .sum();
        self.base.map(|b| b + live)
    }
    fn now(&self) -> f64 {
        self.t
    }
    fn sleep(&mut self, secs: f64) {
        self.t += secs;
    }
}

fn opts() -> TeardownOptions {
    TeardownOptions {
        self_pid: 999,
        ..TeardownOptions::default()
    }
}

#[test]
fn an_engine_that_ignores_sigterm_is_killed_after_the_grace() {
    let mut w = World::new(table());
    w.ignores_term.push(201);
    w.gpu.insert(201, 21_768);
    w.base = Some(120);
    let out = procs::teardown(&mut w, &opts()).unwrap();
    assert_eq!(out.signals.first(), Some(&(200, Signal::SIGTERM)));
    assert!(out.signals.contains(&(201, Signal::SIGTERM)));
    assert_eq!(out.signals.last(), Some(&(201, Signal::SIGKILL)));
    assert_eq!(
        out.signals
            .iter()
            .filter(|s| s.1 == Signal::SIGKILL)
            .count(),
        1
    );
    let clear = out.clear.unwrap();
    assert!(clear.clear, "{clear:?}");
    assert_eq!(clear.readings.last().unwrap().used, Some(120));
    assert_eq!(clear.reason, "2 consecutive clear readings");
    // SIGKILL came after the 15 s grace, on the virtual clock.
    assert!(w.t >= 15.0);
    // Bystanders were never signalled.
    assert!(w
        .signals
        .iter()
        .all(|(p, _)| ![1, 100, 400, 500].contains(p)));
}

#[test]
fn a_cooperative_tree_is_not_killed() {
    let mut w = World::new(table());
    let out = procs::teardown(&mut w, &opts()).unwrap();
    assert!(out.signals.iter().all(|s| s.1 == Signal::SIGTERM));
    assert!(out.clear.unwrap().clear);
    // No grace wait when everything exits: only the 2 s between the two clear readings.
    assert!(w.t <= 2.0, "{}", w.t);
}

#[test]
fn with_an_engine_named_the_card_is_not_clear_while_another_engine_lives() {
    let mut w = World::new(engine_table());
    let o = TeardownOptions {
        engine: Some(Engine::Sglang),
        self_pid: 31,
        clear: ClearOptions {
            timeout_s: 4.0,
            ..ClearOptions::default()
        },
        ..TeardownOptions::default()
    };
    let out = procs::teardown(&mut w, &o).unwrap();
    assert_eq!(pids(&out.selection.targets), set(&[20, 21]));
    assert!(w.signals.iter().all(|(p, _)| *p == 20 || *p == 21));
    let clear = out.clear.unwrap();
    assert!(!clear.clear);
    assert_eq!(
        clear.reason,
        "not clear after 4s: last reading 0 MiB used, 2 server processes alive"
    );
}

#[test]
fn a_dry_run_signals_nothing() {
    let mut w = World::new(table());
    let out = procs::teardown(
        &mut w,
        &TeardownOptions {
            dry_run: true,
            ..opts()
        },
    )
    .unwrap();
    assert!(out.signals.is_empty() && w.signals.is_empty());
    assert!(out.clear.is_none());
    assert_eq!(
        pids(&out.selection.targets),
        set(&[200, 201, 300, 301, 600])
    );
}

#[test]
fn zero_consecutive_is_an_error() {
    let mut w = World::new(table());
    let o = TeardownOptions {
        clear: ClearOptions {
            consecutive: 0,
            ..ClearOptions::default()
        },
        ..opts()
    };
    assert!(procs::teardown(&mut w, &o).is_err());
    assert!(w.signals.is_empty());
}
