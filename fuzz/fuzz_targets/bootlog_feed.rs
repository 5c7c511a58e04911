//! libFuzzer on [`inferlint_fuzz::bootlog_feed`]: what it checks is said there.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| inferlint_fuzz::bootlog_feed(data));
