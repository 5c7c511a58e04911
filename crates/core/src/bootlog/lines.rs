//! Turning a server's byte stream into lines, and the parts of a line every engine shares:
//! colour codes, vLLM's process prefix and header, SGLang's and TensorRT-LLM's stamps.

use std::borrow::Cow;

/// Lines longer than this many bytes are cut (and counted), so hostile input cannot grow memory.
pub const LINE_CAP: usize = 64 * 1024;

/// Splits bytes into lines at `\n`, `\r\n` and a bare `\r`, across chunks split anywhere (even
/// inside a UTF-8 character). Holds at most [`LINE_CAP`] bytes of a pending line.
#[derive(Debug, Default)]
pub struct LineSplitter {
    buf: Vec<u8>,
    /// The pending line already lost bytes past the cap.
    cut: bool,
    /// The last byte seen was a `\r`: a `\n` right after it ends nothing.
    after_cr: bool,
}

/// One line as the splitter hands it out: its bytes (at most [`LINE_CAP`]) and whether it was cut.
pub struct RawLine<'a> {
    pub bytes: &'a [u8],
    pub cut: bool,
}

impl LineSplitter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; `emit` is called with each completed line, in order.
    pub fn feed(&mut self, data: &[u8], emit: &mut dyn FnMut(RawLine<'_>)) {
        let mut at = 0;
        if self.after_cr && !data.is_empty() {
            self.after_cr = false;
            if data[0] == b'\n' {
                at = 1;
            }
        }
        let mut ends = LineEnds::new(data);
        while at < data.len() {
            let Some(end) = ends.next(at) else {
                self.push(&data[at..]);
                return;
            };
            let line = &data[at..end];
            let mut next = end + 1;
            if data[end] == b'\r' {
                match data.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            if self.buf.is_empty() && !self.cut {
                // The whole line is in this chunk: no copy.
                let cut = line.len() > LINE_CAP;
                emit(RawLine {
                    bytes: &line[..line.len().min(LINE_CAP)],
                    cut,
                });
            } else {
                self.push(line);
                emit(RawLine {
                    bytes: &self.buf,
                    cut: self.cut,
                });
                self.buf.clear();
                self.cut = false;
            }
            at = next;
        }
    }

    /// A whole line was handed over outside the splitter: a `\n` that follows is a line of its own.
    pub fn line_fed_whole(&mut self) {
        self.after_cr = false;
    }

    /// Whether a partial line is waiting for its end.
    pub fn has_pending(&self) -> bool {
        !self.buf.is_empty() || self.cut
    }

    /// Ends the pending partial line, if any (end of input).
    pub fn flush(&mut self, emit: &mut dyn FnMut(RawLine<'_>)) {
        if self.has_pending() {
            emit(RawLine {
                bytes: &self.buf,
                cut: self.cut,
            });
            self.buf.clear();
            self.cut = false;
        }
    }

    fn push(&mut self, data: &[u8]) {
        let room = LINE_CAP - self.buf.len();
        if data.len() > room {
            self.buf.extend_from_slice(&data[..room]);
            self.cut = true;
        } else {
            self.buf.extend_from_slice(data);
        }
    }
}

/// The line ends of one chunk: each `\n` is found with memchr, and `\r` (rare outside progress
/// bars) from one position found ahead and sought again only once passed, so a chunk without any
/// costs a single search for it rather than a two-byte search per line.
struct LineEnds<'a> {
    data: &'a [u8],
    next_cr: Option<usize>,
}

impl<'a> LineEnds<'a> {
    fn new(data: &'a [u8]) -> Self {
        LineEnds {
            data,
            next_cr: memchr::memchr(b'\r', data),
        }
    }

    /// The first `\n` or `\r` at or after `from`.
    fn next(&mut self, from: usize) -> Option<usize> {
        if self.next_cr.is_some_and(|cr| cr < from) {
            self.next_cr = memchr::memchr(b'\r', &self.data[from..]).map(|i| from + i);
        }
        let limit = self.next_cr.unwrap_or(self.data.len());
        match memchr::memchr(b'\n', &self.data[from..limit]) {
            Some(i) => Some(from + i),
            None => self.next_cr,
        }
    }
}

/// A line's bytes as text: `(text, lossy)`. A line that was cut may end inside a character; that
/// partial character is dropped without counting the line as invalid.
pub fn decode(bytes: &[u8], cut: bool) -> (Cow<'_, str>, bool) {
    // Every line is checked, and simdutf8's check takes half of std's on a log's short ASCII
    // lines; std's error, on the rare invalid line, says where the valid part ends.
    if let Ok(s) = simdutf8::basic::from_utf8(bytes) {
        return (Cow::Borrowed(s), false);
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => (Cow::Borrowed(s), false),
        Err(e) if cut && e.error_len().is_none() => {
            let valid = &bytes[..e.valid_up_to()];
            // Valid by construction.
            (
                Cow::Borrowed(std::str::from_utf8(valid).unwrap_or_default()),
                false,
            )
        }
        Err(_) => (String::from_utf8_lossy(bytes), true),
    }
}

/// Removes ANSI escape sequences (colours, cursor moves, OSC titles).
pub fn strip_ansi(s: &str) -> Cow<'_, str> {
    if !s.as_bytes().contains(&0x1b) {
        return Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut copied = 0;
    while let Some(off) = memchr::memchr(0x1b, &b[i..]) {
        let esc = i + off;
        out.push_str(&s[copied..esc]);
        let mut j = esc + 1;
        match b.get(j) {
            Some(b'[') => {
                j += 1;
                while j < b.len() && !(0x40..=0x7e).contains(&b[j]) {
                    j += 1;
                }
                j = (j + 1).min(b.len());
            }
            Some(b']') => {
                // OSC: up to BEL or ESC '\'.
                j += 1;
                while j < b.len() && b[j] != 0x07 && !(b[j] == 0x1b && b.get(j + 1) == Some(&b'\\'))
                {
                    j += 1;
                }
                j = if j < b.len() && b[j] == 0x1b {
                    j + 2
                } else {
                    j + 1
                }
                .min(b.len());
            }
            Some(c) if c.is_ascii() => j += 1,
            _ => {}
        }
        i = j;
        copied = j;
    }
    out.push_str(&s[copied..]);
    Cow::Owned(out)
}

/// A vLLM line split into its parts: `(EngineCore pid=3475) ERROR 09-05 23:33:11 [core.py:1348] msg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VllmLine<'a> {
    /// Process name and pid of the prefix, when there is one.
    pub process: Option<(&'a str, u32)>,
    /// The `MM-DD HH:MM:SS` stamp of the header, when there is one.
    pub stamp: Option<&'a str>,
    /// The message: everything after the prefix and the header.
    pub message: &'a str,
}

/// Splits off vLLM's process prefix (`(APIServer pid=821) `) and its logging header
/// (`INFO 09-26 17:48:43 [api_utils.py:333] `), either of which may be missing.
pub fn split_vllm(line: &str) -> VllmLine<'_> {
    let mut rest = line;
    let mut process = None;
    if let Some((p, after)) = process_prefix(rest) {
        process = Some(p);
        rest = after;
    }
    let (stamp, message) = match vllm_header(rest) {
        Some((stamp, msg)) => (Some(stamp), msg),
        None => (None, rest),
    };
    VllmLine {
        process,
        stamp,
        message,
    }
}

/// Strips vLLM's process prefix and logging header from a line (colour codes must be gone).
pub fn strip_vllm_prefix(line: &str) -> &str {
    split_vllm(line).message
}

/// `(Name pid=N) ` at the start of a line (0.10+: written by the stream wrapper; 0.33: the
/// formatter). The prefix ends with `) ` or the end of the line.
fn process_prefix(line: &str) -> Option<((&str, u32), &str)> {
    let b = line.as_bytes();
    if b.first() != Some(&b'(') {
        return None;
    }
    let close = memchr::memchr(b')', &b[..b.len().min(96)])?;
    let inner = &line[1..close];
    let (name, pid) = inner.rsplit_once(" pid=")?;
    if name.is_empty() || name.contains(['(', ')']) {
        return None;
    }
    let pid: u32 = pid.parse().ok()?;
    let after = &line[close + 1..];
    let after = after.strip_prefix(' ').unwrap_or(after);
    Some(((name, pid), after))
}

const LEVELS: [&str; 6] = [
    "DEBUG ",
    "INFO ",
    "WARNING ",
    "ERROR ",
    "CRITICAL ",
    "WARN ",
];

/// `LEVEL MM-DD HH:MM:SS [file:line] ` → `(stamp, message)`.
fn vllm_header(s: &str) -> Option<(&str, &str)> {
    let level = LEVELS.iter().find(|l| s.starts_with(**l))?;
    let rest = &s[level.len()..];
    let stamp = rest.get(..14)?;
    if !is_md_hms(stamp.as_bytes()) {
        return None;
    }
    let rest = rest[14..].strip_prefix(" [")?;
    let close = rest
        .find("] ")
        .or_else(|| rest.ends_with(']').then(|| rest.len() - 1))?;
    let msg = rest.get(close + 2..).unwrap_or("");
    Some((stamp, msg))
}

/// `MM-DD HH:MM:SS`
fn is_md_hms(b: &[u8]) -> bool {
    b.len() == 14
        && digits(&b[0..2])
        && b[2] == b'-'
        && digits(&b[3..5])
        && b[5] == b' '
        && digits(&b[6..8])
        && b[8] == b':'
        && digits(&b[9..11])
        && b[11] == b':'
        && digits(&b[12..14])
}

fn digits(b: &[u8]) -> bool {
    b.iter().all(u8::is_ascii_digit)
}

/// Strips the other engines' stamps from a message: SGLang's `[2026-10-01 00:37:47] ` (or
/// `[… TP0] `), TensorRT-LLM's `[10/01/2026-01:43:03] ` and `[TRT-LLM] [RANK 0] [I] `.
pub fn strip_other_stamps(s: &str) -> &str {
    let mut rest = s;
    if rest.starts_with('[') {
        if let Some(close) = rest.find("] ") {
            let inner = &rest.as_bytes()[1..close];
            if (inner.len() >= 19 && date_time_ymd(&inner[..19]))
                || (inner.len() == 19 && date_time_mdy(inner))
            {
                rest = &rest[close + 2..];
            }
        }
    }
    if let Some(after) = rest.strip_prefix("[TRT-LLM] ") {
        let mut r = after;
        while r.starts_with('[') {
            let Some(close) = r.find("] ") else { break };
            let tag = &r[1..close];
            let is_level = tag.len() == 1 && tag.as_bytes()[0].is_ascii_uppercase();
            r = &r[close + 2..];
            if is_level {
                break;
            }
        }
        rest = r;
    }
    rest
}

/// `YYYY-MM-DD HH:MM:SS`
fn date_time_ymd(b: &[u8]) -> bool {
    b.len() >= 19 && digits(&b[0..4]) && b[4] == b'-' && is_md_hms(&b[5..19])
}

/// `MM/DD/YYYY-HH:MM:SS`
fn date_time_mdy(b: &[u8]) -> bool {
    b.len() == 19
        && digits(&b[0..2])
        && b[2] == b'/'
        && digits(&b[3..5])
        && b[5] == b'/'
        && digits(&b[6..10])
        && b[10] == b'-'
        && digits(&b[11..13])
        && b[13] == b':'
        && digits(&b[14..16])
        && b[16] == b':'
        && digits(&b[17..19])
}

/// The time stamp of a line, as seconds since the start of its year: vLLM's `MM-DD HH:MM:SS`,
/// SGLang's `YYYY-MM-DD HH:MM:SS` (the same digits) and TensorRT-LLM's `MM/DD/YYYY-HH:MM:SS`,
/// looked for near the start of the line.
pub fn stamp_seconds(line: &str) -> Option<i64> {
    let b = line.as_bytes();
    let window = &b[..b.len().min(96)];
    let mut i = 0;
    while let Some(off) = memchr::memchr(b':', &window[i..]) {
        let colon = i + off;
        // The first colon of `HH:MM:SS` sits 2 bytes after the hour starts.
        if colon >= 8 && colon + 6 <= window.len() {
            let md = &window[colon - 8..colon + 6];
            if is_md_hms(md) {
                return Some(seconds(md[0..2].as_ref(), &md[3..5], &md[6..14]));
            }
        }
        if colon >= 13 && colon + 6 <= window.len() {
            let mdy = &window[colon - 13..colon + 6];
            if date_time_mdy(mdy) {
                return Some(seconds(&mdy[0..2], &mdy[3..5], &mdy[11..19]));
            }
        }
        i = colon + 1;
    }
    None
}

fn num(b: &[u8]) -> i64 {
    b.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0'))
}

fn seconds(month: &[u8], day: &[u8], hms: &[u8]) -> i64 {
    const DAYS_BEFORE: [i64; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let m = (num(month).clamp(1, 12) - 1) as usize;
    let d = num(day).max(1) - 1;
    let day_of_year = DAYS_BEFORE[m] + d;
    day_of_year * 86_400 + num(&hms[0..2]) * 3600 + num(&hms[3..5]) * 60 + num(&hms[6..8])
}

/// Seconds from one stamp to a later one; a year boundary in between (the stamps carry no year)
/// is crossed once.
pub fn elapsed(first: i64, last: i64) -> i64 {
    if last >= first {
        last - first
    } else {
        last + 365 * 86_400 - first
    }
}

/// Whether a line is a progress bar (tqdm), which the live terminal should not show.
/// (`it/s]`, `s/it]` or `%|`, found from the rare `]` and `|`.)
pub fn is_progress_bar(s: &str) -> bool {
    let b = s.as_bytes();
    memchr::memchr2_iter(b']', b'|', b).any(|i| {
        let before = &b[..i];
        match b[i] {
            b']' => before.ends_with(b"it/s") || before.ends_with(b"s/it"),
            _ => before.ends_with(b"%"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(chunks: &[&[u8]]) -> Vec<(String, bool)> {
        let mut s = LineSplitter::new();
        let mut out = Vec::new();
        for c in chunks {
            s.feed(c, &mut |l| {
                out.push((String::from_utf8_lossy(l.bytes).into_owned(), l.cut))
            });
        }
        s.flush(&mut |l| out.push((String::from_utf8_lossy(l.bytes).into_owned(), l.cut)));
        out
    }

    #[test]
    fn line_ends_across_chunks() {
        let want = vec![
            ("a".to_string(), false),
            ("b".to_string(), false),
            ("c".to_string(), false),
            (String::new(), false),
            ("d".to_string(), false),
        ];
        assert_eq!(split_all(&[b"a\r\nb\rc\n\nd"]), want);
        assert_eq!(split_all(&[b"a\r", b"\nb\r", b"c\n", b"\nd"]), want);
        assert_eq!(
            split_all(&[b"a", b"\r", b"\n", b"b", b"\r", b"c", b"\n\n", b"d"]),
            want
        );
    }

    /// Lines as the splitter's rules define them, read the plain way.
    fn reference_lines(text: &[u8]) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        let mut line = Vec::new();
        let mut i = 0;
        while i < text.len() {
            match text[i] {
                b'\n' | b'\r' => {
                    if text[i] == b'\r' && text.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    out.push((String::from_utf8_lossy(&line).into_owned(), false));
                    line.clear();
                }
                c => line.push(c),
            }
            i += 1;
        }
        if !line.is_empty() {
            out.push((String::from_utf8_lossy(&line).into_owned(), false));
        }
        out
    }

    #[test]
    fn any_chunking_gives_the_lines_of_the_whole() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let pieces: [&[u8]; 6] = [b"\n", b"\r", b"\r\n", b"ab", b"x", b"\n\n"];
        for _ in 0..2_000 {
            let mut text = Vec::new();
            for _ in 0..rng.random_range(0..40) {
                text.extend_from_slice(pieces[rng.random_range(0..pieces.len())]);
            }
            let mut chunks = Vec::new();
            let mut rest = &text[..];
            while !rest.is_empty() {
                let n = rng.random_range(1..=rest.len());
                chunks.push(&rest[..n]);
                rest = &rest[n..];
            }
            assert_eq!(
                split_all(&chunks),
                reference_lines(&text),
                "{text:?} as {chunks:?}"
            );
        }
    }

    #[test]
    fn long_lines_are_cut_and_memory_stays_bounded() {
        let mut s = LineSplitter::new();
        let big = vec![b'x'; 1 << 20];
        let mut lines = Vec::new();
        for _ in 0..5 {
            s.feed(&big, &mut |l| lines.push((l.bytes.len(), l.cut)));
            assert!(s.buf.capacity() <= 2 * LINE_CAP);
        }
        s.feed(b"\nok\n", &mut |l| lines.push((l.bytes.len(), l.cut)));
        assert_eq!(lines, vec![(LINE_CAP, true), (2, false)]);
        let mut one = Vec::new();
        let mut s = LineSplitter::new();
        let mut whole = vec![b'y'; LINE_CAP + 10];
        whole.push(b'\n');
        s.feed(&whole, &mut |l| one.push((l.bytes.len(), l.cut)));
        assert_eq!(one, vec![(LINE_CAP, true)]);
    }

    #[test]
    fn progress_bars() {
        for bar in [
            "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.2it/s]",
            "Capturing CUDA graphs: 100%|██████████| 35/35 [00:04<00:00,  7.81it/s]",
            "Downloading: 3/10 [00:09<00:21, 3.05s/it]",
            "x %|",
        ] {
            assert!(is_progress_bar(bar), "{bar}");
        }
        for line in [
            "[2026-10-01 00:46:22] Decode batch, #running-req: 1, token usage: 0.04",
            "a | b ] c",
            "100 % | done",
            "it/s ]",
            "",
        ] {
            assert!(!is_progress_bar(line), "{line}");
        }
    }

    #[test]
    fn decode_cut_inside_a_character_is_not_lossy() {
        let s = "é".repeat(10);
        let b = &s.as_bytes()[..5];
        assert_eq!(decode(b, true), (Cow::Borrowed("éé"), false));
        let (t, lossy) = decode(b"ok\xff", false);
        assert!(lossy);
        assert_eq!(t, "ok\u{FFFD}");
    }

    #[test]
    fn ansi_and_prefixes() {
        let l = "\x1b[1;36m(APIServer pid=21913)\x1b[0;0m INFO 11-29 14:06:07 [api_server.py:1839] vLLM API server version 0.11.0";
        let clean = strip_ansi(l);
        let v = split_vllm(&clean);
        assert_eq!(v.process, Some(("APIServer", 21913)));
        assert_eq!(v.stamp, Some("11-29 14:06:07"));
        assert_eq!(v.message, "vLLM API server version 0.11.0");
        assert_eq!(
            strip_vllm_prefix("(EngineCore pid=1) ERROR 09-05 10:57:48 [core.py:1] AssertionError"),
            "AssertionError"
        );
        assert_eq!(
            strip_vllm_prefix(
                "INFO 11-29 14:06:05 [__init__.py:216] Automatically detected platform cuda."
            ),
            "Automatically detected platform cuda."
        );
        assert_eq!(strip_vllm_prefix("(EngineCore pid=1030) "), "");
        assert_eq!(
            strip_vllm_prefix("(APIServer pid=821) INFO:     Application startup complete."),
            "INFO:     Application startup complete."
        );
        assert_eq!(strip_vllm_prefix("(not a prefix) x"), "(not a prefix) x");
        assert_eq!(strip_ansi("\x1b]0;title\x07ok\x1b[31mred\x1b[0m"), "okred");
        assert_eq!(
            strip_other_stamps("[2026-10-01 00:37:01] Scheduler hit an exception"),
            "Scheduler hit an exception"
        );
        assert_eq!(
            strip_other_stamps("[2026-10-01 00:37:01 TP0] ValueError: x"),
            "ValueError: x"
        );
        assert_eq!(
            strip_other_stamps("[10/01/2026-01:43:03] [TRT-LLM] [I] [llmapi] Using LLM"),
            "[llmapi] Using LLM"
        );
        assert_eq!(strip_other_stamps("[TRT-LLM] [RANK 0] [E] boom"), "boom");
    }

    #[test]
    fn stamps() {
        let a =
            stamp_seconds("(APIServer pid=821) INFO 09-26 17:48:43 [api_utils.py:333] x").unwrap();
        let b =
            stamp_seconds("(APIServer pid=821) INFO 09-26 17:50:47 [api_server.py:657] y").unwrap();
        assert_eq!(elapsed(a, b), 124);
        let s = stamp_seconds("[2026-10-01 00:37:47] server_args={}").unwrap();
        let t = stamp_seconds("[2026-10-01 00:42:43] INFO:     Application").unwrap();
        assert_eq!(elapsed(s, t), 296);
        let u = stamp_seconds("[10/01/2026-01:43:03] [TRT-LLM] [I] x").unwrap();
        let v = stamp_seconds("[10/01/2026-01:44:03] [TRT-LLM] [I] x").unwrap();
        assert_eq!(elapsed(u, v), 60);
        let dec = stamp_seconds("INFO 12-31 23:59:50 [a.py:1] x").unwrap();
        let jan = stamp_seconds("INFO 01-01 00:00:10 [a.py:1] x").unwrap();
        assert_eq!(elapsed(dec, jan), 20);
        assert_eq!(
            stamp_seconds("INFO:     127.0.0.1:38739 - \"GET /v1/models HTTP/1.1\" 200 OK"),
            None
        );
    }
}
