//! TensorRT-LLM's log line shape: its Python logger's `[%m/%d/%Y-%H:%M:%S] [TRT-LLM] [I]
//! [module] message`, the site being the module (`_torch`, `llmapi`, `serve`); other output
//! bare, all on stdout.

use crate::logline::{Level, Logger, Shape};

/// TensorRT-LLM's shape.
#[derive(Debug)]
pub struct TrtllmLines;

impl Shape for TrtllmLines {
    fn record(&self, _log: &Logger, level: Level, site: &str, msg: &str) -> String {
        let stamp = chrono::Local::now().format("%m/%d/%Y-%H:%M:%S");
        let letter = &level.name()[..1];
        let module = if site.is_empty() {
            String::new()
        } else {
            format!("[{site}] ")
        };
        format!("[{stamp}] [TRT-LLM] [{letter}] {module}{msg}\n")
    }

    fn decorate(&self, _log: &Logger, text: &str) -> String {
        format!("{text}\n")
    }
}
