//! vLLM's log line shape (docs/design/engines.md#log-lines): `(Process pid=N) LEVEL mm-dd
//! HH:MM:SS [file.py:line] message`, continuation lines of a multi-line message repeating the
//! header, other output prefixed before 0.33, uvicorn's server lines on stderr.

use crate::logline::{Level, Logger, Shape};
use crate::settings::Release;

/// vLLM's shape.
#[derive(Debug)]
pub struct VllmLines;

fn prefix(log: &Logger) -> String {
    format!("({} pid={}) ", log.process, log.pid)
}

impl Shape for VllmLines {
    fn record(&self, log: &Logger, level: Level, site: &str, msg: &str) -> String {
        let stamp = chrono::Local::now().format("%m-%d %H:%M:%S");
        let header = format!("{}{} {} [{}] ", prefix(log), level.name(), stamp, site);
        // vLLM's NewLineFormatter repeats the header on every line; 0.33 keeps the `\r` its
        // `\r\n` separator leaves at the end of each continued line.
        let sep = match log.release {
            Release::V033 => "\r\n",
            _ => "\n",
        };
        let mut out = String::new();
        for (i, line) in msg.split('\n').enumerate() {
            if i > 0 {
                out.push_str(sep);
            }
            out.push_str(&header);
            out.push_str(line);
        }
        out.push('\n');
        out
    }

    /// 0.28 and 0.30 prefix every line a process writes; 0.33 leaves third-party output bare.
    fn decorate(&self, log: &Logger, text: &str) -> String {
        match log.release {
            Release::V033 => format!("{text}\n"),
            _ => format!("{}{text}\n", prefix(log)),
        }
    }

    /// Always prefixed: Python's own traceback print in a vLLM process.
    fn raw(&self, log: &Logger, text: &str) -> String {
        format!("{}{text}\n", prefix(log))
    }

    fn uvicorn_on_stderr(&self) -> bool {
        true
    }

    fn is_vllm(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logline::logo;

    #[test]
    fn a_multi_line_message_repeats_the_header() {
        let l = Logger {
            release: Release::V028,
            process: "APIServer".into(),
            pid: 821,
            tag: String::new(),
            shape: &VllmLines,
        };
        let text = l.format(Level::Info, "api_utils.py:333", &logo("0.28.0", "m"));
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(lines.len(), 7, "six lines and the final newline: {text:?}");
        assert!(lines[0].starts_with("(APIServer pid=821) INFO "));
        assert!(lines[0].ends_with(" [api_utils.py:333] "));
        assert!(lines[2].ends_with("█ ▀▄▀ █  version 0.28.0"));
        let l33 = Logger {
            release: Release::V033,
            ..l
        };
        assert_eq!(
            l33.format(Level::Info, "startup.py:38", "a\nb")
                .matches("\r\n")
                .count(),
            1
        );
    }

    #[test]
    fn third_party_output_is_prefixed_before_033_only() {
        let l = Logger {
            release: Release::V030,
            process: "APIServer".into(),
            pid: 5,
            tag: String::new(),
            shape: &VllmLines,
        };
        assert_eq!(
            l.decorate("INFO:     Shutting down"),
            "(APIServer pid=5) INFO:     Shutting down\n"
        );
        let l = Logger {
            release: Release::V033,
            ..l
        };
        assert_eq!(
            l.decorate("INFO:     Shutting down"),
            "INFO:     Shutting down\n"
        );
        assert!(Logger::new(Release::V028, "x", &VllmLines).is_vllm());
    }
}
