//! Rules of the step graph: the default `next`, reachability, no cycle on `next` and
//! `on_timeout` edges, and the parallel-1 branch rules.
//!
//! Runs once every step has an id and a kind and every id is unique; before that the
//! graph is not known well enough to say anything true about it.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::document::{Next, ProcessDocument, Step, StepKind};
use crate::issue::Issues;
use crate::path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EdgeKind {
    Next,
    OnTimeout,
    OnReject,
    Parallel,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Step(usize),
    Join,
}

#[derive(Debug)]
struct Edge {
    to: Target,
    kind: EdgeKind,
    /// Where the edge is written, e.g. `steps[2] (x).next[1]`.
    at: String,
}

/// A branch: its parallel step and its entry.
type Branch = (usize, usize);

struct Graph<'s> {
    steps: &'s [Step],
    paths: &'s [String],
    index: HashMap<&'s str, usize>,
    uses_parallel: bool,
}

/// Checks the graph and fills in the default `next` of steps that name none.
pub(crate) fn check(steps: &mut [Step], paths: &[String], uses_parallel: bool, issues: &mut Issues) {
    let branches = {
        let graph = Graph::new(steps, paths, uses_parallel);
        graph.branches()
    };
    fill_default_next(steps, paths, &branches, issues);
    let graph = Graph::new(steps, paths, uses_parallel);
    let edges: Vec<Vec<Edge>> = (0..steps.len()).map(|i| graph.edges(i)).collect();
    graph.reachable(&edges, issues);
    graph.acyclic(&edges, issues);
    if uses_parallel {
        graph.branch_rules(&edges, &branches, issues);
    }
}

impl ProcessDocument {
    /// For each step, the index of the parallel step whose branch holds it, or `None`
    /// outside every branch (parallel-1 §2). Defined here, beside the graph it reads,
    /// so the document's types do not depend on the checks over them.
    pub fn enclosing_parallel(&self) -> Vec<Option<usize>> {
        let steps = &self.steps;
        let uses_parallel = steps.iter().any(|step| matches!(step.kind, StepKind::Parallel(_)));
        let paths = vec![String::new(); steps.len()];
        Graph::new(steps, &paths, uses_parallel)
            .branches()
            .into_iter()
            .map(|branches| branches.first().map(|&(parallel, _)| parallel))
            .collect()
    }
}

/// Outside a branch, a step that names no `next` continues at the following step;
/// the last step and every branch step must name it.
fn fill_default_next(steps: &mut [Step], paths: &[String], branches: &[Vec<Branch>], issues: &mut Issues) {
    for index in 0..steps.len() {
        if steps[index].next.is_some() || matches!(steps[index].kind, StepKind::Finish(_)) {
            continue;
        }
        let at = path::child(&paths[index], "next");
        if !branches[index].is_empty() {
            issues.push(at, "missing; a step in a parallel branch names next or join");
        } else if index + 1 == steps.len() {
            issues.push(at, "missing; the last step must name next unless it is a finish");
        } else {
            steps[index].next = Some(Next::Step(steps[index + 1].id.clone()));
        }
    }
}

impl<'s> Graph<'s> {
    fn new(steps: &'s [Step], paths: &'s [String], uses_parallel: bool) -> Self {
        let index = steps
            .iter()
            .enumerate()
            .map(|(i, step)| (step.id.as_str(), i))
            .collect();
        Self {
            steps,
            paths,
            index,
            uses_parallel,
        }
    }

    fn target(&self, id: &str) -> Option<Target> {
        if self.uses_parallel && id == "join" {
            return Some(Target::Join);
        }
        self.index.get(id).map(|&i| Target::Step(i))
    }

    /// Every edge out of step `from` whose target exists, in the order written.
    fn edges(&self, from: usize) -> Vec<Edge> {
        let step = &self.steps[from];
        let key = |name: &str| path::child(&self.paths[from], name);
        let mut edges = Vec::new();
        let mut add = |to: Option<Target>, kind, at: String| {
            if let Some(to) = to {
                edges.push(Edge { to, kind, at });
            }
        };
        match &step.next {
            Some(Next::Step(id)) => add(self.target(id), EdgeKind::Next, key("next")),
            Some(Next::Join) => add(Some(Target::Join), EdgeKind::Next, key("next")),
            Some(Next::Routes(routes)) => {
                for (i, route) in routes.iter().enumerate() {
                    add(self.target(&route.to), EdgeKind::Next, path::index(&key("next"), i));
                }
            }
            None => {}
        }
        if let Some(id) = &step.on_timeout {
            add(self.target(id), EdgeKind::OnTimeout, key("on_timeout"));
        }
        if let Some(id) = &step.on_reject {
            add(
                self.index.get(id.as_str()).map(|&i| Target::Step(i)),
                EdgeKind::OnReject,
                key("on_reject"),
            );
        }
        if let StepKind::Parallel(entries) = &step.kind {
            for (i, id) in entries.iter().enumerate() {
                add(
                    self.index.get(id.as_str()).map(|&i| Target::Step(i)),
                    EdgeKind::Parallel,
                    path::index(&key("parallel"), i),
                );
            }
        }
        edges
    }

    /// For each step, the branches it belongs to: everything reachable from an entry
    /// along written `next` and `on_timeout` edges, stopping at `join`, at finishes and
    /// at parallel steps (which a branch may not hold; reported by `branch_rules`).
    fn branches(&self) -> Vec<Vec<Branch>> {
        let mut membership: Vec<Vec<Branch>> = vec![Vec::new(); self.steps.len()];
        for (p, step) in self.steps.iter().enumerate() {
            let StepKind::Parallel(entries) = &step.kind else {
                continue;
            };
            for entry in entries.iter().filter_map(|id| self.index.get(id.as_str()).copied()) {
                let mut queue = VecDeque::from([entry]);
                let mut seen = HashSet::new();
                while let Some(at) = queue.pop_front() {
                    if at == p
                        || !seen.insert(at)
                        || matches!(self.steps[at].kind, StepKind::Finish(_) | StepKind::Parallel(_))
                    {
                        continue;
                    }
                    membership[at].push((p, entry));
                    for edge in self.edges(at) {
                        if let (Target::Step(to), EdgeKind::Next | EdgeKind::OnTimeout) = (edge.to, edge.kind) {
                            queue.push_back(to);
                        }
                    }
                }
            }
        }
        membership
    }

    /// Every step is reachable from the first, along any edge.
    fn reachable(&self, edges: &[Vec<Edge>], issues: &mut Issues) {
        if self.steps.is_empty() {
            return;
        }
        let mut seen = vec![false; self.steps.len()];
        let mut queue = VecDeque::from([0]);
        seen[0] = true;
        while let Some(at) = queue.pop_front() {
            for edge in &edges[at] {
                if let Target::Step(to) = edge.to
                    && !seen[to]
                {
                    seen[to] = true;
                    queue.push_back(to);
                }
            }
        }
        for (index, reached) in seen.iter().enumerate() {
            if !reached {
                issues.push(&self.paths[index], "not reachable from the first step");
            }
        }
    }

    /// Following `next` and `on_timeout` edges, no step is visited twice. `join` and
    /// `parallel:` edges are not followed; `on_reject` is the only edge that goes back.
    fn acyclic(&self, edges: &[Vec<Edge>], issues: &mut Issues) {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Open,
            Done,
        }
        let forward = |edge: &Edge| match (edge.kind, edge.to) {
            (EdgeKind::Next | EdgeKind::OnTimeout, Target::Step(to)) => Some(to),
            _ => None,
        };
        let mut mark = vec![Mark::New; self.steps.len()];
        for start in 0..self.steps.len() {
            if mark[start] != Mark::New {
                continue;
            }
            // Iterative depth-first search: (step, next edge to look at).
            let mut stack = vec![(start, 0)];
            mark[start] = Mark::Open;
            while let Some(&mut (at, ref mut next_edge)) = stack.last_mut() {
                let Some(edge) = edges[at].get(*next_edge) else {
                    mark[at] = Mark::Done;
                    stack.pop();
                    continue;
                };
                *next_edge += 1;
                let Some(to) = forward(edge) else { continue };
                match mark[to] {
                    Mark::New => {
                        mark[to] = Mark::Open;
                        stack.push((to, 0));
                    }
                    Mark::Open => {
                        let from = stack.iter().position(|&(step, _)| step == to).unwrap_or(0);
                        let mut cycle: Vec<&str> = stack[from..]
                            .iter()
                            .map(|&(step, _)| self.steps[step].id.as_str())
                            .collect();
                        cycle.push(&self.steps[to].id);
                        issues.push(
                            &edge.at,
                            format!(
                                "goes back to {:?} ({}); only on_reject may go back",
                                self.steps[to].id,
                                cycle.join(" → ")
                            ),
                        );
                    }
                    Mark::Done => {}
                }
            }
        }
    }

    /// parallel-1 §2.
    fn branch_rules(&self, edges: &[Vec<Edge>], branches: &[Vec<Branch>], issues: &mut Issues) {
        let id = |i: usize| self.steps[i].id.as_str();
        for (index, step) in self.steps.iter().enumerate() {
            let at = &self.paths[index];
            if step.id == "join" {
                issues.push(
                    path::child(at, "id"),
                    "\"join\" is reserved in a process that uses parallel",
                );
            }
            let mine = &branches[index];
            if index == 0 && !mine.is_empty() {
                issues.push(at, "the first step cannot be inside a parallel branch");
            }
            if let [first, second, ..] = mine.as_slice() {
                issues.push(
                    at,
                    format!(
                        "is in more than one parallel branch: {:?} → {:?} and {:?} → {:?}",
                        id(first.0),
                        id(first.1),
                        id(second.0),
                        id(second.1)
                    ),
                );
            }
            for edge in &edges[index] {
                match (edge.to, edge.kind) {
                    (Target::Join, _) if mine.is_empty() => {
                        issues.push(&edge.at, "join is allowed only inside a parallel branch");
                    }
                    (Target::Join, _) => {}
                    (Target::Step(to), EdgeKind::Parallel) => {
                        if let StepKind::Finish(_) | StepKind::Parallel(_) = self.steps[to].kind {
                            issues.push(
                                &edge.at,
                                format!(
                                    "{:?} cannot start a branch: a branch holds no finish and no parallel step",
                                    id(to)
                                ),
                            );
                        }
                        if !mine.is_empty() {
                            issues.push(
                                &edge.at,
                                "a parallel step cannot be inside a branch (no nesting in parallel-1)",
                            );
                        }
                    }
                    (Target::Step(to), kind) if !mine.is_empty() => {
                        let (parallel, _) = mine[0];
                        if kind == EdgeKind::OnReject {
                            if branches[to] != *mine {
                                issues.push(&edge.at, format!("{:?} is outside this step's branch; on_reject inside a branch stays in its branch", id(to)));
                            }
                        } else if to == parallel {
                            issues.push(
                                &edge.at,
                                format!("routes back to its parallel step {:?}; a branch ends with join", id(to)),
                            );
                        } else if let StepKind::Finish(_) = self.steps[to].kind {
                            issues.push(
                                &edge.at,
                                format!("routes to the finish {:?}; a branch ends with join", id(to)),
                            );
                        } else if let StepKind::Parallel(_) = self.steps[to].kind {
                            issues.push(
                                &edge.at,
                                format!("routes to the parallel step {:?}; no nesting in parallel-1", id(to)),
                            );
                        }
                    }
                    (Target::Step(to), kind) => {
                        let Some(&(parallel, _)) = branches[to].first() else {
                            continue;
                        };
                        if kind == EdgeKind::OnReject {
                            issues.push(&edge.at, format!("{:?} is inside a parallel branch; return to the parallel step {:?} or a step before it", id(to), id(parallel)));
                        } else {
                            issues.push(&edge.at, format!("routes into the parallel branch of {:?} at {:?}; only the parallel step starts a branch", id(parallel), id(to)));
                        }
                    }
                }
            }
        }
    }
}
