//! The recorded nvidia-smi sessions (`tests/fixtures/nvidia-smi/`) as a stand-in nvidia-smi
//! prints them: one query's block of a section, from its header line to the next blank line.

/// The lines of `section` from the one starting with `header` up to the next blank line, each
/// ending in a newline (empty when the header is missing).
pub fn block(section: &str, header: &str) -> String {
    section
        .lines()
        .skip_while(|l| !l.starts_with(header))
        .take_while(|l| !l.trim().is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}
