//! The tripwire checks: pure functions from facts to a [`crate::CheckResult`]. A missing input is
//! UNKNOWN, never a pass; a finding never makes a check fail as a function.

// Counters, series and result files (the evidence core).
pub mod blocks;
pub mod counters;
pub mod gaps;
pub mod per_engine;
pub mod t1;
pub mod t10;
pub mod t14;
pub mod t15;
pub mod t8;
pub mod t9;
// Boot logs.
pub mod t12;
pub mod t4_t11;
pub mod t5;
pub mod t6;
