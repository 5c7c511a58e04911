//! What the file-reading targets share: the input written to a file of this process's own, so
//! that the readers' file path (`load`, which sees raw bytes) is fuzzed as well as their text path.

use std::path::PathBuf;

/// Writes `data` to this process's scratch file with the given extension and returns its path.
pub fn scratch_file(ext: &str, data: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "inferlint-fuzz-{}.{ext}",
        std::process::id()
    ));
    std::fs::write(&path, data).expect("write the scratch file");
    path
}

/// The text the file path reads the same way as the text path: valid UTF-8 without NUL bytes
/// (the file readers refuse NUL and invalid UTF-8 as binary; the text path never sees them).
pub fn plain_text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok().filter(|t| !t.contains('\0'))
}
