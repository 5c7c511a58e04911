//! SGLang's recorded start-up failures (tests/fixtures/sglang-0.5/boot_fail_*.log): the
//! scheduler's `Scheduler hit an exception:` traceback when its memory pool cannot be sized —
//! `--fail-boot value_error` the loaded weights leaving no memory for the KV cache under
//! `--mem-fraction-static`, `--fail-boot runtime_error` a hybrid model's mamba state cache that
//! does not fit — then the launcher's `Received sigquit from a child process` and its
//! `kill_process_tree`, which ends the launcher with SIGKILL (exit 137 to a shell). The
//! tracebacks are the recordings', word for word.

use crate::logline::Logger;
use crate::settings::FailKind;

const MEM_ADVICE: &str = include_str!("fail_mem_advice.txt");
const MAMBA_STATE: &str = include_str!("fail_mamba_state.txt");

/// Whether `--fail-boot KIND` is one the simulated SGLang has a recording of.
pub fn supported(kind: Option<FailKind>) -> Result<(), String> {
    match kind {
        None | Some(FailKind::ValueError | FailKind::RuntimeError) => Ok(()),
        Some(k) => Err(format!(
            "--fail-boot {}: the simulated SGLang fails with value_error (no memory left for \
             the KV cache) or runtime_error (a mamba state cache that does not fit), its \
             recorded failures",
            k.key()
        )),
    }
}

/// The scheduler's traceback for `kind` (a pool too small to hold one request is the first
/// recording's case, as SGLang sizes its pool from the memory left).
pub fn print_scheduler_failure(log: &Logger, kind: FailKind) {
    let text = match kind {
        FailKind::RuntimeError => MAMBA_STATE,
        _ => MEM_ADVICE,
    };
    // One record: SGLang's formatter writes one header for a multi-line message.
    log.error("", text.trim_end());
    log.raw("");
}

/// The launcher's last lines when its scheduler failed: it then kills its own tree, itself
/// included, with SIGKILL (`kill_process_tree(..., include_parent=True)`).
pub fn print_launcher_failure(log: &Logger) {
    let pid = std::process::id();
    log.info(
        "",
        "Received sigquit from a child process. It usually means the child failed.",
    );
    log.info(
        "",
        &format!("kill_process_tree called: parent_pid={pid}, include_parent=True, pid={pid}"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_recorded_failures_are_offered() {
        assert!(supported(None).is_ok());
        assert!(supported(Some(FailKind::ValueError)).is_ok());
        assert!(supported(Some(FailKind::RuntimeError)).is_ok());
        let e = supported(Some(FailKind::JitToolchain)).unwrap_err();
        assert!(e.contains("jit_toolchain"), "{e}");
        assert!(MEM_ADVICE
            .trim_end()
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("ValueError: Loaded weights leave no GPU memory")));
        assert!(MAMBA_STATE
            .trim_end()
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("RuntimeError: Not enough GPU memory for hybrid")));
    }
}
