//! TensorRT-LLM's recorded start-up failures, printed by the launcher before any rank starts
//! (tests/fixtures/trtllm-1.3/boot_fail_*.log): `--fail-boot assertion` is the import that finds
//! no CUDA_HOME (an AssertionError, then the ImportError with the rebuild advice), and
//! `--fail-boot unclassified_exception` the compressed-tensors W4A16 checkpoint whose
//! quantization config has no input activations (a TypeError). The tracebacks are the
//! recordings', word for word.

use crate::logline::Logger;
use crate::settings::{FailKind, ServeConfig};

const NO_CUDA_HOME: &str = include_str!("fail_no_cuda_home.txt");
const COMPRESSED_TENSORS: &str = include_str!("fail_compressed_tensors.txt");
/// The two `[llmapi]` lines before the traceback, `{model}` for the model's path.
const COMPRESSED_TENSORS_LLMAPI: &str = include_str!("fail_compressed_tensors_llmapi.txt");

/// The third-party warnings every recorded TensorRT-LLM process prints at import.
pub const IMPORT_WARNINGS: &[&str] = &[
    "Skipping import of cpp extensions due to incompatible torch version 2.14.0+cu130 for torchao version 0.15.0             Please see https://github.com/pytorch/ao/issues/2919 for more info",
    "/opt/venv/lib/python3.12/site-packages/flashinfer/cutile/cutile_common.py:64: UserWarning: Installed NVIDIA pip packages have mismatched versions (nvidia-cuda-tileiras 13.1.80, nvidia-cuda-nvcc 13.0.88, nvidia-nvvm 13.0.88). Falling back to system tileiras.",
    "  binary = _find_compiler_bin()",
];

/// Whether `--fail-boot KIND` is one the simulated TensorRT-LLM has a recording of.
pub fn supported(kind: Option<FailKind>) -> Result<(), String> {
    match kind {
        None | Some(FailKind::Assertion | FailKind::UnclassifiedException) => Ok(()),
        Some(k) => Err(format!(
            "--fail-boot {}: the simulated TensorRT-LLM fails with assertion (no CUDA_HOME) or \
             unclassified_exception (a compressed-tensors checkpoint), its recorded failures",
            k.key()
        )),
    }
}

fn print_block(log: &Logger, text: &str) {
    for line in text.lines() {
        log.raw(line);
    }
}

/// The import failure: the warnings, then the traceback (no version line: the import failed).
pub fn print_no_cuda_home(log: &Logger) {
    for w in IMPORT_WARNINGS {
        log.raw(w);
    }
    print_block(log, NO_CUDA_HOME);
}

/// The checkpoint failure, after the `[llmapi]` lines that read the model's quantization config.
pub fn print_compressed_tensors(log: &Logger, cfg: &ServeConfig) {
    for msg in COMPRESSED_TENSORS_LLMAPI.lines() {
        log.info("llmapi", &msg.replace("{model}", &cfg.model));
    }
    print_block(log, COMPRESSED_TENSORS);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_recorded_failures_are_offered() {
        assert!(supported(None).is_ok());
        assert!(supported(Some(FailKind::Assertion)).is_ok());
        assert!(supported(Some(FailKind::UnclassifiedException)).is_ok());
        let e = supported(Some(FailKind::OutOfMemory)).unwrap_err();
        assert!(e.contains("out_of_memory"), "{e}");
        assert!(NO_CUDA_HOME
            .trim_end()
            .ends_with("Please rebuild and install TensorRT-LLM."));
        assert!(COMPRESSED_TENSORS
            .trim_end()
            .ends_with("TypeError: 'NoneType' object is not subscriptable"));
    }
}
