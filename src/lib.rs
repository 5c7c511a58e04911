//! inferlint: supervises an LLM inference server during a benchmark and tells which of the
//! benchmark's numbers hold.
//!
//! Data flows one way: readers ([`prom`], [`snapshot`], [`series`], [`bench`], [`bootlog`]) →
//! facts → [`checks`] (pure functions returning a [`result::CheckResult`]) → outputs
//! ([`output`]); the command line ([`cli`]) on top, the simulator ([`sim`]) beside.

pub mod bench;
pub mod bootlog;
pub mod catalogue;
pub mod checks;
pub mod cli;
pub mod engine;
pub mod evidence;
pub mod fmt;
pub mod gpu;
pub mod lintscript;
pub mod output;
pub mod probe;
pub mod procs;
pub mod prom;
pub mod report;
pub mod result;
pub mod run;
pub mod series;
pub mod sim;
pub mod snapshot;
#[doc(hidden)]
pub mod testkit;

pub use engine::Engine;
pub use result::{CheckResult, Status, Tripwire};

/// inferlint's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
