//! The outcome of one tripwire check: id, status, message and the evidence behind it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::evidence::Evidence;

/// The tripwires. Codes are permanent: a new one takes the next number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tripwire {
    T1,
    T2,
    T3,
    T4,
    T5,
    T6,
    T7,
    T8,
    T9,
    T10,
    T11,
    T12,
    T13,
    T14,
    T15,
    T16,
    T17,
    T18,
    T19,
    T20,
    T21,
    T22,
    T23,
    T24,
    T25,
    T26,
    T27,
}

impl Tripwire {
    pub const ALL: [Tripwire; 27] = [
        Tripwire::T1,
        Tripwire::T2,
        Tripwire::T3,
        Tripwire::T4,
        Tripwire::T5,
        Tripwire::T6,
        Tripwire::T7,
        Tripwire::T8,
        Tripwire::T9,
        Tripwire::T10,
        Tripwire::T11,
        Tripwire::T12,
        Tripwire::T13,
        Tripwire::T14,
        Tripwire::T15,
        Tripwire::T16,
        Tripwire::T17,
        Tripwire::T18,
        Tripwire::T19,
        Tripwire::T20,
        Tripwire::T21,
        Tripwire::T22,
        Tripwire::T23,
        Tripwire::T24,
        Tripwire::T25,
        Tripwire::T26,
        Tripwire::T27,
    ];

    /// The number after the `T`.
    pub fn number(self) -> u8 {
        self as u8 + 1
    }

    pub fn from_number(n: u8) -> Option<Tripwire> {
        Tripwire::ALL.get(usize::from(n).checked_sub(1)?).copied()
    }

    pub fn code(self) -> String {
        format!("T{}", self.number())
    }
}

impl fmt::Display for Tripwire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Padding applies to the whole code, so `{:>3}` gives ` T8`.
        f.pad(&self.code())
    }
}

impl FromStr for Tripwire {
    type Err = ();
    /// Accepts `T8` or `t8`.
    fn from_str(s: &str) -> Result<Self, ()> {
        let rest = s.strip_prefix(['T', 't']).ok_or(())?;
        if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
            return Err(());
        }
        Tripwire::from_number(rest.parse().map_err(|_| ())?).ok_or(())
    }
}

impl Serialize for Tripwire {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.code())
    }
}

impl<'de> Deserialize<'de> for Tripwire {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse()
            .map_err(|_| serde::de::Error::custom(format!("not a tripwire code: {s}")))
    }
}

/// A check's verdict. The declaration order is the report's order: failures first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Fail,
    Warn,
    Unknown,
    Pass,
    NotApplicable,
}

impl Status {
    /// The terminal label (`TRIPWIRE-FAILED`, never `FAIL`).
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Warn => "WARN",
            Status::Fail => "TRIPWIRE-FAILED",
            Status::Unknown => "????",
            Status::NotApplicable => "N/A",
        }
    }

    /// The JSON spelling.
    pub fn key(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Unknown => "unknown",
            Status::NotApplicable => "not_applicable",
        }
    }

    /// The report's plain-language name.
    pub fn display_name(self) -> &'static str {
        match self {
            Status::Pass => "Pass",
            Status::Warn => "Warning",
            Status::Fail => "Tripwire failed",
            Status::Unknown => "Can't tell",
            Status::NotApplicable => "Does not apply",
        }
    }

    /// PASS, WARN and N/A are "ok"; FAIL and UNKNOWN are not.
    pub fn is_ok(self) -> bool {
        matches!(self, Status::Pass | Status::Warn | Status::NotApplicable)
    }
}

impl Status {
    /// Every status, in the report's order (failures first).
    pub const ALL: [Status; 5] = [
        Status::Fail,
        Status::Warn,
        Status::Unknown,
        Status::Pass,
        Status::NotApplicable,
    ];

    /// The status whose JSON spelling ([`Status::key`]) is `key`.
    pub fn from_key(key: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.key() == key)
    }
}

/// One tripwire's result. Immutable once built; build with the constructors and
/// [`CheckResult::with_evidence`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckResult {
    pub tripwire: Tripwire,
    pub status: Status,
    pub message: String,
    pub evidence: Evidence,
}

/// Reads the evidence by the result's tripwire ([`Evidence::read`]), so `results.json` and
/// saved pages read back into the same structs the checks write.
impl<'de> Deserialize<'de> for CheckResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            tripwire: Tripwire,
            status: Status,
            message: String,
            #[serde(default)]
            evidence: Map<String, Value>,
        }
        let raw = Raw::deserialize(d)?;
        Ok(CheckResult {
            tripwire: raw.tripwire,
            status: raw.status,
            message: raw.message,
            evidence: Evidence::read(raw.tripwire, raw.evidence),
        })
    }
}

impl CheckResult {
    pub fn new(tripwire: Tripwire, status: Status, message: impl Into<String>) -> Self {
        CheckResult {
            tripwire,
            status,
            message: message.into(),
            evidence: Evidence::None,
        }
    }

    pub fn pass(t: Tripwire, message: impl Into<String>) -> Self {
        Self::new(t, Status::Pass, message)
    }
    pub fn warn(t: Tripwire, message: impl Into<String>) -> Self {
        Self::new(t, Status::Warn, message)
    }
    pub fn fail(t: Tripwire, message: impl Into<String>) -> Self {
        Self::new(t, Status::Fail, message)
    }
    pub fn unknown(t: Tripwire, message: impl Into<String>) -> Self {
        Self::new(t, Status::Unknown, message)
    }
    pub fn not_applicable(t: Tripwire, message: impl Into<String>) -> Self {
        Self::new(t, Status::NotApplicable, message)
    }

    /// Sets the evidence.
    pub fn with_evidence(mut self, evidence: impl Into<Evidence>) -> Self {
        self.evidence = evidence.into();
        self
    }

    /// The evidence that an input was missing (`{"missing_input": true}`).
    pub fn with_missing_input(mut self) -> Self {
        self.evidence = Evidence::MissingInput;
        self
    }

    /// Adds the label of the log the result came from (`check-log` with several logs).
    pub fn with_log(mut self, label: &str) -> Self {
        self.evidence.set_log(self.tripwire, label);
        self
    }

    /// The evidence as the JSON object `--json` prints.
    pub fn evidence_json(&self) -> Map<String, Value> {
        self.evidence.to_json()
    }

    /// Replaces the message, keeping everything else.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    pub fn is_ok(&self) -> bool {
        self.status.is_ok()
    }

    /// `[ T8] TRIPWIRE-FAILED  requested 32 concurrent, server never ran more than 10`. A T10
    /// PASS line adds what a whole-second timer would have said, from its evidence
    /// (docs/tripwires.md#t10-integer-second-timer): the message itself stays bare in JSON.
    pub fn line(&self) -> String {
        let note = crate::checks::t10::integer_second_note(self).unwrap_or_default();
        format!(
            "[{:>3}] {}  {}{note}",
            self.tripwire,
            self.status.label(),
            self.message
        )
    }

    /// Turns a result into an error: always on FAIL, on UNKNOWN unless `allow_unknown`, on WARN
    /// only when `allow_warn` is false, never on N/A.
    pub fn raise_for_status(
        &self,
        allow_unknown: bool,
        allow_warn: bool,
    ) -> Result<(), TripwireError> {
        let raise = match self.status {
            Status::Fail => true,
            Status::Unknown => !allow_unknown,
            Status::Warn => !allow_warn,
            Status::Pass | Status::NotApplicable => false,
        };
        if raise {
            Err(TripwireError(Box::new(self.clone())))
        } else {
            Ok(())
        }
    }
}

/// A result that was raised as an error: `[T1] TRIPWIRE-FAILED: 22 preemptions during the run`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("[{}] {}: {}", .0.tripwire, .0.status.label(), .0.message)]
pub struct TripwireError(pub Box<CheckResult>);

/// Serializes any value to JSON, writing non-finite floats as strings instead of failing.
pub fn to_json_value(value: impl Serialize) -> Value {
    serde_json::to_value(&value).unwrap_or_else(|_| Value::String("unrepresentable".into()))
}

/// A float as JSON: a number when finite, else its name as a string (`"NaN"`, `"inf"`).
pub fn json_f64(x: f64) -> Value {
    serde_json::Number::from_f64(x)
        .map(Value::Number)
        .unwrap_or_else(|| Value::String(crate::fmt::float_name(x)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_reads_back_from_its_key() {
        for s in Status::ALL {
            assert_eq!(Status::from_key(s.key()), Some(s));
        }
        assert_eq!(Status::from_key("FAIL"), None);
        let mut sorted = Status::ALL;
        sorted.sort();
        assert_eq!(sorted, Status::ALL, "ALL is the declaration order");
    }

    #[test]
    fn line_pads_the_code_to_three() {
        let r = CheckResult::fail(
            Tripwire::T8,
            "requested 32 concurrent, server never ran more than 10",
        );
        assert_eq!(
            r.line(),
            "[ T8] TRIPWIRE-FAILED  requested 32 concurrent, server never ran more than 10"
        );
        let r = CheckResult::pass(Tripwire::T14, "x");
        assert_eq!(r.line(), "[T14] PASS  x");
        assert_eq!(
            CheckResult::unknown(Tripwire::T1, "m").line(),
            "[ T1] ????  m"
        );
        assert_eq!(
            CheckResult::not_applicable(Tripwire::T14, "m").line(),
            "[T14] N/A  m"
        );
    }

    #[test]
    fn parses_codes() {
        assert_eq!("t15".parse::<Tripwire>(), Ok(Tripwire::T15));
        assert_eq!("T1".parse::<Tripwire>(), Ok(Tripwire::T1));
        assert_eq!("T21".parse::<Tripwire>(), Ok(Tripwire::T21));
        assert_eq!("T27".parse::<Tripwire>(), Ok(Tripwire::T27));
        assert!("T28".parse::<Tripwire>().is_err());
        assert!("T0".parse::<Tripwire>().is_err());
        assert!("T".parse::<Tripwire>().is_err());
        assert!("8".parse::<Tripwire>().is_err());
    }

    #[test]
    fn raise_for_status_follows_the_rules() {
        let fail = CheckResult::fail(Tripwire::T1, "22 preemptions during the run");
        let err = fail.raise_for_status(true, true).unwrap_err();
        assert_eq!(
            err.to_string(),
            "[T1] TRIPWIRE-FAILED: 22 preemptions during the run"
        );
        let unknown = CheckResult::unknown(Tripwire::T1, "m");
        assert!(unknown.raise_for_status(false, true).is_err());
        assert!(unknown.raise_for_status(true, true).is_ok());
        let warn = CheckResult::warn(Tripwire::T5, "m");
        assert!(warn.raise_for_status(false, true).is_ok());
        assert!(warn.raise_for_status(false, false).is_err());
        let na = CheckResult::not_applicable(Tripwire::T14, "m");
        assert!(na.raise_for_status(false, false).is_ok());
    }

    #[test]
    fn json_shape_and_non_finite_values() {
        let r =
            CheckResult::pass(Tripwire::T10, "ok").with_evidence(crate::evidence::T10Evidence {
                rate_per_s: Some(f64::NAN.into()),
                tokens: Some(3.0),
                ..Default::default()
            });
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["tripwire"], "T10");
        assert_eq!(v["status"], "pass");
        assert_eq!(v["evidence"]["tokens"], 3.0);
        assert_eq!(v["evidence"]["rate_per_s"], "NaN");
        assert_eq!(json_f64(f64::NAN), Value::String("NaN".into()));
        assert_eq!(json_f64(f64::INFINITY), Value::String("inf".into()));
    }
}
