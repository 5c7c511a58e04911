//! The live analyzer fed the way a server's output arrives: in chunks of any size, split mid-line
//! and mid-character. Its events and facts must equal those of reading the whole file. And bad
//! input (invalid UTF-8, NUL bytes, one enormous line, a truncated log, garbage) must not panic.

use std::path::{Path, PathBuf};

use inferlint_core::bootlog::{self, Analyzer, BootEvent, BootEventKind, BootFacts, LINE_CAP};
use inferlint_core::checks::{t12, t5};
use inferlint_core::testkit::{evidence, evidence_dir};
use inferlint_core::Status;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Every boot log of the recorded evidence, plus the engines' published format samples.
fn all_logs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(dir) = evidence_dir() {
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "log")
                    && p.file_name().is_some_and(|n| n != "load.log")
                {
                    out.push(p);
                }
            }
        }
    }
    // The engines' format samples (committed with the tests: a missing one fails).
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/engine-samples");
    for name in ["vllm-0.11.0-boot.log", "vllm-0.33.0-boot.log"] {
        let p = samples.join(name);
        assert!(p.is_file(), "{} is missing", p.display());
        out.push(p);
    }
    out.sort();
    out
}

fn whole(bytes: &[u8]) -> (Vec<BootEvent>, BootFacts) {
    let mut a = Analyzer::new(None);
    let mut events = a.feed_bytes(bytes);
    let (last, facts) = a.finish_with_events();
    events.extend(last);
    (events, facts)
}

fn chunked(bytes: &[u8], rng: &mut StdRng, max_chunk: usize) -> (Vec<BootEvent>, BootFacts) {
    let mut a = Analyzer::new(None);
    let mut events = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let n = rng.random_range(1..=max_chunk).min(bytes.len() - i);
        events.extend(a.feed_bytes(&bytes[i..i + n]));
        i += n;
    }
    let (last, facts) = a.finish_with_events();
    events.extend(last);
    (events, facts)
}

#[test]
fn chunks_of_any_size_give_the_same_events_and_facts() {
    let logs = all_logs();
    if logs.is_empty() {
        return;
    }
    let mut rng = StdRng::seed_from_u64(20_260_929);
    for path in &logs {
        let bytes = std::fs::read(path).unwrap();
        let reference = whole(&bytes);
        assert_eq!(
            bootlog::parse_file(path, None).unwrap(),
            reference.1,
            "{}: parse_file",
            path.display()
        );
        for max_chunk in [7, 300, 70_000] {
            let got = chunked(&bytes, &mut rng, max_chunk);
            assert_eq!(
                got.0,
                reference.0,
                "{}: events, chunks ≤ {max_chunk}",
                path.display()
            );
            assert_eq!(
                got.1,
                reference.1,
                "{}: facts, chunks ≤ {max_chunk}",
                path.display()
            );
        }
        // A caller that splits lines itself and feeds them one at a time.
        let text = String::from_utf8_lossy(&bytes);
        let mut a = Analyzer::new(None);
        let mut events = Vec::new();
        for line in text.split_inclusive('\n') {
            events.extend(a.feed_line(line));
        }
        let (last, facts) = a.finish_with_events();
        events.extend(last);
        assert_eq!(events, reference.0, "{}: feed_line events", path.display());
        assert_eq!(facts, reference.1, "{}: feed_line facts", path.display());
    }
}

#[test]
fn events_arrive_at_the_line_that_causes_them() {
    let Some(p) = evidence("vllm-0.28/boot_spec_backend_override.log") else {
        return;
    };
    let text = std::fs::read_to_string(&p).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut a = Analyzer::new(None);
    let mut seen = Vec::new();
    for l in &lines {
        seen.extend(a.feed_line(l));
    }
    let at = |pred: &dyn Fn(&BootEventKind) -> bool| {
        seen.iter().find(|e| pred(&e.kind)).map(|e| e.lineno)
    };
    let line_of = |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap() + 1;
    assert_eq!(
        at(&|k| matches!(k, BootEventKind::VersionSeen { version } if version == "0.28.0")),
        Some(line_of("version 0.28.0"))
    );
    assert_eq!(
        at(&|k| matches!(k, BootEventKind::KvPoolSized { tokens: 19_988 })),
        Some(line_of("GPU KV cache size: 19,988 tokens"))
    );
    assert_eq!(
        at(&|k| matches!(k, BootEventKind::BlockSizeForced { tokens: 832 })),
        Some(line_of("Setting attention block size to 832"))
    );
    assert_eq!(
        at(
            &|k| matches!(k, BootEventKind::BackendSelected { backend, drafter: true } if backend == "FLASHINFER")
        ),
        Some(line_of("Using FLASHINFER attention backend"))
    );
    assert_eq!(
        at(&|k| matches!(k, BootEventKind::Ready)),
        Some(line_of("Application startup complete"))
    );
    let failure = seen
        .iter()
        .find_map(|e| match &e.kind {
            BootEventKind::FailureFound { failure } => Some((e.lineno, failure.clone())),
            _ => None,
        })
        .expect("a failure event");
    assert_eq!(failure.0, failure.1.lineno);
    assert_eq!(
        a.last_line(),
        "warnings.warn('resource_tracker: There appear to be %d '"
    );
    a.feed_line(
        "Loading safetensors checkpoint shards:  12% Completed | 1/8 [00:13<01:32, 13.26s/it]",
    );
    a.feed_line("(EngineCore pid=1030) ");
    assert_eq!(
        a.last_line(),
        "warnings.warn('resource_tracker: There appear to be %d '",
        "progress bars and empty lines are not shown"
    );
    a.feed_line("(APIServer pid=1) INFO 09-26 17:50:47 [api_server.py:657] Starting vLLM server on http://127.0.0.1:8000");
    assert_eq!(
        a.last_line(),
        "Starting vLLM server on http://127.0.0.1:8000"
    );
}

#[test]
fn a_boot_failure_is_reported_at_its_root_cause_line() {
    let Some(p) = evidence("vllm-0.30/boot_fail_ptx_version.log") else {
        return;
    };
    let text = std::fs::read_to_string(&p).unwrap();
    let root = text
        .lines()
        .position(|l| l.contains("fatal   : Unsupported .version"))
        .unwrap()
        + 1;
    let mut a = Analyzer::new(None);
    for (i, l) in text.lines().enumerate() {
        let events = a.feed_line(l);
        if i + 1 == root {
            let found = events.iter().find_map(|e| match &e.kind {
                BootEventKind::FailureFound { failure } => Some(failure.clone()),
                _ => None,
            });
            let f = found.expect("the failure is reported at its line");
            assert_eq!(
                f.summary(),
                "jit_toolchain during boot: Unsupported .version 9.4; current version is '9.0'"
            );
            return;
        }
    }
    panic!("root cause line not reached");
}

#[test]
fn a_serving_error_the_server_survived_is_withdrawn() {
    let Some(p) = evidence("sglang-0.5/live/boot.log") else {
        return;
    };
    let text = std::fs::read_to_string(&p).unwrap();
    let mut a = Analyzer::new(None);
    let mut events = Vec::new();
    for l in text.lines() {
        events.extend(a.feed_line(l));
    }
    let found = events
        .iter()
        .position(|e| matches!(e.kind, BootEventKind::FailureFound { .. }));
    let cleared = events
        .iter()
        .rposition(|e| matches!(e.kind, BootEventKind::FailureCleared));
    assert!(
        found.is_some() && cleared > found,
        "found then cleared: {events:?}"
    );
    assert_eq!(a.finish().failure, None);
}

fn eager() -> Option<String> {
    inferlint_core::testkit::evidence_text("vllm-0.28/boot_eager.log")
}

#[test]
fn invalid_utf8_is_read_lossily_and_counted() {
    let Some(text) = eager() else { return };
    let mut bytes = Vec::new();
    for (i, line) in text.lines().enumerate() {
        bytes.extend_from_slice(line.as_bytes());
        if i % 10 == 3 {
            bytes.extend_from_slice(b" \xff\xfe\xc3");
        }
        bytes.push(b'\n');
    }
    let f = bootlog::parse_bytes(&bytes, None);
    let expected_lossy = text
        .lines()
        .enumerate()
        .filter(|(i, _)| i % 10 == 3)
        .count() as u64;
    assert_eq!(f.lines_lossy, expected_lossy);
    assert_eq!(f.kv_pool_tokens, Some(31_554));
    let unreadable = t12::unreadable(&f);
    assert_eq!(unreadable.len(), 1);
    assert_eq!(unreadable[0].status, Status::Unknown);
    assert!(unreadable[0].message.contains("not valid UTF-8"));
}

#[test]
fn nul_bytes_are_harmless() {
    let Some(text) = eager() else { return };
    let reference = bootlog::parse_text(&text, None);
    let sprinkled: String = text.lines().map(|l| format!("\0{l}\0\0\n")).collect();
    let f = bootlog::parse_text(&format!("\0\0\0\0{sprinkled}"), None);
    assert_eq!(f, reference);
}

#[test]
fn one_enormous_line_is_cut_and_the_rest_still_read() {
    let Some(text) = eager() else { return };
    let mut a = Analyzer::new(None);
    let mb = vec![b'x'; 1 << 20];
    for _ in 0..50 {
        a.feed_bytes(&mb);
    }
    a.feed_bytes(b"\n");
    a.feed_bytes(text.as_bytes());
    let f = a.finish();
    assert_eq!(f.lines_cut, 1);
    assert_eq!(f.kv_pool_tokens, Some(31_554));
    assert!(t12::unreadable(&f)[0].message.contains(&format!(
        "longer than {} bytes were cut",
        inferlint_core::fmt::thousands(LINE_CAP as i64)
    )));

    // A key line cut at the cap does not parse: it is reported, never half-read.
    let huge_args = format!(
        "[2026-10-01 00:37:47] server_args={{'model_path': '/m', 'x': '{}'}}\n",
        "y".repeat(LINE_CAP * 2)
    );
    let f = bootlog::parse_text(&huge_args, None);
    assert_eq!(f.server_args, None);
    assert_eq!(f.unparsed[0].field, "server_args");
    assert!(f.unparsed[0].line.chars().count() <= 300);
    assert_eq!(
        t12::unparsed(&f).unwrap().message,
        "1 recognised line(s) in an unknown format"
    );
}

#[test]
fn a_truncated_log_says_what_it_lacks() {
    let Some(text) = eager() else { return };
    let at_args = text.find("non-default args: {").unwrap() + 40;
    let cut = &text.as_bytes()[..at_args];
    let f = bootlog::parse_bytes(cut, None);
    assert!(!f.ready);
    assert_eq!(f.non_default_args, None);
    assert_eq!(f.unparsed.len(), 1);
    assert_eq!(f.unparsed[0].field, "non_default_args");
    assert_eq!(
        t5::check(&f).message,
        "boot did not get far enough to size blocks"
    );
    assert_eq!(t12::unparsed(&f).unwrap().status, Status::Unknown);

    // Cut inside a multi-byte character: the partial character is reported, not a panic.
    let logo = text.find('\u{2588}').unwrap() + 1;
    let f = bootlog::parse_bytes(&text.as_bytes()[..logo], None);
    assert_eq!(f.lines_lossy, 1);
}

#[test]
fn garbage_does_not_panic() {
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..20 {
        let n = rng.random_range(0..200_000);
        let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
        let mut a = Analyzer::new(None);
        let mut i = 0;
        while i < bytes.len() {
            let k = rng.random_range(1..5000).min(bytes.len() - i);
            a.feed_bytes(&bytes[i..i + k]);
            i += k;
        }
        let f = a.finish();
        assert!(f.lines as usize <= bytes.len() + 1);
    }
    let f = bootlog::parse_text("", None);
    assert_eq!((f.lines, f.ready, f.engine), (0, false, None));
}
