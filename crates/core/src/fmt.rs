//! Number formatting as the interface text spells it (docs/design/formats.md#number-formats):
//! thousands separators, general form `{x:g}`, percentages, durations; and the one way text is
//! cut to a length ([`first_chars`], [`shorten`]), always at a character boundary.
//!
//! Rust's float formatting rounds the exact binary value, as Python's does, so `{:.2}` here and
//! `{:.2f}` there agree digit for digit.

/// `{x:,}` for integers: `32000` → `32,000`.
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    let first = digits.len() % 3;
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (i + 3 - first) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `{x:,.Nf}`: fixed point with `decimals` places and thousands separators in the integer part.
pub fn thousands_f(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return float_name(x);
    }
    let fixed = format!("{:.*}", decimals, x.abs());
    let (int_part, frac) = match fixed.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (fixed.as_str(), None),
    };
    let negative = x < 0.0 && fixed.bytes().any(|b| (b'1'..=b'9').contains(&b));
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    // The integer part can exceed i64 for huge floats; group its digits directly.
    let digits = int_part;
    let first = digits.len() % 3;
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (i + 3 - first) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// Python's name for a non-finite float: `nan`, `inf`, `-inf` (JSON output uses `NaN`).
pub fn float_name(x: f64) -> String {
    if x.is_nan() {
        "NaN".to_string()
    } else if x > 0.0 {
        "inf".to_string()
    } else {
        "-inf".to_string()
    }
}

/// `{x:g}`: general form, 6 significant digits, no trailing zeros (`22`, not `22.0`).
pub fn g(x: f64) -> String {
    g_prec(x, 6)
}

/// General form with `prec` significant digits, as Python's `format(x, '.{prec}g')`.
#[allow(
    clippy::expect_used,
    reason = "Rust's own exponent form of a finite float always has an `e` and an integer after it"
)]
pub fn g_prec(x: f64, prec: usize) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let prec = prec.max(1);
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // The exponent after rounding to `prec` significant digits decides the notation.
    let sci = format!("{:.*e}", prec - 1, x);
    let (mantissa, exp) = sci.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("exponent");
    if exp < -4 || exp >= prec as i32 {
        let m = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (prec as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// `{x:.N%}`: `0.0943` with 2 decimals → `9.43%`.
pub fn pct(x: f64, decimals: usize) -> String {
    format!("{:.*}%", decimals, x * 100.0)
}

/// `{x:+.N%}`: the sign always shown, ASCII `-` for negatives: `+0.77%`, `-0.40%`.
pub fn pct_signed(x: f64, decimals: usize) -> String {
    let body = format!("{:.*}", decimals, x * 100.0);
    if body.starts_with('-') {
        format!("{body}%")
    } else {
        format!("+{body}%")
    }
}

/// Python's `round(x)`: to the nearest integer, halves to even.
pub fn round_half_even(x: f64) -> f64 {
    x.round_ties_even()
}

/// A duration for people: under a minute `x.x s`, else `M min S s`.
pub fn duration(secs: f64) -> String {
    if secs < 60.0 {
        format!("{secs:.1} s")
    } else {
        let total = round_half_even(secs) as i64;
        format!("{} min {} s", total / 60, total % 60)
    }
}

/// Milliseconds for people: below 1,000 `N ms`, else `x.x s`.
pub fn millis(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        format!("{} ms", round_half_even(ms) as i64)
    }
}

/// The first `n` characters of `s` (all of it when shorter).
pub fn first_chars(s: &str, n: usize) -> &str {
    if s.len() <= n {
        // No more bytes than n: no more characters either.
        return s;
    }
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// `s` in at most `max` characters: when it is longer, its first `max - 1` and `…`.
pub fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    format!("{}…", first_chars(s, max.saturating_sub(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_at_character_boundaries() {
        assert_eq!(first_chars("abcdef", 3), "abc");
        assert_eq!(first_chars("ab", 3), "ab");
        assert_eq!(first_chars("é€😀x", 3), "é€😀");
        assert_eq!(first_chars("abc", 0), "");
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abcd", 4), "abcd");
        assert_eq!(shorten("abc", 4), "abc");
        assert_eq!(shorten("é€😀xyz", 4), "é€😀…");
        assert_eq!(shorten("abc", 1), "…");
        assert_eq!(shorten("", 0), "");
    }

    #[test]
    fn thousands_groups_by_three() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(32000), "32,000");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(-12405), "-12,405");
        assert_eq!(thousands_f(32000.0, 0), "32,000");
        assert_eq!(thousands_f(1336.96, 1), "1,337.0");
        assert_eq!(thousands_f(-0.04, 1), "0.0");
        assert_eq!(thousands_f(-1234.5, 2), "-1,234.50");
    }

    #[test]
    fn general_form_matches_python() {
        assert_eq!(g(22.0), "22");
        assert_eq!(g(10.0), "10");
        assert_eq!(g(60.0), "60");
        assert_eq!(g(0.5), "0.5");
        assert_eq!(g(106.0), "106");
        assert_eq!(g(1234567.0), "1.23457e+06");
        assert_eq!(g(123456.0), "123456");
        assert_eq!(g(0.0001), "0.0001");
        assert_eq!(g(0.00001), "1e-05");
        assert_eq!(g(1.23456789), "1.23457");
        assert_eq!(g(0.0), "0");
        assert_eq!(g(-2.5), "-2.5");
        assert_eq!(g(f64::NAN), "nan");
    }

    #[test]
    fn percentages() {
        assert_eq!(pct(0.0943, 2), "9.43%");
        assert_eq!(pct(0.095238, 1), "9.5%");
        assert_eq!(pct_signed(0.0077, 2), "+0.77%");
        assert_eq!(pct_signed(-0.004, 2), "-0.40%");
        assert_eq!(pct(0.92, 0), "92%");
    }

    #[test]
    fn durations() {
        assert_eq!(duration(29.3), "29.3 s");
        assert_eq!(duration(93.72), "1 min 34 s");
        assert_eq!(duration(124.0), "2 min 4 s");
        assert_eq!(millis(641.2), "641 ms");
        assert_eq!(millis(22100.0), "22.1 s");
        assert_eq!(round_half_even(2.5), 2.0);
        assert_eq!(round_half_even(3.5), 4.0);
    }
}
