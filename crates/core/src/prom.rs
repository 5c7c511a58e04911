//! Prometheus text exposition (format 0.0.4, as `prometheus_client` writes it for vLLM, SGLang
//! and TensorRT-LLM): samples with sorted labels, and the lookups the checks need
//! (docs/design/formats.md#prometheus-text).
//!
//! The parser is hand-written rather than regex-based: it runs on every scrape of a recording
//! (four a second for hours), must take any bytes without panicking, and must stay fast
//! (≥ 100 MB/s, measured in `benches/prom_parse.rs`).
//!
//! A missing metric is `None`, never 0: the checks turn it into "can't tell".

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::engine::{detect_from_metric_names, Engine};

/// One sample line: `name{labels} value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    /// Sorted by key (stable, so repeated keys keep their order).
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    /// The value of label `key`, if the sample has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the sample carries every given `(key, value)` pair.
    pub fn matches(&self, labels: &[(&str, &str)]) -> bool {
        labels
            .iter()
            .all(|(k, v)| self.labels.iter().any(|(sk, sv)| sk == k && sv == v))
    }
}

/// Why a text is not Prometheus exposition, or a lookup cannot answer.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PromError {
    #[error("line {line}: not a Prometheus sample: {text}")]
    NotASample { line: usize, text: String },
    #[error("line {line}: malformed label set: {labels}")]
    MalformedLabels { line: usize, labels: String },
    #[error("{name} has {count} series where exactly one was expected")]
    NotSingle { name: String, count: usize },
}

/// A parsed exposition: samples in text order, indexed by name.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    samples: Vec<Sample>,
    /// Distinct names in first-seen order, each with the indexes of its samples.
    names: Vec<String>,
    by_name: HashMap<String, Vec<usize>, BuildHasherDefault<FxHasher>>,
}

/// The multiply-rotate hash of rustc (FxHash): metric names are not attacker-chosen keys that
/// need SipHash, and hashing every sample's name is a visible share of parsing time.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    #[allow(clippy::expect_used, reason = "chunks_exact(8) yields 8-byte chunks")]
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl Metrics {
    /// Parses exposition text. Comment, `# HELP` and `# TYPE` lines are skipped, labels are
    /// unescaped and sorted, timestamps are ignored; the first malformed line is an error.
    pub fn parse(text: &str) -> Result<Metrics, PromError> {
        let mut m = Metrics::default();
        // A /metrics text is about two thirds sample lines of ~110 bytes.
        m.samples.reserve(text.len() / 128);
        let mut scratch = Vec::new();
        for (i, raw) in text.split('\n').enumerate() {
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            let body = line.trim_start_matches([' ', '\t']);
            if body.is_empty() || body.starts_with('#') {
                continue;
            }
            let sample = parse_sample(body, i + 1, &mut scratch)?;
            m.push(sample);
        }
        Ok(m)
    }

    /// Builds metrics from samples (for tests and synthetic data); labels are sorted here.
    pub fn from_samples(samples: impl IntoIterator<Item = Sample>) -> Metrics {
        let mut m = Metrics::default();
        for mut s in samples {
            s.labels.sort_by(|a, b| a.0.cmp(&b.0));
            m.push(s);
        }
        m
    }

    fn push(&mut self, sample: Sample) {
        let idx = self.samples.len();
        match self.by_name.get_mut(sample.name.as_str()) {
            Some(v) => v.push(idx),
            None => {
                self.names.push(sample.name.clone());
                self.by_name.insert(sample.name.clone(), vec![idx]);
            }
        }
        self.samples.push(sample);
    }

    /// Every sample, in text order.
    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    pub fn len(&self) -> usize {
        self.samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Distinct metric names, in first-seen order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    pub fn has(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    fn of(&self, name: &str) -> impl Iterator<Item = &Sample> {
        self.by_name
            .get(name)
            .into_iter()
            .flatten()
            .map(move |&i| &self.samples[i])
    }

    /// This reading's sample of `sample`'s series (its name and exactly its labels); the last
    /// one where a text repeats a series, as a later line overwrites an earlier.
    pub fn same_series(&self, sample: &Sample) -> Option<&Sample> {
        self.of(&sample.name)
            .filter(|s| s.labels == sample.labels)
            .last()
    }

    /// The samples of `name` whose labels include all the given pairs.
    pub fn series(&self, name: &str, labels: &[(&str, &str)]) -> Vec<&Sample> {
        self.positions(name, labels)
            .map(|i| &self.samples[i])
            .collect()
    }

    /// Where in [`Metrics::samples`] the samples of `name` with the given pairs are, in order
    /// (Python's `prom.Metrics` hands back its own `Sample` objects by these).
    pub fn positions<'a>(
        &'a self,
        name: &str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = usize> + 'a {
        self.by_name
            .get(name)
            .into_iter()
            .flatten()
            .copied()
            .filter(move |&i| self.samples[i].matches(labels))
    }

    /// The sum over every label set of `name`; None when the name is absent (never 0).
    pub fn total(&self, name: &str) -> Option<f64> {
        self.total_where(name, &[])
    }

    /// The sum over the label sets of `name` that carry the given pairs; None when none does.
    ///
    /// The sum is exact, then rounded once (Shewchuk's partials, as Python's `math.fsum`, which
    /// inferlint 0.3.1's `Metrics.total` used): a data-parallel server's per-engine counters sum
    /// to the same number whatever their order, and the CLI and Python agree to the last bit.
    /// With an infinity or NaN among the values the plain sum answers (inf or NaN), where
    /// partials have no meaning.
    pub fn total_where(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let mut values = self.of(name).filter(|s| s.matches(labels)).map(|s| s.value);
        let first = values.next()?;
        let Some(second) = values.next() else {
            return Some(first);
        };
        let values: Vec<f64> = [first, second].into_iter().chain(values).collect();
        if values.iter().all(|v| v.is_finite()) {
            Some(fsum::FSum::with_all(&values).value())
        } else {
            Some(values.iter().sum())
        }
    }

    /// The value of the only series of `name` that carries the given pairs: None when none
    /// does, [`PromError::NotSingle`] when several do.
    pub fn single_where(
        &self,
        name: &str,
        labels: &[(&str, &str)],
    ) -> Result<Option<f64>, PromError> {
        let found = self.series(name, labels);
        match found.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one.value)),
            many => Err(PromError::NotSingle {
                name: name.to_string(),
                count: many.len(),
            }),
        }
    }

    /// The value of the only series of `name`; None when absent, an error when there are several.
    pub fn single(&self, name: &str) -> Result<Option<f64>, PromError> {
        self.single_where(name, &[])
    }

    /// The labels of an `_info` series (its first series when there are several).
    pub fn info_labels(&self, name: &str) -> Option<&[(String, String)]> {
        self.of(name).next().map(|s| s.labels.as_slice())
    }

    /// The value of label `key` on the `_info` series `name`.
    pub fn info_label(&self, name: &str, key: &str) -> Option<&str> {
        self.of(name).next().and_then(|s| s.label(key))
    }

    /// Distinct names starting with `prefix`, in first-seen order.
    pub fn names_with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a str> {
        self.names().filter(move |n| n.starts_with(prefix))
    }

    /// The `*_created` samples: the creation stamps the Prometheus client writes for each
    /// counter and histogram (they move when the server restarts).
    pub fn created_stamps(&self) -> impl Iterator<Item = &Sample> {
        self.samples.iter().filter(|s| s.name.ends_with("_created"))
    }

    /// The engine whose metric prefix the most series carry
    /// (docs/design/engines.md#auto-detection); None when no series has a known prefix.
    pub fn engine(&self) -> Option<Engine> {
        detect_from_metric_names(self.samples.iter().map(|s| s.name.as_str()))
    }
}

/// The part of a line shown in an error: enough to find it, never a whole megabyte.
fn excerpt(s: &str) -> String {
    crate::fmt::shorten(s, 161)
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b':'
}

fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b':'
}

fn is_label_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_label_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Parses `name{labels} value [timestamp]` (leading blanks already removed).
/// `scratch` collects the labels, which then move into a vector of exactly their number.
fn parse_sample(
    line: &str,
    lineno: usize,
    scratch: &mut Vec<(String, String)>,
) -> Result<Sample, PromError> {
    let not_sample = || PromError::NotASample {
        line: lineno,
        text: excerpt(line),
    };
    let b = line.as_bytes();
    if b.is_empty() || !is_name_start(b[0]) {
        return Err(not_sample());
    }
    let mut i = 1;
    while i < b.len() && is_name_char(b[i]) {
        i += 1;
    }
    let name = &line[..i];
    let mut labels = Vec::new();
    if i < b.len() && b[i] == b'{' {
        scratch.clear();
        let end = parse_labels(line, i, scratch).ok_or_else(|| {
            let close = line[i..].find('}').map_or(line.len(), |p| i + p + 1);
            PromError::MalformedLabels {
                line: lineno,
                labels: excerpt(&line[i..close]),
            }
        })?;
        labels = Vec::with_capacity(scratch.len());
        labels.append(scratch);
        i = end;
    }
    // The value: one or more blanks, then a float.
    if i >= b.len() || !is_blank(b[i]) {
        return Err(not_sample());
    }
    while i < b.len() && is_blank(b[i]) {
        i += 1;
    }
    let start = i;
    while i < b.len() && !is_blank(b[i]) {
        i += 1;
    }
    let value = parse_value(&line[start..i]).ok_or_else(not_sample)?;
    // An optional timestamp (ignored), then optionally an OpenMetrics exemplar (`# {...} v`).
    while i < b.len() && is_blank(b[i]) {
        i += 1;
    }
    if i < b.len() && b[i] != b'#' {
        let start = i;
        while i < b.len() && !is_blank(b[i]) {
            i += 1;
        }
        parse_value(&line[start..i]).ok_or_else(not_sample)?;
        while i < b.len() && is_blank(b[i]) {
            i += 1;
        }
    }
    if i < b.len() && b[i] != b'#' {
        return Err(not_sample());
    }
    if labels.len() > 1 && !labels.windows(2).all(|w| w[0].0 <= w[1].0) {
        labels.sort_by(|a, b| a.0.cmp(&b.0));
    }
    Ok(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// Parses `{k="v",...}` starting at `open` (the `{`) into `labels`; returns the index after `}`.
fn parse_labels(line: &str, open: usize, labels: &mut Vec<(String, String)>) -> Option<usize> {
    let b = line.as_bytes();
    let mut i = open + 1;
    loop {
        while i < b.len() && is_blank(b[i]) {
            i += 1;
        }
        if i >= b.len() {
            return None;
        }
        if b[i] == b'}' {
            return Some(i + 1);
        }
        if !is_label_start(b[i]) {
            return None;
        }
        let key_start = i;
        while i < b.len() && is_label_char(b[i]) {
            i += 1;
        }
        let key = &line[key_start..i];
        while i < b.len() && is_blank(b[i]) {
            i += 1;
        }
        if i >= b.len() || b[i] != b'=' {
            return None;
        }
        i += 1;
        while i < b.len() && is_blank(b[i]) {
            i += 1;
        }
        if i >= b.len() || b[i] != b'"' {
            return None;
        }
        i += 1;
        let (value, end) = parse_quoted(line, i)?;
        labels.push((key.to_string(), value));
        i = end;
        while i < b.len() && is_blank(b[i]) {
            i += 1;
        }
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => return Some(i + 1),
            _ => return None,
        }
    }
}

/// Reads a label value after its opening quote; returns it unescaped and the index after the
/// closing quote. `\\`, `\"` and `\n` are decoded; other escapes are kept as written.
fn parse_quoted(line: &str, start: usize) -> Option<(String, usize)> {
    let b = line.as_bytes();
    let mut i = start;
    // Fast path: no escape before the closing quote.
    while i < b.len() && b[i] != b'"' && b[i] != b'\\' {
        i += 1;
    }
    if i < b.len() && b[i] == b'"' {
        return Some((line[start..i].to_string(), i + 1));
    }
    let mut out = String::with_capacity(i - start + 8);
    out.push_str(&line[start..i]);
    let mut run = i;
    while i < b.len() {
        match b[i] {
            b'"' => {
                out.push_str(&line[run..i]);
                return Some((out, i + 1));
            }
            b'\\' => {
                out.push_str(&line[run..i]);
                match b.get(i + 1) {
                    Some(b'\\') => out.push('\\'),
                    Some(b'"') => out.push('"'),
                    Some(b'n') => out.push('\n'),
                    Some(_) => {
                        // Unknown escape: keep the backslash; the next character follows as is.
                        out.push('\\');
                        i += 1;
                        run = i;
                        continue;
                    }
                    None => return None,
                }
                i += 2;
                run = i;
            }
            _ => i += 1,
        }
    }
    None
}

/// A sample value or timestamp: a float, or `NaN`, `+Inf`, `-Inf` (any case).
fn parse_value(s: &str) -> Option<f64> {
    if s.is_empty() {
        return None;
    }
    if let Ok(v) = s.parse::<f64>() {
        return Some(v);
    }
    // Rust already accepts inf/infinity/nan in any case; Go-style spellings need no more, but
    // Python's float() also takes underscores between digits, which no exporter writes.
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_is_none_never_zero() {
        let m = Metrics::parse("a 1\n").unwrap();
        assert_eq!(m.total("b"), None);
        assert_eq!(m.single("b"), Ok(None));
        assert_eq!(m.total_where("a", &[("x", "y")]), None);
        assert!(m.info_labels("b").is_none());
        assert!(!m.has("b"));
    }

    #[test]
    fn total_sums_label_sets() {
        let m = Metrics::parse("c{r=\"a\"} 3\nc{r=\"b\"} 2\n").unwrap();
        assert_eq!(m.total("c"), Some(5.0));
        assert_eq!(m.total_where("c", &[("r", "b")]), Some(2.0));
        assert_eq!(m.series("c", &[("r", "a")]).len(), 1);
    }

    #[test]
    fn total_is_exact_as_python_fsum() {
        // math.fsum([1e16, 1.0, -1e16, 0.1, 0.2]) == 1.3; a left-to-right sum gives 0.3000….
        let m = Metrics::parse(
            "c{r=\"a\"} 1e16\nc{r=\"b\"} 1\nc{r=\"c\"} -1e16\nc{r=\"d\"} 0.1\nc{r=\"e\"} 0.2\n",
        )
        .unwrap();
        assert_eq!(m.total("c"), Some(1.3));
        let inf = Metrics::parse("c{r=\"a\"} +Inf\nc{r=\"b\"} 1\n").unwrap();
        assert_eq!(inf.total("c"), Some(f64::INFINITY));
        let nan = Metrics::parse("c{r=\"a\"} NaN\nc{r=\"b\"} 1\n").unwrap();
        assert!(nan.total("c").is_some_and(f64::is_nan));
        assert_eq!(m.total("absent"), None);
    }

    #[test]
    fn same_series_matches_the_whole_label_set_and_takes_the_last_repeat() {
        let before = Metrics::parse("c_created{a=\"1\",b=\"2\"} 5\n").unwrap();
        let stamp = &before.samples()[0];
        let after = Metrics::parse(
            "c_created{a=\"1\"} 6\nc_created{a=\"1\",b=\"2\"} 7\nc_created{b=\"2\",a=\"1\"} 8\n",
        )
        .unwrap();
        assert_eq!(after.same_series(stamp).map(|s| s.value), Some(8.0));
        let fewer = Metrics::parse("c_created{a=\"1\"} 6\nd_created{a=\"1\",b=\"2\"} 7\n").unwrap();
        assert_eq!(fewer.same_series(stamp), None);
    }

    #[test]
    fn single_where_narrows_by_labels() {
        let m = Metrics::parse("g{e=\"0\"} 0.5\ng{e=\"1\"} 0.25\n").unwrap();
        assert_eq!(m.single_where("g", &[("e", "1")]), Ok(Some(0.25)));
        assert_eq!(m.single_where("g", &[("e", "2")]), Ok(None));
        assert!(m.single_where("g", &[]).is_err());
    }

    #[test]
    fn single_refuses_two_series() {
        let m = Metrics::parse("g{e=\"0\"} 0.5\ng{e=\"1\"} 0.25\nh 7\n").unwrap();
        assert_eq!(
            m.single("g"),
            Err(PromError::NotSingle {
                name: "g".into(),
                count: 2
            })
        );
        assert_eq!(m.single("h"), Ok(Some(7.0)));
    }

    #[test]
    fn info_labels_decode_escapes_and_sort() {
        let m =
            Metrics::parse(r#"x_info{z="1",a="a\"b,c=d",n="l1\nl2",s="back\\slash"} 1.0"#).unwrap();
        let labels = m.info_labels("x_info").unwrap();
        let keys: Vec<&str> = labels.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "n", "s", "z"]);
        assert_eq!(m.info_label("x_info", "a"), Some("a\"b,c=d"));
        assert_eq!(m.info_label("x_info", "n"), Some("l1\nl2"));
        assert_eq!(m.info_label("x_info", "s"), Some("back\\slash"));
    }

    #[test]
    fn special_values_and_timestamps() {
        let m = Metrics::parse(
            "a NaN\nb +Inf\nc -Inf\nd 1.5e+09 1712345678901\nh_bucket{le=\"+Inf\"} 4.0\n",
        )
        .unwrap();
        assert!(m.total("a").unwrap().is_nan());
        assert_eq!(m.total("b"), Some(f64::INFINITY));
        assert_eq!(m.total("c"), Some(f64::NEG_INFINITY));
        assert_eq!(m.total("d"), Some(1.5e9));
        assert_eq!(m.series("h_bucket", &[("le", "+Inf")])[0].value, 4.0);
    }

    #[test]
    fn comments_blank_lines_crlf_and_trailing_comma() {
        let m = Metrics::parse("# HELP a x\r\n# TYPE a counter\r\n\r\n  a{k=\"v\",} 2\r\n# EOF\n")
            .unwrap();
        assert_eq!(m.total_where("a", &[("k", "v")]), Some(2.0));
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn malformed_lines_are_errors_naming_the_line() {
        let e = Metrics::parse("a 1\nthis is not\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2: not a Prometheus sample: this is not"
        );
        let e = Metrics::parse("a 1\nb{x=1} 2\n").unwrap_err();
        assert_eq!(e.to_string(), "line 2: malformed label set: {x=1}");
        for bad in [
            "a",
            "a b",
            "a{x=\"1\"}",
            "a{x=\"1\" 2",
            "a{x=\"1} 2",
            "a 1 2 3",
            "a 1 zz",
            "{x=\"1\"} 2",
            "9a 1",
            "a{x=\"1\"\"} 2",
            "a{=\"1\"} 2",
        ] {
            assert!(Metrics::parse(bad).is_err(), "{bad:?} should be an error");
        }
    }

    #[test]
    fn names_keep_first_seen_order_and_prefix_filter() {
        let m = Metrics::parse("vllm:b 1\nvllm:a 1\nvllm:b 2\npython_x 1\n").unwrap();
        assert_eq!(
            m.names().collect::<Vec<_>>(),
            ["vllm:b", "vllm:a", "python_x"]
        );
        assert_eq!(
            m.names_with_prefix("vllm:").collect::<Vec<_>>(),
            ["vllm:b", "vllm:a"]
        );
        assert_eq!(m.engine(), Some(Engine::Vllm));
    }

    #[test]
    fn never_panics_on_odd_bytes() {
        for s in [
            "a{",
            "a{x",
            "a{x=",
            "a{x=\"",
            "a{x=\"\\",
            "é 1",
            "a{x=\"é\\é\"} 1",
            "a\u{0}1",
            "a{x=\"1\"}",
            "\u{feff}a 1",
        ] {
            let _ = Metrics::parse(s);
        }
    }
}
