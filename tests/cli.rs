//! The commands as a user types them: errors, checks, snapshot and watch, install, lint-script, teardown, the docs, hostile servers, TLS, the probe.
//!
//! One test binary of the root package's tests (docs/design/testing.md#test-binaries): each
//! module below was a test binary of its own; they share one build and link.

mod loopback;
mod run_support;
mod serial;

mod bootlog_cli;
mod cli_checks;
mod cli_errors;
mod cli_snapshot_watch;
mod docs_links;
mod docs_reference;
mod hostile_servers;
mod http_tls;
mod install_cli;
mod lint_script;
mod probe;
mod teardown_cli;
