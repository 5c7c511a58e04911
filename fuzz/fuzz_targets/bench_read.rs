//! The load-tool result reader (a JSON document or JSON lines) and the untimed-request counter
//! on any bytes.
#![no_main]

#[path = "common.rs"]
mod common;

use inferlint::bench::{self, untimed_requests, BenchResult};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let from_file = bench::load(&common::scratch_file("bench.json", data));
    if let Some(text) = common::plain_text(data) {
        let from_text = BenchResult::from_text(text, "fuzz.bench.json");
        match (&from_file, &from_text) {
            (Ok(f), Ok(t)) => assert_eq!(f.completed.map(f64::to_bits), t.completed.map(f64::to_bits)),
            (Err(_), Err(_)) => {}
            (f, t) => panic!("file and text readers disagree: {:?} vs {:?}", f.as_ref().err(), t.as_ref().err()),
        }
    }
    let text = String::from_utf8_lossy(data);
    if let Ok(r) = BenchResult::from_text(&text, "fuzz.bench.json") {
        assert_eq!(r.path, "fuzz.bench.json");
        let _ = r.has_counts();
    }
    let _ = untimed_requests(&text);
});
