//! The snapshot reader (a snapshot document or bare Prometheus text) on any bytes, then the
//! checks that read two snapshots. A snapshot that loads must save and load back unchanged.
#![no_main]

#[path = "common.rs"]
mod common;

use inferlint::checks::{counters, t1, t10};
use inferlint::snapshot::Snapshot;
use inferlint::Engine;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let from_file = Snapshot::load(&common::scratch_file("snapshot.json", data));
    if let Some(text) = common::plain_text(data) {
        let from_text = Snapshot::from_text(text, "fuzz.snapshot.json");
        match (&from_file, &from_text) {
            (Ok(f), Ok(t)) => {
                assert_eq!(f.metrics.samples().len(), t.metrics.samples().len());
                assert_eq!(f.text, t.text);
            }
            (Err(_), Err(_)) => {}
            (f, t) => panic!("file and text readers disagree: {:?} vs {:?}", f.as_ref().err(), t.as_ref().err()),
        }
    }
    let text = String::from_utf8_lossy(data);
    let Ok(snap) = Snapshot::from_text(&text, "fuzz.snapshot.json") else {
        return;
    };
    let _ = snap.has_clock();
    let _ = snap.engine();
    let saved = snap.to_json();
    let back = Snapshot::from_text(&saved, "fuzz.snapshot.json")
        .unwrap_or_else(|e| panic!("a saved snapshot does not load back: {e}"));
    assert_eq!(back.text, snap.text);
    assert_eq!(back.url, snap.url);
    assert_eq!(back.t_mono_ns, snap.t_mono_ns);
    assert_eq!(back.metrics.samples().len(), snap.metrics.samples().len());
    assert!(
        back.t_wall.to_bits() == snap.t_wall.to_bits()
            || (back.t_wall.is_nan() && !snap.t_wall.is_finite()),
        "t_wall {} came back as {}",
        snap.t_wall,
        back.t_wall
    );
    let _ = counters::span(&snap, &back);
    let _ = counters::moved_created_stamps(&snap.metrics, &back.metrics);
    for engine in Engine::ALL {
        let r = t1::check(&snap, &back, None, None, engine);
        let _ = r.line();
        let r = t10::check(&snap, &back, None, engine);
        let _ = t10::with_integer_second_comparison(&r).line();
    }
});
