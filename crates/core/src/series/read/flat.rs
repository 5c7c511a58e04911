//! Rows of the recorder's own form, `{"key": number|null, ...}` with known keys only, read
//! without building a JSON value (docs/design/formats.md#series). A day of samples at 0.25 s is
//! 345,600 such lines, so this is where a recording's reading spends its time: one pass over
//! each line, the next key guessed from the recorder's order and checked in one comparison, each
//! number's digits gathered as they are scanned.
//!
//! None sends a line to the general path (header, strings, booleans, Python's `NaN`, unknown or
//! repeated keys, exponents it does not take, anything unusual), which decides. Whatever this
//! reader accepts is plain ASCII, so it needs no UTF-8 check, and it gives the general path's
//! answer for it: tests check both.

use super::super::SeriesSample;

/// The keys of a flat row, in the order the recorder writes them, each at its bit in the row's
/// set of keys seen.
const FLAT_KEYS: [&[u8]; 10] = [
    b"t_wall",
    b"t_mono_ns",
    b"running",
    b"waiting",
    b"kv_usage",
    b"preemptions",
    b"generation_tokens",
    b"prompt_tokens",
    b"paused",
    b"finished_requests",
];

/// The sample a flat row holds, or None for the general path. `b` is one line; trailing JSON
/// whitespace (a `\r`, the `\n`) is allowed, leading whitespace is not.
pub(super) fn flat_row(b: &[u8]) -> Option<SeriesSample> {
    let mut s = SeriesSample::default();
    read_flat_row(b, &mut s).then_some(s)
}

/// Reads the flat row `b` into `s`, a default sample (filled in place: a row pushed and then
/// filled is not copied); false for the general path, with `s` to be discarded.
pub(super) fn read_flat_row(b: &[u8], s: &mut SeriesSample) -> bool {
    flat_fields(b, s).is_some_and(|end| skip_ws(b, end) == b.len())
}

/// Reads the flat row at the start of `b`, a stretch of the file that may run on past its line,
/// into `s` as [`read_flat_row`] does; the length of its line, newline included, when the row's
/// `}` is followed by the newline. So the line's end need not be searched for first: the search
/// is what first brings a line's bytes from memory, and the parser does that as it goes.
pub(super) fn read_flat_line(b: &[u8], s: &mut SeriesSample) -> Option<usize> {
    let end = flat_fields(b, s)?;
    // A row read across a newline (JSON whitespace between its fields) is two lines, each of
    // which the general path judges.
    (b.get(end) == Some(&b'\n') && memchr::memchr(b'\n', &b[..end]).is_none()).then_some(end + 1)
}

/// [`read_flat_row`] up to the row's `}`, with `?` for each way a line is not a flat row: the
/// index after the `}`.
fn flat_fields(b: &[u8], s: &mut SeriesSample) -> Option<usize> {
    if b.first() != Some(&b'{') {
        return None;
    }
    let mut seen = 0u16;
    let mut guess = 0;
    let mut i = 1;
    loop {
        i = skip_ws(b, i);
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let (slot, after_key) = key_at(b, i + 1, guess)?;
        if seen & (1 << slot) != 0 {
            return None;
        }
        seen |= 1 << slot;
        guess = slot + 1;
        // The recorder writes `": "` after a key and `, "` between fields: each checked in one
        // comparison before the general whitespace rules.
        let value_at = if b.get(after_key..after_key + 2) == Some(b": ") {
            after_key + 2
        } else {
            i = skip_ws(b, after_key);
            if b.get(i) != Some(&b':') {
                return None;
            }
            skip_ws(b, i + 1)
        };
        let (value, end) = scalar_at(b, value_at)?;
        set_flat(s, slot, value)?;
        if b.get(end..end + 3) == Some(b", \"") {
            i = end + 2;
            continue;
        }
        i = skip_ws(b, end);
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => {
                // A null t_wall has already sent the line away, so a seen one has a value.
                return (seen & 1 != 0).then_some(i + 1);
            }
            _ => return None,
        }
    }
}

/// The slot in [`FLAT_KEYS`] of the key that starts at `i` (after its opening quote), and the
/// index after its closing quote; None for an unknown key or one with an escape. The key after
/// `guess - 1` in the recorder's order is tried first, with one comparison.
fn key_at(b: &[u8], i: usize, guess: usize) -> Option<(usize, usize)> {
    if let Some(after) = expected_key(b, i, guess) {
        return Some((guess, after));
    }
    let rest = b.get(i..)?;
    let len = rest.iter().position(|&c| c == b'"' || c == b'\\')?;
    if rest[len] != b'"' {
        return None;
    }
    let slot = FLAT_KEYS.iter().position(|k| *k == &rest[..len])?;
    Some((slot, i + len + 1))
}

/// The index after the key at `slot` of [`FLAT_KEYS`] and its closing quote, when that key is
/// at `i`. Each arm compares a known number of bytes, which the compiler does in a few loads.
fn expected_key(b: &[u8], i: usize, slot: usize) -> Option<usize> {
    fn quoted<const N: usize>(b: &[u8], i: usize, key: &[u8; N]) -> Option<usize> {
        let found: &[u8; N] = b.get(i..i + N)?.try_into().ok()?;
        (found == key).then_some(i + N)
    }
    match slot {
        0 => quoted(b, i, b"t_wall\""),
        1 => quoted(b, i, b"t_mono_ns\""),
        2 => quoted(b, i, b"running\""),
        3 => quoted(b, i, b"waiting\""),
        4 => quoted(b, i, b"kv_usage\""),
        5 => quoted(b, i, b"preemptions\""),
        6 => quoted(b, i, b"generation_tokens\""),
        7 => quoted(b, i, b"prompt_tokens\""),
        8 => quoted(b, i, b"paused\""),
        9 => quoted(b, i, b"finished_requests\""),
        _ => None,
    }
}

/// The index of the first byte at or after `i` that is not JSON whitespace.
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        i += 1;
    }
    i
}

/// Whether a value that ends at `i` is followed by what may follow one in a flat row.
fn ends_value(b: &[u8], i: usize) -> bool {
    b.get(i)
        .is_none_or(|c| matches!(c, b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n'))
}

/// A value of a flat row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Scalar {
    Null,
    /// A number, with the integer its text spells when it is one `i64` holds.
    Number {
        value: f64,
        integer: Option<i64>,
    },
}

/// Stores `value` at the key at `slot` of [`FLAT_KEYS`]; None for a null t_wall (a row has a
/// time).
#[inline(always)]
fn set_flat(s: &mut SeriesSample, slot: usize, value: Scalar) -> Option<()> {
    let Scalar::Number { value, integer } = value else {
        return (slot != 0).then_some(());
    };
    match slot {
        0 => s.t_wall = value,
        // As serde_json reads it: an integer as written, anything else truncated.
        1 => s.set_t_mono_ns(Some(integer.unwrap_or(value as i64))),
        2 => s.set_running(Some(value)),
        3 => s.set_waiting(Some(value)),
        4 => s.set_kv_usage(Some(value)),
        5 => s.set_preemptions(Some(value)),
        6 => s.set_generation_tokens(Some(value)),
        7 => s.set_prompt_tokens(Some(value)),
        8 => s.set_paused(Some(value)),
        _ => s.set_finished_requests(Some(value)),
    }
    Some(())
}

/// Powers of ten that a u64 holds.
const POWERS_OF_TEN: [u64; 20] = {
    let mut p = [1u64; 20];
    let mut k = 1;
    while k < 20 {
        p[k] = p[k - 1] * 10;
        k += 1;
    }
    p
};

/// Powers of ten that an f64 holds exactly.
const EXACT_POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The value at `i`, `null` or a JSON number, and the index after it; None when it is neither,
/// overflows, or is followed by something a value cannot be.
///
/// The recorder's numbers (`1790470252.238873`, `144.0`) take Clinger's fast path: digits that
/// make an integer of at most 2^53 are exact in an f64, and its division by an exact power of
/// ten is correctly rounded, so it equals what the full parser gives. Longer ones (a KV usage's
/// 17 digits) go to the standard library's correctly rounded parser; exponents and integers
/// beyond 18 digits to the general number path.
#[inline(always)]
pub(super) fn scalar_at(b: &[u8], i: usize) -> Option<(Scalar, usize)> {
    if b.get(i..i + 4) == Some(b"null") {
        return ends_value(b, i + 4).then_some((Scalar::Null, i + 4));
    }
    let negative = b.get(i) == Some(&b'-');
    let whole_start = i + usize::from(negative);
    let mut mantissa = 0u64;
    let mut j = digits(b, whole_start, &mut mantissa);
    let whole = j - whole_start;
    let point = b.get(j) == Some(&b'.');
    let whole_value = mantissa;
    let mut fraction = 0;
    if point {
        let end = digits(b, j + 1, &mut mantissa);
        fraction = end - (j + 1);
        j = end;
    }
    // 19 digits always fit a u64; an integer of 19 is left to the full parser, which may still
    // read it exactly as an i64.
    if whole + fraction > 19 || (!point && whole > 18) || matches!(b.get(j), Some(b'e' | b'E')) {
        return general_scalar(b, i);
    }
    // JSON: a whole part of one 0 or no leading 0, and digits after a point.
    if whole == 0
        || (whole > 1 && b[whole_start] == b'0')
        || (point && fraction == 0)
        || !ends_value(b, j)
    {
        return None;
    }
    let magnitude = if mantissa <= 1 << 53 {
        // A fraction of zeros (`255.0`) leaves the whole part, which is the quotient exactly.
        if mantissa == whole_value * POWERS_OF_TEN[fraction] {
            whole_value as f64
        } else {
            mantissa as f64 / EXACT_POWERS_OF_TEN[fraction]
        }
    } else {
        // Plain digits and at most one point: what `f64::from_str` reads as JSON does.
        std::str::from_utf8(&b[whole_start..j]).ok()?.parse().ok()?
    };
    let value = if negative { -magnitude } else { magnitude };
    let integer = (!point).then(|| {
        let m = mantissa as i64;
        if negative {
            -m
        } else {
            m
        }
    });
    Some((Scalar::Number { value, integer }, j))
}

/// The index after the decimal digits at `i`, each taken into `mantissa` (which wraps past 19
/// digits: the caller counts them). Eight at a time where there are eight: a timestamp has 16.
#[inline(always)]
fn digits(b: &[u8], mut i: usize, mantissa: &mut u64) -> usize {
    while let Some(eight) = eight_digits(b, i) {
        *mantissa = mantissa.wrapping_mul(100_000_000).wrapping_add(eight);
        i += 8;
    }
    while let Some(&c) = b.get(i).filter(|c| c.is_ascii_digit()) {
        *mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
        i += 1;
    }
    i
}

/// The value of the eight bytes at `i` when all are decimal digits, combined in a word by three
/// multiplications (the method of Lemire's fast_float and simdjson).
#[inline(always)]
fn eight_digits(b: &[u8], i: usize) -> Option<u64> {
    let bytes: [u8; 8] = b.get(i..i + 8)?.try_into().ok()?;
    let v = u64::from_le_bytes(bytes);
    let high = 0xF0F0_F0F0_F0F0_F0F0;
    let all_digits = (v & high) | ((v.wrapping_add(0x0606_0606_0606_0606) & high) >> 4);
    if all_digits != 0x3333_3333_3333_3333 {
        return None;
    }
    let v = v - 0x3030_3030_3030_3030;
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    let low = 0x0000_00FF_0000_00FF;
    let v = (v & low)
        .wrapping_mul(100 + (1_000_000 << 32))
        .wrapping_add(((v >> 16) & low).wrapping_mul(1 + (10_000 << 32)))
        >> 32;
    Some(v)
}

/// [`scalar_at`] for what its fast path does not take: the value's text up to the next
/// delimiter, read by the full number grammar.
fn general_scalar(b: &[u8], i: usize) -> Option<(Scalar, usize)> {
    let len = b[i..]
        .iter()
        .position(|c| matches!(c, b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n'))
        .unwrap_or(b.len() - i);
    let raw = std::str::from_utf8(&b[i..i + len]).ok()?;
    let value = general_number(raw)?;
    let integer = raw.parse::<i64>().ok();
    Some((Scalar::Number { value, integer }, i + len))
}

/// The value of a JSON number, by the full parser; None when `raw` is not one or overflows.
pub(super) fn general_number(raw: &str) -> Option<f64> {
    if is_json_number(raw) {
        // A number JSON can hold (serde_json refuses one that overflows to infinity).
        raw.parse::<f64>().ok().filter(|v| v.is_finite())
    } else {
        None
    }
}

/// JSON's number grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn is_json_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(c) if c.is_ascii_digit() => {
            digits(&mut i);
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}
