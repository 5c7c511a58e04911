//! Tree-sitter nodes read as shell words: quoting undone, expansions kept as segments.

use tree_sitter::Node;

use super::Operand;
use crate::word::{Seg, Word};

pub(super) fn text<'a>(n: Node, src: &'a str) -> &'a str {
    n.utf8_text(src.as_bytes()).unwrap_or("")
}

/// The text a shell would receive for a word that holds code: quotes removed, and inside double
/// quotes only the backslash escapes undone (expansions stay as written, to be read as code).
pub(super) fn shell_text(n: Node, src: &str) -> String {
    let t = text(n, src);
    match n.kind() {
        "raw_string" => t
            .strip_prefix('\'')
            .and_then(|x| x.strip_suffix('\''))
            .unwrap_or(t)
            .to_string(),
        "string" => {
            let inner = t
                .strip_prefix('"')
                .and_then(|x| x.strip_suffix('"'))
                .unwrap_or(t);
            unescape_double(inner)
        }
        "word" => unescape_word(t),
        _ => word(n, src).segs.iter().map(seg_text).collect(),
    }
}

fn seg_text(s: &Seg) -> String {
    match s {
        Seg::Lit(t) | Seg::Opaque(t) => t.clone(),
        Seg::Var { name, .. } => format!("${name}"),
        Seg::Special(c) => format!("${c}"),
        Seg::Subst { text, .. } | Seg::Arith { text, .. } => text.clone(),
    }
}

fn unescape_double(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some(&n @ ('"' | '\\' | '$' | '`')) => {
                    out.push(n);
                    chars.next();
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn unescape_word(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    let mut chars = t.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                if n != '\n' {
                    out.push(n);
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The argument nodes of a command: its name, then its arguments (redirects and prefix
/// assignments left out).
pub(super) fn word_nodes(n: Node) -> Vec<Node> {
    let mut out = Vec::new();
    if let Some(name) = n.child_by_field_name("name") {
        out.push(name);
    }
    let mut cur = n.walk();
    out.extend(n.children_by_field_name("argument", &mut cur));
    out
}

pub(super) fn command_words(n: Node, src: &str) -> Vec<Word> {
    word_nodes(n).into_iter().map(|w| word(w, src)).collect()
}

/// Reads one word node into segments.
pub(super) fn word(n: Node, src: &str) -> Word {
    let mut segs = Vec::new();
    push_segs(n, src, &mut segs);
    Word {
        segs,
        raw: text(n, src).to_string(),
    }
}

fn push_segs(n: Node, src: &str, segs: &mut Vec<Seg>) {
    let t = text(n, src);
    match n.kind() {
        "command_name" | "concatenation" | "string" => {
            let mut cur = n.walk();
            for ch in n.children(&mut cur) {
                if n.kind() == "string" && ch.kind() == "\"" {
                    continue;
                }
                push_segs(ch, src, segs);
            }
        }
        "word" | "number" => segs.push(Seg::Lit(unescape_word(t))),
        "string_content" => segs.push(Seg::Lit(unescape_double(t))),
        "raw_string" => segs.push(Seg::Lit(
            t.strip_prefix('\'')
                .and_then(|x| x.strip_suffix('\''))
                .unwrap_or(t)
                .to_string(),
        )),
        "ansi_c_string" => segs.push(Seg::Lit(
            t.strip_prefix("$'")
                .and_then(|x| x.strip_suffix('\''))
                .unwrap_or(t)
                .to_string(),
        )),
        "simple_expansion" => {
            let name = t.trim_start_matches('$');
            if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
            {
                segs.push(Seg::Var {
                    name: name.to_string(),
                    default: None,
                });
            } else {
                segs.push(Seg::Special(name.to_string()));
            }
        }
        "expansion" => segs.push(expansion(n, src)),
        "command_substitution" => segs.push(Seg::Subst {
            text: t.to_string(),
            date_seconds: runs_date_seconds(n, src),
        }),
        "arithmetic_expansion" => {
            let mut vars = Vec::new();
            collect_vars(n, src, &mut vars);
            segs.push(Seg::Arith {
                text: t.to_string(),
                vars,
                date_seconds: runs_date_seconds(n, src),
            });
        }
        _ => segs.push(Seg::Opaque(t.to_string())),
    }
}

/// `${NAME}`, `${NAME:-default}`; anything else (`${#A}`, `${A/x/y}`) is opaque.
fn expansion(n: Node, src: &str) -> Seg {
    let t = text(n, src);
    let mut cur = n.walk();
    let children: Vec<Node> = n.children(&mut cur).collect();
    let name = children
        .iter()
        .find(|c| c.kind() == "variable_name")
        .map(|c| text(*c, src).to_string());
    let op = n.child_by_field_name("operator").map(|o| text(o, src));
    match (name, op) {
        (Some(name), None) if children.len() == 3 => Seg::Var {
            name,
            default: None,
        },
        (Some(name), Some(":-" | "-" | ":=" | "=")) => {
            let mut d = Vec::new();
            let after_op = children
                .iter()
                .skip_while(|c| Some(**c) != n.child_by_field_name("operator"))
                .skip(1)
                .filter(|c| c.kind() != "}");
            for c in after_op {
                push_segs(*c, src, &mut d);
            }
            Seg::Var {
                name,
                default: Some(d),
            }
        }
        _ => Seg::Opaque(t.to_string()),
    }
}

fn collect_vars(n: Node, src: &str, out: &mut Vec<String>) {
    let mut cur = n.walk();
    for ch in n.children(&mut cur) {
        match ch.kind() {
            "variable_name" => out.push(text(ch, src).to_string()),
            "command_substitution" => {}
            _ => collect_vars(ch, src, out),
        }
    }
}

/// True when the node holds a `date … +%s` command (whole seconds; `+%s%N` and friends are not).
fn runs_date_seconds(n: Node, src: &str) -> bool {
    if n.kind() == "command" {
        let words = command_words(n, src);
        let value = |w: &Word| -> String { w.segs.iter().map(seg_text).collect() };
        if words.first().map(value).as_deref() == Some("date")
            && words.iter().skip(1).any(|w| value(w) == "+%s")
        {
            return true;
        }
    }
    let mut cur = n.walk();
    let children: Vec<Node> = n.children(&mut cur).collect();
    children.into_iter().any(|c| runs_date_seconds(c, src))
}

pub(super) fn operand(n: Node, src: &str) -> Operand {
    match n.kind() {
        "variable_name" => Operand::Var(text(n, src).to_string()),
        "simple_expansion" | "expansion" => match expansion_or_simple(n, src) {
            Some(name) => Operand::Var(name),
            None => Operand::Other,
        },
        "command_substitution" if runs_date_seconds(n, src) => Operand::DateSeconds,
        _ => Operand::Other,
    }
}

fn expansion_or_simple(n: Node, src: &str) -> Option<String> {
    match word(n, src).segs.as_slice() {
        [Seg::Var { name, .. }] => Some(name.clone()),
        _ => None,
    }
}
