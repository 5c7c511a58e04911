//! A shell script read through tree-sitter-bash into the facts the rules need: its commands
//! (with what runs them in the background, in a pipeline, in a loop or a function), its
//! assignments, loops, traps and subtractions. Strings that a shell runs (`bash -c '…'`, trap
//! handlers, `ssh host '…'`, here-documents fed to `bash`) are parsed too, as nested units.

use std::ops::Range;

use tree_sitter::{Node, Parser, Tree};

use super::word::{Vars, Word};
use build::{Builder, Ctx, Origin};
use nodes::{text, word};

mod build;
mod nodes;

/// A place in the file: 1-based line and column (in characters), and a byte offset that orders
/// places across nested units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Pos {
    pub offset: usize,
    pub line: usize,
    pub column: usize,
}

/// One parsed piece of shell code.
#[derive(Debug, Clone)]
pub struct Unit {
    pub parent: Option<usize>,
    /// Runs in a shell process of its own (`bash -c`), with its own options (`pipefail`).
    pub own_shell: bool,
    /// Command lines of the processes that hold this unit's text in their argv.
    pub holders: Vec<String>,
    /// The command running it (`bash -lc '…'`), for messages.
    pub runner: Option<String>,
    /// A string run elsewhere (`ssh host '…'`): its remote shell is `bash -c STRING`.
    pub remote: bool,
}

#[derive(Debug, Clone)]
pub struct Cmd {
    pub unit: usize,
    pub pos: Pos,
    pub end: usize,
    /// Source text of the command.
    pub text: String,
    pub words: Vec<Word>,
    /// The words as the shell would pass them, unknown parts kept as `$NAME` (set once the
    /// script's constants are known).
    pub argv: Vec<String>,
    /// Enclosing function, if any.
    pub function: Option<String>,
    /// The backgrounded (`&`) statement it belongs to.
    pub background: Option<usize>,
    /// (pipeline index, element index within it).
    pub pipeline: Option<(usize, usize)>,
    /// Enclosing loops, outermost first.
    pub loops: Vec<usize>,
    /// The command whose word holds this one in `$(…)`.
    pub inside: Option<usize>,
    /// Inside the condition of an `if`/`while`/`until`, or on the left of `&&`/`||`.
    pub tested: bool,
}

#[derive(Debug, Clone)]
pub struct Background {
    pub unit: usize,
    pub pos: Pos,
    pub range: Range<usize>,
    pub text: String,
    /// The pipeline it is, when it is one: `$!` is then its last element.
    pub pipeline: Option<usize>,
    pub function: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Pipeline {
    pub unit: usize,
    pub pos: Pos,
    pub text: String,
    pub elements: usize,
}

#[derive(Debug, Clone)]
pub struct Loop {
    pub unit: usize,
    pub pos: Pos,
    pub range: Range<usize>,
    pub function: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Function {
    pub name: String,
    pub pos: Pos,
    pub range: Range<usize>,
}

#[derive(Debug, Clone)]
pub struct Assign {
    pub name: String,
    pub value: Word,
    pub pos: Pos,
    pub unit: usize,
}

/// One side of an arithmetic `a - b`.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Var(String),
    DateSeconds,
    Other,
}

#[derive(Debug, Clone)]
pub struct Subtraction {
    pub pos: Pos,
    pub text: String,
    pub left: Operand,
    pub right: Operand,
}

#[derive(Debug, Clone)]
pub struct Trap {
    pub pos: Pos,
    pub text: String,
    /// The signals or conditions it is set for (`EXIT`, `INT`…; `0` is read as `EXIT`).
    pub conditions: Vec<String>,
    /// A handler given as one function name.
    pub function: Option<String>,
    /// A handler given as code: the unit it was parsed into.
    pub unit: Option<usize>,
}

/// The first place tree-sitter could not parse.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub line: usize,
    pub column: usize,
    pub snippet: String,
}

#[derive(Debug, Default)]
pub struct Script {
    pub source: String,
    pub units: Vec<Unit>,
    pub cmds: Vec<Cmd>,
    pub backgrounds: Vec<Background>,
    pub pipelines: Vec<Pipeline>,
    pub loops: Vec<Loop>,
    pub functions: Vec<Function>,
    pub assigns: Vec<Assign>,
    pub subtractions: Vec<Subtraction>,
    pub traps: Vec<Trap>,
    pub vars: Vars,
}

#[allow(
    clippy::expect_used,
    reason = "the bash grammar is bundled with the tree-sitter version it was built for"
)]
fn parser() -> Parser {
    let mut p = Parser::new();
    p.set_language(&tree_sitter_bash::LANGUAGE.into())
        .expect("the bundled bash grammar matches the tree-sitter version");
    p
}

impl Script {
    /// Parses a script. Fails on the first syntax error tree-sitter finds.
    pub fn parse(source: &str) -> Result<Script, SyntaxError> {
        let mut p = parser();
        let tree = p.parse(source, None).ok_or_else(|| SyntaxError {
            line: 1,
            column: 1,
            snippet: String::new(),
        })?;
        if let Some(e) = first_error(&tree, source) {
            return Err(e);
        }
        let mut s = Script {
            source: source.to_string(),
            ..Script::default()
        };
        s.units.push(Unit {
            parent: None,
            own_shell: true,
            holders: Vec::new(),
            runner: None,
            remote: false,
        });
        let origin = Origin {
            offset: 0,
            line: 1,
            column: 1,
        };
        // Constants first, so strings run by `bash -c "…$MODEL…"` read with their values.
        s.vars = Vars::new(top_assignments(tree.root_node(), source));
        let mut b = Builder {
            s: &mut s,
            parser: p,
            depth: 0,
        };
        b.walk_unit(tree.root_node(), source, origin, Ctx::default());
        let assigns: Vec<(String, Word)> = s
            .assigns
            .iter()
            .map(|a| (a.name.clone(), a.value.clone()))
            .collect();
        s.vars = Vars::new(assigns);
        for i in 0..s.cmds.len() {
            let argv = s.cmds[i].words.iter().map(|w| s.vars.approx(w)).collect();
            s.cmds[i].argv = argv;
        }
        Ok(s)
    }

    /// The words of a command as the shell would pass them, unknown parts kept as `$NAME`.
    pub fn argv<'a>(&self, c: &'a Cmd) -> &'a [String] {
        &c.argv
    }

    /// The source line `line` (1-based), trimmed, for snippets.
    pub fn line_text(&self, line: usize) -> &str {
        self.source
            .lines()
            .nth(line.saturating_sub(1))
            .unwrap_or("")
            .trim()
    }

    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().rev().find(|f| f.name == name)
    }

    /// Commands inside `range` of the file (a loop, a function body, a background statement).
    pub fn cmds_in(&self, range: &Range<usize>) -> impl Iterator<Item = (usize, &Cmd)> {
        let r = range.clone();
        self.cmds
            .iter()
            .enumerate()
            .filter(move |(_, c)| r.contains(&c.pos.offset))
    }

    /// The command's name, when it is a static word.
    pub fn name<'a>(&'a self, c: &'a Cmd) -> Option<String> {
        c.words.first().and_then(|w| self.vars.value(w))
    }
}

/// Every `NAME=value` of the file itself (not of nested strings), for a first resolution.
fn top_assignments(root: Node, src: &str) -> Vec<(String, Word)> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.kind() == "variable_assignment" {
            if let (Some(name), Some(value)) = (
                n.child_by_field_name("name"),
                n.child_by_field_name("value"),
            ) {
                out.push((text(name, src).to_string(), word(value, src)));
            }
        }
        let mut cur = n.walk();
        stack.extend(n.children(&mut cur));
    }
    out
}

fn first_error(tree: &Tree, source: &str) -> Option<SyntaxError> {
    let root = tree.root_node();
    if !root.has_error() {
        return None;
    }
    // Descend to the first token that is not part of a well-formed piece: tree-sitter's error
    // nodes often start at a good statement before the bad one.
    let mut n = root;
    loop {
        if n.is_missing() {
            break;
        }
        let mut cur = n.walk();
        let next = n.children(&mut cur).find(|c| {
            c.is_error() || c.is_missing() || c.has_error() || (n.is_error() && !c.is_named())
        });
        match next {
            Some(c) if c.child_count() > 0 && (c.is_error() || c.has_error()) => n = c,
            Some(c) => {
                n = c;
                break;
            }
            None => break,
        }
    }
    let p = n.start_position();
    let line = source.lines().nth(p.row).unwrap_or("");
    let column = line.get(..p.column).map_or(p.column, |s| s.chars().count()) + 1;
    Some(SyntaxError {
        line: p.row + 1,
        column,
        snippet: line.trim().chars().take(80).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_positions_and_contexts() {
        let s = Script::parse(
            "#!/bin/bash\nf() {\n  while true; do\n    curl -s x | tee y\n  done\n}\nvllm serve m &\n",
        )
        .unwrap();
        let names: Vec<_> = s.cmds.iter().map(|c| s.argv(c)[0].clone()).collect();
        assert_eq!(names, ["true", "curl", "tee", "vllm"]);
        let curl = &s.cmds[1];
        assert_eq!((curl.pos.line, curl.pos.column), (4, 5));
        assert_eq!(curl.function.as_deref(), Some("f"));
        assert_eq!(curl.loops, vec![0]);
        assert_eq!(curl.pipeline, Some((0, 0)));
        assert_eq!(s.cmds[2].pipeline, Some((0, 1)));
        assert!(s.cmds[0].tested);
        let vllm = &s.cmds[3];
        assert_eq!(vllm.background, Some(0));
        assert_eq!(s.backgrounds[0].pos.line, 7);
    }

    #[test]
    fn strings_run_by_a_shell_are_parsed_in_place() {
        let s = Script::parse("echo hi\nbash -lc 'sleep 1; pkill -f \"vllm serve\"'\n").unwrap();
        let pk = s.cmds.iter().find(|c| s.argv(c)[0] == "pkill").unwrap();
        assert_eq!((pk.pos.line, pk.pos.column), (2, 20));
        assert_eq!(s.argv(pk), ["pkill", "-f", "vllm serve"]);
        let u = &s.units[pk.unit];
        assert_eq!(u.holders, ["bash -lc sleep 1; pkill -f \"vllm serve\""]);
    }

    #[test]
    fn traps_handlers() {
        let s =
            Script::parse("trap cleanup EXIT\ntrap 'kill $PID' 0 SIGINT\ntrap - EXIT\n").unwrap();
        assert_eq!(s.traps.len(), 3);
        assert_eq!(s.traps[0].function.as_deref(), Some("cleanup"));
        assert_eq!(s.traps[1].conditions, ["EXIT", "INT"]);
        let kill = s.cmds.iter().find(|c| s.argv(c)[0] == "kill").unwrap();
        assert_eq!(kill.unit, s.traps[1].unit.unwrap());
        assert_eq!((kill.pos.line, kill.pos.column), (2, 7));
        assert!(s.traps[2].function.is_none() && s.traps[2].unit.is_none());
    }

    #[test]
    fn subtractions_and_their_operands() {
        let s = Script::parse("a=$(( $(date +%s) - start ))\n((d = end - $t0))\necho $((x-1))\n")
            .unwrap();
        let ops: Vec<_> = s
            .subtractions
            .iter()
            .map(|x| (x.pos.line, x.left.clone(), x.right.clone()))
            .collect();
        assert_eq!(
            ops,
            [
                (1, Operand::DateSeconds, Operand::Var("start".into())),
                (2, Operand::Var("end".into()), Operand::Var("t0".into())),
                (3, Operand::Var("x".into()), Operand::Other),
            ]
        );
        assert!(s.assigns[0].value.has_date_seconds());
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = Script::parse("echo ok\nif then fi (((\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = Script::parse("echo ok\nfoo() {\n echo x\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = Script::parse("echo a\necho \"unterminated\necho b\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 6));
    }

    #[test]
    fn heredoc_to_a_shell_is_code() {
        let s =
            Script::parse("ssh node bash -s <<'EOF'\npkill -f x\nEOF\ncat <<EOF\npkill y\nEOF\n")
                .unwrap();
        let pk: Vec<_> = s.cmds.iter().filter(|c| s.argv(c)[0] == "pkill").collect();
        assert_eq!(pk.len(), 1);
        assert_eq!(pk[0].pos.line, 2);
    }
}
