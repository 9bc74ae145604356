//! The top level of the frontmatter (spec §2.1).

use std::collections::HashSet;

use crate::document::{Fields, Requires};
use crate::fields::fields;
use crate::read::Reader;
use crate::steps::{StepSlot, step};
use crate::values::{is_name, name_issue};
use crate::yaml::{Node, Value};

const TOP_KEYS: [&str; 5] = ["name", "description", "inputs", "requires", "steps"];

/// The frontmatter as read: every part that could be read, and a slot per step.
#[derive(Debug, Default)]
pub(crate) struct Draft {
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) inputs: Fields,
    pub(crate) requires: Option<Requires>,
    pub(crate) steps: Vec<StepSlot>,
    /// Whether any step has the `parallel` key.
    pub(crate) uses_parallel: bool,
}

/// Reads the root of the frontmatter.
pub(crate) fn draft(r: &mut Reader<'_>, root: &Node, folder: Option<&str>) -> Draft {
    let mut draft = Draft::default();
    r.issues.locate("", root.position);
    let Some(object) = r.object(root, "", &TOP_KEYS) else {
        return draft;
    };
    for key in ["name", "description", "steps"] {
        if !object.has(key) {
            r.issues.push(key, "missing");
        }
    }
    if let Some((value, path)) = object.get("name")
        && let Some(name) = r.string(value, &path)
    {
        let length = name.chars().count();
        if !(1..=64).contains(&length) {
            r.issues.push(&path, format!("must be 1–64 characters, has {length}"));
        }
        if length > 0 && !is_name(name) {
            r.issues.push(&path, name_issue(name));
        }
        if let Some(folder) = folder
            && folder != name
        {
            r.issues
                .push(&path, format!("{name:?} does not match the folder name {folder:?}"));
        }
        draft.name = Some(name.to_owned());
    }
    draft.description = object.get("description").and_then(|(value, path)| r.text(value, &path));
    if let Some((value, path)) = object.get("inputs") {
        draft.inputs = fields(r, value, &path);
    }
    draft.requires = object
        .get("requires")
        .and_then(|(value, path)| requires(r, value, &path));
    if let Some((value, path)) = object.get("steps")
        && let Some(items) = r.list(value, &path)
    {
        if items.is_empty() {
            r.issues.push(&path, "needs at least one step");
        }
        draft.uses_parallel = items
            .iter()
            .any(|item| matches!(&item.value, Value::Map(entries) if entries.iter().any(|e| e.key == "parallel")));
        draft.steps = items
            .iter()
            .enumerate()
            .map(|(index, item)| step(r, item, index, draft.uses_parallel))
            .collect();
    }
    draft
}

/// `requires: { systems: [...] }`: names of the name pattern, each once.
fn requires(r: &mut Reader<'_>, node: &Node, path: &str) -> Option<Requires> {
    let object = r.object(node, path, &["systems"])?;
    let (value, path) = object.required(r, "systems")?;
    let items = r.list(value, &path)?;
    if items.is_empty() {
        r.issues.push(&path, "needs at least one system");
    }
    let mut seen = HashSet::new();
    let mut systems = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let child = crate::path::index(&path, index);
        let Some(system) = r.string(item, &child) else {
            continue;
        };
        if !is_name(system) || system.len() > 64 {
            r.issues.push(&child, name_issue(system));
        } else if !seen.insert(system) {
            r.issues.push(&child, format!("{system:?} is listed twice"));
        }
        systems.push(system.to_owned());
    }
    Some(Requires { systems })
}
