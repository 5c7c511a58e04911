//! What each tripwire's verdict rests on, as one typed struct per check.
//!
//! The JSON a result carries (`--json`, `results.json`, the data inside a report page) is the
//! serialisation of these structs and nothing else: a key absent from the JSON is a field left
//! at `None`, a `null` is `Some(None)` (or a `None` in a field that is always written), so the
//! structs reproduce the keys, their order and their number formats of the verdicts exactly.
//! Readers (the report, T9 taking T14's block count, the run) read the fields.
//!
//! Reading JSON back ([`Evidence::read`]) picks the struct by the result's tripwire. A shape the
//! structs cannot hold exactly (a file from an older or newer inferlint) is kept as it was read,
//! in [`Evidence::Unread`], so reading a saved page or `results.json` never fails on evidence and
//! never changes it.

mod checks;
mod serde_helpers;
mod window;

use indexmap::IndexMap;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use checks::*;
pub use serde_helpers::{Count, JsonF64};
pub use window::*;

use crate::result::{Status, Tripwire};

/// One result's evidence.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Evidence {
    /// No evidence: `{}`.
    #[default]
    None,
    /// An input the check needs is missing (`{"missing_input": true}`).
    MissingInput,
    T1(T1Evidence),
    T2(T2Evidence),
    /// T3 and T13, from `lint-script`.
    Script(ScriptEvidence),
    T4(T4Evidence),
    T5(T5Evidence),
    T6(T6Evidence),
    T7(T7Evidence),
    T8(T8Evidence),
    T9(T9Evidence),
    T10(T10Evidence),
    T11(T11Evidence),
    T12(T12Evidence),
    T14(T14Evidence),
    T15(T15Evidence),
    T16(T16Evidence),
    T17(T17Evidence),
    T18(T18Evidence),
    T19(T19Evidence),
    T20(T20Evidence),
    T21(T21Evidence),
    T22(T22Evidence),
    T23(T23Evidence),
    T24(T24Evidence),
    T25(T25Evidence),
    T26(T26Evidence),
    T27(T27Evidence),
    /// Evidence read from a file that none of the structs above holds exactly, kept as read.
    Unread(Map<String, Value>),
}

impl Serialize for Evidence {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Evidence::None => s.serialize_map(Some(0))?.end(),
            Evidence::MissingInput => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("missing_input", &true)?;
                m.end()
            }
            Evidence::T1(e) => e.serialize(s),
            Evidence::T2(e) => e.serialize(s),
            Evidence::Script(e) => e.serialize(s),
            Evidence::T4(e) => e.serialize(s),
            Evidence::T5(e) => e.serialize(s),
            Evidence::T6(e) => e.serialize(s),
            Evidence::T7(e) => e.serialize(s),
            Evidence::T8(e) => e.serialize(s),
            Evidence::T9(e) => e.serialize(s),
            Evidence::T10(e) => e.serialize(s),
            Evidence::T11(e) => e.serialize(s),
            Evidence::T12(e) => e.serialize(s),
            Evidence::T14(e) => e.serialize(s),
            Evidence::T15(e) => e.serialize(s),
            Evidence::T16(e) => e.serialize(s),
            Evidence::T17(e) => e.serialize(s),
            Evidence::T18(e) => e.serialize(s),
            Evidence::T19(e) => e.serialize(s),
            Evidence::T20(e) => e.serialize(s),
            Evidence::T21(e) => e.serialize(s),
            Evidence::T22(e) => e.serialize(s),
            Evidence::T23(e) => e.serialize(s),
            Evidence::T24(e) => e.serialize(s),
            Evidence::T25(e) => e.serialize(s),
            Evidence::T26(e) => e.serialize(s),
            Evidence::T27(e) => e.serialize(s),
            Evidence::Unread(m) => m.serialize(s),
        }
    }
}

impl Evidence {
    /// The evidence as its JSON object (what `--json` prints under `evidence`).
    pub fn to_json(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        }
    }

    /// Whether the JSON object is empty.
    pub fn is_empty(&self) -> bool {
        match self {
            Evidence::None => true,
            Evidence::Unread(m) => m.is_empty(),
            _ => self.to_json().is_empty(),
        }
    }

    /// Reads a result's evidence object back, choosing the struct by the tripwire.
    pub fn read(tripwire: Tripwire, map: Map<String, Value>) -> Evidence {
        if map.is_empty() {
            return Evidence::None;
        }
        if map.len() == 1 && map.get("missing_input") == Some(&Value::Bool(true)) {
            return Evidence::MissingInput;
        }
        let typed = match tripwire {
            Tripwire::T1 => typed(&map).map(Evidence::T1),
            Tripwire::T2 => typed(&map).map(Evidence::T2),
            Tripwire::T3 | Tripwire::T13 => typed(&map).map(Evidence::Script),
            Tripwire::T4 => typed(&map).map(Evidence::T4),
            Tripwire::T5 => typed(&map).map(Evidence::T5),
            Tripwire::T6 => typed(&map).map(Evidence::T6),
            Tripwire::T7 => typed(&map).map(Evidence::T7),
            Tripwire::T8 => typed(&map).map(Evidence::T8),
            Tripwire::T9 => typed(&map).map(Evidence::T9),
            Tripwire::T10 => typed(&map).map(Evidence::T10),
            Tripwire::T11 => typed(&map).map(Evidence::T11),
            Tripwire::T12 => typed(&map).map(Evidence::T12),
            Tripwire::T14 => typed(&map).map(Evidence::T14),
            Tripwire::T15 => typed(&map).map(Evidence::T15),
            Tripwire::T16 => typed(&map).map(Evidence::T16),
            Tripwire::T17 => typed(&map).map(Evidence::T17),
            Tripwire::T18 => typed(&map).map(Evidence::T18),
            Tripwire::T19 => typed(&map).map(Evidence::T19),
            Tripwire::T20 => typed(&map).map(Evidence::T20),
            Tripwire::T21 => typed(&map).map(Evidence::T21),
            Tripwire::T22 => typed(&map).map(Evidence::T22),
            Tripwire::T23 => typed(&map).map(Evidence::T23),
            Tripwire::T24 => typed(&map).map(Evidence::T24),
            Tripwire::T25 => typed(&map).map(Evidence::T25),
            Tripwire::T26 => typed(&map).map(Evidence::T26),
            Tripwire::T27 => typed(&map).map(Evidence::T27),
        };
        // Only a struct that writes back exactly what was read replaces the map: a key it does
        // not know, or a value of another type, would otherwise be lost or changed.
        match typed {
            Some(e) if e.to_json() == map => e,
            _ => Evidence::Unread(map),
        }
    }

    /// Adds the log label `check-log` gives each result when it reads several logs.
    pub fn set_log(&mut self, tripwire: Tripwire, label: &str) {
        let log = Some(label.to_string());
        match self {
            Evidence::T5(e) => e.log = log,
            Evidence::T6(e) => e.log = log,
            Evidence::T7(e) => e.log = log,
            Evidence::T12(e) => e.log = log,
            Evidence::None => {
                *self = match tripwire {
                    Tripwire::T5 => Evidence::T5(T5Evidence {
                        log,
                        ..Default::default()
                    }),
                    Tripwire::T6 => Evidence::T6(T6Evidence {
                        log,
                        ..Default::default()
                    }),
                    Tripwire::T7 => Evidence::T7(T7Evidence {
                        log,
                        ..Default::default()
                    }),
                    _ => Evidence::T12(T12Evidence {
                        log,
                        ..Default::default()
                    }),
                }
            }
            other => {
                let mut m = other.to_json();
                m.insert("log".into(), Value::from(label));
                *other = Evidence::Unread(m);
            }
        }
    }

    pub fn t1(&self) -> Option<&T1Evidence> {
        match self {
            Evidence::T1(e) => Some(e),
            _ => None,
        }
    }
    pub fn t2(&self) -> Option<&T2Evidence> {
        match self {
            Evidence::T2(e) => Some(e),
            _ => None,
        }
    }
    pub fn t8(&self) -> Option<&T8Evidence> {
        match self {
            Evidence::T8(e) => Some(e),
            _ => None,
        }
    }
    pub fn t10(&self) -> Option<&T10Evidence> {
        match self {
            Evidence::T10(e) => Some(e),
            _ => None,
        }
    }
    pub fn t14(&self) -> Option<&T14Evidence> {
        match self {
            Evidence::T14(e) => Some(e),
            _ => None,
        }
    }
    pub fn t16(&self) -> Option<&T16Evidence> {
        match self {
            Evidence::T16(e) => Some(e),
            _ => None,
        }
    }
    pub fn t17(&self) -> Option<&T17Evidence> {
        match self {
            Evidence::T17(e) => Some(e),
            _ => None,
        }
    }
    pub fn t18(&self) -> Option<&T18Evidence> {
        match self {
            Evidence::T18(e) => Some(e),
            _ => None,
        }
    }
    pub fn t19(&self) -> Option<&T19Evidence> {
        match self {
            Evidence::T19(e) => Some(e),
            _ => None,
        }
    }
    pub fn t20(&self) -> Option<&T20Evidence> {
        match self {
            Evidence::T20(e) => Some(e),
            _ => None,
        }
    }
    pub fn t21(&self) -> Option<&T21Evidence> {
        match self {
            Evidence::T21(e) => Some(e),
            _ => None,
        }
    }
}

fn typed<T: DeserializeOwned>(map: &Map<String, Value>) -> Option<T> {
    serde_json::from_value(Value::Object(map.clone())).ok()
}

macro_rules! into_evidence {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        $(impl From<$ty> for Evidence {
            fn from(e: $ty) -> Evidence {
                Evidence::$variant(e)
            }
        })*
    };
}

into_evidence!(
    T1(T1Evidence),
    T2(T2Evidence),
    Script(ScriptEvidence),
    T4(T4Evidence),
    T5(T5Evidence),
    T6(T6Evidence),
    T7(T7Evidence),
    T8(T8Evidence),
    T9(T9Evidence),
    T10(T10Evidence),
    T11(T11Evidence),
    T12(T12Evidence),
    T14(T14Evidence),
    T15(T15Evidence),
    T16(T16Evidence),
    T17(T17Evidence),
    T18(T18Evidence),
    T19(T19Evidence),
    T20(T20Evidence),
    T21(T21Evidence),
    T22(T22Evidence),
    T23(T23Evidence),
    T24(T24Evidence),
    T25(T25Evidence),
    T26(T26Evidence),
    T27(T27Evidence),
);

/// One engine's verdict inside a data-parallel server's result (docs/tripwires.md,
/// "Data-parallel servers"): its status and message, then its own evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineVerdict<E> {
    pub status: Status,
    pub message: String,
    #[serde(flatten)]
    pub evidence: E,
}

/// Each engine's verdict, by engine id, in the order the engines were judged.
pub type PerEngine<E> = IndexMap<String, EngineVerdict<E>>;

/// The evidence of a check that is judged per engine pool (T9, T14).
pub trait PerEngineEvidence:
    Serialize + DeserializeOwned + Default + Clone + Into<Evidence>
{
    /// This check's struct inside an [`Evidence`], if it is one.
    fn of(e: Evidence) -> Option<Self>;
    fn set_engines(&mut self, engines: PerEngine<Self>);
}

impl PerEngineEvidence for T9Evidence {
    fn of(e: Evidence) -> Option<Self> {
        match e {
            Evidence::T9(e) => Some(e),
            _ => None,
        }
    }
    fn set_engines(&mut self, engines: PerEngine<Self>) {
        self.engines = Some(engines);
    }
}

impl PerEngineEvidence for T14Evidence {
    fn of(e: Evidence) -> Option<Self> {
        match e {
            Evidence::T14(e) => Some(e),
            _ => None,
        }
    }
    fn set_engines(&mut self, engines: PerEngine<Self>) {
        self.engines = Some(engines);
    }
}

/// The fields on which every engine's evidence agrees (the same value, or absent in all), as
/// one struct: what the server as a whole can be said to show.
pub fn common<E: PerEngineEvidence>(each: &[&E]) -> E {
    let maps: Vec<Map<String, Value>> = each
        .iter()
        .map(|e| match serde_json::to_value(e) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        })
        .collect();
    let Some((first, rest)) = maps.split_first() else {
        return E::default();
    };
    let shared: Map<String, Value> = first
        .iter()
        .filter(|(k, v)| rest.iter().all(|m| m.get(*k) == Some(*v)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    serde_json::from_value(Value::Object(shared)).unwrap_or_default()
}

#[cfg(test)]
mod tests;
