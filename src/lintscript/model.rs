//! A shell script read through tree-sitter-bash into the facts the rules need: its commands
//! (with what runs them in the background, in a pipeline, in a loop or a function), its
//! assignments, loops, traps and subtractions. Strings that a shell runs (`bash -c '…'`, trap
//! handlers, `ssh host '…'`, here-documents fed to `bash`) are parsed too, as nested units.

use std::ops::Range;

use tree_sitter::{Node, Parser, Tree};

use super::argv::{reads_script_from_stdin, shell_string};
use super::word::{Seg, Vars, Word};

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

/// Where a nested unit's text sits in the file, to map its positions back.
#[derive(Clone, Copy)]
struct Origin {
    offset: usize,
    line: usize,
    column: usize,
}

#[derive(Clone, Default)]
struct Ctx {
    unit: usize,
    function: Option<String>,
    background: Option<usize>,
    pipeline: Option<(usize, usize)>,
    loops: Vec<usize>,
    inside: Option<usize>,
    tested: bool,
}

fn parser() -> Parser {
    let mut p = Parser::new();
    p.set_language(&tree_sitter_bash::LANGUAGE.into())
        .expect("the bundled bash grammar matches the tree-sitter version");
    p
}

/// Nesting deeper than this (`bash -c "bash -c '…'"` …) is not followed.
const MAX_DEPTH: usize = 6;

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
        Ok(s)
    }

    /// The words of a command as the shell would pass them, unknown parts kept as `$NAME`.
    pub fn argv(&self, c: &Cmd) -> Vec<String> {
        c.words.iter().map(|w| self.vars.approx(w)).collect()
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

struct Builder<'s> {
    s: &'s mut Script,
    parser: Parser,
    depth: usize,
}

impl Builder<'_> {
    fn pos(&self, n: Node, src: &str, o: Origin) -> Pos {
        let p = n.start_position();
        let line_start = n.start_byte() - p.column;
        let col_chars = src
            .get(line_start..n.start_byte())
            .map_or(p.column, |t| t.chars().count());
        Pos {
            offset: o.offset + n.start_byte(),
            line: o.line + p.row,
            column: if p.row == 0 {
                o.column + col_chars
            } else {
                col_chars + 1
            },
        }
    }

    fn walk_unit(&mut self, root: Node, src: &str, o: Origin, ctx: Ctx) {
        self.walk(root, src, o, ctx);
    }

    fn walk_children(&mut self, n: Node, src: &str, o: Origin, ctx: &Ctx) {
        let mut cur = n.walk();
        let children: Vec<Node> = n.children(&mut cur).collect();
        for (i, ch) in children.iter().enumerate() {
            let mut c = ctx.clone();
            let backgrounded = children.get(i + 1).is_some_and(|nx| nx.kind() == "&");
            if backgrounded && ch.kind() != "&" {
                let pipeline = (ch.kind() == "pipeline").then_some(self.s.pipelines.len());
                self.s.backgrounds.push(Background {
                    unit: ctx.unit,
                    pos: self.pos(*ch, src, o),
                    range: o.offset + ch.start_byte()..o.offset + ch.end_byte(),
                    text: text(*ch, src).to_string(),
                    pipeline,
                    function: ctx.function.clone(),
                });
                c.background = Some(self.s.backgrounds.len() - 1);
            }
            self.walk(*ch, src, o, c);
        }
    }

    fn walk(&mut self, n: Node, src: &str, o: Origin, ctx: Ctx) {
        match n.kind() {
            "comment" | "heredoc_body" | "heredoc_start" | "heredoc_end" => {}
            "command" => self.command(n, src, o, ctx),
            "variable_assignment" => {
                self.assignment(n, src, o, &ctx);
            }
            "function_definition" => {
                let name = n
                    .child_by_field_name("name")
                    .map(|x| text(x, src).to_string())
                    .unwrap_or_default();
                self.s.functions.push(Function {
                    name: name.clone(),
                    pos: self.pos(n, src, o),
                    range: o.offset + n.start_byte()..o.offset + n.end_byte(),
                });
                let mut c = ctx.clone();
                c.function = Some(name);
                c.background = None;
                c.loops.clear();
                if let Some(body) = n.child_by_field_name("body") {
                    self.walk(body, src, o, c);
                }
            }
            "while_statement" | "for_statement" | "c_style_for_statement" => {
                self.s.loops.push(Loop {
                    unit: ctx.unit,
                    pos: self.pos(n, src, o),
                    range: o.offset + n.start_byte()..o.offset + n.end_byte(),
                    function: ctx.function.clone(),
                });
                let mut c = ctx.clone();
                c.loops.push(self.s.loops.len() - 1);
                let mut cur = n.walk();
                for (i, ch) in n.children(&mut cur).enumerate() {
                    let mut cc = c.clone();
                    if n.field_name_for_child(i as u32) == Some("condition") {
                        cc.tested = true;
                    }
                    self.walk(ch, src, o, cc);
                }
            }
            "if_statement" | "elif_clause" => {
                let mut cur = n.walk();
                for (i, ch) in n.children(&mut cur).enumerate() {
                    let mut cc = ctx.clone();
                    if n.field_name_for_child(i as u32) == Some("condition") {
                        cc.tested = true;
                    }
                    self.walk(ch, src, o, cc);
                }
            }
            "list" => {
                // In `a && b` / `a || b` the left side's failure is handled.
                let mut cur = n.walk();
                let children: Vec<Node> = n.children(&mut cur).collect();
                for (i, ch) in children.iter().enumerate() {
                    let mut cc = ctx.clone();
                    if children
                        .get(i + 1)
                        .is_some_and(|nx| matches!(nx.kind(), "&&" | "||"))
                    {
                        cc.tested = true;
                    }
                    self.walk(*ch, src, o, cc);
                }
            }
            "pipeline" => {
                let mut cur = n.walk();
                let elements: Vec<Node> = n
                    .children(&mut cur)
                    .filter(|c| c.is_named() && c.kind() != "comment")
                    .collect();
                let idx = self.s.pipelines.len();
                self.s.pipelines.push(Pipeline {
                    unit: ctx.unit,
                    pos: self.pos(n, src, o),
                    text: text(n, src).to_string(),
                    elements: elements.len(),
                });
                for (k, el) in elements.iter().enumerate() {
                    let mut c = ctx.clone();
                    c.pipeline = Some((idx, k));
                    self.walk(*el, src, o, c);
                }
            }
            "redirected_statement" => self.redirected(n, src, o, ctx),
            "compound_statement" | "arithmetic_expansion" => {
                self.subtractions_in(n, src, o);
                self.walk_children(n, src, o, &ctx);
            }
            _ => self.walk_children(n, src, o, &ctx),
        }
    }

    fn redirected(&mut self, n: Node, src: &str, o: Origin, ctx: Ctx) {
        self.walk_children(n, src, o, &ctx);
        // `bash <<'EOF' … EOF`: the here-document is code for that shell.
        let Some(body) = n.child_by_field_name("body") else {
            return;
        };
        if body.kind() != "command" || self.depth >= MAX_DEPTH {
            return;
        }
        let words: Vec<String> = command_words(body, src)
            .iter()
            .map(|w| self.s.vars.approx(w))
            .collect();
        if !reads_script_from_stdin(&words) {
            return;
        }
        let mut cur = n.walk();
        let heredoc = n
            .children_by_field_name("redirect", &mut cur)
            .find(|r| r.kind() == "heredoc_redirect");
        let Some(h) = heredoc else { return };
        let mut cur = h.walk();
        let Some(hb) = h.children(&mut cur).find(|c| c.kind() == "heredoc_body") else {
            return;
        };
        let p = self.pos(hb, src, o);
        let unit = self.new_unit(ctx.unit, true, Vec::new(), text(body, src), false);
        let inner = text(hb, src).to_string();
        self.nested(&inner, p, unit, &ctx);
    }

    fn new_unit(
        &mut self,
        parent: usize,
        own: bool,
        holders: Vec<String>,
        runner: &str,
        remote: bool,
    ) -> usize {
        self.s.units.push(Unit {
            parent: Some(parent),
            own_shell: own,
            holders,
            runner: Some(runner.trim().to_string()),
            remote,
        });
        self.s.units.len() - 1
    }

    /// Parses `code` (found at `at` in the file) as a unit of its own.
    fn nested(&mut self, code: &str, at: Pos, unit: usize, ctx: &Ctx) {
        if self.depth >= MAX_DEPTH {
            return;
        }
        let Some(tree) = self.parser.parse(code, None) else {
            return;
        };
        if tree.root_node().has_error() {
            // A string that is not shell code (or is only partly): nothing to read in it.
            return;
        }
        let o = Origin {
            offset: at.offset,
            line: at.line,
            column: at.column,
        };
        let mut c = ctx.clone();
        c.unit = unit;
        c.pipeline = None;
        c.inside = None;
        c.tested = false;
        self.depth += 1;
        self.walk_unit(tree.root_node(), code, o, c);
        self.depth -= 1;
    }

    fn assignment(&mut self, n: Node, src: &str, o: Origin, ctx: &Ctx) {
        let Some(name) = n.child_by_field_name("name") else {
            return;
        };
        let value = n
            .child_by_field_name("value")
            .map(|v| word(v, src))
            .unwrap_or_else(|| Word::literal(""));
        self.s.assigns.push(Assign {
            name: text(name, src).to_string(),
            value,
            pos: self.pos(n, src, o),
            unit: ctx.unit,
        });
        self.walk_children(n, src, o, ctx);
    }

    fn command(&mut self, n: Node, src: &str, o: Origin, ctx: Ctx) {
        let words = command_words(n, src);
        let idx = self.s.cmds.len();
        self.s.cmds.push(Cmd {
            unit: ctx.unit,
            pos: self.pos(n, src, o),
            end: o.offset + n.end_byte(),
            text: text(n, src).to_string(),
            words: words.clone(),
            function: ctx.function.clone(),
            background: ctx.background,
            pipeline: ctx.pipeline,
            loops: ctx.loops.clone(),
            inside: ctx.inside,
            tested: ctx.tested,
        });
        let mut inner = ctx.clone();
        inner.inside = Some(idx);
        inner.pipeline = None;
        self.walk_children(n, src, o, &inner);

        let argv: Vec<String> = words.iter().map(|w| self.s.vars.approx(w)).collect();
        let arg_nodes = word_nodes(n);
        if argv.first().map(String::as_str) == Some("trap") {
            self.trap(n, src, o, &ctx, &words, &arg_nodes);
            return;
        }
        let Some(ss) = shell_string(&argv) else {
            return;
        };
        let Some(node) = arg_nodes.get(ss.word) else {
            return;
        };
        let code = if ss.joined {
            argv[ss.word..].join(" ")
        } else {
            shell_text(*node, src)
        };
        let mut holders: Vec<String> = ss
            .holders
            .iter()
            .map(|r| argv[r.clone()].join(" "))
            .collect();
        if ss.remote {
            holders.push(format!("bash -c {}", argv[ss.word..].join(" ")));
        }
        let at = content_pos(self.pos(*node, src, o), *node, src);
        let unit = self.new_unit(
            ctx.unit,
            true,
            holders,
            text(n, src),
            ss.remote,
        );
        self.nested(&code, at, unit, &ctx);
    }

    fn trap(&mut self, n: Node, src: &str, o: Origin, ctx: &Ctx, words: &[Word], nodes: &[Node]) {
        let mut k = 1;
        while words
            .get(k)
            .is_some_and(|w| w.raw == "-p" || w.raw == "-l" || w.raw == "--")
        {
            k += 1;
        }
        let (Some(handler), Some(hnode)) = (words.get(k), nodes.get(k)) else {
            return;
        };
        let conditions: Vec<String> = words[k + 1..]
            .iter()
            .map(|w| {
                let v = self.s.vars.approx(w).to_ascii_uppercase();
                let v = v.strip_prefix("SIG").map(str::to_string).unwrap_or(v);
                if v == "0" {
                    "EXIT".to_string()
                } else {
                    v
                }
            })
            .collect();
        let code = shell_text(*hnode, src);
        let is_name = !code.is_empty()
            && code
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == ':');
        let mut trap = Trap {
            pos: self.pos(n, src, o),
            text: text(n, src).to_string(),
            conditions,
            function: None,
            unit: None,
        };
        if handler.raw == "-" || code.trim().is_empty() {
            // Resetting or ignoring a signal sets no handler.
        } else if is_name {
            trap.function = Some(code);
        } else {
            let at = content_pos(self.pos(*hnode, src, o), *hnode, src);
            let unit = self.new_unit(ctx.unit, false, Vec::new(), &trap.text.clone(), false);
            trap.unit = Some(unit);
            self.s.traps.push(trap);
            let mut c = ctx.clone();
            c.background = None;
            c.loops.clear();
            self.nested(&code, at, unit, &c);
            return;
        }
        self.s.traps.push(trap);
    }

    fn subtractions_in(&mut self, n: Node, src: &str, o: Origin) {
        // Only the direct arithmetic of this node; nested ones are found when walked.
        let mut stack = vec![n];
        while let Some(x) = stack.pop() {
            let mut cur = x.walk();
            for ch in x.children(&mut cur) {
                match ch.kind() {
                    "binary_expression" => {
                        let op = ch.child_by_field_name("operator").map(|op| text(op, src));
                        if op == Some("-") {
                            let side = |f: &str| {
                                ch.child_by_field_name(f)
                                    .map_or(Operand::Other, |s| operand(s, src))
                            };
                            let (left, right) = (side("left"), side("right"));
                            self.s.subtractions.push(Subtraction {
                                pos: self.pos(ch, src, o),
                                text: text(ch, src).to_string(),
                                left,
                                right,
                            });
                        }
                        stack.push(ch);
                    }
                    "parenthesized_expression" | "unary_expression" => stack.push(ch),
                    _ => {}
                }
            }
        }
    }
}

fn text<'a>(n: Node, src: &'a str) -> &'a str {
    n.utf8_text(src.as_bytes()).unwrap_or("")
}

/// The position of a string word's content (after its opening quote).
fn content_pos(mut p: Pos, n: Node, src: &str) -> Pos {
    let t = text(n, src);
    let skip = if t.starts_with("$'") {
        2
    } else if t.starts_with('\'') || t.starts_with('"') {
        1
    } else {
        0
    };
    p.offset += skip;
    p.column += skip;
    p
}

/// The text a shell would receive for a word that holds code: quotes removed, and inside double
/// quotes only the backslash escapes undone (expansions stay as written, to be read as code).
fn shell_text(n: Node, src: &str) -> String {
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
fn word_nodes(n: Node) -> Vec<Node> {
    let mut out = Vec::new();
    if let Some(name) = n.child_by_field_name("name") {
        out.push(name);
    }
    let mut cur = n.walk();
    out.extend(n.children_by_field_name("argument", &mut cur));
    out
}

fn command_words(n: Node, src: &str) -> Vec<Word> {
    word_nodes(n).into_iter().map(|w| word(w, src)).collect()
}

/// Reads one word node into segments.
pub(crate) fn word(n: Node, src: &str) -> Word {
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

fn operand(n: Node, src: &str) -> Operand {
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
