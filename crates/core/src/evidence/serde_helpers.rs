//! The number formats evidence has always had, as types.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A float that stays a float in JSON when finite, and is written by name (`"NaN"`, `"inf"`,
/// `"-inf"`) when not, so a non-finite value is told apart from a missing one (`null`).
#[derive(Clone, Copy, Debug)]
pub struct JsonF64(pub f64);

impl PartialEq for JsonF64 {
    /// NaN equals NaN here: two results that both say "NaN" say the same.
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0 || (self.0.is_nan() && other.0.is_nan())
    }
}

impl From<f64> for JsonF64 {
    fn from(x: f64) -> Self {
        JsonF64(x)
    }
}

impl Serialize for JsonF64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            s.serialize_f64(self.0)
        } else {
            s.serialize_str(&crate::fmt::float_name(self.0))
        }
    }
}

impl<'de> Deserialize<'de> for JsonF64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Name(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(x) => Ok(JsonF64(x)),
            Raw::Name(n) => match n.as_str() {
                "NaN" => Ok(JsonF64(f64::NAN)),
                "inf" => Ok(JsonF64(f64::INFINITY)),
                "-inf" => Ok(JsonF64(f64::NEG_INFINITY)),
                _ => Err(serde::de::Error::custom(format!("not a number: {n}"))),
            },
        }
    }
}

/// A count as its source gave it: a counter's difference is a float (`22.0`), a count of log
/// lines a whole number (`22`); the JSON keeps the difference.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Count {
    Whole(u64),
    Float(f64),
}

impl Count {
    pub fn as_f64(self) -> f64 {
        match self {
            Count::Whole(n) => n as f64,
            Count::Float(x) => x,
        }
    }
}

/// For `Option<Option<T>>` fields: an absent key is `None` (by `#[serde(default)]`), `null` is
/// `Some(None)`, a value `Some(Some(v))`.
pub fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}
