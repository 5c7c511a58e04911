//! "The nodes": for a run that spans nodes, each other node's part, where it ran, what its
//! teardown left, its T2 on its own GPUs and the deaths on it (docs/design/nodes.md).

use maud::{html, Markup};

use super::super::Report;

pub fn section(report: &Report) -> Markup {
    let nodes = &report.inputs().nodes;
    if nodes.is_empty() {
        return html! {};
    }
    html! {
        section aria-labelledby="h-nodes" {
            h2 id="h-nodes" { "The nodes" }
            p {
                "The server ran on " (nodes.len() + 1) " nodes: the head (node 0, "
                code { "--serve" } ") and the parts below, each under inferlint's node agent."
            }
            table class="nodes" {
                thead { tr { th { "node" } th { "host" } th { "command" } th { "left after the stop" } th { "T2 on its GPUs" } th { "deaths" } } }
                tbody {
                    @for n in nodes {
                        tr {
                            td { (n.node) }
                            td { (n.hostname.as_deref().unwrap_or("unknown")) }
                            td { code { (n.command) } }
                            td {
                                @match n.teardown_left {
                                    Some(0) => "nothing",
                                    Some(k) => (format!("{k} process(es)")),
                                    None => "unknown: no teardown report",
                                }
                            }
                            td {
                                @match &n.t2 {
                                    Some(t2) => { strong { (t2.status.display_name()) } ": " (t2.message) }
                                    None => "Can't tell: its agent sent no T2",
                                }
                            }
                            td {
                                @if n.deaths.is_empty() { "none" }
                                @for d in &n.deaths { div { (d) } }
                            }
                        }
                    }
                }
            }
        }
    }
}
