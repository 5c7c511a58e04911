//! Python literals as servers print them (`repr` of a dict of settings) read into JSON values.
//!
//! vLLM prints its `non-default args` and SGLang its `server_args` with Python's `repr`. A value
//! that is not a literal (`<Enum.X: 1>`, `PosixPath('/m')`) is kept as its source text, so a newer
//! release that prints an object where a string used to be still parses; a dict cut short does not.

use serde_json::{Map, Number, Value};

/// Why a literal did not parse (the byte offset is into the text given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at byte {at}")]
pub struct LiteralError {
    pub what: &'static str,
    pub at: usize,
}

/// Parses a whole Python dict literal (trailing whitespace allowed, nothing else after it).
pub fn parse_dict(text: &str) -> Result<Map<String, Value>, LiteralError> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    p.ws();
    if p.peek() != Some(b'{') {
        return Err(p.err("expected '{'"));
    }
    let v = p.value()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("text after the closing brace"));
    }
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(LiteralError {
            what: "a set, not a dict",
            at: 0,
        }),
    }
}

/// Parses one Python literal value.
pub fn parse_value(text: &str) -> Result<Value, LiteralError> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    p.ws();
    let v = p.value()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("text after the value"));
    }
    Ok(v)
}

/// Nesting deeper than this is refused (hostile input must not overflow the stack).
const MAX_DEPTH: usize = 64;

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn err(&self, what: &'static str) -> LiteralError {
        LiteralError { what, at: self.i }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn value(&mut self) -> Result<Value, LiteralError> {
        self.ws();
        let Some(c) = self.peek() else {
            return Err(self.err("unexpected end"));
        };
        match c {
            b'{' => self.nested(|p| p.dict_or_set()),
            b'[' => self.nested(|p| p.sequence(b']')),
            b'(' => self.nested(|p| p.sequence(b')')),
            b'\'' | b'"' => self.string().map(Value::String),
            b'<' => self.angle().map(Value::String),
            b'-' | b'+' | b'.' | b'0'..=b'9' => self.number(),
            c if c == b'_' || c.is_ascii_alphabetic() => self.word(),
            _ => Err(self.err("unexpected character")),
        }
    }

    fn nested(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<Value, LiteralError>,
    ) -> Result<Value, LiteralError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        self.depth += 1;
        let v = f(self);
        self.depth -= 1;
        v
    }

    fn dict_or_set(&mut self) -> Result<Value, LiteralError> {
        self.i += 1; // '{'
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(Value::Object(Map::new()));
        }
        let first = self.value()?;
        self.ws();
        if self.peek() != Some(b':') {
            // A set: `{1, 2}`.
            let mut items = vec![first];
            self.rest_of_sequence(&mut items, b'}')?;
            return Ok(Value::Array(items));
        }
        let mut map = Map::new();
        let mut key = first;
        loop {
            self.ws();
            if self.peek() != Some(b':') {
                return Err(self.err("expected ':'"));
            }
            self.i += 1;
            let v = self.value()?;
            map.insert(key_string(key), v);
            self.ws();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                        return Ok(Value::Object(map));
                    }
                    key = self.value()?;
                }
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Object(map));
                }
                None => return Err(self.err("dict not closed")),
                _ => return Err(self.err("expected ',' or '}'")),
            }
        }
    }

    fn sequence(&mut self, close: u8) -> Result<Value, LiteralError> {
        self.i += 1; // '[' or '('
        let mut items = Vec::new();
        self.ws();
        if self.peek() == Some(close) {
            self.i += 1;
            return Ok(Value::Array(items));
        }
        items.push(self.value()?);
        self.rest_of_sequence(&mut items, close)?;
        Ok(Value::Array(items))
    }

    fn rest_of_sequence(&mut self, items: &mut Vec<Value>, close: u8) -> Result<(), LiteralError> {
        loop {
            self.ws();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                    if self.peek() == Some(close) {
                        self.i += 1;
                        return Ok(());
                    }
                    items.push(self.value()?);
                }
                Some(c) if c == close => {
                    self.i += 1;
                    return Ok(());
                }
                None => return Err(self.err("not closed")),
                _ => return Err(self.err("expected ','")),
            }
        }
    }

    fn string(&mut self) -> Result<String, LiteralError> {
        let quote = self.s[self.i];
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err("string not closed"));
            };
            self.i += 1;
            if c == quote {
                break;
            }
            if c != b'\\' {
                out.push(c);
                continue;
            }
            let Some(e) = self.peek() else {
                return Err(self.err("string not closed"));
            };
            self.i += 1;
            match e {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'0' => out.push(0),
                b'\\' | b'\'' | b'"' => out.push(e),
                b'x' => {
                    let ch = self.hex(2)?;
                    push_char(&mut out, ch);
                }
                b'u' => {
                    let ch = self.hex(4)?;
                    push_char(&mut out, ch);
                }
                b'U' => {
                    let ch = self.hex(8)?;
                    push_char(&mut out, ch);
                }
                other => {
                    out.push(b'\\');
                    out.push(other);
                }
            }
        }
        // The input is a &str, and escapes push whole characters, so this cannot fail.
        String::from_utf8(out).map_err(|_| self.err("invalid text in a string"))
    }

    fn hex(&mut self, n: usize) -> Result<u32, LiteralError> {
        let end = self.i + n;
        let digits = self
            .s
            .get(self.i..end)
            .and_then(|d| std::str::from_utf8(d).ok())
            .ok_or_else(|| self.err("short escape"))?;
        let v = u32::from_str_radix(digits, 16).map_err(|_| self.err("bad escape"))?;
        self.i = end;
        Ok(v)
    }

    /// `<CompilationMode.NONE: 0>`: an object's repr, kept as text.
    fn angle(&mut self) -> Result<String, LiteralError> {
        let start = self.i;
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                b'<' => depth += 1,
                b'>' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(self.text(start));
                    }
                }
                b'\'' | b'"' => {
                    self.i -= 1;
                    self.string()?;
                }
                _ => {}
            }
        }
        Err(self.err("'<' not closed"))
    }

    fn number(&mut self) -> Result<Value, LiteralError> {
        let start = self.i;
        while let Some(c) = self.peek() {
            let exp_sign = (c == b'-' || c == b'+')
                && self.i > start
                && matches!(self.s[self.i - 1], b'e' | b'E');
            if c.is_ascii_digit()
                || c == b'.'
                || c == b'_'
                || c == b'e'
                || c == b'E'
                || exp_sign
                || (self.i == start && (c == b'-' || c == b'+'))
            {
                self.i += 1;
            } else {
                break;
            }
        }
        let raw: String = self.text(start).replace('_', "");
        if let Ok(n) = raw.parse::<i64>() {
            return Ok(Value::Number(n.into()));
        }
        if let Ok(n) = raw.parse::<u64>() {
            return Ok(Value::Number(n.into()));
        }
        // `-inf` is not a literal, but a signed word may follow: `-inf` → string.
        if (raw == "-" || raw == "+") && self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            let w = self.word()?;
            return Ok(Value::String(format!("{raw}{}", display_word(&w))));
        }
        match raw.parse::<f64>() {
            Ok(f) => Ok(Number::from_f64(f)
                .map(Value::Number)
                .unwrap_or(Value::String(raw))),
            Err(_) => Err(LiteralError {
                what: "not a number",
                at: start,
            }),
        }
    }

    /// `True`, `None`, a string prefix (`b'…'`, `r"…"`), or a name with an optional call
    /// (`PosixPath('/m')`, `torch.bfloat16`) kept as text.
    fn word(&mut self) -> Result<Value, LiteralError> {
        let start = self.i;
        while let Some(c) = self.peek() {
            if c == b'_' || c == b'.' || c.is_ascii_alphanumeric() {
                self.i += 1;
            } else {
                break;
            }
        }
        let w = self.text(start);
        if matches!(self.peek(), Some(b'\'' | b'"'))
            && w.len() <= 2
            && w.chars().all(|c| "rRbBuUfF".contains(c))
        {
            return self.string().map(Value::String);
        }
        match w.as_str() {
            "True" => return Ok(Value::Bool(true)),
            "False" => return Ok(Value::Bool(false)),
            "None" => return Ok(Value::Null),
            _ => {}
        }
        if self.peek() == Some(b'(') {
            self.nested(|p| p.sequence(b')'))?;
            return Ok(Value::String(self.text(start)));
        }
        Ok(Value::String(w))
    }

    fn text(&self, start: usize) -> String {
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }
}

fn display_word(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn push_char(out: &mut Vec<u8>, code: u32) {
    let ch = char::from_u32(code).unwrap_or('\u{FFFD}');
    let mut buf = [0u8; 4];
    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
}

/// A dict key as JSON object key: strings as they are, anything else as its JSON text.
fn key_string(v: Value) -> String {
    match v {
        Value::String(s) => s,
        Value::Null => "None".to_string(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_vllm_non_default_args() {
        let m = parse_dict("{'model_tag': '/m', 'max_model_len': 16384, 'enforce_eager': True, 'served_model_name': ['qwen38'], 'gpu_memory_utilization': 0.93, 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 3}}").unwrap();
        assert_eq!(m["max_model_len"], 16384);
        assert_eq!(m["enforce_eager"], true);
        assert_eq!(m["served_model_name"], json!(["qwen38"]));
        assert_eq!(m["gpu_memory_utilization"], 0.93);
        assert_eq!(m["speculative_config"]["num_speculative_tokens"], 3);
        let keys: Vec<&String> = m.keys().collect();
        assert_eq!(keys[0], "model_tag", "order of the log is kept");
    }

    #[test]
    fn keeps_floats_exact_and_objects_as_text() {
        let m = parse_dict(
            "{'f': 0.6510349999999999, 'e': 1e-05, 'n': None, 'mode': <CompilationMode.NONE: 0>, 'p': PosixPath('/a, b'), 't': (1, 2), 's': {3}, 'q': \"it's\", 'neg': -2}",
        )
        .unwrap();
        assert_eq!(m["f"].to_string(), "0.6510349999999999");
        assert_eq!(m["e"], 1e-5);
        assert_eq!(m["n"], Value::Null);
        assert_eq!(m["mode"], "<CompilationMode.NONE: 0>");
        assert_eq!(m["p"], "PosixPath('/a, b')");
        assert_eq!(m["t"], json!([1, 2]));
        assert_eq!(m["s"], json!([3]));
        assert_eq!(m["q"], "it's");
        assert_eq!(m["neg"], -2);
    }

    #[test]
    fn a_dict_cut_short_is_an_error() {
        assert!(parse_dict("{'a': 1, 'b': [1, 2").is_err());
        assert!(parse_dict("{'a': 'unterminated").is_err());
        assert!(parse_dict("{'a': 1} trailing").is_err());
        assert!(parse_dict("").is_err());
        let deep = "[".repeat(10_000);
        assert!(
            parse_value(&deep).is_err(),
            "deep nesting is refused, not a crash"
        );
    }

    #[test]
    fn escapes() {
        assert_eq!(
            parse_value(r"'a\nb\x41\u00e9\\'").unwrap(),
            json!("a\nbA\u{e9}\\")
        );
        assert_eq!(
            parse_value("{1: 'x', None: 2}").unwrap(),
            json!({"1": "x", "None": 2})
        );
    }
}
