//! `inferlint demo`: the README's main-job command, on a machine with nothing but the binary.

mod run_support;

use std::time::{Duration, Instant};

use run_support::{inferlint, json_file, message_of, status_of, text};

#[test]
fn demo_tells_the_whole_story_in_under_a_minute() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let t0 = Instant::now();
    let o = inferlint(
        &["demo", "-o", out.to_str().unwrap()],
        &[("INFERLINT_GPU", "nvml")],
        Duration::from_secs(150),
    );
    let took = t0.elapsed();
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{}", text(&o.stderr));
    assert!(took < Duration::from_secs(60), "the demo took {took:?}");
    let r = json_file(&out.join("results.json"));
    // Requested 32, about 10 ran.
    let t8 = message_of(&r, "T8").unwrap();
    assert!(
        t8.starts_with("requested 32 concurrent, server never ran more than "),
        "{t8}"
    );
    let peak: u64 = t8.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((8..=14).contains(&peak), "{t8}");
    // Preemptions the server never logged.
    assert_eq!(status_of(&r, "T1").as_deref(), Some("fail"));
    let boot = std::fs::read_to_string(out.join("boot.log")).unwrap();
    assert!(
        !boot.to_lowercase().contains("preempt"),
        "the log mentions preemption"
    );
    // The ceiling fell as outputs grew.
    assert_eq!(status_of(&r, "T9").as_deref(), Some("warn"));
    // 784-token blocks and the null block.
    assert!(message_of(&r, "T5").unwrap().contains("784 tokens"));
    assert_eq!(
        message_of(&r, "T14").as_deref(),
        Some("gauge denominator is 42 = num_gpu_blocks (43) - 1 null block")
    );
    // The engine that left its server's process group was found by the teardown, and the
    // (simulated) card reads clear after it.
    assert!(
        stdout.contains("found outside the server's process group"),
        "{stdout}"
    );
    assert!(stdout.contains("VLLM::EngineCore"), "{stdout}");
    assert_eq!(status_of(&r, "T2").as_deref(), Some("pass"));
    assert!(out.join("report.html").exists());
    assert!(stdout.contains("That was the demo."));
}

#[test]
fn the_window_demo_shows_warm_up_and_short_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let o = inferlint(
        &["demo", "--window", "-o", out.to_str().unwrap()],
        &[("INFERLINT_GPU", "nvml")],
        Duration::from_secs(150),
    );
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{}", text(&o.stderr));
    let r = json_file(&out.join("results.json"));
    // The load's 16 at once is a batch size the probe never ran: it compiled during the load.
    assert_eq!(status_of(&r, "T20").as_deref(), Some("fail"), "{stdout}");
    assert!(
        stdout.contains("into the load: the server is warming up (\"Compiling a graph"),
        "{stdout}"
    );
    // The model ended every answer at 60 tokens of the 200 asked.
    assert_eq!(status_of(&r, "T18").as_deref(), Some("warn"), "{stdout}");
    let t18 = message_of(&r, "T18").unwrap();
    assert!(t18.contains("48 of 48"), "{t18}");
    assert!(stdout.contains("inferlint explain T18 T20"), "{stdout}");
}
