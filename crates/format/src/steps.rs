//! One step: its id, its kind, and the optional keys its kind allows (spec §2.2).

use std::collections::HashSet;

use crate::check::check;
use crate::document::{DataPath, Duration, DurationError, EvidenceKind, Next, PersonRef, Route, Step, StepKind};
use crate::fields::fields;
use crate::path;
use crate::read::{Object, Reader};
use crate::values::{is_step_id, step_id_issue};
use crate::yaml::{Node, Value};

/// The keys a step may have besides `id` and its kind key.
const OPTIONAL_KEYS: [&str; 10] = [
    "output",
    "evidence",
    "next",
    "person",
    "on_reject",
    "due",
    "timeout",
    "on_timeout",
    "check",
    "advisory",
];

/// The optional keys each kind allows.
fn allowed(kind: &str) -> &'static [&'static str] {
    match kind {
        "agent" => &["output", "evidence", "next", "due", "check", "advisory"],
        "task" => &["output", "evidence", "next", "person", "due", "check", "advisory"],
        "approve" => &["next", "person", "on_reject", "due"],
        "wait" | "wait_until" | "parallel" => &["next"],
        "wait_for" => &["next", "timeout", "on_timeout"],
        _ => &[],
    }
}

/// A step as read, kept even when it is broken so that the rest of the document can
/// still be checked against its id.
#[derive(Debug)]
pub(crate) struct StepSlot {
    /// `steps[i] (id)`.
    pub(crate) path: String,
    /// The id as written, when it is a string.
    pub(crate) id: Option<String>,
    /// The step, when its id and kind could be read.
    pub(crate) step: Option<Step>,
}

/// Reads the step at `index`. `join` is the parallel profile's reserved `next` only
/// in a process that uses the profile.
pub(crate) fn step(r: &mut Reader<'_>, node: &Node, index: usize, uses_parallel: bool) -> StepSlot {
    let bare = path::index("steps", index);
    let written_id = match &node.value {
        Value::Map(entries) => {
            entries
                .iter()
                .find(|entry| entry.key == "id")
                .and_then(|entry| match &entry.value.value {
                    Value::String(id) => Some(id.as_str()),
                    _ => None,
                })
        }
        _ => None,
    };
    let label = written_id.filter(|id| is_step_id(id));
    let path = path::step(index, label);
    r.issues.locate(&bare, node.position);
    r.issues.locate(&path, node.position);
    let known: Vec<&str> = ["id"].into_iter().chain(StepKind::KEYS).chain(OPTIONAL_KEYS).collect();
    let Some(object) = r.object(node, &path, &known) else {
        return StepSlot {
            path,
            id: None,
            step: None,
        };
    };
    let id = object
        .required(r, "id")
        .and_then(|(value, child)| r.string(value, &child).map(str::to_owned));
    if let Some(id) = &id
        && label.is_none()
    {
        r.issues.push(path::child(&path, "id"), step_id_issue(id, "step id"));
    }

    let kinds: Vec<&str> = object.keys().filter(|key| StepKind::KEYS.contains(key)).collect();
    // The optional keys are judged by the kind key written, even when its value is broken.
    let kind_key: Option<&str> = match kinds.as_slice() {
        [one] => Some(one),
        [] => {
            r.issues.push(
                &path,
                format!("no kind key; a step has exactly one of {}", StepKind::KEYS.join(", ")),
            );
            None
        }
        several => {
            r.issues.push(
                &path,
                format!(
                    "has {} kind keys ({}); a step has exactly one",
                    several.len(),
                    several.join(", ")
                ),
            );
            None
        }
    };
    let kind = kind_key.and_then(|key| kind(r, &object, key));
    // The value of an optional key, when present and allowed on this kind.
    let optional = |r: &mut Reader<'_>, key: &str| match kind_key {
        Some(kind) if object.has(key) && !allowed(kind).contains(&key) => {
            r.issues.push(
                path::child(&path, key),
                format!("not allowed on {} {kind} step", article(kind)),
            );
            None
        }
        _ => object.get(key),
    };
    let output = optional(r, "output").map(|(v, c)| fields(r, v, &c));
    let evidence = optional(r, "evidence").and_then(|(v, c)| evidence(r, v, &c));
    let next = optional(r, "next").and_then(|(v, c)| next(r, v, &c, kind_key, uses_parallel));
    let person = optional(r, "person").and_then(|(v, c)| person(r, v, &c));
    let on_reject = optional(r, "on_reject").and_then(|(v, c)| r.text(v, &c));
    let due = optional(r, "due").and_then(|(v, c)| duration(r, v, &c));
    let timeout = optional(r, "timeout").and_then(|(v, c)| duration(r, v, &c));
    let on_timeout = optional(r, "on_timeout").and_then(|(v, c)| r.text(v, &c));
    let check = optional(r, "check").and_then(|(v, c)| check(r, v, &c));
    let advisory = optional(r, "advisory").and_then(|(v, c)| r.boolean(v, &c));

    if matches!(kind_key, Some("task" | "approve")) && !object.has("person") {
        r.issues.push(
            path::child(&path, "person"),
            format!(
                "missing; {} {} step needs one",
                article(kind_key.unwrap_or_default()),
                kind_key.unwrap_or_default()
            ),
        );
    }
    if object.has("advisory")
        && !object.has("check")
        && kind_key.is_some_and(|kind| allowed(kind).contains(&"advisory"))
    {
        r.issues
            .push(path::child(&path, "advisory"), "allowed only beside check");
    }
    if object.has("on_timeout") && !object.has("timeout") && kind_key == Some("wait_for") {
        r.issues.push(path::child(&path, "on_timeout"), "needs timeout");
    }

    let step = kind.zip(id.clone().filter(|_| label.is_some())).map(|(kind, id)| Step {
        id,
        kind,
        output: output.unwrap_or_default(),
        evidence: evidence.unwrap_or_default(),
        next,
        person,
        on_reject,
        due,
        timeout,
        on_timeout,
        check,
        advisory: advisory.unwrap_or(false),
    });
    StepSlot { path, id, step }
}

fn article(kind: &str) -> &'static str {
    if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// The value of the kind key.
fn kind(r: &mut Reader<'_>, object: &Object<'_>, key: &str) -> Option<StepKind> {
    let (value, child) = object.get(key)?;
    match key {
        "agent" => r.text(value, &child).map(StepKind::Agent),
        "task" => r.text(value, &child).map(StepKind::Task),
        "approve" => r.text(value, &child).map(StepKind::Approve),
        "wait" => duration(r, value, &child).map(StepKind::Wait),
        "wait_until" => {
            let text = r.text(value, &child)?;
            match data_path(&text) {
                Some(path) => Some(StepKind::WaitUntil(path)),
                None => {
                    r.issues.push(
                        child,
                        format!("{text:?} is not a path of the form inputs.<field> or steps.<id>.output.<field>"),
                    );
                    None
                }
            }
        }
        "wait_for" => {
            let name = r.text(value, &child)?;
            if !is_step_id(&name) {
                r.issues.push(child, step_id_issue(&name, "event name"));
                return None;
            }
            Some(StepKind::WaitFor(name))
        }
        "finish" => r.text(value, &child).map(StepKind::Finish),
        "parallel" => branches(r, value, &child).map(StepKind::Parallel),
        _ => None,
    }
}

/// `parallel:` two or more distinct step ids.
fn branches(r: &mut Reader<'_>, node: &Node, path: &str) -> Option<Vec<String>> {
    let items = r.list(node, path)?;
    if items.len() < 2 {
        r.issues.push(path, "needs two or more branch entries");
    }
    let mut seen = HashSet::new();
    let mut entries = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let child = path::index(path, index);
        if let Some(id) = r.text(item, &child) {
            if !seen.insert(id.clone()) {
                r.issues.push(child, format!("{id:?} is listed twice"));
            }
            entries.push(id);
        }
    }
    (entries.len() == items.len()).then_some(entries)
}

fn evidence(r: &mut Reader<'_>, node: &Node, path: &str) -> Option<Vec<EvidenceKind>> {
    let items = r.list(node, path)?;
    let mut kinds = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let child = path::index(path, index);
        match r.string(item, &child)? {
            "file" => kinds.push(EvidenceKind::File),
            "link" => kinds.push(EvidenceKind::Link),
            other => r.issues.push(
                child,
                format!("{other:?} is not an evidence kind; expected file or link"),
            ),
        }
    }
    Some(kinds)
}

/// A step id, or a list of two or more routes (only on `agent` and `task`).
fn next(r: &mut Reader<'_>, node: &Node, path: &str, kind: Option<&str>, uses_parallel: bool) -> Option<Next> {
    let target = |id: String| {
        if uses_parallel && id == "join" {
            Next::Join
        } else {
            Next::Step(id)
        }
    };
    let items = match &node.value {
        Value::String(_) => return r.text(node, path).map(target),
        Value::List(_) => r.list(node, path)?,
        other => {
            r.issues.push(
                path,
                format!("expected a step id or a list of routes, found {}", other.kind_name()),
            );
            return None;
        }
    };
    if let Some(kind) = kind
        && !matches!(kind, "agent" | "task")
    {
        r.issues.push(
            path,
            format!(
                "a list of routes is allowed only on agent and task steps, not on {} {kind} step",
                article(kind)
            ),
        );
    }
    if items.len() < 2 {
        r.issues.push(
            path,
            format!("a list of routes needs two or more, found {}", items.len()),
        );
    }
    let mut routes = Vec::with_capacity(items.len());
    let mut seen = HashSet::new();
    for (index, item) in items.iter().enumerate() {
        let child = path::index(path, index);
        let Some(route) = route(r, item, &child) else {
            continue;
        };
        if !seen.insert(route.to.clone()) {
            r.issues.push(&child, format!("{:?} is already a route", route.to));
        }
        routes.push(route);
    }
    (routes.len() == items.len()).then_some(Next::Routes(routes))
}

/// A route: a step id, or `{ to, when }`.
fn route(r: &mut Reader<'_>, node: &Node, path: &str) -> Option<Route> {
    match &node.value {
        Value::String(_) => r.text(node, path).map(|to| Route { to, when: None }),
        Value::Map(_) => {
            let object = r.object(node, path, &["to", "when"])?;
            let when = object.get("when").map(|(value, child)| r.text(value, &child));
            let to = object
                .required(r, "to")
                .and_then(|(value, child)| r.text(value, &child));
            Some(Route {
                to: to?,
                when: when.map(|when| when.ok_or(())).transpose().ok()?,
            })
        }
        other => {
            r.issues.push(
                path,
                format!("expected a step id or {{ to, when }}, found {}", other.kind_name()),
            );
            None
        }
    }
}

/// A role name, `initiator`, or a path (any value with a dot).
fn person(r: &mut Reader<'_>, node: &Node, path: &str) -> Option<PersonRef> {
    let text = r.text(node, path)?;
    if text == "initiator" {
        return Some(PersonRef::Initiator);
    }
    if !text.contains('.') {
        return Some(PersonRef::Role(text));
    }
    match data_path(&text) {
        Some(data) => Some(PersonRef::Path(data)),
        None => {
            r.issues.push(
                path,
                format!("{text:?} is not a role name (role names have no dots) nor a path of the form inputs.<field> or steps.<id>.output.<field>"),
            );
            None
        }
    }
}

/// `inputs.<field>` or `steps.<id>.output.<field>`.
fn data_path(text: &str) -> Option<DataPath> {
    if let Some(field) = text.strip_prefix("inputs.") {
        return (!field.is_empty()).then(|| DataPath::Input(field.to_owned()));
    }
    let rest = text.strip_prefix("steps.")?;
    let (step, field) = rest.split_once(".output.")?;
    (!step.is_empty() && !step.contains('.') && !field.is_empty()).then(|| DataPath::Output {
        step: step.to_owned(),
        field: field.to_owned(),
    })
}

/// An integer followed by `m`, `h` or `d`.
fn duration(r: &mut Reader<'_>, node: &Node, path: &str) -> Option<Duration> {
    let text = match &node.value {
        Value::String(text) => text.as_str(),
        Value::Number(text) => text.as_str(),
        other => {
            r.issues.push(
                path,
                format!("expected a duration such as 30m, 4h or 3d, found {}", other.kind_name()),
            );
            return None;
        }
    };
    match Duration::parse(text) {
        Ok(duration) => Some(duration),
        Err(DurationError::TooLong) => {
            r.issues.push(path, format!("{text:?} is longer than 100 years"));
            None
        }
        Err(DurationError::Malformed) => {
            r.issues.push(
                path,
                format!("{text:?} is not a duration: an integer followed by m, h or d, such as 30m, 4h or 3d"),
            );
            None
        }
    }
}
