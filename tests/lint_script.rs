//! `inferlint lint-script`: each trap on a small hand-written script and on its fixed twin, exact
//! line numbers, bad input, output formats, and the shipped examples.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_inferlint"))
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str], dir: &Path) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = bin()
        .arg("lint-script")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("runs the binary");
    Run {
        code: status.code().expect("exited, not killed"),
        stdout: String::from_utf8(stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(stderr).expect("UTF-8 stderr"),
    }
}

/// A finding as (tripwire, status, rule, line).
type Hit = (String, String, String, u64);
type Want = (&'static str, &'static str, &'static str, u64);

/// Writes `script` as `name` in a fresh folder and returns its findings (PASS lines left out).
fn findings_named(name: &str, script: &str) -> Vec<Hit> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), script).unwrap();
    let r = run(&["--json", name], dir.path());
    assert!(r.code == 0 || r.code == 1, "exit {}: {}", r.code, r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).expect("JSON array");
    let hits: Vec<Hit> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["status"] != "pass")
        .map(|x| {
            (
                x["tripwire"].as_str().unwrap().to_string(),
                x["status"].as_str().unwrap().to_string(),
                x["evidence"]["rule"].as_str().unwrap().to_string(),
                x["evidence"]["line"].as_u64().unwrap(),
            )
        })
        .collect();
    let expect_code = if hits.iter().any(|h| h.1 == "fail") {
        1
    } else {
        0
    };
    assert_eq!(r.code, expect_code, "exit status follows the findings");
    hits
}

fn findings(script: &str) -> Vec<Hit> {
    findings_named("campaign.sh", script)
}

fn hit(t: &str, status: &str, rule: &str, line: u64) -> Hit {
    (t.into(), status.into(), rule.into(), line)
}

fn rules_of(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.2.as_str()).collect()
}

// ---------------------------------------------------------------- T3

#[test]
fn t3_bash_lc_one_liner_matches_its_own_shell() {
    let bad = "#!/bin/bash\necho start\nbash -lc 'cd /srv; pkill -f \"vllm serve\"'\necho after\n";
    assert_eq!(
        findings(bad),
        [
            hit("T2", "fail", "name-only-cleanup", 3),
            hit("T3", "fail", "self-kill", 3)
        ]
    );
    // The bracket fixes T3 (the pattern no longer matches its own text) but not T2.
    let fixed = bad.replace("vllm serve", "vllm[ ]serve");
    assert_eq!(
        findings(&fixed),
        [hit("T2", "fail", "name-only-cleanup", 3)]
    );
}

#[test]
fn t3_bracket_does_not_help_when_the_one_liner_starts_the_server() {
    let s =
        "bash -lc 'vllm serve m --port 8000 > log 2>&1 & sleep 60; pkill -f \"vllm[ ]serve\"'\n";
    let hits = findings(s);
    assert!(
        hits.contains(&hit("T3", "fail", "self-kill", 1)),
        "{hits:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.sh"), s).unwrap();
    let r = run(&["x.sh"], dir.path());
    assert!(r.stdout.contains("also starts the server"), "{}", r.stdout);
}

#[test]
fn t3_top_level_pkill_is_not_a_self_kill() {
    let s = "vllm serve m > log 2>&1 &\nsleep 1\npkill -f \"vllm serve\"\n";
    let hits = findings(s);
    assert!(!rules_of(&hits).contains(&"self-kill"), "{hits:?}");
    assert!(hits.contains(&hit("T2", "fail", "name-only-cleanup", 3)));
}

#[test]
fn t3_other_holders_of_the_pattern() {
    // sudo and timeout stay alive as pkill's parent with the pattern in their argv.
    assert_eq!(
        rules_of(&findings("sudo pkill -f bench.py\n")),
        ["self-kill"],
        "sudo's own command line matches"
    );
    assert_eq!(
        rules_of(&findings("pkill -f bench.py\n")),
        Vec::<&str>::new()
    );
    assert_eq!(
        rules_of(&findings("timeout 10 pkill -f bench.py\n")),
        ["self-kill"]
    );
    // ssh runs the string as the remote `bash -c STRING`.
    assert_eq!(
        rules_of(&findings("ssh node1 \"pkill -f 'bench.py'\"\n")),
        ["self-kill"]
    );
    // killall of the shell's name.
    assert_eq!(rules_of(&findings("killall bash\n")), ["self-kill"]);
    // The script's own file name.
    assert_eq!(
        rules_of(&findings_named(
            "bench-sweep.sh",
            "echo hi\npkill -f bench-sweep\n"
        )),
        ["self-kill"]
    );
    assert_eq!(
        rules_of(&findings_named(
            "other.sh",
            "echo hi\npkill -f bench-sweep\n"
        )),
        Vec::<&str>::new()
    );
}

// ---------------------------------------------------------------- T2

#[test]
fn t2_name_only_cleanup_and_its_fix() {
    let bad = "set -euo pipefail\nvllm serve m --port 8000 > log 2>&1 &\n# … load …\npkill -f \"vllm[ ]serve\"\n";
    assert_eq!(findings(bad), [hit("T2", "fail", "name-only-cleanup", 4)]);
    // Adding a pattern for the renamed engine processes covers them.
    let covered = format!("{bad}pkill -f 'VLLM::'\n");
    assert_eq!(findings(&covered), []);
    // inferlint teardown finds server processes by structure.
    let teardown = bad.replace("pkill -f \"vllm[ ]serve\"", "inferlint teardown");
    assert_eq!(findings(&teardown), []);
}

#[test]
fn t2_other_engines_and_tools() {
    assert_eq!(
        rules_of(&findings("pkill -f sglang.launch_server\n")),
        ["name-only-cleanup"]
    );
    // `sglang` also matches sglang::scheduler and sglang::detokenizer.
    assert_eq!(rules_of(&findings("pkill -f sglang\n")), Vec::<&str>::new());
    assert_eq!(
        rules_of(&findings("pkill -f trtllm-serve\n")),
        ["name-only-cleanup"]
    );
    assert_eq!(rules_of(&findings("killall vllm\n")), ["name-only-cleanup"]);
    // A generic pattern counts when the script starts a server it would hit.
    assert_eq!(rules_of(&findings("pkill -f python\n")), Vec::<&str>::new());
    assert_eq!(
        rules_of(&findings(
            "python3 -m vllm.entrypoints.openai.api_server --model m > log 2>&1 &\npkill -f python\n"
        )),
        ["name-only-cleanup"]
    );
    assert_eq!(
        rules_of(&findings("kill $(pgrep -f 'vllm serve')\n")),
        ["name-only-cleanup"]
    );
    // A variable pattern is read as what it can match.
    assert_eq!(
        rules_of(&findings("PAT=\"vllm serve\"\npkill -f \"$PAT\"\n")),
        ["name-only-cleanup"]
    );
}

#[test]
fn t2_kill_last_pid_only() {
    let bad = "vllm serve m --port 8000 > server.log 2>&1 &\ntrap 'kill $!' EXIT\nvllm bench serve --model m\n";
    assert_eq!(findings(bad), [hit("T2", "fail", "kills-only-last-pid", 2)]);
    let via_var = "vllm serve m > server.log 2>&1 &\nSERVER_PID=$!\nvllm bench serve --model m\nkill \"$SERVER_PID\"\n";
    assert_eq!(
        findings(via_var),
        [hit("T2", "fail", "kills-only-last-pid", 4)]
    );
    let job = "vllm serve m > server.log 2>&1 &\nvllm bench serve --model m\nkill %1\n";
    assert_eq!(findings(job), [hit("T2", "fail", "kills-only-last-pid", 3)]);
    // Fixed: the server in its own process group, killed as a group.
    let fixed = "setsid vllm serve m --port 8000 > server.log 2>&1 &\nPGID=$!\ntrap 'kill -- -$PGID' EXIT\nvllm bench serve --model m\n";
    assert_eq!(findings(fixed), []);
    // `$!` of something that is not a server is none of T2's business.
    assert_eq!(
        findings("inferlint watch http://127.0.0.1:8000 -o s.jsonl &\nkill $!\n"),
        []
    );
    // kill -0 only asks.
    assert_eq!(findings("vllm serve m > log 2>&1 &\nkill -0 $!\n"), []);
}

#[test]
fn t2_last_pid_names_what_it_really_kills() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tee.sh"),
        "set -o pipefail\nvllm serve m 2>&1 | tee log &\ntrap 'kill $!' EXIT\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("wrap.sh"),
        "bash -c 'vllm serve m > log 2>&1; echo gone' &\ntrap 'kill $!' EXIT\n",
    )
    .unwrap();
    let r = run(&["tee.sh", "wrap.sh"], dir.path());
    assert_eq!(r.code, 1);
    assert!(
        r.stdout
            .contains("tee.sh:3: 'kill $!' signals 'tee', the last command of the pipeline"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("wrap.sh:2: 'kill $!' signals the shell started on line 1"),
        "{}",
        r.stdout
    );
}

// ---------------------------------------------------------------- T13

const WAITER: &str = "\
#!/bin/bash
set -euo pipefail
cleanup() {
    kill -- -\"$PGID\" 2>/dev/null || true
}
trap cleanup EXIT
wait_ready() {
    until curl -sf localhost:8000/health > /dev/null; do
        sleep 1
    done
}
setsid vllm serve m --port 8000 > server.log 2>&1 &
PGID=$!
wait_ready
vllm bench serve --model m --base-url http://localhost:8000
";

#[test]
fn t13_stale_waiter_with_exit_trap() {
    assert_eq!(findings(WAITER), [hit("T13", "fail", "stale-waiter", 8)]);
}

#[test]
fn t13_fixed_by_a_pid_check() {
    let fixed = WAITER.replace(
        "        sleep 1\n",
        "        kill -0 \"$PGID\" || exit 1\n        sleep 1\n",
    );
    assert_eq!(findings(&fixed), []);
}

#[test]
fn t13_fixed_by_a_unique_served_model_name() {
    let fixed = WAITER
        .replace(
            "vllm serve m --port 8000",
            "vllm serve m --port 8000 --served-model-name \"m-$SLURM_JOB_ID\"",
        )
        .replace(
            "curl -sf localhost:8000/health > /dev/null",
            "curl -sf localhost:8000/v1/models | grep -q \"m-$SLURM_JOB_ID\"",
        );
    assert_eq!(findings(&fixed), []);
    // A constant name is the next campaign's name too.
    let constant = fixed.replace("m-$SLURM_JOB_ID", "my-model");
    assert_eq!(findings(&constant), [hit("T13", "fail", "stale-waiter", 8)]);
}

#[test]
fn t13_fixed_by_a_port_of_its_own_or_no_trap() {
    let own_port = WAITER
        .replace(
            "set -euo pipefail\n",
            "set -euo pipefail\nPORT=$((8000 + SLURM_ARRAY_TASK_ID))\n",
        )
        .replace("localhost:8000/health", "localhost:$PORT/health");
    assert_eq!(findings(&own_port), []);
    let fixed_port = WAITER
        .replace(
            "set -euo pipefail\n",
            "set -euo pipefail\nPORT=${PORT:-8000}\n",
        )
        .replace("localhost:8000/health", "localhost:${PORT}/health");
    assert_eq!(
        findings(&fixed_port),
        [hit("T13", "fail", "stale-waiter", 9)]
    );
    let no_trap = WAITER.replace("trap cleanup EXIT\n", "");
    assert_eq!(findings(&no_trap), []);
}

#[test]
fn t13_sleep_as_the_readiness_wait() {
    let bad = "setsid vllm serve m --port 8000 > log 2>&1 &\nPGID=$!\necho started\nsleep 120\nvllm bench serve --model m\nkill -- -$PGID\n";
    assert_eq!(findings(bad), [hit("T13", "warn", "sleep-as-readiness", 4)]);
    let fixed = bad.replace(
        "sleep 120\n",
        "until curl -sf localhost:8000/health; do kill -0 $PGID || exit 1; sleep 2; done\n",
    );
    assert_eq!(findings(&fixed), []);
    // A sleep that is the test's duration (then the server is stopped) is not a wait.
    assert_eq!(
        findings("setsid vllm serve m > log 2>&1 &\nPGID=$!\nsleep 600\nkill -- -$PGID\n"),
        []
    );
    // Through a function that starts the server.
    let via_fn = "start() {\n  setsid vllm serve m > log 2>&1 &\n}\nstart\nsleep 60\nvllm bench serve --model m\n";
    assert_eq!(
        findings(via_fn),
        [hit("T13", "warn", "sleep-as-readiness", 5)]
    );
}

// ---------------------------------------------------------------- T10

#[test]
fn t10_whole_second_durations() {
    let bad = "start=$(date +%s)\nvllm bench serve --model m\necho \"took $(( $(date +%s) - start )) s\"\n";
    assert_eq!(
        findings(bad),
        [hit("T10", "warn", "integer-second-timer", 3)]
    );
    let two_stamps = "t0=$(date +%s)\nsleep 1\nt1=$(date +%s)\nd=$((t1 - t0))\n";
    assert_eq!(
        findings(two_stamps),
        [hit("T10", "warn", "integer-second-timer", 4)]
    );
    let seconds = "s=$SECONDS\nrun_it\necho $((SECONDS - s))\n";
    assert_eq!(
        findings(seconds),
        [hit("T10", "warn", "integer-second-timer", 3)]
    );
    let expr = "a=$(date +%s)\nb=$(date +%s)\nexpr $b - $a\n";
    assert_eq!(
        findings(expr),
        [hit("T10", "warn", "integer-second-timer", 3)]
    );
    let fixed = "start=$(date +%s.%N)\nvllm bench serve --model m\nend=$(date +%s.%N)\nawk -v a=\"$start\" -v b=\"$end\" 'BEGIN { print b - a }'\n";
    assert_eq!(findings(fixed), []);
    // Arithmetic on other numbers is fine.
    assert_eq!(findings("n=10\necho $((n - 1))\n"), []);
}

// ---------------------------------------------------------------- T12

#[test]
fn t12_tee_without_pipefail() {
    let bad = "#!/bin/bash\nset -eu\nvllm serve m --port 8000 2>&1 | tee server.log &\n";
    assert_eq!(
        findings(bad),
        [hit("T12", "warn", "tee-without-pipefail", 3)]
    );
    assert_eq!(findings(&bad.replace("set -eu", "set -euo pipefail")), []);
    assert_eq!(findings(&bad.replace("set -eu", "set -o pipefail")), []);
    // Turned off again before the pipeline.
    let off = bad.replace("set -eu", "set -o pipefail\nset +o pipefail");
    assert_eq!(
        findings(&off),
        [hit("T12", "warn", "tee-without-pipefail", 4)]
    );
    // Set after the pipeline is too late.
    let late = format!("{bad}set -o pipefail\n");
    assert_eq!(
        findings(&late),
        [hit("T12", "warn", "tee-without-pipefail", 3)]
    );
    // A load piped into tee loses its status the same way; other pipes are none of its business.
    assert_eq!(
        findings("vllm bench serve --model m | tee bench.log\n"),
        [hit("T12", "warn", "tee-without-pipefail", 1)]
    );
    assert_eq!(findings("grep x log | tee y\n"), []);
    // `bash -c` is a new shell: the outer pipefail does not reach it.
    let nested = "set -o pipefail\nbash -c 'vllm serve m | tee log'\n";
    assert_eq!(
        findings(nested),
        [hit("T12", "warn", "tee-without-pipefail", 2)]
    );
}

// ---------------------------------------------------------------- a script as found in the wild

const TYPICAL: &str = r#"#!/bin/bash
MODEL=$1
PORT=8000
LOG_DIR=logs/$(date +%Y%m%d)
mkdir -p $LOG_DIR

cleanup() {
  echo "cleaning up"
  pkill -f "vllm serve" || true
  sleep 5
}
trap cleanup EXIT INT TERM

for TP in 1 2; do
  vllm serve $MODEL --tensor-parallel-size $TP --port $PORT > $LOG_DIR/server_tp$TP.log 2>&1 &
  SERVER_PID=$!
  echo "waiting for server"
  while ! curl -s http://localhost:$PORT/v1/models > /dev/null; do
    sleep 5
  done
  START=$(date +%s)
  vllm bench serve --model $MODEL --port $PORT --num-prompts 1000 | tee $LOG_DIR/bench_tp$TP.log
  END=$(date +%s)
  echo "TP=$TP took $((END-START))s"
  kill $SERVER_PID
  wait $SERVER_PID
done
"#;

#[test]
fn a_typical_campaign_script_has_every_trap_once() {
    assert_eq!(
        findings(TYPICAL),
        [
            hit("T2", "fail", "name-only-cleanup", 9),
            hit("T2", "fail", "kills-only-last-pid", 25),
            hit("T10", "warn", "integer-second-timer", 24),
            hit("T12", "warn", "tee-without-pipefail", 22),
            // The inner `while`, not the `for` around it.
            hit("T13", "fail", "stale-waiter", 18),
        ]
    );
}

#[test]
fn loops_inside_shell_strings_are_read_in_place() {
    let s = "#!/bin/bash\nsetsid vllm serve m --port 8000 > log 2>&1 &\nPGID=$!\ntrap 'kill -- -$PGID' EXIT\n\
             timeout 600 bash -c 'until curl -sf localhost:8000/health; do sleep 2; done'\n\
             vllm bench serve --model m\n";
    assert_eq!(findings(s), [hit("T13", "fail", "stale-waiter", 5)]);
}

// ---------------------------------------------------------------- output, exit codes, bad input

#[test]
fn text_lines_have_the_documented_shape() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.sh"),
        "echo a\nbash -lc 'sleep 1; pkill -f \"vllm serve\"'\n",
    )
    .unwrap();
    let r = run(&["c.sh"], dir.path());
    assert_eq!(r.code, 1);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{}", r.stdout);
    assert!(
        lines[0].starts_with("[ T2] TRIPWIRE-FAILED  c.sh:2: pkill finds the vLLM server by name")
    );
    assert!(lines[1].starts_with("[ T3] TRIPWIRE-FAILED  c.sh:2: pkill pattern 'vllm serve' also matches the shell running it"));
    assert!(lines[1].contains("; fix: "));
    assert_eq!(
        lines[2],
        "[T10] PASS  c.sh: no duration from whole-second date +%s stamps"
    );
    assert!(lines[3].starts_with("[T12] PASS  c.sh: "));
    assert!(lines[4].starts_with("[T13] PASS  c.sh: "));
}

#[test]
fn json_evidence() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.sh"),
        "echo a\nbash -lc 'sleep 1; pkill -f \"vllm serve\"'\n",
    )
    .unwrap();
    let r = run(&["--json", "c.sh"], dir.path());
    assert_eq!(r.code, 1);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let t3 = v
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["tripwire"] == "T3")
        .unwrap();
    assert_eq!(t3["status"], "fail");
    let e = &t3["evidence"];
    assert_eq!(e["file"], "c.sh");
    assert_eq!(e["line"], 2);
    // The column of `pkill` inside the single-quoted string.
    assert_eq!(e["column"], 20);
    assert_eq!(e["snippet"], "pkill -f \"vllm serve\"");
    assert!(e["fix"].as_str().unwrap().contains("vllm[ ]serve"));
    assert!(t3["message"].as_str().unwrap().starts_with("c.sh:2: "));
    // The JSON is indented by one space, as every inferlint JSON output.
    assert!(
        r.stdout.starts_with("[\n {\n  \"tripwire\""),
        "{}",
        &r.stdout[..40]
    );
}

#[test]
fn strict_turns_warnings_into_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("w.sh"),
        "a=$(date +%s)\necho $(( $(date +%s) - a ))\n",
    )
    .unwrap();
    assert_eq!(run(&["w.sh"], dir.path()).code, 0);
    assert_eq!(run(&["--strict", "w.sh"], dir.path()).code, 1);
    std::fs::write(dir.path().join("ok.sh"), "echo fine\n").unwrap();
    assert_eq!(run(&["--strict", "ok.sh"], dir.path()).code, 0);
}

#[test]
fn bad_input_exits_2_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("garbage.sh"), "echo ok\nfi fi ((( }}} [[\n").unwrap();
    std::fs::write(
        d.join("binary.sh"),
        b"\x7fELF\x02\x01\x01\x00\x00\x00\n\x00",
    )
    .unwrap();
    std::fs::write(d.join("empty.sh"), "").unwrap();
    std::fs::write(d.join("comments.sh"), "#!/bin/bash\n# nothing here\n").unwrap();
    std::fs::write(d.join("latin1.sh"), b"echo ok\necho caf\xe9\n").unwrap();
    std::fs::write(d.join("good.sh"), "echo fine\n").unwrap();
    let cases: &[(&str, &str)] = &[
        ("garbage.sh", "inferlint: garbage.sh:2:"),
        ("binary.sh", "inferlint: binary.sh:1: binary data"),
        ("empty.sh", "inferlint: empty.sh: no shell commands"),
        ("comments.sh", "inferlint: comments.sh: no shell commands"),
        ("latin1.sh", "inferlint: latin1.sh:2: not UTF-8"),
        ("missing.sh", "inferlint: missing.sh: "),
        (".", "inferlint: .: a folder"),
    ];
    for (file, expect) in cases {
        let r = run(&[file], d);
        assert_eq!(r.code, 2, "{file}: {}", r.stderr);
        assert!(r.stderr.starts_with(expect), "{file}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert_eq!(r.stdout, "", "{file}");
    }
    // With a good file beside a bad one: the good one is still checked, and the exit is 2.
    let r = run(&["good.sh", "garbage.sh"], d);
    assert_eq!(r.code, 2);
    assert_eq!(r.stdout.lines().count(), 6);
    assert!(r.stderr.contains("garbage.sh:2:"));
    // No file at all is a usage error.
    assert_eq!(run(&[], d).code, 2);
}

#[test]
fn help_documents_the_line_format() {
    let r = run(&["--help"], &repo());
    assert_eq!(r.code, 0);
    assert!(
        r.stdout.contains("[ T3] TRIPWIRE-FAILED  FILE:LINE:"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("docs/orchestration.md"));
}

// ---------------------------------------------------------------- the shipped examples

#[test]
fn bad_campaign_examples_trigger_exactly_their_trap() {
    let expected: &[(&str, &[Want])] = &[
        (
            "t3-self-kill.sh",
            &[
                ("T2", "fail", "name-only-cleanup", 13),
                ("T3", "fail", "self-kill", 13),
            ],
        ),
        (
            "t2-name-only-cleanup.sh",
            &[("T2", "fail", "name-only-cleanup", 16)],
        ),
        (
            "t2-kill-last-pid.sh",
            &[("T2", "fail", "kills-only-last-pid", 8)],
        ),
        (
            "t13-stale-waiter.sh",
            &[("T13", "fail", "stale-waiter", 14)],
        ),
        (
            "t13-sleep-as-readiness.sh",
            &[("T13", "warn", "sleep-as-readiness", 10)],
        ),
        (
            "t10-whole-second-timer.sh",
            &[("T10", "warn", "integer-second-timer", 10)],
        ),
        (
            "t12-tee-without-pipefail.sh",
            &[("T12", "warn", "tee-without-pipefail", 7)],
        ),
        (
            "t2-ray-start-without-block.sh",
            &[("T2", "fail", "ray-start-without-block", 10)],
        ),
        (
            "t2-shm-not-cleaned.sh",
            &[("T2", "warn", "shm-not-cleaned", 11)],
        ),
        ("t2-kill-of-srun.sh", &[("T2", "fail", "kill-of-srun", 16)]),
    ];
    let dir = repo().join("examples/campaigns");
    let mut seen = 0;
    for (file, want) in expected {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let got = findings_named(file, &text);
        let want: Vec<Hit> = want.iter().map(|(t, s, r, l)| hit(t, s, r, *l)).collect();
        assert_eq!(got, want, "{file}");
        seen += 1;
    }
    // Every bad example is in the table.
    let bad = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            let n = e.as_ref().unwrap().file_name();
            n.to_string_lossy().starts_with('t')
        })
        .count();
    assert_eq!(bad, seen);
}

#[test]
fn good_examples_and_slurm_scripts_are_clean() {
    let files = [
        "examples/campaigns/good-campaign.sh",
        "examples/slurm/run-one.sbatch",
        "examples/slurm/sweep.sbatch",
        ".ci/slurm-test.sh",
    ];
    let r = run(
        &["--strict"]
            .iter()
            .chain(files.iter())
            .copied()
            .collect::<Vec<_>>(),
        &repo(),
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.stdout.lines().count(), 6 * files.len());
    assert!(
        r.stdout.lines().all(|l| l.contains("] PASS  ")),
        "{}",
        r.stdout
    );
}

// ---------------------------------------------------------------- T16

/// The T16 findings of a script (its other tripwires' are other tests' business).
fn t16(script: &str) -> Vec<Hit> {
    findings(script)
        .into_iter()
        .filter(|h| h.0 == "T16")
        .collect()
}

const SERVE: &str =
    "vllm serve m --port 8000 &\nuntil curl -sf localhost:8000/health; do sleep 1; done\n";

#[test]
fn t16_a_seeded_sweep_against_one_server_warns_at_its_load() {
    let script = format!(
        "#!/bin/bash\n{SERVE}for c in 4 8 16; do\n  vllm bench serve --model m --dataset-name random --seed 0 --max-concurrency $c\ndone\n"
    );
    assert_eq!(t16(&script), vec![hit("T16", "warn", "seed-reuse", 5)]);
    // The fix points to the sweep that resets the cache between points and checks it.
    let found = inferlint_lintscript::lint_source(&script, "campaign.sh").unwrap();
    let reuse = found.iter().find(|f| f.rule == "seed-reuse").unwrap();
    assert!(
        reuse
            .fix
            .starts_with("run the points with 'inferlint run --sweep OPTION=V1,V2,..."),
        "{}",
        reuse.fix
    );
    // Mutation: the seed follows the loop variable: each pass sends new prompts.
    let varied = script.replace("--seed 0", "--seed $c");
    assert!(t16(&varied).is_empty(), "{:?}", t16(&varied));
}

#[test]
fn t16_two_runs_with_the_default_seed_warn_at_the_second() {
    let script = format!(
        "#!/bin/bash\n{SERVE}vllm bench serve --model m --max-concurrency 4\nvllm bench serve --model m --max-concurrency 8\n"
    );
    assert_eq!(t16(&script), vec![hit("T16", "warn", "seed-reuse", 5)]);
    // A reset of the cache between them, or a dataset that is not random, gives nothing.
    let reset = script.replace(
        "--max-concurrency 4\n",
        "--max-concurrency 4\ncurl -X POST localhost:8000/reset_prefix_cache\n",
    );
    assert!(t16(&reset).is_empty(), "{:?}", t16(&reset));
    let sharegpt = script.replace(
        "--model m",
        "--model m --dataset-name sharegpt --dataset-path s.json",
    );
    assert!(t16(&sharegpt).is_empty());
}

#[test]
fn t16_a_server_started_in_each_pass_or_without_prefix_caching_is_fresh() {
    let restart = "#!/bin/bash\nfor c in 4 8; do\n  vllm serve m --port 8000 &\n  until curl -sf localhost:8000/health; do sleep 1; done\n  vllm bench serve --model m --seed 0 --max-concurrency $c\n  kill %1; wait\ndone\n";
    assert!(t16(restart).is_empty(), "{:?}", t16(restart));
    let off = format!(
        "#!/bin/bash\n{}for c in 4 8; do\n  vllm bench serve --model m --seed 0 --max-concurrency $c\ndone\n",
        SERVE.replace("--port 8000", "--port 8000 --no-enable-prefix-caching")
    );
    assert!(t16(&off).is_empty(), "{:?}", t16(&off));
}

#[path = "lint_script/multinode.rs"]
mod multinode;
