//! The walk over tree-sitter's tree that fills a [`Script`].

use tree_sitter::{Node, Parser};

use super::nodes::{command_words, operand, shell_text, text, word, word_nodes};
use super::{
    Assign, Background, Cmd, Function, Loop, Operand, Pipeline, Pos, Script, Subtraction, Trap,
    Unit,
};
use crate::argv::{reads_script_from_stdin, shell_string};
use crate::word::Word;

/// Where a nested unit's text sits in the file, to map its positions back.
#[derive(Clone, Copy)]
pub(super) struct Origin {
    pub(super) offset: usize,
    pub(super) line: usize,
    pub(super) column: usize,
}

#[derive(Clone, Default)]
pub(super) struct Ctx {
    unit: usize,
    function: Option<String>,
    background: Option<usize>,
    pipeline: Option<(usize, usize)>,
    loops: Vec<usize>,
    inside: Option<usize>,
    tested: bool,
}

/// Nesting deeper than this (`bash -c "bash -c '…'"` …) is not followed.
const MAX_DEPTH: usize = 6;

pub(super) struct Builder<'s> {
    pub(super) s: &'s mut Script,
    pub(super) parser: Parser,
    pub(super) depth: usize,
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

    pub(super) fn walk_unit(&mut self, root: Node, src: &str, o: Origin, ctx: Ctx) {
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
            argv: Vec::new(),
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
        let unit = self.new_unit(ctx.unit, true, holders, text(n, src), ss.remote);
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
