//! Shell words as the linter sees them: literal pieces and expansions, resolved against the
//! script's own constant assignments when they can be.

use std::collections::{HashMap, HashSet};

/// One piece of a word.
#[derive(Clone, Debug, PartialEq)]
pub enum Seg {
    /// Text the shell passes through as is (quotes already removed).
    Lit(String),
    /// `$NAME` or `${NAME}`; `default` is the text after `:-`/`-` in `${NAME:-default}`.
    Var {
        name: String,
        default: Option<Vec<Seg>>,
    },
    /// `$!`, `$$`, `$?`, `$@`, `$1`… (the character after `$`).
    Special(String),
    /// `$(…)` or `` `…` ``; `date_seconds` when it runs `date +%s`.
    Subst { text: String, date_seconds: bool },
    /// `$((…))`; the variables it reads and whether it runs `date +%s` inside.
    Arith {
        text: String,
        vars: Vec<String>,
        date_seconds: bool,
    },
    /// Anything else the linter does not evaluate (process substitution, globs of `$'…'`).
    Opaque(String),
}

/// A word of a command line.
#[derive(Clone, Debug, PartialEq)]
pub struct Word {
    pub segs: Vec<Seg>,
    /// The source text of the word, quotes included.
    pub raw: String,
}

impl Word {
    pub fn literal(text: &str) -> Word {
        Word {
            segs: vec![Seg::Lit(text.to_string())],
            raw: text.to_string(),
        }
    }

    /// The names of the variables the word reads (including those inside `$((…))`).
    pub fn var_names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for s in &self.segs {
            match s {
                Seg::Var { name, .. } => out.push(name.as_str()),
                Seg::Arith { vars, .. } => out.extend(vars.iter().map(String::as_str)),
                _ => {}
            }
        }
        out
    }

    /// True when the word is exactly one `$!`.
    pub fn is_last_pid(&self) -> bool {
        matches!(self.segs.as_slice(), [Seg::Special(s)] if s == "!")
    }

    /// The single variable the word consists of (`$PID`, `"${PID}"`), if it is nothing else.
    pub fn sole_var(&self) -> Option<&str> {
        match self.segs.as_slice() {
            [Seg::Var { name, .. }] => Some(name),
            _ => None,
        }
    }

    pub fn has_date_seconds(&self) -> bool {
        self.segs.iter().any(|s| {
            matches!(
                s,
                Seg::Subst {
                    date_seconds: true,
                    ..
                } | Seg::Arith {
                    date_seconds: true,
                    ..
                }
            )
        })
    }
}

/// The script's assignments, for resolving `$NAME` to a constant.
#[derive(Debug, Default)]
pub struct Vars {
    values: HashMap<String, Vec<Word>>,
    resolved: HashMap<String, Option<String>>,
}

impl Vars {
    pub fn new(assignments: impl IntoIterator<Item = (String, Word)>) -> Vars {
        let mut values: HashMap<String, Vec<Word>> = HashMap::new();
        for (name, w) in assignments {
            values.entry(name).or_default().push(w);
        }
        let mut vars = Vars {
            values,
            resolved: HashMap::new(),
        };
        let names: Vec<String> = vars.values.keys().cloned().collect();
        for name in names {
            let mut guard = HashSet::new();
            let v = vars.resolve_uncached(&name, &mut guard);
            vars.resolved.insert(name, v);
        }
        vars
    }

    /// Every value assigned to `name` in the script.
    pub fn assigned(&self, name: &str) -> &[Word] {
        self.values.get(name).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The constant value of `name`: every assignment gives the same static text.
    pub fn constant(&self, name: &str) -> Option<&str> {
        self.resolved.get(name)?.as_deref()
    }

    fn resolve_uncached(&self, name: &str, guard: &mut HashSet<String>) -> Option<String> {
        let words = self.values.get(name)?;
        if !guard.insert(name.to_string()) {
            return None;
        }
        let mut out: Option<String> = None;
        for w in words {
            let v = self.value_guarded(&w.segs, guard);
            match (&out, v) {
                (_, None) => {
                    out = None;
                    guard.remove(name);
                    return out;
                }
                (None, Some(v)) => out = Some(v),
                (Some(prev), Some(v)) if *prev == v => {}
                (Some(_), Some(_)) => {
                    guard.remove(name);
                    return None;
                }
            }
        }
        guard.remove(name);
        out
    }

    fn value_guarded(&self, segs: &[Seg], guard: &mut HashSet<String>) -> Option<String> {
        let mut s = String::new();
        for seg in segs {
            match seg {
                Seg::Lit(t) => s.push_str(t),
                Seg::Var { name, default } => {
                    let v = if guard.contains(name) {
                        None
                    } else if let Some(v) = self.resolved.get(name) {
                        v.clone()
                    } else {
                        self.resolve_uncached(name, guard)
                    };
                    match (v, default) {
                        (Some(v), _) => s.push_str(&v),
                        (None, Some(d)) => s.push_str(&self.value_guarded(d, guard)?),
                        (None, None) => return None,
                    }
                }
                _ => return None,
            }
        }
        Some(s)
    }

    /// The word's value when it is fully known.
    pub fn value(&self, w: &Word) -> Option<String> {
        self.value_guarded(&w.segs, &mut HashSet::new())
    }

    /// The word's value with unknown parts kept as their source text (`$MODEL`).
    pub fn approx(&self, w: &Word) -> String {
        self.approx_segs(&w.segs)
    }

    fn approx_segs(&self, segs: &[Seg]) -> String {
        let mut s = String::new();
        for seg in segs {
            match seg {
                Seg::Lit(t) => s.push_str(t),
                Seg::Var { name, default } => match (self.constant(name), default) {
                    (Some(v), _) => s.push_str(v),
                    (None, Some(d)) if self.assigned(name).is_empty() => {
                        s.push_str(&self.approx_segs(d))
                    }
                    _ => {
                        s.push('$');
                        s.push_str(name);
                    }
                },
                Seg::Special(c) => {
                    s.push('$');
                    s.push_str(c);
                }
                Seg::Subst { text, .. } | Seg::Arith { text, .. } | Seg::Opaque(text) => {
                    s.push_str(text)
                }
            }
        }
        s
    }

    /// A regular expression matching at least every value the word can take: known parts as
    /// written (the word is itself a pattern), unknown parts as `.*`. None when nothing is known.
    pub fn pattern_superset(&self, w: &Word) -> Option<String> {
        let mut s = String::new();
        let mut known = false;
        for seg in &w.segs {
            match seg {
                Seg::Lit(t) => {
                    known |= !t.is_empty();
                    s.push_str(t);
                }
                Seg::Var { name, .. } if self.constant(name).is_some() => {
                    let v = self.constant(name).unwrap_or_default();
                    known |= !v.is_empty();
                    s.push_str(v);
                }
                _ => {
                    if !s.ends_with(".*") {
                        s.push_str(".*");
                    }
                }
            }
        }
        known.then_some(s)
    }

    /// True when `name` holds `date +%s` seconds, `$SECONDS` or `$EPOCHSECONDS`, directly or
    /// through another variable.
    pub fn holds_whole_seconds(&self, name: &str) -> bool {
        self.whole_seconds_guarded(name, &mut HashSet::new())
    }

    fn whole_seconds_guarded(&self, name: &str, guard: &mut HashSet<String>) -> bool {
        if matches!(name, "SECONDS" | "EPOCHSECONDS") {
            return true;
        }
        if !guard.insert(name.to_string()) {
            return false;
        }
        self.assigned(name).iter().any(|w| {
            w.has_date_seconds()
                || w.segs.iter().any(|s| match s {
                    Seg::Var { name, .. } => self.whole_seconds_guarded(name, guard),
                    _ => false,
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(name: &str) -> Seg {
        Seg::Var {
            name: name.into(),
            default: None,
        }
    }

    fn w(segs: Vec<Seg>) -> Word {
        Word {
            segs,
            raw: String::new(),
        }
    }

    #[test]
    fn constants_resolve_through_other_variables() {
        let vars = Vars::new([
            ("HOST".to_string(), Word::literal("localhost")),
            (
                "URL".to_string(),
                w(vec![var("HOST"), Seg::Lit(":8000".into())]),
            ),
        ]);
        assert_eq!(vars.constant("URL"), Some("localhost:8000"));
        assert_eq!(
            vars.value(&w(vec![var("URL"), Seg::Lit("/health".into())])),
            Some("localhost:8000/health".into())
        );
    }

    #[test]
    fn two_different_values_are_not_a_constant() {
        let vars = Vars::new([
            ("P".to_string(), Word::literal("8000")),
            ("P".to_string(), Word::literal("8001")),
        ]);
        assert_eq!(vars.constant("P"), None);
        assert_eq!(vars.approx(&w(vec![var("P")])), "$P");
    }

    #[test]
    fn self_default_does_not_loop() {
        let vars = Vars::new([(
            "PORT".to_string(),
            w(vec![Seg::Var {
                name: "PORT".into(),
                default: Some(vec![Seg::Lit("8000".into())]),
            }]),
        )]);
        assert_eq!(vars.constant("PORT"), Some("8000"));
    }

    #[test]
    fn superset_pattern_widens_unknowns() {
        let vars = Vars::new([]);
        let word = w(vec![Seg::Lit("vllm serve ".into()), var("MODEL")]);
        assert_eq!(
            vars.pattern_superset(&word).as_deref(),
            Some("vllm serve .*")
        );
        assert_eq!(vars.pattern_superset(&w(vec![var("X")])), None);
    }

    #[test]
    fn whole_seconds_follow_assignments() {
        let vars = Vars::new([
            (
                "start".to_string(),
                w(vec![Seg::Subst {
                    text: "$(date +%s)".into(),
                    date_seconds: true,
                }]),
            ),
            ("t0".to_string(), w(vec![var("start")])),
            (
                "ns".to_string(),
                w(vec![Seg::Subst {
                    text: "$(date +%s%N)".into(),
                    date_seconds: false,
                }]),
            ),
        ]);
        assert!(vars.holds_whole_seconds("start"));
        assert!(vars.holds_whole_seconds("t0"));
        assert!(vars.holds_whole_seconds("SECONDS"));
        assert!(!vars.holds_whole_seconds("ns"));
        assert!(!vars.holds_whole_seconds("other"));
    }
}
