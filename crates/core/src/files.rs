//! Writing a file whole or not at all: every file inferlint writes for a user (snapshots, the run
//! folder's JSON, the report) goes through [`write_atomic`], so an interrupted or failed write
//! never leaves half a file where a whole one was, and a crash after it returns keeps the file.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to a temporary file beside `path` (its folder made if missing), flushes it to
/// the disk, then renames it over `path`. On failure the temporary file is removed and `path`
/// is left as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        // The rename is durable only once the data it points at is.
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_replaces_the_whole_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub").join("x.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left behind");
    }

    #[test]
    fn a_failed_write_keeps_what_was_there() {
        let dir = tempfile::tempdir().unwrap();
        // A folder in the way: the rename fails, the folder and its content stay.
        let p = dir.path().join("taken");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("kept"), b"k").unwrap();
        assert!(write_atomic(&p, b"new").is_err());
        assert_eq!(std::fs::read(p.join("kept")).unwrap(), b"k");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
