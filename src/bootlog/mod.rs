//! Everything inferlint learns from a server's own output (spec §3).

pub mod facts;

pub use facts::{BootFacts, Unparsed};
