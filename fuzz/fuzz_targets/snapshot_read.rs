//! libFuzzer on [`inferlint_fuzz::snapshot_read`]: what it checks is said there.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| inferlint_fuzz::snapshot_read(data));
