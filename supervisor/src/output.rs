//! Output pipes that never block the server.
//!
//! One thread per pipe reads as fast as the kernel delivers: raw bytes go to the raw log file
//! first (nothing is lost even when nobody consumes lines) and are handed, without waiting, to
//! a second thread that splits them into lines — `\n`, `\r` (progress bars redraw with it) and
//! `\r\n` end a line — capped at a maximum length, and offers them to a bounded channel. A full
//! channel (or a line thread that falls behind) drops lines and counts them; nothing ever
//! stalls the reader, so the server never blocks on a full pipe. Reading continues through the whole teardown until end of file,
//! which is itself part of the verification (a pipe still open after the tree is gone means a
//! process outside it holds the pipe).

use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

/// Which pipe a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// One line of the server's output (without its terminator).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputLine {
    pub stream: Stream,
    pub text: String,
    /// The line was longer than the cap; `text` holds its beginning.
    pub truncated: bool,
}

/// Counters shared by the pumps and the handle.
#[derive(Debug, Default)]
pub struct PumpStats {
    /// Lines dropped because the consumer was behind.
    pub dropped: AtomicU64,
    /// Bytes read from both pipes.
    pub bytes: AtomicU64,
    /// Lines offered to the channel (delivered or dropped).
    pub lines: AtomicU64,
    eof: [AtomicBool; 2],
}

impl PumpStats {
    /// Whether both pipes have reached end of file.
    pub fn at_eof(&self) -> bool {
        self.eof.iter().all(|e| e.load(Ordering::Acquire))
    }

    /// Waits (polling) up to `timeout` for both pipes to reach end of file.
    pub fn wait_eof(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while !self.at_eof() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }
}

/// The consumer's end of the line channel: `recv().await` in async code, `blocking_recv()`
/// elsewhere. `None` once both pipes are at end of file and every line was taken.
#[derive(Debug)]
pub struct LineReceiver(mpsc::Receiver<OutputLine>);

impl LineReceiver {
    pub async fn recv(&mut self) -> Option<OutputLine> {
        self.0.recv().await
    }

    /// Blocking receive (must not be called from inside an async task).
    pub fn blocking_recv(&mut self) -> Option<OutputLine> {
        self.0.blocking_recv()
    }

    pub fn try_recv(&mut self) -> Option<OutputLine> {
        self.0.try_recv().ok()
    }

    /// The underlying tokio receiver (e.g. for `tokio_stream::wrappers::ReceiverStream`).
    pub fn into_inner(self) -> mpsc::Receiver<OutputLine> {
        self.0
    }
}

/// Splits a byte stream into capped lines.
#[derive(Debug)]
pub struct LineSplitter {
    cur: Vec<u8>,
    max: usize,
    overflow: bool,
    after_cr: bool,
}

impl LineSplitter {
    pub fn new(max_line_bytes: usize) -> Self {
        LineSplitter {
            cur: Vec::new(),
            max: max_line_bytes.max(1),
            overflow: false,
            after_cr: false,
        }
    }

    /// Feeds bytes; calls `emit(text, truncated)` for every complete line.
    pub fn feed(&mut self, bytes: &[u8], mut emit: impl FnMut(&[u8], bool)) {
        let mut start = 0;
        for i in memchr::memchr2_iter(b'\n', b'\r', bytes) {
            let b = bytes[i];
            if b == b'\n' && self.after_cr && i == start && self.cur.is_empty() {
                // The `\n` of a `\r\n`: the line already ended at the `\r`.
                self.after_cr = false;
                start = i + 1;
                continue;
            }
            let seg = &bytes[start..i];
            if self.cur.is_empty() && !self.overflow {
                // The whole line is in this chunk: no copy.
                if seg.len() > self.max {
                    emit(&seg[..self.max], true);
                } else {
                    emit(seg, false);
                }
            } else {
                self.push(seg);
                emit(&self.cur, self.overflow);
                self.cur.clear();
                self.overflow = false;
            }
            self.after_cr = b == b'\r';
            start = i + 1;
        }
        if start < bytes.len() {
            self.after_cr = false;
            self.push(&bytes[start..]);
        }
    }

    /// The unterminated rest, at end of file.
    pub fn finish(&mut self, mut emit: impl FnMut(&[u8], bool)) {
        if !self.cur.is_empty() || self.overflow {
            emit(&self.cur, self.overflow);
        }
        self.cur.clear();
        self.overflow = false;
    }

    fn push(&mut self, part: &[u8]) {
        let room = self.max.saturating_sub(self.cur.len());
        if part.len() > room {
            self.cur.extend_from_slice(&part[..room]);
            self.overflow = true;
        } else {
            self.cur.extend_from_slice(part);
        }
    }
}

/// The raw log shared by both pumps.
pub type RawSink = Arc<Mutex<File>>;

/// Chunks of output between the reader and the line splitter.
enum Chunk {
    Data(Vec<u8>),
    /// Chunks were dropped here: the line in progress is incomplete.
    Gap,
}

/// How many chunks (of up to 256 KiB) may wait for the line splitter.
const CHUNK_QUEUE: usize = 64;

/// Starts a pump on `fd`: a reader thread that only reads, appends to the raw log and hands
/// the bytes on (it never waits for anyone, so the pipe is always drained at the speed of a
/// memory copy), and a line thread that splits and offers lines. When the line thread falls
/// behind, whole chunks skip it; their lines are counted as dropped.
pub fn spawn_pump(
    fd: OwnedFd,
    stream: Stream,
    raw: Option<RawSink>,
    tx: mpsc::Sender<OutputLine>,
    stats: Arc<PumpStats>,
    max_line_bytes: usize,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let (chunk_tx, chunk_rx) = std::sync::mpsc::sync_channel::<Chunk>(CHUNK_QUEUE);
    let line_stats = stats.clone();
    let line_thread = std::thread::Builder::new()
        .name(format!("lines-{stream:?}").to_lowercase())
        .spawn(move || offer_lines(&chunk_rx, stream, &tx, &line_stats, max_line_bytes))?;
    std::thread::Builder::new()
        .name(format!("pump-{stream:?}").to_lowercase())
        .spawn(move || {
            read_chunks(&fd, raw.as_ref(), &chunk_tx, &stats);
            let i = if stream == Stream::Stdout { 0 } else { 1 };
            stats.eof[i].store(true, Ordering::Release);
            // The handle's join means "every line offered".
            drop(chunk_tx);
            let _ = line_thread.join();
        })
}

/// The line thread: splits the chunks into lines and offers each to `tx`, counting those the
/// consumer had no room for, and those of a line whose beginning was dropped.
fn offer_lines(
    chunk_rx: &std::sync::mpsc::Receiver<Chunk>,
    stream: Stream,
    tx: &mpsc::Sender<OutputLine>,
    stats: &PumpStats,
    max_line_bytes: usize,
) {
    let mut split = LineSplitter::new(max_line_bytes);
    let mut skipping = false;
    let mut offer = |text: &[u8], truncated: bool| {
        stats.lines.fetch_add(1, Ordering::Relaxed);
        if tx.capacity() == 0 {
            // Behind consumer: drop without building the line.
            stats.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let line = OutputLine {
            stream,
            text: String::from_utf8_lossy(text).into_owned(),
            truncated,
        };
        if let Err(mpsc::error::TrySendError::Full(_)) = tx.try_send(line) {
            stats.dropped.fetch_add(1, Ordering::Relaxed);
        }
    };
    for chunk in chunk_rx {
        match chunk {
            Chunk::Gap => {
                split = LineSplitter::new(max_line_bytes);
                skipping = true;
            }
            Chunk::Data(bytes) => {
                let mut from = 0;
                if skipping {
                    // The rest of a line whose beginning was dropped.
                    match memchr::memchr2(b'\n', b'\r', &bytes) {
                        Some(i) => {
                            from = i + 1;
                            skipping = false;
                            stats.dropped.fetch_add(1, Ordering::Relaxed);
                        }
                        None => continue,
                    }
                }
                split.feed(&bytes[from..], &mut offer);
            }
        }
    }
    if !skipping {
        split.finish(&mut offer);
    }
}

/// The reader thread until end of file: reads `fd`, appends to the raw log and hands each chunk
/// to the line thread, never waiting; a chunk it has no room for is dropped with its lines
/// counted, and a gap marks where.
fn read_chunks(
    fd: &OwnedFd,
    raw: Option<&RawSink>,
    chunk_tx: &std::sync::mpsc::SyncSender<Chunk>,
    stats: &PumpStats,
) {
    let mut buf = vec![0u8; 256 * 1024];
    let mut gap = false;
    loop {
        let n = match crate::sys::read_fd(fd, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        stats.bytes.fetch_add(n as u64, Ordering::Relaxed);
        if let Some(raw) = raw {
            if let Ok(mut f) = raw.lock() {
                let _ = f.write_all(&buf[..n]);
            }
        }
        if gap && chunk_tx.try_send(Chunk::Gap).is_ok() {
            gap = false;
        }
        if gap || chunk_tx.try_send(Chunk::Data(buf[..n].to_vec())).is_err() {
            let lines = memchr::memchr2_iter(b'\n', b'\r', &buf[..n]).count() as u64;
            stats.lines.fetch_add(lines, Ordering::Relaxed);
            stats.dropped.fetch_add(lines, Ordering::Relaxed);
            gap = true;
        }
    }
}

/// A bounded line channel.
pub fn channel(capacity: usize) -> (mpsc::Sender<OutputLine>, LineReceiver) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    (tx, LineReceiver(rx))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(chunks: &[&[u8]], max: usize) -> Vec<(String, bool)> {
        let mut s = LineSplitter::new(max);
        let mut out = Vec::new();
        for c in chunks {
            s.feed(c, |t, tr| {
                out.push((String::from_utf8_lossy(t).into_owned(), tr))
            });
        }
        s.finish(|t, tr| out.push((String::from_utf8_lossy(t).into_owned(), tr)));
        out
    }

    #[test]
    fn splits_on_newline_cr_and_crlf() {
        let got = lines(&[b"a\nb\r\nc\rd", b"\r", b"\ne\n\nf"], 100);
        let texts: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(texts, vec!["a", "b", "c", "d", "e", "", "f"]);
    }

    #[test]
    fn chunk_boundaries_do_not_matter() {
        let text: &[u8] = b"alpha\r\nbeta\rgamma\n\n\rdelta-is-long\r\nz";
        let whole = lines(&[text], 8);
        for cut in 0..=text.len() {
            for cut2 in cut..=text.len() {
                let got = lines(&[&text[..cut], &text[cut..cut2], &text[cut2..]], 8);
                assert_eq!(got, whole, "cut at {cut}, {cut2}");
            }
        }
        assert_eq!(whole[5], ("delta-is".to_string(), true));
        assert_eq!(whole.len(), 7);
    }

    #[test]
    fn progress_bars_become_lines() {
        let got = lines(&[b" 10%|#   |\r 50%|##  |\r100%|####|\n"], 100);
        assert_eq!(got.len(), 3);
        assert_eq!(got[2].0, "100%|####|");
    }

    #[test]
    fn caps_long_lines() {
        let got = lines(&[b"abcdefgh", b"ij\nxy\n"], 4);
        assert_eq!(
            got,
            vec![("abcd".to_string(), true), ("xy".to_string(), false)]
        );
    }

    #[test]
    fn a_full_channel_drops_and_counts() {
        let (r, w) = crate::sys::pipe().unwrap();
        let (tx, mut rx) = channel(2);
        let stats = Arc::new(PumpStats::default());
        let h = spawn_pump(r, Stream::Stdout, None, tx, stats.clone(), 64).unwrap();
        crate::sys::write_all_fd(&w, b"1\n2\n3\n4\n5\n").unwrap();
        drop(w);
        h.join().unwrap();
        assert_eq!(stats.lines.load(Ordering::Relaxed), 5);
        assert_eq!(stats.dropped.load(Ordering::Relaxed), 3);
        assert_eq!(rx.try_recv().unwrap().text, "1");
        assert_eq!(rx.try_recv().unwrap().text, "2");
        assert!(rx.try_recv().is_none());
    }
}
