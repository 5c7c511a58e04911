//! inferlint's core: everything that decides a verdict, with no I/O beyond reading files.
//!
//! Data flows one way: readers ([`prom`], [`snapshot`], [`series`], [`bench`](mod@bench), [`bootlog`],
//! [`gpu`]) → facts → [`checks`] (pure functions returning a [`result::CheckResult`] with its
//! [`evidence`] struct, one per tripwire, and [`checks::run_all`]) → [`output`] (verdict lines
//! and JSON). The supervised run, the report, the simulator and the command line live in crates
//! above this one (ARCHITECTURE.md); nothing here uses an async runtime, HTTP, a command-line
//! parser or HTML.
#![expect(
    missing_docs,
    reason = "289 public items (mostly struct fields and variants) were undocumented when the workspace turned missing_docs on; document them, then drop this"
)]
#![forbid(unsafe_code)]
// No unwrap or expect on what the inputs hold: bad input is an error naming the file and line,
// never a panic. Where an invariant makes one safe, the site allows it and says why.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod argv;
pub mod bench;
pub mod bootlog;
pub mod catalogue;
pub mod checks;
pub mod clock;
pub mod endpoints;
pub mod engine;
pub mod evidence;
pub mod files;
pub mod fmt;
pub mod gpu;
pub mod load;
pub mod observed;
pub mod output;
pub mod prom;
pub mod result;
pub mod series;
pub mod snapshot;
pub mod sweep;
// Tests' and benches' helpers for the recorded evidence: not part of the shipped library.
#[cfg(any(test, feature = "testkit"))]
#[doc(hidden)]
pub mod testkit;
pub mod url;
pub mod verdict;

pub use engine::Engine;
pub use result::{CheckResult, Status, Tripwire};

/// inferlint's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
