//! `inferlint run` end to end on the window's tripwires, against the simulated vLLM: a second
//! fixed-seed load on a server kept between runs (T16, with its prefix cache), prompts over the
//! model's length (T17, and no pass over a window where nothing succeeded), outputs that stop
//! at end-of-sequence (T18). Each is followed through the live output, results.json, run.json,
//! the report page and `report --json`; every process the test started is gone at the end.

use crate::run_support;

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use run_support::{
    bin, clean_exit_code, json_file, message_of, run_with_limit, status_of, text, World,
};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(150);

/// One supervised run at a time (two cores), in this binary and beside it.
fn turn() -> crate::serial::Turn {
    crate::serial::turn("runs")
}

/// 97 usable blocks of 16 tokens: no load here fills it.
const SERVER: &str =
    "--num-gpu-blocks-override 98 --block-size 16 --max-model-len 256 --tokens-per-s 400";

struct Ran {
    code: i32,
    stdout: String,
    results: Value,
}

fn run_in(w: &World, out: &Path, args: &[&str], load: &[String]) -> Ran {
    let mut argv: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    argv.extend(["--interval".into(), "0.1".into()]);
    let o = run_with_limit(w.run_command_in(out, &argv, load), LIMIT);
    let stdout = text(&o.stdout);
    let results_path = out.join("results.json");
    assert!(
        results_path.exists(),
        "no results.json\n{stdout}\n{}",
        text(&o.stderr)
    );
    Ran {
        code: o.status.code().unwrap_or(-1),
        stdout,
        results: json_file(&results_path),
    }
}

/// `inferlint report RUN --json`: the run folder's results as the report reads them back.
fn report_json(dir: &Path) -> Value {
    let out = run_with_limit(
        {
            let mut c = Command::new(bin());
            c.arg("report")
                .arg(dir)
                .arg("--json")
                .arg("-o")
                .arg(dir.join("again.html"));
            c.env_remove("INFERLINT_ENGINE");
            c
        },
        Duration::from_secs(60),
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

/// A simulated server of this test's own, for attach mode; killed (its group) on drop.
struct Server(Child);

impl Server {
    fn start(w: &World) -> Server {
        let child = w.start_sim_server(SERVER);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !healthy(w.port) {
            assert!(
                Instant::now() < deadline,
                "the simulated server did not become ready"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Server(child)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn healthy(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = s.write_all(b"GET /health HTTP/1.0\r\n\r\n");
    let mut buf = [0u8; 12];
    s.read_exact(&mut buf).is_ok() && buf.ends_with(b"200")
}

#[test]
fn a_second_seeded_load_on_a_kept_server_fails_t16_and_the_first_passes() {
    let _t = turn();
    let w = World::new();
    let server = Server::start(&w);
    let url = format!("http://127.0.0.1:{}", w.port);
    let load = w.sim_bench(
        "--max-concurrency 4 --num-prompts 8 --random-input-len 64 --random-output-len 8 --ignore-eos --seed 0",
    );
    let args = ["--url", url.as_str(), "--keep-server"];
    let first_dir = w.dir.path().join("first");
    let first = run_in(&w, &first_dir, &args, &load);
    assert!(
        first.stdout.contains("the run leaves them running"),
        "{}",
        first.stdout
    );
    assert!(first
        .stdout
        .contains("== the attached server is left running (--keep-server)"));
    assert_eq!(
        status_of(&first.results, "T16").as_deref(),
        Some("pass"),
        "{}",
        first.stdout
    );
    assert!(healthy(w.port), "--keep-server stopped the server");
    let second_dir = w.dir.path().join("second");
    let second = run_in(&w, &second_dir, &args, &load);
    assert_eq!(second.code, 1, "{}", second.stdout);
    // 8 prompts of 64 words: 3 of their 4 blocks of 16 are served (the last token is always
    // computed): 384 of 512 prompt tokens.
    let want = "75.0% of prompt tokens came from the prefix cache (384 of 512): their prefill was skipped, so TTFT and throughput are not those of fresh prompts (random dataset, --seed 0)";
    assert_eq!(message_of(&second.results, "T16").as_deref(), Some(want));
    assert!(
        second
            .stdout
            .contains(&format!("[T16] TRIPWIRE-FAILED  {want}")),
        "{}",
        second.stdout
    );
    let run = json_file(&second_dir.join("run.json"));
    assert_eq!(run["exit_code"], 1);
    let page = std::fs::read_to_string(second_dir.join("report.html")).unwrap();
    assert!(page.contains("id=\"r-T16\""), "no T16 on the page");
    let back = report_json(&second_dir);
    assert_eq!(status_of(&back, "T16").as_deref(), Some("fail"), "{back}");
    // The server was this test's, kept on purpose: still serving until the test ends it.
    assert!(healthy(w.port));
    drop(server);
}

#[test]
fn prompts_over_the_model_length_fail_t17_and_pass_nothing_else() {
    let _t = turn();
    let w = World::new();
    let serve = w.sim_serve("0.2", SERVER);
    let load = w.sim_bench(
        "--max-concurrency 4 --num-prompts 6 --random-input-len 300 --random-output-len 8 --ignore-eos",
    );
    let out = w.out();
    let r = run_in(&w, &out, &["--serve", &serve], &load);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let t17 = message_of(&r.results, "T17").unwrap_or_default();
    assert!(
        t17.starts_with("6 of 6 requests failed (the load tool counted 6 failed; the API server refused 6 × 4xx on /v1/completions)"),
        "{t17}"
    );
    assert!(
        t17.ends_with(
            "no request succeeded, so the benchmark's figures describe no served request"
        ),
        "{t17}"
    );
    for t in ["T10", "T15", "T16"] {
        assert_eq!(
            status_of(&r.results, t).as_deref(),
            Some("unknown"),
            "{t}: {}",
            r.stdout
        );
    }
    assert!(
        r.stdout
            .contains("[T17] TRIPWIRE-FAILED  6 of 6 requests failed"),
        "{}",
        r.stdout
    );
    let back = report_json(&out);
    assert_eq!(status_of(&back, "T17").as_deref(), Some("fail"), "{back}");
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
}

#[test]
fn outputs_that_stop_at_end_of_sequence_warn_t18() {
    let _t = turn();
    let w = World::new();
    // Slower tokens: the outputs are short, and the recorder must see requests running.
    let serve = w.sim_serve(
        "0.2",
        "--num-gpu-blocks-override 98 --block-size 16 --max-model-len 256 --tokens-per-s 20 --eos-after 10",
    );
    let load = w.sim_bench(
        "--max-concurrency 4 --num-prompts 6 --random-input-len 20 --random-output-len 40",
    );
    let out = w.out();
    let r = run_in(&w, &out, &["--serve", &serve], &load);
    assert_eq!(r.code, clean_exit_code(&r.results), "{}", r.stdout);
    let t18 = message_of(&r.results, "T18").unwrap_or_default();
    assert_eq!(
        status_of(&r.results, "T18").as_deref(),
        Some("warn"),
        "{}",
        r.stdout
    );
    assert!(
        t18.starts_with(
            "6 of 6 requests (100%) stopped at end-of-sequence before the 40 tokens asked"
        ),
        "{t18}"
    );
    assert!(
        r.stdout.contains("[T18] WARN  6 of 6 requests"),
        "{}",
        r.stdout
    );
    let back = report_json(&out);
    assert_eq!(status_of(&back, "T18").as_deref(), Some("warn"), "{back}");
    // With --ignore-eos the same server runs every request to its length.
    let load = w.sim_bench(
        "--max-concurrency 4 --num-prompts 6 --random-input-len 20 --random-output-len 40 --ignore-eos",
    );
    let again = w.dir.path().join("again");
    let r = run_in(&w, &again, &["--serve", &serve], &load);
    assert_eq!(
        message_of(&r.results, "T18").as_deref(),
        Some("all 6 requests ran to the 40 tokens asked"),
        "{}",
        r.stdout
    );
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
}

#[test]
fn a_first_batch_that_compiles_fails_t20_live_and_in_the_report() {
    let _t = turn();
    let w = World::new();
    // A process of someone else's, running through the run: it must survive it.
    let mut bystander = Command::new("sleep").arg("120").spawn().unwrap();
    let serve = w.sim_serve(
        "0.2",
        "--num-gpu-blocks-override 98 --block-size 16 --max-model-len 256 --tokens-per-s 100 --cold-start-secs 1.5",
    );
    // The probe (1, then 8 at once) compiles the sizes up to 8; the load's 16 at once is new.
    let load = w.sim_bench(
        "--max-concurrency 16 --num-prompts 32 --random-input-len 20 --random-output-len 20 --save-detailed",
    );
    let out = w.out();
    let r = run_in(&w, &out, &["--serve", &serve], &load);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(!r.stdout.contains("compile range (1, 8)"), "{}", r.stdout);
    let t20 = message_of(&r.results, "T20").unwrap_or_default();
    assert_eq!(
        status_of(&r.results, "T20").as_deref(),
        Some("fail"),
        "{}",
        r.stdout
    );
    // The load's 16 arrive together on an idle machine (one new size, 16); on a busy one
    // they trickle in and the sizes below 16 the probe missed compile too.
    let record = json_file(&out.join("run.json"));
    let work = record["during_load"]["warmup_work"].as_array().unwrap();
    let lines = match work.len() {
        1 => "1 line".to_string(),
        n => format!("{n} lines"),
    };
    assert!(
        t20.starts_with(&format!("the server did warm-up work while the load ran ({lines}, first: \"Compiling a graph for compile range (1, ")),
        "{t20}"
    );
    assert!(
        work.iter().any(|l| l
            .as_str()
            .unwrap_or_default()
            .contains("compile range (1, 16)")),
        "{record}"
    );
    // The live alert, while the load ran.
    assert!(
        r.stdout
            .contains("into the load: the server is warming up (\"Compiling a graph"),
        "{}",
        r.stdout
    );
    // run.json keeps what the run saw, and the report decides on it again.
    assert!(
        record["during_load"]["client_cpu"]["busy_s"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{record}"
    );
    let back = report_json(&out);
    assert_eq!(status_of(&back, "T20").as_deref(), Some("fail"), "{back}");
    // In "what limited this run", on the terminal and on the page.
    assert!(
        r.stdout
            .contains("- Warm-up was measured. The server logged \"Compiling a graph"),
        "{}",
        r.stdout
    );
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("Warm-up was measured"));
    // The client, a Rust process, kept up.
    assert_eq!(
        status_of(&r.results, "T21").as_deref(),
        Some("pass"),
        "{}",
        r.stdout
    );
    // Under --enforce-eager nothing compiles: no warm-up line, and no FAIL.
    let eager = w.sim_serve(
        "0.2",
        "--num-gpu-blocks-override 98 --block-size 16 --max-model-len 256 --tokens-per-s 100 --cold-start-secs 1.5 --enforce-eager",
    );
    let again = w.dir.path().join("again");
    let r = run_in(&w, &again, &["--serve", &eager], &load);
    assert_ne!(
        status_of(&r.results, "T20").as_deref(),
        Some("fail"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("warming up"), "{}", r.stdout);
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "the bystander died"
    );
    let _ = bystander.kill();
    let _ = bystander.wait();
}

#[test]
fn a_client_that_burns_a_core_is_named_by_t21() {
    let _t = turn();
    let w = World::new();
    let serve = w.sim_serve(
        "0.2",
        "--num-gpu-blocks-override 98 --block-size 16 --max-model-len 256 --tokens-per-s 20",
    );
    // The load's own tree holds a process that spins through the load (bounded by timeout).
    let bench = w
        .sim_bench(
            "--max-concurrency 4 --num-prompts 8 --random-input-len 20 --random-output-len 40",
        )
        .iter()
        .map(|a| shlex::try_quote(a).unwrap().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let load = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!("timeout 60 sh -c 'while :; do :; done' & {bench}"),
    ];
    // Where the machine's cores are taken by others (a build beside the tests), the spinner
    // waits for a core and T21 rightly says the node was oversubscribed and cannot tell: that
    // run shows nothing of the client, so it is run again, at most twice more.
    let mut attempt = 0;
    let (out, r) = loop {
        attempt += 1;
        let out = w.dir.path().join(format!("run-{attempt}"));
        let r = run_in(&w, &out, &["--serve", &serve], &load);
        let crowded = status_of(&r.results, "T21").as_deref() == Some("unknown")
            && message_of(&r.results, "T21").is_some_and(|m| m.contains("oversubscribed"));
        if !crowded || attempt == 3 {
            break (out, r);
        }
    };
    let t21 = message_of(&r.results, "T21").unwrap_or_default();
    assert_eq!(
        status_of(&r.results, "T21").as_deref(),
        Some("warn"),
        "{}",
        r.stdout
    );
    assert!(t21.contains("of a core while the server was busy"), "{t21}");
    let record = json_file(&out.join("run.json"));
    let cpu = &record["during_load"]["client_cpu"];
    assert!(
        cpu["hottest"]
            .as_str()
            .unwrap_or_default()
            .contains("while"),
        "{record}"
    );
    // The spinner was the load's: it is gone with it.
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
}

/// The simulated n-gram drafter (`--speculative-config`, faithful to the recorded
/// `field/spec-ngram` run): on the random dataset it drafts now and then and nothing is
/// accepted, so T19 warns, live and in the report; the same server without speculation has no
/// T19 line.
#[test]
fn ngram_speculation_on_random_prompts_warns_t19() {
    let _t = turn();
    let w = World::new();
    let spec = r#"{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}"#;
    let base =
        "--num-gpu-blocks-override 98 --block-size 16 --max-model-len 512 --tokens-per-s 200";
    let serve = w.sim_serve(
        "0.2",
        &format!(
            "{base} --speculative-config {}",
            shlex::try_quote(spec).unwrap()
        ),
    );
    let load = w.sim_bench(
        "--max-concurrency 4 --num-prompts 8 --random-input-len 100 --random-output-len 64 --ignore-eos",
    );
    let out = w.out();
    let r = run_in(&w, &out, &["--serve", &serve], &load);
    let t19 = message_of(&r.results, "T19").unwrap_or_default();
    assert_eq!(
        status_of(&r.results, "T19").as_deref(),
        Some("warn"),
        "{}",
        r.stdout
    );
    assert!(
        t19.starts_with("speculative decoding (ngram) accepted 0 of "),
        "{t19}"
    );
    assert!(
        t19.contains("on the random dataset's random tokens"),
        "{t19}"
    );
    let back = report_json(&out);
    assert_eq!(status_of(&back, "T19").as_deref(), Some("warn"), "{back}");
    let plain = w.sim_serve("0.2", base);
    let again = w.dir.path().join("again");
    let r = run_in(&w, &again, &["--serve", &plain], &load);
    assert_eq!(status_of(&r.results, "T19"), None, "{}", r.stdout);
    assert!(w.live_processes().is_empty(), "{:?}", w.live_processes());
}
