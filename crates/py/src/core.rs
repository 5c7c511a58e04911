//! Every path this crate takes from the library crates, in one place: core (readers, checks,
//! catalogue, the load command), host (processes, GPU tools), http (scrapes, the probe) and report
//! (the HTML page). Not the run crate: the package runs no supervised sequence of its own.

pub use inferlint_core::bench::{self, BenchResult};
pub use inferlint_core::bootlog::{self, BootFacts};
pub use inferlint_core::checks::{
    blocks, counters, t1, t10, t12, t14, t15, t16, t17, t18, t19, t20, t21, t22, t23, t24, t25,
    t26, t27, t4_t11, t5, t6, t8, t9,
};
pub use inferlint_core::clock::{Clock, ClockReading};
pub use inferlint_core::engine::{self, Engine};
pub use inferlint_core::load::{self, LoadIntent};
pub use inferlint_core::observed::LoadObserved;
pub use inferlint_core::prom::Metrics;
pub use inferlint_core::result::CheckResult;
pub use inferlint_core::series::{Readings, Series, SeriesHeader, SeriesSample};
pub use inferlint_core::snapshot::{ReadError, Snapshot};
pub use inferlint_core::VERSION;
pub use inferlint_core::{argv, catalogue};
pub use inferlint_host::{gpu, procs};
pub use inferlint_http::probe;
pub use inferlint_http::scrape::{ScrapeError, Scraper};
pub use inferlint_report as report;
