//! Steps 5 and 10 of the run: the boot log's engine, facts, version and checks, read once the
//! server is up and again after the load, when it covers the whole run.

use std::path::PathBuf;

use super::Run;
use crate::folder;
use inferlint_core::checks;
use inferlint_core::result::Tripwire;

impl Run {
    /// The boot log's path: the run's own, or the one given in attach mode.
    pub(super) fn boot_log_path(&self) -> Option<PathBuf> {
        if self.serve_argv.is_some() {
            let p = self.out.join(folder::boot_log_name(self.boot.number));
            p.exists().then_some(p)
        } else {
            self.inputs.boot_log.clone()
        }
    }

    pub(super) fn read_boot_log(&self) -> Option<Result<String, String>> {
        let path = self.boot_log_path()?;
        Some(
            std::fs::read(&path)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .map_err(|e| format!("cannot read the boot log {}: {e}", path.display())),
        )
    }

    /// Step 5: the boot log's engine, facts, version and checks (T12 or T7, T5, T6).
    pub(super) async fn boot_log_step(&mut self) {
        let Some(text) = self.read_boot_log() else {
            return;
        };
        self.line("== boot log");
        let text = match text {
            Ok(t) => t,
            Err(e) => {
                self.set_problem(e);
                return;
            }
        };
        let hint = self.engine.or(self.named());
        let mut facts = inferlint_core::bootlog::parse_text(&text, hint);
        if let (Some(n), Some(actual)) = (self.named(), facts.engine) {
            if n != actual {
                self.set_problem(format!(
                    "the engine named is {}, but the boot log is {}'s",
                    n.name(),
                    actual.name()
                ));
                return;
            }
        }
        if facts.vllm_version.is_none() && self.boot.server_version.is_none() {
            let alive = self
                .server
                .started
                .as_ref()
                .is_none_or(|s| s.proc.exited().is_none());
            if alive {
                self.boot.server_version =
                    inferlint_http::server_version(&self.url, self.api_key.as_deref()).await;
            }
        }
        facts = self.boot.with_server_version(facts);
        if let Some(note) = inferlint_core::bootlog::untested_version_note(&facts) {
            let note = note.strip_prefix("note: ").unwrap_or(&note).to_string();
            self.line(&format!("note: {note}"));
        }
        if let Some(note) = inferlint_core::bootlog::allreduce_note(&facts) {
            self.line(&note);
        }
        self.record.engine_version = facts.version.clone();
        let label = folder::boot_log_name(self.boot.number);
        let checks = checks::boot_all(Some(text.as_str()), &[(label, facts.clone())]);
        for r in checks {
            if r.tripwire == Tripwire::T7 {
                self.verdict.extra.push(r.clone());
            }
            self.record_result(r);
        }
        self.boot.facts = Some(facts);
        self.boot.text = Some(text);
    }

    /// Step 10: the boot log read again after the load, keeping the server's version.
    pub(super) fn reparse_boot_log(&mut self) {
        let Some(Ok(text)) = self.read_boot_log() else {
            return;
        };
        let facts = inferlint_core::bootlog::parse_text(&text, Some(self.engine()));
        let facts = self.boot.with_server_version(facts);
        self.boot.facts = Some(facts);
        self.boot.text = Some(text);
    }
}
