//! A recording file mapped into memory for the series reader, which reads it where it lies.
//!
//! Copying a day's recording (71 MB) into read buffers was a fifth of what `inferlint series`
//! spent (docs/benchmarks.md, "a recording read where it lies"); reading the page cache's pages
//! in place lets the processor fetch them while it parses. The pages read are let go of as the
//! reader passes them (`Held::read_before`), so the mapping never holds more than a few MiB of
//! the process's memory.
//!
//! A mapping has one hazard a read does not: when another process cuts the file short while it is
//! mapped, touching a page past its new end raises SIGBUS, which would end the process without a
//! word. While a mapping is read, a handler turns a SIGBUS at an address inside it into what any
//! unreadable input gives: a line naming the file, and exit status 2
//! (docs/design/formats.md#series). A SIGBUS anywhere else keeps its default action. The library
//! itself never maps a file: the handler is the process's to install, and the Python module reads
//! with plain reads.

// Each unsafe operation in its own block, each block saying why it is sound.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

use std::ffi::c_void;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use inferlint_core::series::{Held, ReadError, Series};

/// Files smaller than this are read with plain reads: below it a mapping saves less than it
/// costs to set up (the series reader's own threshold for a second thread).
const MAP_FROM: u64 = 4 << 20;

/// Reads the recording at `path`, mapped when it is a regular file large enough to gain from
/// it, else (or when it cannot be mapped) with plain reads.
pub(crate) fn read_recording(path: &Path) -> Result<Series, ReadError> {
    let Some(mapped) = Mapped::open(path) else {
        return Series::load(path);
    };
    let shown = path.display().to_string();
    let guard = CutShortGuard::install(&mapped.map, &shown);
    let series = Series::read_held(&mapped, &shown);
    drop(guard);
    series
}

/// A file's bytes, mapped read-only and shared with the page cache.
struct Mapped {
    map: memmap2::Mmap,
    /// The offset before which the pages were let go of.
    let_go: AtomicUsize,
}

impl Mapped {
    fn open(path: &Path) -> Option<Mapped> {
        let file = File::open(path).ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() < MAP_FROM {
            return None;
        }
        // SAFETY: the mapping is only ever read. Bytes another process writes while it is read
        // are read as whatever they are then, as a read would; a file cut short raises SIGBUS
        // on the pages past its new end, which `CutShortGuard` turns into an error naming it.
        let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
        Some(Mapped {
            map,
            let_go: AtomicUsize::new(0),
        })
    }
}

/// Pages are let go of in whole 64 KiB runs, a multiple of any page size Linux uses.
const LET_GO_ALIGN: usize = 64 << 10;

impl Held for Mapped {
    fn bytes(&self) -> &[u8] {
        &self.map
    }

    fn read_before(&self, offset: usize) {
        let end = offset.min(self.map.len()) / LET_GO_ALIGN * LET_GO_ALIGN;
        let start = self.let_go.fetch_max(end, Ordering::Relaxed);
        if end <= start {
            return;
        }
        // SAFETY: MADV_DONTNEED on a shared, read-only file mapping drops this process's
        // page-table entries for the range and nothing else: the bytes stay in the page cache
        // and in the file, and a later read of them maps them again, so nothing is lost even if
        // the reader touched them after all.
        let _ = unsafe {
            self.map
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
        };
    }
}

/// The mapping being read (its first address and its length) and the line that names its file,
/// for the SIGBUS handler, which may read nothing else. A length of 0: no mapping is read.
static READING_AT: AtomicUsize = AtomicUsize::new(0);
static READING_LEN: AtomicUsize = AtomicUsize::new(0);
static MESSAGE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static MESSAGE_LEN: AtomicUsize = AtomicUsize::new(0);

/// The SIGBUS handler installed while a mapping is read; the handler before it comes back when
/// this is dropped.
struct CutShortGuard {
    before: Option<libc::sigaction>,
}

impl CutShortGuard {
    fn install(map: &[u8], shown: &str) -> CutShortGuard {
        // Leaked: the handler may read it until the process ends. Once per recording read.
        let line = format!(
            "inferlint: {shown}: the file was cut short while it was read (another process truncated or rewrote it); read it again once nothing writes it\n"
        );
        let line: &'static mut [u8] = Box::leak(line.into_bytes().into_boxed_slice());
        MESSAGE_LEN.store(line.len(), Ordering::SeqCst);
        MESSAGE.store(line.as_mut_ptr(), Ordering::SeqCst);
        READING_AT.store(map.as_ptr() as usize, Ordering::SeqCst);
        READING_LEN.store(map.len(), Ordering::SeqCst);
        CutShortGuard {
            before: set_sigbus_action(
                on_sigbus as *const () as libc::sighandler_t,
                libc::SA_SIGINFO,
            ),
        }
    }
}

impl Drop for CutShortGuard {
    fn drop(&mut self) {
        READING_LEN.store(0, Ordering::SeqCst);
        if let Some(before) = self.before.take() {
            // SAFETY: `before` is the action sigaction(2) returned, restored as it was.
            unsafe { libc::sigaction(libc::SIGBUS, &before, std::ptr::null_mut()) };
        }
    }
}

/// Sets SIGBUS's action to `handler` with `flags`; the action before, or None when it could not
/// be set (the read then goes on without the guard, as it would have without the mapping).
fn set_sigbus_action(handler: libc::sighandler_t, flags: libc::c_int) -> Option<libc::sigaction> {
    // SAFETY: sigaction is plain data; zeroed is a valid value (an empty mask, no flags).
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = handler;
    action.sa_flags = flags;
    // SAFETY: as above.
    let mut before: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: both point to live sigaction values; the handler only calls async-signal-safe
    // functions and reads atomics.
    let set = unsafe { libc::sigaction(libc::SIGBUS, &action, &mut before) };
    (set == 0).then_some(before)
}

/// SIGBUS while a mapping is read: at an address inside it, the file was cut short under it, said
/// on stderr before exit status 2; anywhere else, SIGBUS's default action.
extern "C" fn on_sigbus(_signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo_t to a handler installed with SA_SIGINFO.
    let (code, address) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    let (at, len) = (
        READING_AT.load(Ordering::SeqCst),
        READING_LEN.load(Ordering::SeqCst),
    );
    // A fault's code is positive; a signal another process (or `raise`) sent has no address.
    if code > 0 && address.wrapping_sub(at) < len {
        let line = MESSAGE.load(Ordering::SeqCst);
        let line_len = MESSAGE_LEN.load(Ordering::SeqCst);
        // SAFETY: write(2) and _exit(2) are async-signal-safe; the line is leaked, so it lives
        // until the process ends.
        unsafe {
            libc::write(libc::STDERR_FILENO, line as *const c_void, line_len);
            libc::_exit(2);
        }
    }
    // SAFETY: signal(2) and raise(3) are async-signal-safe. The signal is blocked while this
    // handler runs, so it is delivered, with its default action, once the handler returns.
    unsafe {
        libc::signal(libc::SIGBUS, libc::SIG_DFL);
        libc::raise(libc::SIGBUS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::process::ExitStatusExt;
    use std::path::PathBuf;
    use std::process::Command;

    /// Set in the child process the tests below start, to the case it runs.
    const CHILD: &str = "INFERLINT_MAPPED_TEST_CHILD";

    /// A recording big enough to be mapped: its header and `rows` rows.
    fn recording(path: &Path, rows: usize) {
        let mut f = std::io::BufWriter::new(File::create(path).unwrap());
        writeln!(f, r#"{{"schema": "inferlint.series/1", "url": "http://127.0.0.1:8000", "interval_s": 0.25, "engine": "vllm"}}"#).unwrap();
        for i in 0..rows {
            writeln!(f, r#"{{"t_wall": {i}.25, "t_mono_ns": {}, "running": 3.0, "waiting": 1.0, "kv_usage": 0.5, "preemptions": 0.0, "generation_tokens": 10.0, "prompt_tokens": 20.0}}"#, i * 1000).unwrap();
        }
    }

    /// Runs the test `name` again in a child process with `CHILD` set to `case`.
    fn child(name: &str, case: &str, dir: &Path) -> std::process::Output {
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture"])
            .env(CHILD, case)
            .env("INFERLINT_MAPPED_TEST_DIR", dir)
            .output()
            .unwrap()
    }

    #[test]
    fn a_mapped_recording_reads_as_a_read_one_and_lets_its_pages_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("day.series.jsonl");
        // 19 MB: past the reader's first letting go, at 8 MiB.
        recording(&path, 100_000);
        let mapped = Mapped::open(&path).expect("a large regular file is mapped");
        let held = Series::read_held(&mapped, "day").unwrap();
        let read = Series::load(&path).unwrap();
        let first_apart = held
            .samples
            .iter()
            .zip(&read.samples)
            .position(|(a, b)| a != b);
        assert_eq!(
            (held.samples.len(), read.samples.len(), first_apart),
            (100_000, 100_000, None)
        );
        assert_eq!(held.samples[0].t_wall, 0.25);
        let let_go = mapped.let_go.load(Ordering::Relaxed);
        assert!(let_go >= 8 << 20, "pages let go of before {let_go}");
        assert!(let_go < mapped.map.len());
        // A small file is read with plain reads.
        let small = dir.path().join("small.series.jsonl");
        recording(&small, 10);
        assert!(Mapped::open(&small).is_none());
        assert_eq!(read_recording(&small).unwrap().samples.len(), 10);
    }

    #[test]
    fn a_recording_cut_short_while_mapped_is_an_error_naming_it() {
        if std::env::var(CHILD).as_deref() == Ok("cut") {
            let dir = PathBuf::from(std::env::var("INFERLINT_MAPPED_TEST_DIR").unwrap());
            let path = dir.join("day.series.jsonl");
            let mapped = Mapped::open(&path).unwrap();
            let _guard = CutShortGuard::install(&mapped.map, &path.display().to_string());
            File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_len(0)
                .unwrap();
            // The page cache no longer holds the file's pages: this read faults.
            let last = mapped.bytes()[mapped.map.len() - 1];
            println!("read {last} past the end");
            std::process::exit(0);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("day.series.jsonl");
        recording(&path, 40_000);
        let out = child(
            "cli::mapped::tests::a_recording_cut_short_while_mapped_is_an_error_naming_it",
            "cut",
            dir.path(),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
        assert!(
            stderr.contains(&format!(
                "inferlint: {}: the file was cut short while it was read",
                path.display()
            )),
            "stderr: {stderr}"
        );
    }

    #[test]
    fn a_sigbus_elsewhere_keeps_its_default_action() {
        if std::env::var(CHILD).as_deref() == Ok("elsewhere") {
            let dir = PathBuf::from(std::env::var("INFERLINT_MAPPED_TEST_DIR").unwrap());
            let mapped = Mapped::open(&dir.join("day.series.jsonl")).unwrap();
            let _guard = CutShortGuard::install(&mapped.map, "day");
            // SAFETY: raise(3) sends this process a signal; the test expects it to end it.
            unsafe { libc::raise(libc::SIGBUS) };
            std::process::exit(0);
        }
        let dir = tempfile::tempdir().unwrap();
        recording(&dir.path().join("day.series.jsonl"), 40_000);
        let out = child(
            "cli::mapped::tests::a_sigbus_elsewhere_keeps_its_default_action",
            "elsewhere",
            dir.path(),
        );
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGBUS),
            "{:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
