//! SGLang's log line shape (docs/design/engines.md#the-simulated-sglang, the recorded 0.5 logs):
//! `[%Y-%m-%d %H:%M:%S{tag}] message`, the tag being the process's ` DP{n} TP{n}`
//! ([`super::log_prefix`]), and uvicorn's lines as `[stamp] INFO:     …`, all on stdout.

use crate::logline::{Level, Logger, Shape};

/// SGLang's shape.
#[derive(Debug)]
pub struct SglangLines;

/// SGLang's `[2026-10-01 01:40:43 TP0] ` header.
fn header(tag: &str) -> String {
    let stamp = chrono::Local::now().format("%Y-%m-%d %H:%M:%S");
    format!("[{stamp}{tag}] ")
}

impl Shape for SglangLines {
    /// SGLang's formatter has no level or site; a multi-line message keeps one header.
    fn record(&self, log: &Logger, _level: Level, _site: &str, msg: &str) -> String {
        format!("{}{msg}\n", header(&log.tag))
    }

    /// SGLang patches uvicorn's formats to `[%(asctime)s] %(levelprefix)s %(message)s`.
    fn decorate(&self, log: &Logger, text: &str) -> String {
        format!("{}{text}\n", header(&log.tag))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Release;

    #[test]
    fn sglang_lines_carry_a_bracketed_stamp_and_prefix() {
        let l = Logger::new(Release::V028, "scheduler", &SglangLines).tagged(" TP1");
        let line = l.format(Level::Info, "", "Load weight begin. avail mem=22.37 GB");
        let (head, msg) = line.split_once("] ").unwrap();
        assert!(head.starts_with("[20") && head.ends_with(" TP1"), "{line}");
        assert_eq!(msg, "Load weight begin. avail mem=22.37 GB\n");
        let api = Logger::new(Release::V028, "APIServer", &SglangLines);
        let up = api.decorate("INFO:     Application startup complete.");
        assert!(up.starts_with('[') && up.contains("] INFO:     Application startup complete.\n"));
        assert!(!api.is_vllm());
    }
}
