//! One chunk's lines: those that start in its bytes, read from a file through a reused buffer or
//! from bytes held in memory; and a file without a size read as it comes.
//!
//! Chunk `k` owns the lines that start in bytes `k * CHUNK ..` up to the next chunk: it skips the
//! end of a line that began before it and reads on past its end to finish its own last line, so
//! every chunk can be read by itself, in any order ([`super::chunks`]).

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;

use super::Tally;
use crate::series::SeriesSample;

/// The bytes a chunk owns the line starts of. Small enough that the buffers and the vectors the
/// chunks are read into stay under a MiB together (the day's recording has ~1 MiB of room under
/// its 64 MiB), large enough that handing chunks over costs nothing measurable.
pub(super) const CHUNK: usize = 1 << 17;

/// The number of chunks a file of `size` bytes has.
pub(super) fn chunk_count(size: u64) -> usize {
    usize::try_from(size.div_ceil(CHUNK as u64)).unwrap_or(usize::MAX)
}

/// A reused read buffer: `bytes[..filled]` holds what was read. Its length only grows, so the
/// zeroing that makes room is paid once, not for every chunk.
#[derive(Default)]
pub(super) struct Window {
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

/// Where chunk `k`'s text starts in the file (its first byte, or the one before, which tells
/// whether a line starts at the first), and where its lines end.
fn bounds(k: usize) -> (usize, usize) {
    let start = k * CHUNK;
    (start.saturating_sub(1), start + CHUNK)
}

/// The index in `text` (chunk `k`'s, from [`bounds`]) of its first line's start, looking no
/// further than `owned` bytes; None when no line starts in the chunk.
fn first_line(k: usize, text: &[u8], owned: usize) -> Option<usize> {
    if k == 0 {
        return Some(0);
    }
    let p = memchr::memchr(b'\n', &text[..owned.min(text.len())])?;
    Some(p + 1)
}

/// Reads the lines of `text` (the file from offset `from` on) that start at index `pos` or later
/// and before file offset `end`. Where a line starts that `text` does not hold to its newline,
/// its index, for the caller to read on or end the file with.
fn lines(
    text: &[u8],
    from: usize,
    mut pos: usize,
    end: usize,
    tally: &mut Tally,
    samples: &mut Vec<SeriesSample>,
) -> Option<usize> {
    while from + pos < end && pos < text.len() {
        if let Some(n) = tally.flat_line(&text[pos..], samples) {
            pos += n;
            continue;
        }
        let Some(p) = memchr::memchr(b'\n', &text[pos..]) else {
            return Some(pos);
        };
        tally.line(&text[pos..=pos + p], from + pos, samples);
        pos += p + 1;
    }
    None
}

/// Reads the lines that start in chunk `k` of the file into `tally` and `samples`, through the
/// reused buffer `buf`.
pub(super) fn read_chunk(
    file: &File,
    k: usize,
    buf: &mut Window,
    tally: &mut Tally,
    samples: &mut Vec<SeriesSample>,
) -> std::io::Result<()> {
    let (from, end) = bounds(k);
    buf.filled = 0;
    buf.read_more(file, from, end - from)?;
    let Some(mut pos) = first_line(k, buf.text(), end - from) else {
        return Ok(());
    };
    while let Some(open) = lines(buf.text(), from, pos, end, tally, samples) {
        // The line at `open` runs past what was read: read on to its end, or the file's,
        // searching only what each read adds.
        loop {
            let searched = buf.filled;
            if buf.read_more(file, from, CHUNK)? == 0 {
                tally.line(&buf.text()[open..], from + open, samples);
                return Ok(());
            }
            if memchr::memchr(b'\n', &buf.text()[searched..]).is_some() {
                break;
            }
        }
        pos = open;
    }
    Ok(())
}

/// Reads the lines that start in chunk `k` of `bytes`, a whole file held in memory.
pub(super) fn read_held_chunk(
    bytes: &[u8],
    k: usize,
    tally: &mut Tally,
    samples: &mut Vec<SeriesSample>,
) {
    let (from, end) = bounds(k);
    let Some(text) = bytes.get(from..) else {
        return;
    };
    let Some(pos) = first_line(k, text, end - from) else {
        return;
    };
    if let Some(last) = lines(text, from, pos, end, tally, samples) {
        // The file's last line, without a newline.
        tally.line(&text[last..], from + last, samples);
    }
}

/// Reads the file to its end with plain reads on this thread, the lines in order.
pub(super) fn read_stream(
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
