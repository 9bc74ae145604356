//! A process's steps as a graph laid out in layers (after Sugiyama): every step is a
//! node, every way a run can go from one step to another an edge (`next`, each route
//! with its `when`, `on_reject`, `on_timeout`, a parallel step's branches and their
//! joins). Layers come from the longest path over the edges that do not go back (a
//! depth-first search from the first step finds those), the order within each layer
//! from a few barycenter sweeps, and coordinates from layer and order.

use std::collections::HashMap;

use agentprocess_format::{Next, Step, StepKind};

/// Horizontal distance between the centres of neighbouring nodes.
pub const COLUMN: u32 = 190;
/// Vertical distance between layers.
pub const ROW: u32 = 100;
/// A node's box.
pub const NODE_WIDTH: u32 = 160;
/// A node's box.
pub const NODE_HEIGHT: u32 = 46;
/// Room right of the widest layer for labels and the curves of ways back.
pub const MARGIN: u32 = 100;

/// What an edge is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeKind {
    /// `next`, or the following step.
    Next,
    /// One route of a `next` list.
    Route,
    /// `on_reject`.
    Reject,
    /// `on_timeout`.
    Timeout,
    /// From a parallel step to a branch's entry.
    Branch,
    /// From a branch's last step to where the parallel step goes next.
    Join,
}

impl EdgeKind {
    /// The name pages style it by.
    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::Next => "next",
            EdgeKind::Route => "route",
            EdgeKind::Reject => "reject",
            EdgeKind::Timeout => "timeout",
            EdgeKind::Branch => "branch",
            EdgeKind::Join => "join",
        }
    }
}

/// A step, placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The step id.
    pub id: String,
    /// Its kind's key.
    pub kind: &'static str,
    /// Its `due`, as written (`2d`).
    pub due: Option<String>,
    /// Its layer, from 0 at the top.
    pub layer: u32,
    /// Its place within the layer, from 0 on the left.
    pub order: u32,
    /// The centre of its box.
    pub x: u32,
    /// The centre of its box.
    pub y: u32,
}

/// A way from one step to another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The step it leaves.
    pub from: String,
    /// The step it reaches.
    pub to: String,
    /// What it is.
    pub kind: EdgeKind,
    /// A route's `when`.
    pub label: Option<String>,
}

/// A parallel step's region: the box around the steps of its branches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The parallel step.
    pub parallel: String,
    /// The box's left edge.
    pub x: u32,
    /// The box's top edge.
    pub y: u32,
    /// The box's size.
    pub width: u32,
    /// The box's size.
    pub height: u32,
}

/// The laid-out graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessMap {
    /// Every step, in the process's order.
    pub nodes: Vec<Node>,
    /// Every edge.
    pub edges: Vec<Edge>,
    /// Every parallel region, outer ones first.
    pub groups: Vec<Group>,
    /// The drawing's size.
    pub width: u32,
    /// The drawing's size.
    pub height: u32,
}

/// Each branch step's innermost parallel step, by index.
fn owners(steps: &[Step]) -> HashMap<usize, usize> {
    let index = index_of(steps);
    let mut owner: HashMap<usize, usize> = HashMap::new();
    for (at, step) in steps.iter().enumerate() {
        if let StepKind::Parallel(entries) = &step.kind {
            let mut todo: Vec<usize> = entries
                .iter()
                .filter_map(|entry| index.get(entry.as_str()).copied())
                .collect();
            while let Some(branch) = todo.pop() {
                if owner.insert(branch, at).is_some() {
                    continue;
                }
                match &steps[branch].next {
                    Some(Next::Step(to)) => todo.extend(index.get(to.as_str())),
                    Some(Next::Routes(routes)) => {
                        todo.extend(routes.iter().filter_map(|route| index.get(route.to.as_str())))
                    }
                    _ => {}
                }
            }
        }
    }
    owner
}

fn index_of(steps: &[Step]) -> HashMap<&str, usize> {
    steps
        .iter()
        .enumerate()
        .map(|(at, step)| (step.id.as_str(), at))
        .collect()
}

/// The edges of `steps`, by index.
fn edges_of(steps: &[Step]) -> Vec<(usize, usize, EdgeKind, Option<String>)> {
    let index = index_of(steps);
    // The parallel step each branch step belongs to, for its join.
    let owner = owners(steps);
    let after_parallel = |parallel: usize| match &steps[parallel].next {
        Some(Next::Step(to)) => index.get(to.as_str()).copied(),
        _ => None,
    };
    let mut edges = Vec::new();
    for (at, step) in steps.iter().enumerate() {
        let join = owner.get(&at).and_then(|parallel| after_parallel(*parallel));
        let mut targets: Vec<(Option<usize>, EdgeKind, Option<String>)> = Vec::new();
        if let StepKind::Parallel(entries) = &step.kind {
            for entry in entries {
                targets.push((index.get(entry.as_str()).copied(), EdgeKind::Branch, None));
            }
        }
        match &step.next {
            Some(Next::Step(next)) => targets.push((index.get(next.as_str()).copied(), EdgeKind::Next, None)),
            Some(Next::Routes(routes)) => {
                for route in routes {
                    if route.to == "join" {
                        targets.push((join, EdgeKind::Join, route.when.clone()));
                    } else {
                        targets.push((
                            index.get(route.to.as_str()).copied(),
                            EdgeKind::Route,
                            route.when.clone(),
                        ));
                    }
                }
            }
            Some(Next::Join) => targets.push((join, EdgeKind::Join, None)),
            None => {}
        }
        if let Some(target) = &step.on_reject {
            targets.push((index.get(target.as_str()).copied(), EdgeKind::Reject, None));
        }
        if let Some(target) = &step.on_timeout {
            targets.push((index.get(target.as_str()).copied(), EdgeKind::Timeout, None));
        }
        edges.extend(
            targets
                .into_iter()
                .filter_map(|(target, kind, label)| target.map(|target| (at, target, kind, label))),
        );
    }
    edges
}

/// The edges that go back (to a step on the path from the first step to their
/// source), which layering leaves out so the rest is acyclic.
fn back_edges(count: usize, edges: &[(usize, usize, EdgeKind, Option<String>)]) -> Vec<bool> {
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (at, (from, _, _, _)) in edges.iter().enumerate() {
        out[*from].push(at);
    }
    let mut back = vec![false; edges.len()];
    // 0 unseen, 1 on the stack, 2 done.
    let mut state = vec![0u8; count];
    for root in 0..count {
        if state[root] != 0 {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        state[root] = 1;
        while let Some((node, next)) = stack.pop() {
            if let Some(&edge) = out[node].get(next) {
                stack.push((node, next + 1));
                let target = edges[edge].1;
                match state[target] {
                    0 => {
                        state[target] = 1;
                        stack.push((target, 0));
                    }
                    1 => back[edge] = true,
                    _ => {}
                }
            } else {
                state[node] = 2;
            }
        }
    }
    back
}

/// Lays out `steps`.
pub fn layout(steps: &[Step]) -> ProcessMap {
    let count = steps.len();
    let edges = edges_of(steps);
    let back = back_edges(count, &edges);
    // Longest path layering over the forward edges, in a topological order.
    let mut indegree = vec![0usize; count];
    for (at, (_, to, _, _)) in edges.iter().enumerate() {
        if !back[at] {
            indegree[*to] += 1;
        }
    }
    let mut layer = vec![0u32; count];
    let mut ready: Vec<usize> = (0..count).rev().filter(|node| indegree[*node] == 0).collect();
    while let Some(node) = ready.pop() {
        for (at, (from, to, _, _)) in edges.iter().enumerate() {
            if *from == node && !back[at] {
                layer[*to] = layer[*to].max(layer[node] + 1);
                indegree[*to] -= 1;
                if indegree[*to] == 0 {
                    ready.push(*to);
                }
            }
        }
    }
    let layers = layer.iter().max().map_or(0, |deepest| deepest + 1) as usize;
    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); layers];
    for node in 0..count {
        rows[layer[node] as usize].push(node);
    }
    // Barycenter sweeps: each node moves towards the mean place of its neighbours in
    // the layer above (going down) or below (going up).
    let mut place = vec![0f64; count];
    let set_places = |rows: &Vec<Vec<usize>>, place: &mut Vec<f64>| {
        for row in rows {
            for (at, node) in row.iter().enumerate() {
                place[*node] = at as f64;
            }
        }
    };
    set_places(&rows, &mut place);
    for sweep in 0..4 {
        let down = sweep % 2 == 0;
        for row_at in 0..layers {
            let row_at = if down { row_at } else { layers - 1 - row_at };
            let mut keyed: Vec<(f64, usize)> = rows[row_at]
                .iter()
                .map(|node| {
                    let neighbours: Vec<f64> = edges
                        .iter()
                        .filter_map(|(from, to, _, _)| {
                            let (me, other) = if down { (to, from) } else { (from, to) };
                            (me == node && layer[*other] != layer[*node]).then(|| place[*other])
                        })
                        .collect();
                    let key = if neighbours.is_empty() {
                        place[*node]
                    } else {
                        neighbours.iter().sum::<f64>() / neighbours.len() as f64
                    };
                    (key, *node)
                })
                .collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            rows[row_at] = keyed.into_iter().map(|(_, node)| node).collect();
            for (at, node) in rows[row_at].iter().enumerate() {
                place[*node] = at as f64;
            }
        }
    }
    let widest = rows.iter().map(Vec::len).max().unwrap_or(0) as u32;
    let columns = widest.max(1) * COLUMN;
    let mut nodes: Vec<Node> = Vec::with_capacity(count);
    let mut order = vec![0u32; count];
    for row in &rows {
        for (at, node) in row.iter().enumerate() {
            order[*node] = at as u32;
        }
    }
    for (at, step) in steps.iter().enumerate() {
        let in_row = rows[layer[at] as usize].len() as u32;
        // Each row is centred in the drawing.
        let offset = (columns - in_row * COLUMN) / 2;
        nodes.push(Node {
            id: step.id.clone(),
            kind: step.kind.key(),
            due: step.due.map(|due| due.to_string()),
            layer: layer[at],
            order: order[at],
            x: offset + order[at] * COLUMN + COLUMN / 2,
            y: layer[at] * ROW + ROW / 2,
        });
    }
    let groups = groups_of(steps, &nodes);
    ProcessMap {
        groups,
        edges: edges
            .into_iter()
            .map(|(from, to, kind, label)| Edge {
                from: steps[from].id.clone(),
                to: steps[to].id.clone(),
                kind,
                label,
            })
            .collect(),
        nodes,
        width: columns + MARGIN,
        height: (layers.max(1) as u32) * ROW,
    }
}

/// The box of each parallel step's region: around every step its branches hold,
/// nested regions included, with more room for each region nested inside.
fn groups_of(steps: &[Step], nodes: &[Node]) -> Vec<Group> {
    let owner = owners(steps);
    // Whether `inner` lies within the region of `parallel`.
    let within = |mut inner: usize, parallel: usize| {
        while let Some(&up) = owner.get(&inner) {
            if up == parallel {
                return true;
            }
            inner = up;
        }
        false
    };
    let mut groups = Vec::new();
    for (parallel, step) in steps.iter().enumerate() {
        if !matches!(step.kind, StepKind::Parallel(_)) {
            continue;
        }
        let members: Vec<usize> = (0..steps.len()).filter(|at| within(*at, parallel)).collect();
        if members.is_empty() {
            continue;
        }
        let nested = members
            .iter()
            .filter(|at| matches!(steps[**at].kind, StepKind::Parallel(_)))
            .count() as u32;
        let pad = 10 + 8 * nested;
        let left = members
            .iter()
            .map(|at| nodes[*at].x - NODE_WIDTH / 2)
            .min()
            .unwrap_or(0);
        let right = members
            .iter()
            .map(|at| nodes[*at].x + NODE_WIDTH / 2)
            .max()
            .unwrap_or(0);
        let top = members
            .iter()
            .map(|at| nodes[*at].y - NODE_HEIGHT / 2)
            .min()
            .unwrap_or(0);
        let bottom = members
            .iter()
            .map(|at| nodes[*at].y + NODE_HEIGHT / 2)
            .max()
            .unwrap_or(0);
        // Room above for the region's name.
        let x = left.saturating_sub(pad);
        let y = top.saturating_sub(pad + 12);
        groups.push(Group {
            parallel: step.id.clone(),
            x,
            y,
            width: right + pad - x,
            height: bottom + pad - y,
        });
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(name: &str) -> agentprocess_format::ValidatedProcess {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../../examples/processes/{name}/PROCESS.md"));
        let source = std::fs::read(path).expect("example");
        let options = agentprocess_format::Options {
            capabilities: agentprocess_format::Capabilities {
                parallel: true,
                check: false,
                upload: true,
                send_event: true,
            },
            folder: Some(name),
        };
        agentprocess_format::validate(&source, &options).expect("valid")
    }

    #[test]
    fn every_step_and_every_way_between_steps_is_drawn_without_overlaps() {
        for name in [
            "purchase-order",
            "content-release",
            "customer-refund",
            "laptop-provisioning",
        ] {
            let process = example(name);
            let steps = &process.document().steps;
            let map = layout(steps);
            assert_eq!(map.nodes.len(), steps.len(), "{name}");
            let mut places: Vec<(u32, u32)> = map.nodes.iter().map(|node| (node.x, node.y)).collect();
            places.sort_unstable();
            places.dedup();
            assert_eq!(places.len(), steps.len(), "{name}: two nodes in one place");
            for node in &map.nodes {
                assert!(
                    node.x + NODE_WIDTH / 2 <= map.width && node.y + NODE_HEIGHT / 2 <= map.height,
                    "{name}: {node:?}"
                );
            }
            // Every step but the first is reached by some edge.
            for step in steps.iter().skip(1) {
                assert!(
                    map.edges.iter().any(|edge| edge.to == step.id),
                    "{name}: nothing reaches {}",
                    step.id
                );
            }
            // Forward edges go down; only ways back (on_reject, loops) go up.
            let layer: HashMap<&str, u32> = map.nodes.iter().map(|node| (node.id.as_str(), node.layer)).collect();
            for edge in &map.edges {
                if layer[edge.to.as_str()] <= layer[edge.from.as_str()] {
                    assert!(
                        matches!(
                            edge.kind,
                            EdgeKind::Reject | EdgeKind::Route | EdgeKind::Timeout | EdgeKind::Next
                        ),
                        "{name}: {edge:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_purchase_order_map_has_its_routes_and_its_rejection() {
        let process = example("purchase-order");
        let map = layout(&process.document().steps);
        let has = |from: &str, to: &str, kind: EdgeKind| {
            map.edges
                .iter()
                .any(|edge| edge.from == from && edge.to == to && edge.kind == kind)
        };
        assert!(has("check_budget", "approval", EdgeKind::Route));
        assert!(has("check_budget", "finance_review", EdgeKind::Route));
        assert!(has("approval", "check_budget", EdgeKind::Reject));
        assert!(has("supplier_confirmation", "chase_supplier", EdgeKind::Timeout));
        let route = map
            .edges
            .iter()
            .find(|edge| edge.to == "finance_review")
            .expect("route");
        assert!(
            route
                .label
                .as_deref()
                .is_some_and(|label| label.contains("falls short"))
        );
        let layer = |id: &str| map.nodes.iter().find(|node| node.id == id).map(|node| node.layer);
        assert!(layer("check_budget") < layer("approval") && layer("approval") < layer("place_order"));
    }

    #[test]
    fn a_parallel_region_is_a_box_around_its_branches_and_nothing_else() {
        let process = example("content-release");
        let steps = &process.document().steps;
        let map = layout(steps);
        assert_eq!(map.groups.len(), 1, "{:?}", map.groups);
        let group = &map.groups[0];
        assert_eq!(group.parallel, "reviews");
        let inside = |node: &Node| {
            node.x - NODE_WIDTH / 2 >= group.x
                && node.x + NODE_WIDTH / 2 <= group.x + group.width
                && node.y - NODE_HEIGHT / 2 >= group.y
                && node.y + NODE_HEIGHT / 2 <= group.y + group.height
        };
        let node = |id: &str| map.nodes.iter().find(|node| node.id == id).expect(id);
        for branch in ["legal_review", "style_edit", "brand_check", "translate"] {
            assert!(inside(node(branch)), "{branch}: {group:?}");
        }
        assert!(!inside(node("reviews")) && !inside(node("signoff")), "{group:?}");
    }
}
