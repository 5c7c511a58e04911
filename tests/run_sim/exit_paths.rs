//! run.json's `exit_code` is the code the process exits with, on every way a run ends
//! (docs/design/formats.md#runjson; the rule is `inferlint_core::output::run_exit_code`): a clean run, a
//! tripwire failed, a WARN with and without `--strict`, the gate refusing a held card, a server
//! that fails to boot, a load command that fails or does not exist, a server that dies on its
//! first request. Ctrl-C (130) and SIGTERM are tests/run_sim.rs's. Each case's processes are
//! the test's own and end with it.

use std::time::Duration;

use crate::run_support::{json_file, run_with_limit, text, World};

const LIMIT: Duration = Duration::from_secs(150);

const HEALTHY: &str =
    "--num-gpu-blocks-override 98 --block-size 16 --max-model-len 1024 --tokens-per-s 200";

struct Case {
    name: &'static str,
    /// The simulated server's extra flags.
    serve: &'static str,
    run_args: &'static [&'static str],
    /// The load: the simulated client with these flags, or this command.
    load: Load,
    /// A card held before the run starts (MiB on GPU 0).
    held_mib: Option<u64>,
    /// The exit code the run must end with, where a case fixes it.
    expect: Option<i32>,
}

enum Load {
    Sim(&'static str),
    Command(&'static [&'static str]),
}

const SHORT: &str =
    "--max-concurrency 2 --num-prompts 6 --random-input-len 16 --random-output-len 16";

const CASES: &[Case] = &[
    Case {
        name: "a clean run",
        serve: HEALTHY,
        run_args: &[],
        load: Load::Sim(SHORT),
        held_mib: None,
        expect: None,
    },
    Case {
        name: "a clean run under --strict",
        serve: HEALTHY,
        run_args: &["--strict"],
        load: Load::Sim(SHORT),
        held_mib: None,
        expect: None,
    },
    Case {
        name: "the gate refuses a held card",
        serve: HEALTHY,
        run_args: &[],
        load: Load::Sim(SHORT),
        held_mib: Some(4096),
        expect: Some(1),
    },
    Case {
        name: "the server fails to boot",
        serve: "--fail-boot kv_cache_too_small",
        run_args: &[],
        load: Load::Sim(SHORT),
        held_mib: None,
        expect: Some(1),
    },
    Case {
        name: "the load command fails",
        serve: HEALTHY,
        run_args: &[],
        load: Load::Command(&["sh", "-c", "exit 3"]),
        held_mib: None,
        expect: None,
    },
    Case {
        name: "the load command does not exist",
        serve: HEALTHY,
        run_args: &[],
        load: Load::Command(&["/nonexistent/vllm-bench"]),
        held_mib: None,
        expect: None,
    },
    Case {
        name: "the server dies on its first request",
        serve: "--die-on-first-request",
        run_args: &[],
        load: Load::Sim(SHORT),
        held_mib: None,
        expect: Some(1),
    },
];

#[test]
fn run_json_records_the_code_the_process_exits_with_on_every_path() {
    let _t = super::turn();
    let mut codes = Vec::new();
    for c in CASES {
        let w = World::new();
        let _held = c
            .held_mib
            .map(|mib| inferlint_sim::gpu::hold(&w.dir.path().join("gpu"), mib, 0).unwrap());
        let serve = w.sim_serve("0.2", c.serve);
        let load: Vec<String> = match &c.load {
            Load::Sim(flags) => w.sim_bench(flags),
            Load::Command(argv) => argv.iter().map(|s| s.to_string()).collect(),
        };
        let mut args = vec!["--serve".to_string(), serve];
        args.extend(c.run_args.iter().map(|s| s.to_string()));
        let out = run_with_limit(w.run_command(&args, &load), LIMIT);
        let stdout = text(&out.stdout);
        let stderr = text(&out.stderr);
        let code = out.status.code();
        assert!(!stderr.contains("panicked"), "{}: {stderr}", c.name);
        let run = json_file(&w.out().join("run.json"));
        assert_eq!(run["state"], "finished", "{}: {run}", c.name);
        assert_eq!(
            run["exit_code"].as_i64().map(|c| c as i32),
            code,
            "{}: run.json says {} but the process exited {code:?}\n{stdout}\n{stderr}",
            c.name,
            run["exit_code"]
        );
        if let Some(want) = c.expect {
            assert_eq!(code, Some(want), "{}: {stdout}\n{stderr}", c.name);
        }
        codes.push((c.name, code));
    }
    println!("exit paths: {codes:?}");
}

/// The program's file replaced on disk while the run boots the server (an upgrade or a rebuild
/// during a long run): the load's shepherd, started after the boot, is still this image.
#[test]
fn a_binary_replaced_on_disk_mid_run_still_starts_the_loads_shepherd() {
    let w = World::new();
    let copy = w.dir.path().join("inferlint-copy");
    std::fs::copy(crate::run_support::bin(), &copy).unwrap();
    let load = w.sim_bench(
        "--max-concurrency 2 --num-prompts 4 --random-input-len 8 --random-output-len 8",
    );
    let template = w.command(&w.sim_serve("2", HEALTHY), &[], &load);
    let mut cmd = std::process::Command::new(&copy);
    cmd.args(template.get_args());
    for (k, v) in template.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let replace = {
        let copy = copy.clone();
        std::thread::spawn(move || {
            // Inside the 2 s boot: removed and written again, a new file under the same name.
            std::thread::sleep(Duration::from_millis(700));
            std::fs::remove_file(&copy).unwrap();
            std::fs::copy(crate::run_support::bin(), &copy).unwrap();
        })
    };
    let o = run_with_limit(cmd, LIMIT);
    replace.join().unwrap();
    let stdout = text(&o.stdout);
    assert!(!stdout.contains("problem:"), "{stdout}");
    assert!(
        w.out().join("bench.json").is_file(),
        "the load did not run: {stdout}"
    );
    // Four short requests leave the series checks nothing to judge: can't tell (2), not the
    // problem's 1 that a load never started gives.
    assert_eq!(o.status.code(), Some(2), "{stdout}{}", text(&o.stderr));
}
