//! The load-tool result reader (a JSON document or JSON lines) and the untimed-request counter
//! on any bytes.
#![no_main]

use inferlint::bench::{untimed_requests, BenchResult};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(r) = BenchResult::from_text(&text, "fuzz.bench.json") {
        assert_eq!(r.path, "fuzz.bench.json");
        let _ = r.has_counts();
    }
    let _ = untimed_requests(&text);
});
