//! Property test for the attach-mode teardown (docs/design/processes.md#stopping) on random process
//! trees: servers of the three engines in every launch shape, their renamed children and helpers,
//! mixed with bystanders that a substring match would hit (`tail -f "vllm serve.log"`, `grep "vllm
//! serve"`, `bash -c "vllm serve m"`, `vllm bench serve`, a script that would pkill), and
//! inferlint's own process placed anywhere, even under a server or looking like one.
//!
//! Signals go to a simulated machine, never to a real process. The teardown must signal exactly
//! the server processes and their descendants, and never inferlint, its ancestors, a bystander,
//! or (when limited to one user) another user's process.
//!
//! For a long run: `PROPTEST_CASES=100000 cargo test --release --test proptests proptest_bystanders::`.

use crate::proptest_support;

use std::collections::BTreeSet;

use inferlint_host::procs::{self, ProcInfo, System, Target, TeardownOptions};
use nix::sys::signal::Signal;
use proptest::prelude::*;

fn cases(default: u32) -> ProptestConfig {
    proptest_support::config(
        default,
        "tests/proptest-regressions/proptest_bystanders.txt",
    )
}

/// A process shape: its argv, its comm when renamed (else argv[0]'s basename), and whether it
/// is a server process by itself.
struct Shape {
    argv: &'static [&'static str],
    comm: Option<&'static str>,
    server: bool,
}

const fn server(argv: &'static [&'static str]) -> Shape {
    Shape {
        argv,
        comm: None,
        server: true,
    }
}

const fn renamed(name: &'static str, argv: &'static [&'static str]) -> Shape {
    Shape {
        argv,
        comm: Some(name),
        server: true,
    }
}

const fn other(argv: &'static [&'static str]) -> Shape {
    Shape {
        argv,
        comm: None,
        server: false,
    }
}

const SHAPES: &[Shape] = &[
    server(&["vllm", "serve", "Qwen/Qwen3-8B", "--port", "8000"]),
    server(&["/opt/venv/bin/vllm", "serve", "m"]),
    server(&["/opt/venv/bin/python3", "/opt/venv/bin/vllm", "serve", "m"]),
    server(&[
        "python3",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "m",
    ]),
    server(&["python", "-m", "vllm.entrypoints.cli.main", "serve", "m"]),
    server(&["python", "-m", "sglang.launch_server", "--model-path", "m"]),
    server(&["sglang", "serve", "--model-path", "m"]),
    server(&["trtllm-serve", "serve", "m", "--backend", "pytorch"]),
    renamed("VLLM::EngineCor", &["VLLM::EngineCore"]),
    renamed("VLLM::Worker_TP", &["VLLM::Worker_TP0                 "]),
    renamed("VLLM::EngineCor", &[]),
    renamed("sglang::schedul", &["sglang::scheduler"]),
    renamed("sglang::detoken", &["sglang::detokenizer"]),
    // Not servers by themselves (some are, as descendants of one).
    other(&["python", "-R", "-m", "mpi4py.futures.server"]),
    other(&["prte", "--singleton", "x"]),
    other(&["vllm", "bench", "serve", "--model", "m"]),
    other(&["bash", "-c", "vllm serve m"]),
    other(&["grep", "vllm serve"]),
    other(&["tail", "-f", "logs/vllm serve.log"]),
    other(&["/opt/tools/vllm", "serve-docs"]),
    other(&["bash", "-c", "sleep 30; pkill -f \"vllm serve\""]),
    other(&["python", "bench.py", "--server", "vllm serve m"]),
    other(&["vim", "vllm/serve.py"]),
    other(&["-bash"]),
    other(&["sleep", "30"]),
    other(&["/sbin/init"]),
];

/// One process of a generated tree: its shape, its parent (an earlier process, or none), its
/// user (0: the caller's).
#[derive(Clone, Debug)]
struct Node {
    shape: usize,
    parent: Option<usize>,
    uid: u32,
}

fn tree() -> impl Strategy<Value = Vec<Node>> {
    prop::collection::vec(
        (
            0..SHAPES.len(),
            any::<prop::sample::Index>(),
            any::<bool>(),
            prop_oneof![4 => Just(0u32), 1 => Just(1000u32)],
        ),
        1..40,
    )
    .prop_map(|raw| {
        raw.into_iter()
            .enumerate()
            .map(|(i, (shape, parent, root, uid))| Node {
                shape,
                parent: (i > 0 && !root).then(|| parent.index(i)),
                uid,
            })
            .collect()
    })
}

fn pid_of(i: usize) -> i32 {
    100 + i as i32
}

fn proc_info(i: usize, n: &Node) -> ProcInfo {
    let s = &SHAPES[n.shape];
    let argv: Vec<String> = s.argv.iter().map(|a| a.trim().to_string()).collect();
    let comm = s.comm.map(str::to_string).unwrap_or_else(|| {
        let a0 = s.argv.first().copied().unwrap_or("");
        a0.rsplit('/')
            .next()
            .unwrap_or(a0)
            .chars()
            .take(15)
            .collect()
    });
    ProcInfo {
        pid: pid_of(i),
        ppid: n.parent.map_or(1, pid_of),
        state: 'S',
        starttime: 5000 + i as u64,
        comm,
        argv,
        uid: Some(n.uid),
        ..Default::default()
    }
}

/// A machine whose processes exit on the first signal; it records every signal.
struct Machine {
    procs: Vec<ProcInfo>,
    signals: Vec<(i32, Signal)>,
    t: f64,
}

impl System for Machine {
    fn processes(&mut self) -> Option<Vec<ProcInfo>> {
        Some(self.procs.clone())
    }
    fn signal(&mut self, target: &Target, sig: Signal) -> bool {
        let Some(i) = self
            .procs
            .iter()
            .position(|p| p.pid == target.pid && p.starttime == target.starttime)
        else {
            return false;
        };
        self.signals.push((target.pid, sig));
        self.procs.remove(i);
        true
    }
    fn gpu_used_mib(&mut self) -> Option<u64> {
        Some(0)
    }
    fn now(&self) -> f64 {
        self.t
    }
    fn sleep(&mut self, secs: f64) {
        self.t += secs.max(0.01);
    }
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn teardown_signals_servers_and_their_descendants_only(
        nodes in tree(),
        me in any::<prop::sample::Index>(),
        only_mine in any::<bool>(),
    ) {
        let me = me.index(nodes.len());
        // inferlint's own process and its ancestors.
        let mut protected = BTreeSet::new();
        let mut cur = Some(me);
        while let Some(i) = cur {
            protected.insert(i);
            cur = nodes[i].parent;
        }
        // Expected: not protected, and a server, or below one that is not protected.
        let expected: BTreeSet<i32> = (0..nodes.len())
            .filter(|&i| !protected.contains(&i))
            .filter(|&i| {
                let mut cur = Some(i);
                while let Some(j) = cur {
                    if SHAPES[nodes[j].shape].server && !protected.contains(&j) {
                        return true;
                    }
                    cur = nodes[j].parent;
                }
                false
            })
            .filter(|&i| !only_mine || nodes[i].uid == 0)
            .map(pid_of)
            .collect();

        let procs: Vec<ProcInfo> = nodes.iter().enumerate().map(|(i, n)| proc_info(i, n)).collect();
        let mut machine = Machine { procs, signals: Vec::new(), t: 0.0 };
        let opts = TeardownOptions {
            self_pid: pid_of(me),
            uid: only_mine.then_some(0),
            ..TeardownOptions::default()
        };
        let out = procs::teardown(&mut machine, &opts).unwrap();
        let signalled: BTreeSet<i32> = machine.signals.iter().map(|s| s.0).collect();
        for &i in &protected {
            prop_assert!(!signalled.contains(&pid_of(i)), "signalled inferlint or an ancestor: {}", pid_of(i));
        }
        prop_assert_eq!(&signalled, &expected);
        prop_assert!(machine.signals.iter().all(|s| s.1 == Signal::SIGTERM));
        let targets: BTreeSet<i32> = out.selection.targets.iter().map(|t| t.pid).collect();
        prop_assert_eq!(targets, expected);
    }
}
