//! GuideLLM 0.8.1's real `benchmarks.json` (`guidellm-0.8/sglang-sim/`, the real client against
//! the simulated SGLang under `inferlint run`): the reader takes its request totals, tokens,
//! duration and streams, and T15 decides on it against the server's own counters as the run
//! did; one request fewer in the file flips T15.

use inferlint_core::checks::t15;
use inferlint_core::result::Status;
use inferlint_core::snapshot::Snapshot;
use inferlint_core::testkit::evidence;
use inferlint_core::Engine;

const DIR: &str = "guidellm-0.8/sglang-sim";

#[test]
fn guidellm_081_report_reads_and_agrees_with_the_server() {
    let (Some(file), Some(before), Some(after)) = (
        evidence(&format!("{DIR}/benchmarks.json")),
        evidence(&format!("{DIR}/before.snapshot.json")),
        evidence(&format!("{DIR}/after.snapshot.json")),
    ) else {
        return;
    };
    let r = inferlint_core::bench::foreign::load_guidellm(&file).unwrap();
    assert_eq!(r.completed, Some(16.0));
    assert_eq!(r.failed, Some(0.0));
    assert_eq!(r.total_output_tokens, Some(256.0));
    assert_eq!(r.max_concurrency, Some(4.0), "config.strategy.streams");
    assert!(r.duration.is_some_and(|d| d > 1.0), "{:?}", r.duration);
    let (before, after) = (
        Snapshot::load(&before).unwrap(),
        Snapshot::load(&after).unwrap(),
    );
    let agree = t15::check(&r, &before, &after, 0, Engine::Sglang);
    assert_eq!(agree.status, Status::Pass, "{}", agree.message);
    assert_eq!(
        agree.message,
        "client and server agree: 16 requests, 256 output tokens"
    );
    let mut fewer = r.clone();
    fewer.completed = Some(15.0);
    let t = t15::check(&fewer, &before, &after, 0, Engine::Sglang);
    assert_ne!(t.status, Status::Pass, "{}", t.message);
}

/// The same run with GuideLLM 0.8's constraint mistyped (`value=` for `count=`): the client
/// exits 2 before sending anything, the recording never sees a request, and T8 cannot tell
/// (it said "never ran more than 0" before); one sample with two running makes it a failure.
#[test]
fn guidellm_refusing_its_arguments_leaves_t8_unable_to_tell() {
    use inferlint_core::checks::t8;
    use inferlint_core::series::Series;
    let (Some(series), Some(log)) = (
        evidence("guidellm-0.8/refused-constraint/run.series.jsonl"),
        evidence("guidellm-0.8/refused-constraint/load.log"),
    ) else {
        return;
    };
    let log = std::fs::read_to_string(log).unwrap();
    assert!(log.contains("Field required (at 'constraints[0].max_requests.count')"));
    let s = Series::load(&series).unwrap();
    let r = t8::check(&s, 4, None, Engine::Sglang);
    assert_eq!(r.status, Status::Unknown, "{}", r.message);
    assert!(
        r.message.contains("no sample saw a request"),
        "{}",
        r.message
    );
    let mut seen = s.clone();
    seen.samples[3].set_running(Some(2.0));
    let r = t8::check(&seen, 4, None, Engine::Sglang);
    assert_eq!(r.status, Status::Fail, "{}", r.message);
    assert_eq!(
        r.message,
        "requested 4 concurrent, server never ran more than 2"
    );
}
