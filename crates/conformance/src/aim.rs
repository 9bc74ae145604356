//! Walks aimed at one route. From a process's steps, how far each step is from the
//! step that offers the route and from an end, so that a walk can choose its way to
//! the route, take it, and go on to an end, whatever the shape of the process: no
//! sampling, and no route missed because it lies behind several choices.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use crate::fixtures::{Fixture, route_target};

/// One walk's aim: a route `(step, to)` to take, then the shortest way to an end; or
/// (with no route) the nearest person's step.
#[derive(Debug)]
pub(crate) struct Aim {
    target: Option<(String, String)>,
    /// Whether the route lies only behind a `wait_for` timing out.
    pub(crate) needs_time: bool,
    /// Whether the walk has taken the route.
    taken: bool,
    /// Moves from each step to the target's step.
    to_target: HashMap<String, usize>,
    /// Moves from each step to a finish.
    to_end: HashMap<String, usize>,
    /// Each step's onward step (approved, event received, or its only `next`).
    onward: HashMap<String, String>,
    /// Where `join` leads from each branch step: its parallel step's onward step.
    joins: HashMap<String, String>,
    rejected: HashMap<String, usize>,
    steps: HashMap<String, Value>,
}

/// Rejections of one approval in one aimed walk, at most: a rework loop that does
/// not reach the route in this many rounds never will.
const MOST_REJECTIONS: usize = 3;

impl Aim {
    pub(crate) fn new(fixture: &Fixture, target: (String, String)) -> Self {
        Self::towards(fixture, vec![target.0.clone()], Some(target))
    }

    /// An aim at the nearest step a person does (an approval or a task).
    pub(crate) fn to_people(fixture: &Fixture) -> Self {
        let people: Vec<String> = fixture.frontmatter["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|step| step.get("approve").is_some() || step.get("task").is_some())
            .filter_map(|step| step["id"].as_str().map(str::to_owned))
            .collect();
        Self::towards(fixture, people, None)
    }

    fn towards(fixture: &Fixture, goals: Vec<String>, target: Option<(String, String)>) -> Self {
        let graph = Graph::of(fixture);
        let to_target = graph.distances(&goals, |_| true);
        let without_time = graph.distances(&goals, |how| how != Edge::Timeout);
        let needs_time = graph
            .first
            .as_ref()
            .is_some_and(|first| to_target.contains_key(first) && !without_time.contains_key(first));
        let finishes: Vec<String> = graph
            .steps
            .iter()
            .filter(|(_, step)| step.get("finish").is_some())
            .map(|(id, _)| id.clone())
            .collect();
        let to_end = graph.distances(&finishes, |how| how != Edge::Rejection);
        Self {
            needs_time,
            target,
            taken: false,
            to_target,
            to_end,
            onward: graph.onward,
            joins: graph.joins,
            rejected: HashMap::new(),
            steps: graph.steps,
        }
    }

    /// The route aimed at, as `step → to`.
    pub(crate) fn label(&self) -> String {
        match &self.target {
            Some((step, to)) => format!("{step} → {to}"),
            None => "a person's step".to_owned(),
        }
    }

    /// Which of `options` (the `to` of each route of `step`) to take: the route aimed
    /// at, else the one nearest to it, or once it is taken the one nearest an end.
    pub(crate) fn route(&mut self, step: &str, options: &[String]) -> usize {
        if let Some((at, to)) = &self.target
            && !self.taken
            && step == at
            && let Some(index) = options.iter().position(|option| option == to)
        {
            self.taken = true;
            return index;
        }
        let join = self.joins.get(step).map(String::as_str).unwrap_or_default();
        nearest(
            self.heading(),
            options.iter().map(|to| if to == "join" { join } else { to.as_str() }),
        )
    }

    /// Whether to reject approval `step`: only on the way to the route, when its
    /// `on_reject` step is nearer to it than the step after the approval.
    pub(crate) fn reject(&mut self, step: &str) -> bool {
        let Some((back, onward)) = self.choice(step, "on_reject") else {
            return false;
        };
        let nearer = distance(&self.to_target, back) < distance(&self.to_target, onward);
        let times = self.rejected.entry(step.to_owned()).or_default();
        if self.taken || *times >= MOST_REJECTIONS || !nearer {
            return false;
        }
        *times += 1;
        true
    }

    /// Whether to let `wait_for` step `step` time out rather than send its event: when
    /// its `on_timeout` step is nearer to where the walk is going.
    pub(crate) fn time_out(&self, step: &str) -> bool {
        let Some((late, onward)) = self.choice(step, "on_timeout") else {
            return false;
        };
        let heading = self.heading();
        distance(heading, late) < distance(heading, onward)
    }

    /// The step `key` (`on_reject`, `on_timeout`) of `step` names, and the step it
    /// goes on to otherwise; `None` when it names none.
    fn choice(&self, step: &str, key: &str) -> Option<(&str, &str)> {
        let other = self.steps.get(step)?[key].as_str()?;
        Some((other, self.onward.get(step).map(String::as_str).unwrap_or_default()))
    }

    /// How far each step is from where the walk is going: the route until it is
    /// taken, then an end.
    fn heading(&self) -> &HashMap<String, usize> {
        if self.taken { &self.to_end } else { &self.to_target }
    }
}

fn distance(distances: &HashMap<String, usize>, step: &str) -> usize {
    distances.get(step).copied().unwrap_or(usize::MAX)
}

/// The index of the nearest of `options`; the first of equally near ones.
fn nearest<'s>(distances: &HashMap<String, usize>, options: impl Iterator<Item = &'s str>) -> usize {
    let mut best = (0, usize::MAX);
    for (index, option) in options.enumerate() {
        let found = distance(distances, option);
        if found < best.1 {
            best = (index, found);
        }
    }
    best.0
}

/// The steps and every way from one to another.
struct Graph {
    steps: HashMap<String, Value>,
    /// `(from, to, how)` for every move a walk can make.
    edges: Vec<(String, String, Edge)>,
    first: Option<String>,
    onward: HashMap<String, String>,
    joins: HashMap<String, String>,
}

impl Graph {
    fn of(fixture: &Fixture) -> Self {
        let list: Vec<&Value> = fixture.frontmatter["steps"].as_array().into_iter().flatten().collect();
        let id = |step: &Value| step["id"].as_str().unwrap_or_default().to_owned();
        let steps: HashMap<String, Value> = list.iter().map(|step| (id(step), (*step).clone())).collect();
        // The parallel step each branch step belongs to, found from the entries along
        // `next` and `on_timeout` (parallel-1 §2: a branch names its moves).
        let mut branch_of: HashMap<String, String> = HashMap::new();
        for step in &list {
            let Some(entries) = step["parallel"].as_array() else {
                continue;
            };
            let mut queue: VecDeque<String> = entries.iter().filter_map(Value::as_str).map(str::to_owned).collect();
            while let Some(member) = queue.pop_front() {
                if member == "join" || branch_of.contains_key(&member) {
                    continue;
                }
                branch_of.insert(member.clone(), id(step));
                if let Some(definition) = steps.get(&member) {
                    queue.extend(named_moves(definition));
                }
            }
        }
        let mut edges = Vec::new();
        let mut onward = HashMap::new();
        let mut joins = HashMap::new();
        for (index, step) in list.iter().enumerate() {
            let from = id(step);
            if step.get("finish").is_some() {
                continue;
            }
            // Where `join` leads: the parallel step's own onward step.
            let resolve = |to: &str| -> Option<String> {
                if to != "join" {
                    return Some(to.to_owned());
                }
                let parallel = steps.get(branch_of.get(&from)?)?;
                let position = list.iter().position(|candidate| candidate["id"] == parallel["id"])?;
                following(parallel, &list, position)
            };
            if let Some(continuation) = resolve("join") {
                joins.insert(from.clone(), continuation);
            }
            let mut nexts: Vec<String> = match &step["next"] {
                Value::String(to) => resolve(to).into_iter().collect(),
                Value::Array(routes) => routes.iter().filter_map(route_target).filter_map(resolve).collect(),
                _ if branch_of.contains_key(&from) => Vec::new(),
                _ => list.get(index + 1).map(|next| id(next)).into_iter().collect(),
            };
            if let [only] = nexts.as_slice() {
                onward.insert(from.clone(), only.clone());
            }
            if let Some(entries) = step["parallel"].as_array() {
                nexts.extend(entries.iter().filter_map(Value::as_str).map(str::to_owned));
            }
            for to in nexts {
                edges.push((from.clone(), to, Edge::Onward));
            }
            if let Some(late) = step["on_timeout"].as_str().and_then(resolve) {
                edges.push((from.clone(), late, Edge::Timeout));
            }
            if let Some(back) = step["on_reject"].as_str() {
                edges.push((from.clone(), back.to_owned(), Edge::Rejection));
            }
        }
        Self {
            first: list.first().map(|step| id(step)),
            steps,
            edges,
            onward,
            joins,
        }
    }

    /// Moves from each step to the nearest of `goals`, over the edges `over` allows.
    fn distances(&self, goals: &[String], over: impl Fn(Edge) -> bool) -> HashMap<String, usize> {
        let mut found: HashMap<String, usize> = goals.iter().map(|goal| (goal.clone(), 0)).collect();
        let mut queue: VecDeque<String> = goals.iter().cloned().collect();
        while let Some(step) = queue.pop_front() {
            let here = found[&step];
            for (from, to, how) in &self.edges {
                if *to == step && over(*how) && !found.contains_key(from) {
                    found.insert(from.clone(), here + 1);
                    queue.push_back(from.clone());
                }
            }
        }
        found
    }
}

/// How a walk makes a move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edge {
    /// By doing or deciding the step, or by its event arriving.
    Onward,
    /// By letting a `wait_for` time out: only a runner that moves the clock can.
    Timeout,
    /// By rejecting an approval.
    Rejection,
}

/// The step ids a step names in `next` and `on_timeout`.
fn named_moves(step: &Value) -> Vec<String> {
    let mut named = Vec::new();
    match &step["next"] {
        Value::String(to) => named.push(to.clone()),
        Value::Array(routes) => named.extend(routes.iter().filter_map(route_target).map(str::to_owned)),
        _ => {}
    }
    named.extend(step["on_timeout"].as_str().map(str::to_owned));
    named
}

/// Where a step outside any branch goes on: its `next` when it names one step, else
/// the following step in the list.
fn following(step: &Value, list: &[&Value], position: usize) -> Option<String> {
    match &step["next"] {
        Value::String(to) => Some(to.clone()),
        _ => list
            .get(position + 1)
            .and_then(|next| next["id"].as_str())
            .map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(yaml: &str) -> Fixture {
        let frontmatter: Value = serde_yaml_ng::from_str(yaml).expect("YAML");
        Fixture {
            name: "t".to_owned(),
            frontmatter,
            body: String::new(),
            hash: String::new(),
            profiles: Vec::new(),
        }
    }

    const DEEP: &str = "
steps:
  - id: triage
    agent: a
    next: [fast, verify]
  - id: fast
    agent: a
    next: done
  - id: verify
    agent: a
    next: [check, recover]
  - id: check
    approve: ok?
    on_reject: triage
    next: done
  - id: recover
    agent: a
    next: done
  - id: done
    finish: ok
";

    #[test]
    fn a_walk_aimed_behind_two_choices_takes_the_way_to_it_then_the_way_out() {
        let mut aim = Aim::new(&fixture(DEEP), ("verify".to_owned(), "recover".to_owned()));
        assert!(!aim.needs_time);
        let triage = ["fast".to_owned(), "verify".to_owned()];
        assert_eq!(aim.route("triage", &triage), 1, "towards verify");
        assert_eq!(aim.route("verify", &["check".to_owned(), "recover".to_owned()]), 1);
        assert!(aim.taken);
        // Once taken, the nearest end: fast is one move from done, verify two.
        assert_eq!(aim.route("triage", &triage), 0);
    }

    #[test]
    fn an_approval_is_rejected_only_when_its_rework_leads_to_the_aim() {
        let aimed_at_fast = Aim::new(&fixture(DEEP), ("triage".to_owned(), "fast".to_owned()));
        let mut aim = aimed_at_fast;
        assert!(aim.reject("check"), "triage is reached again only by rejecting");
        assert!(aim.reject("check") && aim.reject("check"));
        assert!(!aim.reject("check"), "at most three times");
        let mut past = Aim::new(&fixture(DEEP), ("verify".to_owned(), "check".to_owned()));
        past.route("verify", &["check".to_owned(), "recover".to_owned()]);
        assert!(!past.reject("check"), "the route is taken: on to the end");
    }

    #[test]
    fn join_leads_on_from_the_parallel_step_and_timeouts_are_chosen_by_distance() {
        let yaml = "
steps:
  - id: fork
    parallel: [a, b]
    next: wait
  - id: a
    agent: x
    next: [a2, join]
  - id: a2
    agent: x
    next: join
  - id: b
    agent: x
    next: join
  - id: wait
    wait_for: paid
    timeout: 1d
    on_timeout: chase
    next: done
  - id: chase
    task: t
    next: [done, lost]
  - id: done
    finish: ok
  - id: lost
    finish: lost
";
        let mut aim = Aim::new(&fixture(yaml), ("chase".to_owned(), "lost".to_owned()));
        assert!(
            aim.needs_time && aim.time_out("wait"),
            "chase is reached only by the timeout"
        );
        assert_eq!(
            aim.route("a", &["a2".to_owned(), "join".to_owned()]),
            1,
            "join is nearer"
        );
        assert_eq!(aim.route("chase", &["done".to_owned(), "lost".to_owned()]), 1);
        assert!(!aim.time_out("wait"), "once taken, the event is the way to an end");
        let mut people = Aim::to_people(&fixture(yaml));
        assert_eq!(
            people.route("a", &["a2".to_owned(), "join".to_owned()]),
            1,
            "towards chase"
        );
        assert!(people.time_out("wait"));
    }
}
