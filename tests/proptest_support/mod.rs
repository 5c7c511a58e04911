//! The proptest configuration every property suite shares.

use proptest::prelude::ProptestConfig;
use proptest::test_runner::FileFailurePersistence;

/// `default` cases, unless PROPTEST_CASES says otherwise; shrunk failures kept in `regressions`
/// (a path from the package root) and tried first on later runs.
pub fn config(default: u32, regressions: &'static str) -> ProptestConfig {
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = default;
    }
    // A long run (PROPTEST_CASES=100000) may discard up to as many inputs as it runs.
    c.max_global_rejects = c.max_global_rejects.max(c.cases);
    c.failure_persistence = Some(Box::new(FileFailurePersistence::Direct(regressions)));
    c
}
