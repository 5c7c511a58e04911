//! Prometheus text exposition as Python's `prometheus_client` writes it (version 0.20–0.26,
//! default registry): alphabetical labels in every sample, counters as `_total` plus a separate
//! `_created` gauge family, histogram buckets then `_count` then `_sum`, and floats formatted by
//! `floatToGoString` (Python `repr`, switched to an exponent past six integer digits).

use std::fmt::Write;

/// Python's `repr(float)`: the shortest digits that round-trip, fixed notation for exponents in
/// [-4, 16), else `d.ddde±XX`; integral values keep a `.0`.
pub fn py_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // Rust's `{:e}` prints the shortest round-trip digits: "1.795961685840465e9".
    let e = format!("{:e}", x.abs());
    #[allow(
        clippy::expect_used,
        reason = "Rust's `{:e}` of a finite float always writes `<mantissa>e<integer>`"
    )]
    let (mant, exp): (&str, i32) = {
        let (mant, exp) = e.split_once('e').expect("LowerExp has an exponent");
        (mant, exp.parse().expect("exponent is an integer"))
    };
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let sign = if x < 0.0 { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        let body = if exp >= 0 {
            let int_len = exp + 1;
            if n <= int_len {
                format!("{}{}.0", digits, "0".repeat((int_len - n) as usize))
            } else {
                format!(
                    "{}.{}",
                    &digits[..int_len as usize],
                    &digits[int_len as usize..]
                )
            }
        } else {
            format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
        };
        format!("{sign}{body}")
    } else {
        let m = if digits.len() == 1 {
            digits.clone()
        } else {
            format!("{}.{}", &digits[..1], &digits[1..])
        };
        let es = if exp < 0 { "-" } else { "+" };
        format!("{sign}{m}e{es}{:02}", exp.abs())
    }
}

/// prometheus_client's `floatToGoString`.
pub fn go_float(x: f64) -> String {
    if x == f64::INFINITY {
        return "+Inf".into();
    }
    if x == f64::NEG_INFINITY {
        return "-Inf".into();
    }
    if x.is_nan() {
        return "NaN".into();
    }
    let s = py_repr(x);
    if x > 0.0 {
        if let Some(dot) = s.find('.') {
            if dot > 6 {
                let mantissa = format!("{}.{}{}", &s[..1], &s[1..dot], &s[dot + 1..]);
                let mantissa = mantissa.trim_end_matches(['0', '.']);
                // Two exponent digits at least, as the recorded scrapes print them
                // (`process_virtual_memory_bytes 7.4927947776e+10` in vllm-0.28/live).
                return format!("{mantissa}e+{:02}", dot - 1);
            }
        }
    }
    s
}

fn escape_label(v: &str) -> String {
    v.replace('\\', r"\\")
        .replace('\n', r"\n")
        .replace('"', "\\\"")
}

fn escape_help(v: &str) -> String {
    v.replace('\\', r"\\").replace('\n', r"\n")
}

#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Counter,
    Gauge,
    /// Bucket upper bounds, without +Inf.
    Histogram(Vec<f64>),
    Summary,
}

#[derive(Clone, Debug)]
pub struct Child {
    pub label_values: Vec<String>,
    /// Counter or gauge value.
    pub value: f64,
    pub count: u64,
    pub sum: f64,
    /// Histogram: observations per bucket (not cumulative), the last one is +Inf.
    pub buckets: Vec<u64>,
    pub created: f64,
}

/// One metric family with its children in creation order.
#[derive(Clone, Debug)]
pub struct Family {
    /// The registered name without a counter's `_total`.
    pub name: String,
    pub help: String,
    pub kind: Kind,
    pub label_names: Vec<String>,
    pub children: Vec<Child>,
}

impl Family {
    pub fn new(name: &str, help: &str, kind: Kind, label_names: &[&str]) -> Family {
        // prometheus_client strips a counter's `_total` and adds it back on the wire.
        let name = if kind == Kind::Counter {
            name.trim_end_matches("_total")
        } else {
            name
        };
        Family {
            name: name.to_string(),
            help: help.to_string(),
            kind,
            label_names: label_names.iter().map(|s| s.to_string()).collect(),
            children: Vec::new(),
        }
    }

    /// The child with these label values (in `label_names` order), created now if new.
    pub fn child(&mut self, values: &[&str], now_unix: f64) -> &mut Child {
        if let Some(i) = self.children.iter().position(|c| {
            c.label_values
                .iter()
                .map(String::as_str)
                .eq(values.iter().copied())
        }) {
            return &mut self.children[i];
        }
        let nb = match &self.kind {
            Kind::Histogram(b) => b.len() + 1,
            _ => 0,
        };
        self.children.push(Child {
            label_values: values.iter().map(|s| s.to_string()).collect(),
            value: 0.0,
            count: 0,
            sum: 0.0,
            buckets: vec![0; nb],
            created: now_unix,
        });
        let last = self.children.len() - 1;
        &mut self.children[last]
    }

    /// Records one observation in a histogram or summary child.
    pub fn observe(&mut self, values: &[&str], x: f64, now_unix: f64) {
        let bounds = match &self.kind {
            Kind::Histogram(b) => Some(b.clone()),
            _ => None,
        };
        let c = self.child(values, now_unix);
        c.count += 1;
        c.sum += x;
        if let Some(b) = bounds {
            let i = b.iter().position(|&le| x <= le).unwrap_or(b.len());
            c.buckets[i] += 1;
        }
    }

    pub(crate) fn labels(&self, c: &Child, extra: Option<(&str, &str)>) -> String {
        let mut pairs: Vec<(&str, String)> = self
            .label_names
            .iter()
            .map(String::as_str)
            .zip(c.label_values.iter().map(|v| escape_label(v)))
            .collect();
        if let Some((k, v)) = extra {
            pairs.push((k, v.to_string()));
        }
        if pairs.is_empty() {
            return String::new();
        }
        pairs.sort_by(|a, b| a.0.cmp(b.0));
        let inner: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        format!("{{{}}}", inner.join(","))
    }

    /// The family in prometheus_client's multiprocess order (SGLang's and TensorRT-LLM's
    /// collectors): no `_created`, a histogram's `_sum` before its buckets and `_count`;
    /// nothing when it has no sample.
    pub fn render_multiprocess(&self, out: &mut String) {
        let f = self;
        if f.children.is_empty() {
            return;
        }
        let n = &f.name;
        let help = f.help.replace('\\', r"\\").replace('\n', r"\n");
        let (shown, kind) = match f.kind {
            Kind::Counter => (format!("{n}_total"), "counter"),
            Kind::Histogram(_) => (n.clone(), "histogram"),
            _ => (n.clone(), "gauge"),
        };
        let _ = writeln!(out, "# HELP {shown} {help}\n# TYPE {shown} {kind}");
        for c in &f.children {
            let l = f.labels(c, None);
            let Kind::Histogram(bounds) = &f.kind else {
                let _ = writeln!(out, "{shown}{l} {}", go_float(c.value));
                continue;
            };
            let _ = writeln!(out, "{n}_sum{l} {}", go_float(c.sum));
            let mut cum = 0;
            for (i, b) in c.buckets.iter().enumerate() {
                cum += b;
                let le = bounds
                    .get(i)
                    .map_or_else(|| "+Inf".to_string(), |x| go_float(*x));
                let lb = f.labels(c, Some(("le", &le)));
                let _ = writeln!(out, "{n}_bucket{lb} {}", go_float(cum as f64));
            }
            let _ = writeln!(out, "{n}_count{l} {}", go_float(c.count as f64));
        }
    }

    /// Appends the family's text; `created` adds the `_created` families (single API server).
    pub fn render(&self, out: &mut String, created: bool) {
        let help = escape_help(&self.help);
        let n = &self.name;
        match &self.kind {
            Kind::Counter => {
                let _ = writeln!(out, "# HELP {n}_total {help}\n# TYPE {n}_total counter");
                for c in &self.children {
                    let _ = writeln!(
                        out,
                        "{n}_total{} {}",
                        self.labels(c, None),
                        go_float(c.value)
                    );
                }
            }
            Kind::Gauge => {
                let _ = writeln!(out, "# HELP {n} {help}\n# TYPE {n} gauge");
                for c in &self.children {
                    let _ = writeln!(out, "{n}{} {}", self.labels(c, None), go_float(c.value));
                }
                return;
            }
            Kind::Histogram(bounds) => {
                let _ = writeln!(out, "# HELP {n} {help}\n# TYPE {n} histogram");
                for c in &self.children {
                    let mut cum = 0;
                    for (i, b) in c.buckets.iter().enumerate() {
                        cum += b;
                        let le = bounds
                            .get(i)
                            .map_or_else(|| "+Inf".to_string(), |x| go_float(*x));
                        let _ = writeln!(
                            out,
                            "{n}_bucket{} {}",
                            self.labels(c, Some(("le", &le))),
                            go_float(cum as f64)
                        );
                    }
                    let l = self.labels(c, None);
                    let _ = writeln!(
                        out,
                        "{n}_count{l} {}\n{n}_sum{l} {}",
                        go_float(c.count as f64),
                        go_float(c.sum)
                    );
                }
            }
            Kind::Summary => {
                let _ = writeln!(out, "# HELP {n} {help}\n# TYPE {n} summary");
                for c in &self.children {
                    let l = self.labels(c, None);
                    let _ = writeln!(
                        out,
                        "{n}_count{l} {}\n{n}_sum{l} {}",
                        go_float(c.count as f64),
                        go_float(c.sum)
                    );
                }
            }
        }
        if created {
            let _ = writeln!(out, "# HELP {n}_created {help}\n# TYPE {n}_created gauge");
            for c in &self.children {
                let _ = writeln!(
                    out,
                    "{n}_created{} {}",
                    self.labels(c, None),
                    go_float(c.created)
                );
            }
        }
    }
}

/// vLLM's `build_1_2_5_buckets(max)`: 1, 2, 5, 10, 20, 50, … while ≤ max.
pub fn buckets_1_2_5(max: u32) -> Vec<f64> {
    let mut out = Vec::new();
    let mut exp = 1.0;
    loop {
        for m in [1.0, 2.0, 5.0] {
            let v = m * exp;
            if v > max as f64 {
                return out;
            }
            out.push(v);
        }
        exp *= 10.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_formatted_like_prometheus_client() {
        // Every value below appears in the engines' published sample scrapes or the recorded
        // 0.28 metrics.
        assert_eq!(go_float(0.0), "0.0");
        assert_eq!(go_float(10240.0), "10240.0");
        assert_eq!(go_float(0.95), "0.95");
        assert_eq!(go_float(1.0), "1.0");
        assert_eq!(go_float(16384.0), "16384.0");
        assert_eq!(go_float(1.795961685841185e9), "1.795961685841185e+09");
        assert_eq!(go_float(1.7904702340023353e9), "1.7904702340023353e+09");
        assert_eq!(go_float(1.79047011896e9), "1.79047011896e+09");
        assert_eq!(go_float(3.0019584e7), "3.0019584e+07");
        assert_eq!(go_float(7.4927947776e10), "7.4927947776e+10");
        assert_eq!(go_float(949.2443010807037), "949.2443010807037");
        assert_eq!(go_float(0.001), "0.001");
        assert_eq!(go_float(f64::INFINITY), "+Inf");
        assert_eq!(go_float(1e-05), "1e-05");
        assert_eq!(go_float(123456.0), "123456.0");
        assert_eq!(go_float(1234567.0), "1.234567e+06");
        assert_eq!(go_float(4.800000000000001), "4.800000000000001");
        assert_eq!(py_repr(1e16), "1e+16");
        assert_eq!(py_repr(1.5e-7), "1.5e-07");
        assert_eq!(py_repr(0.0001), "0.0001");
    }

    #[test]
    fn counters_render_total_and_created_with_sorted_labels() {
        let mut f = Family::new(
            "vllm:num_preemptions",
            "Cumulative number of preemption from the engine.",
            Kind::Counter,
            &["model_name", "engine"],
        );
        f.child(&["m", "0"], 1.7959616858404996e9).value = 22.0;
        let mut s = String::new();
        f.render(&mut s, true);
        assert_eq!(
            s,
            "# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.\n\
             # TYPE vllm:num_preemptions_total counter\n\
             vllm:num_preemptions_total{engine=\"0\",model_name=\"m\"} 22.0\n\
             # HELP vllm:num_preemptions_created Cumulative number of preemption from the engine.\n\
             # TYPE vllm:num_preemptions_created gauge\n\
             vllm:num_preemptions_created{engine=\"0\",model_name=\"m\"} 1.7959616858404996e+09\n"
        );
    }

    #[test]
    fn histograms_render_cumulative_buckets_then_count_then_sum() {
        let mut f = Family::new(
            "vllm:request_params_n",
            "Histogram of the n request parameter.",
            Kind::Histogram(vec![1.0, 2.0, 5.0, 10.0, 20.0]),
            &["model_name", "engine"],
        );
        f.observe(&["m", "0"], 1.0, 1.0);
        f.observe(&["m", "0"], 7.0, 1.0);
        f.observe(&["m", "0"], 70.0, 1.0);
        let mut s = String::new();
        f.render(&mut s, false);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[2],
            "vllm:request_params_n_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\"} 1.0"
        );
        assert_eq!(
            lines[5],
            "vllm:request_params_n_bucket{engine=\"0\",le=\"10.0\",model_name=\"m\"} 2.0"
        );
        assert_eq!(
            lines[7],
            "vllm:request_params_n_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 3.0"
        );
        assert_eq!(
            lines[8],
            "vllm:request_params_n_count{engine=\"0\",model_name=\"m\"} 3.0"
        );
        assert_eq!(
            lines[9],
            "vllm:request_params_n_sum{engine=\"0\",model_name=\"m\"} 78.0"
        );
        assert_eq!(lines.len(), 10);
    }

    #[test]
    fn label_values_are_escaped() {
        let mut f = Family::new("x_info", "h", Kind::Gauge, &["a"]);
        f.child(&["q\"b\\\n"], 0.0).value = 1.0;
        let mut s = String::new();
        f.render(&mut s, true);
        assert!(s.contains("x_info{a=\"q\\\"b\\\\\\n\"} 1.0"), "{s}");
        assert!(!s.contains("_created"), "gauges have no _created family");
    }

    #[test]
    fn one_two_five_buckets_stop_at_the_model_length() {
        assert_eq!(
            buckets_1_2_5(4096),
            vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0]
        );
        assert_eq!(*buckets_1_2_5(16384).last().unwrap(), 10000.0);
    }
}
