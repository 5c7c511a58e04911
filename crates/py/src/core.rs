//! Every path this crate takes from the inferlint library, in one place: when the library is
//! split into crates (core, run, report), only these lines change.

pub use inferlint_core::bench::{self, BenchResult};
pub use inferlint_core::bootlog::{self, BootFacts};
pub use inferlint_core::catalogue;
pub use inferlint_core::checks::{
    blocks, counters, t1, t10, t12, t14, t15, t4_t11, t5, t6, t8, t9,
};
pub use inferlint_core::engine::{self, Engine};
pub use inferlint_core::gpu;
pub use inferlint_core::probe;
pub use inferlint_core::procs;
pub use inferlint_core::prom::Metrics;
pub use inferlint_core::report;
pub use inferlint_core::result::CheckResult;
pub use inferlint_core::series::{Series, SeriesHeader, SeriesSample};
pub use inferlint_core::snapshot::{ReadError, ScrapeError, Scraper, Snapshot};
pub use inferlint_core::VERSION;
