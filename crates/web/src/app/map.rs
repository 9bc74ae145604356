//! The process map as SVG: the laid-out graph of `agentprocess_views::map`, each step
//! coloured by its state in this run, routes labelled with their `when`, rejections and
//! timeouts drawn apart, ways back curved beside the steps they skip, parallel regions
//! boxed. Every element is closed explicitly: inside HTML, SVG elements are foreign and
//! do not close themselves.

use std::collections::HashMap;

use agentprocess_views::map::{EdgeKind, NODE_HEIGHT, NODE_WIDTH, ProcessMap};
use maud::{Markup, html};

/// The longest route label drawn; longer ones are cut, with the whole in a tooltip.
const LABEL: usize = 34;

fn cut(text: &str) -> String {
    super::layout::shortened(text, LABEL)
}

/// The map of a run, each step in the state `states` gives (`none` when unreached); a
/// version's map, with no run, when `states` is empty.
pub(crate) fn svg(map: &ProcessMap, states: &HashMap<String, String>) -> Markup {
    let place: HashMap<&str, (u32, u32)> = map
        .nodes
        .iter()
        .map(|node| (node.id.as_str(), (node.x, node.y)))
        .collect();
    let half_height = NODE_HEIGHT / 2;
    html! {
        svg class="map" role="img" aria-labelledby="map-title" viewBox=(format!("0 0 {} {}", map.width, map.height))
            width=(map.width) height=(map.height) xmlns="http://www.w3.org/2000/svg" {
            title id="map-title" { "The process's steps and the ways between them" }
            defs {
                marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse" {
                    path d="M 0 0 L 10 5 L 0 10 z" {}
                }
            }
            @for group in &map.groups {
                g class="group" data-parallel=(group.parallel) {
                    rect x=(group.x) y=(group.y) width=(group.width) height=(group.height) rx="10" {}
                    text x=(group.x + 8) y=(group.y + 13) { "parallel: " (group.parallel) }
                }
            }
            @for (at, edge) in map.edges.iter().enumerate() {
                @if let (Some(&(x1, y1)), Some(&(x2, y2))) = (place.get(edge.from.as_str()), place.get(edge.to.as_str())) {
                    // A second edge between the same two steps (a timeout beside `next`)
                    // curves round the side, like a way back, so both are seen.
                    @let twin = map.edges[..at].iter().any(|other| other.from == edge.from && other.to == edge.to);
                    @let forward = y2 > y1 && !twin;
                    @let d = if forward {
                        format!("M {x1} {} L {x2} {}", y1 + half_height, y2 - half_height)
                    } else {
                        // A way back, or a twin: out of the right side, round, into the right side.
                        let side = NODE_WIDTH / 2;
                        format!("M {} {y1} C {} {y1}, {} {y2}, {} {y2}", x1 + side, x1 + side + 60, x2 + side + 60, x2 + side)
                    };
                    g class=(format!("edge edge-{}", edge.kind.name())) data-from=(edge.from) data-to=(edge.to) data-kind=(edge.kind.name()) {
                        path d=(d) marker-end="url(#arrow)" {}
                        @if let Some(label) = &edge.label {
                            text x=((x1 + x2) / 2 + 6) y=((y1 + y2) / 2) class="edge-label" { title { (label) } (cut(label)) }
                        }
                        @if edge.kind == EdgeKind::Reject || edge.kind == EdgeKind::Timeout {
                            // Beside the curve's outermost point, so the curve does not cross it.
                            @let (x, y) = if forward { (x1 + NODE_WIDTH / 2 + 8, y1 - 4) } else { (x1.max(x2) + NODE_WIDTH / 2 + 50, (y1 + y2) / 2 + 4) };
                            text x=(x) y=(y) class="edge-label" { (edge.kind.name()) }
                        }
                    }
                }
            }
            @for node in &map.nodes {
                @let state = states.get(&node.id).map_or("none", String::as_str);
                // A version's map (no run) shows what each step is; a run's, where it stands.
                @let shown = match (states.is_empty(), state) { (true, _) => None, (false, "none") => Some("not reached"), (false, state) => Some(state) };
                g class=(format!("step state-{state}")) data-step=(node.id) data-state=(state) {
                    rect x=(node.x - NODE_WIDTH / 2) y=(node.y - half_height) width=(NODE_WIDTH) height=(NODE_HEIGHT) rx="8" {}
                    // The step's `due`, above its box's right corner.
                    @if let Some(due) = &node.due {
                        text x=(node.x + NODE_WIDTH / 2 - 4) y=(node.y - half_height - 4) text-anchor="end" class="step-due" { "due " (due) }
                    }
                    text x=(node.x) y=(node.y - 3) text-anchor="middle" class="step-id" { (cut(&node.id)) }
                    text x=(node.x) y=(node.y + 14) text-anchor="middle" class="step-kind" { (node.kind) @if let Some(shown) = shown { " · " (shown) } }
                }
            }
        }
    }
}
