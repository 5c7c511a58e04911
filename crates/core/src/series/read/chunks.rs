//! Reading a whole recording in chunks split at line ends, on two threads when it is large.
//!
//! A day's recording is 71 MB, more than its samples' memory budget allows to hold at once
//! (docs/benchmarks.md, `series_check`: ≤ 64 MiB peak), so a file is read a chunk at a time into
//! a reused buffer ([`chunk`]), or, where the caller holds the file's bytes in memory (a mapped
//! file, [`Held`]), read where they lie, and let go of as the reading passes. On a large file two
//! threads take the next chunk in turn and merge what is in the file's order, so only a few
//! chunks' worth of samples ever exist twice.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use super::chunk::{self, chunk_count, Window, CHUNK};
use super::{finish, reserve_for_file, Tally};
use crate::series::{Held, Series, SeriesSample};
use crate::snapshot::ReadError;

/// Files smaller than this are read on the calling thread alone: a second thread would cost
/// more to start than it saves.
const TWO_THREADS_FROM: u64 = 4 << 20;

/// How much of held bytes is let go of at once: often enough that they never hold much memory,
/// seldom enough that letting go costs nothing measurable.
const LET_GO_EVERY: usize = 8 << 20;

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
    // A pipe, a FIFO or a file of the kernel's has no size to split (and no offsets to read
    // at): it is read as it comes.
    let whole = if !meta.is_file() || size == 0 {
        let mut tally = Tally::default();
        let mut samples = Vec::new();
        let read = chunk::read_stream(&file, &mut tally, &mut samples);
        (tally, samples, read)
    } else {
        read_chunks(Source::File(&file), size)
    };
    finish_read(shown, whole)
}

/// Reads a recording whose bytes the caller holds; `source` names it in messages.
pub(in crate::series) fn read_held<H: Held + ?Sized>(
    held: &H,
    source: &str,
) -> Result<Series, ReadError> {
    let bytes = held.bytes();
    let read_before = |offset| held.read_before(offset);
    let whole = read_chunks(Source::Held(bytes, &read_before), bytes.len() as u64);
    finish_read(source.to_string(), whole)
}

/// What the lines read so far held, and how the reading ended.
type Read = (Tally, Vec<SeriesSample>, std::io::Result<()>);

/// The recording, or the error that stopped the reading: a header error on a line read before it
/// first, as a reader stopping at the first error would have said.
fn finish_read(shown: String, (tally, samples, read): Read) -> Result<Series, ReadError> {
    if let Err(source) = read {
        tally.header(&shown)?;
        return Err(ReadError::Io {
            path: shown,
            source,
        });
    }
    finish(shown, tally, samples)
}

/// Reads the `size` bytes of `source`, on two threads when they are many.
fn read_chunks(source: Source<'_>, size: u64) -> Read {
    let mut tally = Tally {
        size_hint: Some(size),
        ..Tally::default()
    };
    let mut samples = Vec::new();
    let read = if size < TWO_THREADS_FROM {
        read_alone(source, size, &mut tally, &mut samples)
    } else {
        read_two(source, size, &mut tally, &mut samples)
    };
    (tally, samples, read)
}

/// Where the chunks' bytes come from.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// A file, read at offsets into each thread's buffer.
    File(&'a File),
    /// Bytes the caller holds, read where they lie, and [`Held::read_before`].
    Held(&'a [u8], &'a (dyn Fn(usize) + Sync)),
}

impl Source<'_> {
    /// Reads the lines that start in chunk `k` into `tally` and `samples`.
    fn read_chunk(
        self,
        k: usize,
        buf: &mut Window,
        tally: &mut Tally,
        samples: &mut Vec<SeriesSample>,
    ) -> std::io::Result<()> {
        match self {
            Source::File(file) => chunk::read_chunk(file, k, buf, tally, samples),
            Source::Held(bytes, _) => {
                chunk::read_held_chunk(bytes, k, tally, samples);
                Ok(())
            }
        }
    }
}

/// Reads every chunk in turn on this thread.
fn read_alone(
    source: Source<'_>,
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
        source.read_chunk(k, &mut buf, &mut part, samples)?;
        tally.merge(part);
    }
    Ok(())
}

/// Vectors the two threads read chunks into, in all: a thread waits for one to come back when
/// all are out, so neither runs more than this many chunks ahead of the merge.
const VECTORS: usize = 8;

/// Reads the chunks on this thread and a second one. Each thread takes the next chunk when it is
/// free (so one that the machine slows down takes fewer), reads it into a vector of its own, and
/// then merges, under a lock, whatever is in the file's order by then. So both threads share the
/// merge's copying and the page faults of the growing recording, which are as much work as a
/// third of the reading.
fn read_two(
    source: Source<'_>,
    size: u64,
    tally: &mut Tally,
    samples: &mut Vec<SeriesSample>,
) -> std::io::Result<()> {
    let size_hint = tally.size_hint.take();
    let ordered = Ordered {
        state: Mutex::new(InOrder {
            tally,
            samples,
            size_hint,
            merged: 0,
            waiting: BTreeMap::new(),
            free: (0..VECTORS).map(|_| Vec::new()).collect(),
            failed: false,
            let_go: 0,
        }),
        returned: Condvar::new(),
        next: AtomicUsize::new(0),
        chunks: chunk_count(size),
        source,
    };
    let ordered = &ordered;
    std::thread::scope(|scope| {
        // When no thread can be started, this one takes every chunk.
        let second = std::thread::Builder::new()
            .name("series-read".into())
            .spawn_scoped(scope, move || ordered.work());
        let mine = ordered.work();
        let theirs = match second {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => Ok(()),
        };
        mine.and(theirs)
    })
}

/// What the two threads share: the chunks' order, and the next chunk to take.
struct Ordered<'a> {
    state: Mutex<InOrder<'a>>,
    /// Signalled when vectors come back to [`InOrder::free`], or a thread failed.
    returned: Condvar,
    next: AtomicUsize,
    chunks: usize,
    source: Source<'a>,
}

impl<'a> Ordered<'a> {
    /// Takes chunks until none is left (or the other thread failed), merging what is in order.
    fn work(&self) -> std::io::Result<()> {
        let mut buf = Window::default();
        loop {
            let Some(mut out) = self.free_vector() else {
                return Ok(());
            };
            // A chunk is taken only with a vector in hand, so the first one not merged is always
            // being read, and the vectors it holds up come back.
            let k = self.next.fetch_add(1, Ordering::Relaxed);
            if k >= self.chunks {
                return Ok(());
            }
            out.clear();
            let mut part = Tally::default();
            let read = self.source.read_chunk(k, &mut buf, &mut part, &mut out);
            let mut state = self.lock();
            if let Err(e) = read {
                state.failed = true;
                self.returned.notify_all();
                return Err(e);
            }
            state.waiting.insert(k, (part, out));
            if state.merge_ready() {
                self.returned.notify_one();
            }
            let let_go = state.let_go_to();
            drop(state);
            if let (Some(offset), Source::Held(_, read_before)) = (let_go, self.source) {
                read_before(offset);
            }
        }
    }

    /// A vector to read a chunk into, when one is free or comes back; None once a thread failed.
    fn free_vector(&self) -> Option<Vec<SeriesSample>> {
        let mut state = self.lock();
        loop {
            if state.failed {
                return None;
            }
            if let Some(v) = state.free.pop() {
                return Some(v);
            }
            state = self
                .returned
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn lock(&self) -> MutexGuard<'_, InOrder<'a>> {
        // A panic under the lock is resumed by the scope; nothing would read the state after.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The recording so far, and the chunks read before those ahead of them were merged.
struct InOrder<'a> {
    tally: &'a mut Tally,
    samples: &'a mut Vec<SeriesSample>,
    /// The file's size, to size the recording once at the first chunk.
    size_hint: Option<u64>,
    /// The first chunk not merged yet.
    merged: usize,
    /// Chunks read and not merged yet, by number.
    waiting: BTreeMap<usize, (Tally, Vec<SeriesSample>)>,
    /// Emptied vectors to read chunks into.
    free: Vec<Vec<SeriesSample>>,
    /// Set when a thread's read failed: the other stops at its next chunk.
    failed: bool,
    /// The offset before which held bytes were let go of.
    let_go: usize,
}

impl InOrder<'_> {
    /// Merges the chunks that are next in the file's order; whether any vector came back.
    fn merge_ready(&mut self) -> bool {
        let mut any = false;
        while let Some((part, mut out)) = self.waiting.remove(&self.merged) {
            if let Some(size) = self.size_hint.take() {
                // As many samples as the first chunk's rows say the file holds.
                reserve_for_file(self.samples, size, out.len(), CHUNK);
            }
            self.tally.merge(part);
            self.samples.append(&mut out);
            self.free.push(out);
            self.merged += 1;
            any = true;
        }
        any
    }

    /// The offset before which no chunk reads again, when it has moved far enough since held
    /// bytes were last let go of: every chunk before the first not merged is done, and that one
    /// reads from the byte before its own.
    fn let_go_to(&mut self) -> Option<usize> {
        let done = (self.merged * CHUNK).saturating_sub(1);
        (done >= self.let_go + LET_GO_EVERY).then(|| {
            self.let_go = done;
            done
        })
    }
}
