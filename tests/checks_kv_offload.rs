//! T26 (KV offloading that never loads back) on the simulated vLLM's recordings
//! (tests/fixtures/sim-kv-offload/: the CPU build refuses offloading, so the simulator's
//! `OffloadingConnector` counters stand in, faithful to vLLM 0.32's names): both verdicts, a
//! one-line mutation that flips each, and the window's checks that print it only where
//! offloading was on (docs/design/evidence.md#mutations).

use inferlint_core::bootlog::parse_text;
use inferlint_core::checks::{t26, window_all, Facts};
use inferlint_core::snapshot::Snapshot;
use inferlint_core::testkit::{evidence, evidence_text};
use inferlint_core::{Engine, Status, Tripwire};

fn pair(case: &str) -> Option<(Snapshot, Snapshot)> {
    let load = |name: &str| {
        let p = evidence(&format!("sim-kv-offload/{case}/{name}.snapshot.json"))?;
        Some(Snapshot::load(&p).unwrap_or_else(|e| panic!("{case}/{name}: {e}")))
    };
    Some((load("before")?, load("after")?))
}

/// The snapshot with exactly one occurrence of `from` in its text replaced.
fn edited(s: &Snapshot, from: &str, to: &str) -> Snapshot {
    assert_eq!(s.text.matches(from).count(), 1, "{from:?} in {}", s.source);
    Snapshot::from_text(&s.text.replacen(from, to, 1), &s.source).unwrap()
}

const LOAD_BYTES: &str =
    "vllm:kv_offload_load_bytes_total{engine=\"0\",model_name=\"Qwen/Qwen3-0.6B\"} 9.17504e+07";
const STORE_BYTES: &str =
    "vllm:kv_offload_store_bytes_total{engine=\"0\",model_name=\"Qwen/Qwen3-0.6B\"} 1.17440512e+08";

#[test]
fn t26_passes_when_offloading_loaded_blocks_back_and_one_line_flips_it() {
    let Some((b, a)) = pair("loads-back") else {
        return;
    };
    let r = t26::check(&b, &a, None);
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    assert_eq!(
        r.message,
        "KV offloading stored 112 MiB in CPU memory and loaded 87.5 MiB back to the GPU (the connector served 800 of the 1,824 prompt tokens asked of it, 44%)"
    );
    // The load counter at its value before the load: nothing came back.
    let none = edited(&a, LOAD_BYTES, &LOAD_BYTES.replace("9.17504e+07", "0.0"));
    let r = t26::check(&b, &none, None);
    assert_eq!(r.status, Status::Warn, "{}", r.message);
}

#[test]
fn t26_warns_when_offloading_stored_and_never_loaded_back_and_one_line_flips_it() {
    let Some((b, a)) = pair("never-loads") else {
        return;
    };
    let r = t26::check(&b, &a, None);
    assert_eq!(r.status, Status::Warn, "{}", r.message);
    assert!(
        r.message.starts_with("KV offloading stored 112 MiB in CPU memory and loaded none of it back (the connector served 0 of the 1,824 prompt tokens asked of it, 0%)"),
        "{}",
        r.message
    );
    // One load counter line, as vLLM creates it at the first load: a pass.
    let loaded = edited(
        &a,
        STORE_BYTES,
        &format!(
            "{STORE_BYTES}\n{}",
            LOAD_BYTES.replace("9.17504e+07", "1835008.0")
        ),
    );
    assert_eq!(t26::check(&b, &loaded, None).status, Status::Pass);
    // Nothing stored either: cannot tell.
    let stored_none = edited(
        &a,
        STORE_BYTES,
        &STORE_BYTES.replace("1.17440512e+08", "0.0"),
    );
    assert_eq!(t26::check(&b, &stored_none, None).status, Status::Unknown);
}

#[test]
fn the_window_prints_t26_where_offloading_was_on_and_the_boot_log_alone_says_so() {
    let Some((b, a)) = pair("never-loads") else {
        return;
    };
    let facts = |b: &Snapshot, a: &Snapshot| {
        let f = Facts {
            before: Some(b),
            after: Some(a),
            series: None,
            boot: None,
            requested: None,
            bench: None,
            untimed_requests: 0,
            load: None,
            observed: None,
            engine: Engine::Vllm,
        };
        window_all(&f)
            .into_iter()
            .find(|r| r.tripwire == Tripwire::T26)
            .map(|r| r.status)
    };
    assert_eq!(facts(&b, &a), Some(Status::Warn));
    // Without offloading (another run's snapshots): left out.
    let Some((pb, pa)) = pair_plain() else {
        return;
    };
    assert_eq!(facts(&pb, &pa), None);
    // On in the boot log, with no counter: cannot tell, with the reason.
    let Some(log) = evidence_text("sim-kv-offload/never-loads/boot.log") else {
        return;
    };
    let boot = parse_text(&log, Some(Engine::Vllm));
    assert!(t26::active(&pa, Some(&boot)));
    let r = t26::check(&pb, &pa, Some(&boot));
    assert_eq!(r.status, Status::Unknown, "{}", r.message);
    assert!(
        r.message.contains("exposes none of its counters"),
        "{}",
        r.message
    );
}

/// A run without offloading: the recorded vLLM 0.32 tokenizer run.
fn pair_plain() -> Option<(Snapshot, Snapshot)> {
    let load = |name: &str| {
        let p = evidence(&format!(
            "vllm-0.32-cpu/field/tokenizer/matching-{name}.prom"
        ))?;
        Some(Snapshot::load(&p).unwrap_or_else(|e| panic!("{name}: {e}")))
    };
    Some((load("before")?, load("after")?))
}
