//! Reading a recording file in chunks split at line ends, on two threads when it is large.
//!
//! A day's recording is 71 MB, more than its samples' memory budget allows to hold at once
//! (docs/benchmarks.md, `series_check`: ≤ 64 MiB peak), so the file is read a chunk at a time
//! into a reused buffer. Chunk `k` owns the lines that start in its bytes: it skips the end of
//! a line that began before it and reads on past its end to finish its own last line, so every
//! chunk can be read by itself, in any order. On a large file two threads take the next chunk in
//! turn; the calling thread appends what the second read into small vectors in the file's order
//! (and reads a chunk straight into the samples when it is next), so only a few chunks' worth of
//! samples ever exist twice.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use super::{finish, Tally};
use crate::series::{Series, SeriesSample};
use crate::snapshot::ReadError;

/// The bytes a chunk owns the line starts of. Small enough that the buffers and the second
/// thread's vectors stay under a MiB together (the day's recording has ~1 MiB of room under its
/// 64 MiB), large enough that handing chunks over costs nothing measurable.
const CHUNK: usize = 1 << 17;

/// Files smaller than this are read on the calling thread alone: a second thread would cost
/// more to start than it saves.
const TWO_THREADS_FROM: u64 = 4 << 20;

/// Reads the recording at `path`.
pub(in crate::series) fn load(path: &Path) -> Result<Series, ReadError> {
    let shown = path.display().to_string();
    let io = |source| ReadError::Io {
        path: shown.clone(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let size = meta.len();
    let mut tally = Tally {
        size_hint: Some(size),
        ..Tally::default()
    };
    let mut samples = Vec::new();
    // A pipe, a FIFO or a file of the kernel's has no size to split (and no offsets to read
    // at): it is read as it comes.
    let read = if !meta.is_file() || size == 0 {
        read_stream(&file, &mut tally, &mut samples)
    } else if size < TWO_THREADS_FROM {
        read_alone(&file, size, &mut tally, &mut samples)
    } else {
        read_two(&file, size, &mut tally, &mut samples)
    };
    if let Err(e) = read {
        // A header error on a line read before the failure is what a reader stopping at the
        // first error would have said.
        tally.header(&shown)?;
        return Err(io(e));
    }
    finish(shown, tally, samples)
}

/// The number of chunks a file of `size` bytes has.
fn chunk_count(size: u64) -> usize {
    usize::try_from(size.div_ceil(CHUNK as u64)).unwrap_or(usize::MAX)
}

/// Reads every chunk in turn on this thread.
fn read_alone(
    file: &File,
    size: u64,
    tally: &mut Tally,
    samples: &mut Vec<SeriesSample>,
) -> std::io::Result<()> {
    let mut buf = Window::default();
    for k in 0..chunk_count(size) {
        let mut part = Tally {
            size_hint: tally.size_hint.take(),
            ..Tally::default()
        };
        read_chunk(file, k, &mut buf, &mut part, samples)?;
        tally.merge(part);
    }
    Ok(())
}

/// Reads the file to its end with plain reads on this thread, the lines in order.
fn read_stream(
    mut file: &File,
    tally: &mut Tally,
    samples: &mut Vec<SeriesSample>,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; CHUNK];
    // The start of a line that continues in the next read.
    let mut carry = Vec::new();
    // The offset of the next line.
    let mut at = 0;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', &buf[..n]) {
            let line = if carry.is_empty() {
                &buf[start..=end]
            } else {
                carry.extend_from_slice(&buf[start..=end]);
                &carry[..]
            };
            tally.line(line, at, samples);
            at += line.len();
            carry.clear();
            start = end + 1;
        }
        carry.extend_from_slice(&buf[start..n]);
    }
    if !carry.is_empty() {
        tally.line(&carry, at, samples);
    }
    Ok(())
}

/// A chunk read out of turn: its number, and its tally and samples or the error that stopped it.
type Handed = (usize, std::io::Result<(Tally, Vec<SeriesSample>)>);

/// Vectors the second thread reads its chunks into; it waits for one to come back when all are
/// out, so it runs at most this many chunks ahead of the merge.
const SECOND_THREAD_VECTORS: usize = 2;

/// Chunks this thread may read out of turn (while the second thread still reads an earlier one)
/// before it waits for that one.
const OUT_OF_TURN: usize = 2;

/// Reads the chunks on this thread and a second one, each taking the next chunk when it is free
/// (so a thread that the machine slows down takes fewer), merging them in the file's order. A
/// chunk this thread takes when all before it are merged is read straight into `samples`.
fn read_two(
    file: &File,
    size: u64,
    tally: &mut Tally,
    samples: &mut Vec<SeriesSample>,
) -> std::io::Result<()> {
    let chunks = chunk_count(size);
    let next = AtomicUsize::new(0);
    let next = &next;
    std::thread::scope(|scope| {
        let (hand, handed) = mpsc::channel::<Handed>();
        let (give_back, given_back) = mpsc::channel::<Vec<SeriesSample>>();
        for _ in 0..SECOND_THREAD_VECTORS {
            let _ = give_back.send(Vec::new());
        }
        // When no thread can be started, this one takes every chunk, each in turn.
        let second = std::thread::Builder::new().name("series-read".into());
        let _ = second.spawn_scoped(scope, move || {
            let mut buf = Window::default();
            // Each vector comes back once merged; none comes when the calling thread stopped.
            while let Ok(mut out) = given_back.recv() {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= chunks {
                    break;
                }
                out.clear();
                let mut part = Tally::default();
                let read = read_chunk(file, k, &mut buf, &mut part, &mut out);
                if hand.send((k, read.map(|()| (part, out)))).is_err() {
                    break;
                }
            }
        });
        let mut order = InOrder {
            tally,
            samples,
            merged: 0,
            waiting: BTreeMap::new(),
            spare: Vec::new(),
            give_back,
        };
        let mut buf = Window::default();
        loop {
            for h in handed.try_iter() {
                order.wait(h)?;
            }
            if order.own_waiting() >= OUT_OF_TURN {
                order.wait(handed.recv().map_err(|_| stopped())?)?;
                continue;
            }
            let k = next.fetch_add(1, Ordering::Relaxed);
            if k >= chunks {
                break;
            }
            order.read(file, k, &mut buf)?;
        }
        while order.merged < chunks {
            order.wait(handed.recv().map_err(|_| stopped())?)?;
        }
        Ok(())
    })
}

fn stopped() -> std::io::Error {
    std::io::Error::other("the second thread reading the file stopped")
}

/// The calling thread's side of a read on two threads: the recording so far, and the chunks
/// read out of turn until those before them are merged.
struct InOrder<'a> {
    tally: &'a mut Tally,
    samples: &'a mut Vec<SeriesSample>,
    /// The first chunk not merged yet.
    merged: usize,
    /// Chunks read and not merged yet, by number; true for this thread's own.
    waiting: BTreeMap<usize, (Tally, Vec<SeriesSample>, bool)>,
    /// Emptied vectors for this thread's chunks read out of turn.
    spare: Vec<Vec<SeriesSample>>,
    /// Where the second thread's vectors go back to once merged.
    give_back: mpsc::Sender<Vec<SeriesSample>>,
}

impl InOrder<'_> {
    /// Reads chunk `k` on this thread: into the recording when it is the next to merge, else
    /// into a spare vector until the chunks before it are.
    fn read(&mut self, file: &File, k: usize, buf: &mut Window) -> std::io::Result<()> {
        if k == self.merged {
            let mut part = Tally {
                size_hint: self.tally.size_hint.take(),
                ..Tally::default()
            };
            read_chunk(file, k, buf, &mut part, self.samples)?;
            self.tally.merge(part);
            self.merged += 1;
            self.merge_ready();
        } else {
            let mut part = Tally::default();
            let mut out = self.spare.pop().unwrap_or_default();
            read_chunk(file, k, buf, &mut part, &mut out)?;
            self.waiting.insert(k, (part, out, true));
        }
        Ok(())
    }

    /// Takes a chunk the second thread read, and merges what is then in order.
    fn wait(&mut self, (k, read): Handed) -> std::io::Result<()> {
        let (part, out) = read?;
        self.waiting.insert(k, (part, out, false));
        self.merge_ready();
        Ok(())
    }

    fn merge_ready(&mut self) {
        while let Some((part, mut out, own)) = self.waiting.remove(&self.merged) {
            self.tally.merge(part);
            self.samples.append(&mut out);
            self.merged += 1;
            if own {
                self.spare.push(out);
            } else {
                // The second thread may have finished; then the vector is simply dropped.
                let _ = self.give_back.send(out);
            }
        }
    }

    fn own_waiting(&self) -> usize {
        self.waiting.values().filter(|w| w.2).count()
    }
}

/// A reused read buffer: `bytes[..filled]` holds what was read. Its length only grows, so the
/// zeroing that makes room is paid once, not for every chunk.
#[derive(Default)]
struct Window {
    bytes: Vec<u8>,
    filled: usize,
}

impl Window {
    fn text(&self) -> &[u8] {
        &self.bytes[..self.filled]
    }

    /// Appends up to `want` bytes of the file, from offset `from + filled`; the number appended,
    /// fewer only at the end of the file.
    fn read_more(&mut self, file: &File, from: usize, want: usize) -> std::io::Result<usize> {
        let old = self.filled;
        if self.bytes.len() < old + want {
            self.bytes.resize(old + want, 0);
        }
        let mut got = 0;
        while got < want {
            let at = old + got;
            match file.read_at(&mut self.bytes[at..old + want], (from + at) as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.filled = old + got;
        Ok(got)
    }
}

/// Reads the lines that start in chunk `k` of the file into `tally` and `samples`, through the
/// reused buffer `buf`.
fn read_chunk(
    file: &File,
    k: usize,
    buf: &mut Window,
    tally: &mut Tally,
    samples: &mut Vec<SeriesSample>,
) -> std::io::Result<()> {
    let start = k * CHUNK;
    let end = start + CHUNK;
    // The byte before the chunk too, to tell whether a line starts at its first byte.
    let from = start.saturating_sub(1);
    buf.filled = 0;
    buf.read_more(file, from, end - from)?;
    let mut pos = if k == 0 {
        0
    } else {
        match memchr::memchr(b'\n', buf.text()) {
            Some(p) => p + 1,
            None => return Ok(()),
        }
    };
    // How far the buffer has been searched for the end of the current line.
    let mut searched = pos;
    while from + pos < end && pos < buf.filled {
        match memchr::memchr(b'\n', &buf.text()[searched..]) {
            Some(p) => {
                let line_end = searched + p + 1;
                tally.line(&buf.text()[pos..line_end], from + pos, samples);
                pos = line_end;
                searched = pos;
            }
            None => {
                // The line runs past what was read: read on to its end, or the file's.
                searched = buf.filled;
                if buf.read_more(file, from, CHUNK)? == 0 {
                    tally.line(&buf.text()[pos..], from + pos, samples);
                    break;
                }
            }
        }
    }
    Ok(())
}
