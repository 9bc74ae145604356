//! Reading the YAML tree into typed values, one issue per problem, never stopping at
//! the first.

use std::rc::Rc;

use crate::issue::Issues;
use crate::path;
use crate::yaml::{Entry, Node, Value};

/// Reads typed values out of nodes, recording an issue for each that does not fit.
pub(crate) struct Reader<'i> {
    pub(crate) issues: &'i mut Issues,
}

/// A mapping whose keys were checked against the known ones.
pub(crate) struct Object<'n> {
    pub(crate) path: String,
    entries: &'n [Entry],
}

impl<'n> Object<'n> {
    /// The value of `key` and its path.
    pub(crate) fn get(&self, key: &str) -> Option<(&'n Node, String)> {
        self.entries
            .iter()
            .find(|entry| entry.key == key)
            .map(|entry| (&*entry.value, path::child(&self.path, key)))
    }

    /// The value of `key` and its path; a required key that is absent is an issue.
    pub(crate) fn required(&self, r: &mut Reader<'_>, key: &str) -> Option<(&'n Node, String)> {
        let found = self.get(key);
        if found.is_none() {
            r.issues.push(path::child(&self.path, key), "missing");
        }
        found
    }

    /// Whether `key` is present.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|entry| entry.key == key)
    }

    /// The keys present, in the order written.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &'n str> {
        self.entries.iter().map(|entry| entry.key.as_str())
    }

    /// Every entry with its path.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&'n str, &'n Node, String)> + '_ {
        self.entries
            .iter()
            .map(|entry| (entry.key.as_str(), &*entry.value, path::child(&self.path, &entry.key)))
    }
}

impl Reader<'_> {
    fn expected(&mut self, path: &str, what: &str, node: &Node) {
        self.issues
            .push(path, format!("expected {what}, found {}", node.value.kind_name()));
    }

    /// A mapping; every key not in `known` is refused as an unknown field.
    pub(crate) fn object<'n>(&mut self, node: &'n Node, path: &str, known: &[&str]) -> Option<Object<'n>> {
        let Value::Map(entries) = &node.value else {
            self.expected(path, "mapping", node);
            return None;
        };
        for (index, entry) in entries.iter().enumerate() {
            let child = path::child(path, &entry.key);
            self.issues.locate(&child, entry.key_position);
            if !known.contains(&entry.key.as_str()) {
                let earlier = index.checked_sub(1).map(|before| &entries[before]);
                let hint = match cut_at_comma(node, earlier, entry) {
                    Some(whole) => {
                        format!(" (a comma ends a value inside {{…}}: quote {whole:?} if the comma is part of it)")
                    }
                    None => crate::suggest::hint(&entry.key, known.iter().copied()),
                };
                self.issues.push(child, format!("unknown field{hint}"));
            }
        }
        Some(Object {
            path: path.to_owned(),
            entries,
        })
    }

    /// A mapping with free keys (field names, answer names).
    pub(crate) fn mapping<'n>(&mut self, node: &'n Node, path: &str) -> Option<Object<'n>> {
        let Value::Map(entries) = &node.value else {
            self.expected(path, "mapping", node);
            return None;
        };
        for entry in entries {
            self.issues.locate(&path::child(path, &entry.key), entry.key_position);
        }
        Some(Object {
            path: path.to_owned(),
            entries,
        })
    }

    /// A list; each item's path is located.
    pub(crate) fn list<'n>(&mut self, node: &'n Node, path: &str) -> Option<&'n [Rc<Node>]> {
        let Value::List(items) = &node.value else {
            self.expected(path, "list", node);
            return None;
        };
        for (index, item) in items.iter().enumerate() {
            self.issues.locate(&path::index(path, index), item.position);
        }
        Some(items)
    }

    /// A string, possibly blank.
    pub(crate) fn string<'n>(&mut self, node: &'n Node, path: &str) -> Option<&'n str> {
        match &node.value {
            Value::String(text) => Some(text),
            _ => {
                self.expected(path, "string", node);
                None
            }
        }
    }

    /// A string with something in it other than white space.
    pub(crate) fn text(&mut self, node: &Node, path: &str) -> Option<String> {
        let text = self.string(node, path)?;
        if text.trim().is_empty() {
            self.issues.push(path, "must not be blank");
            return None;
        }
        Some(text.to_owned())
    }

    /// `true` or `false`.
    pub(crate) fn boolean(&mut self, node: &Node, path: &str) -> Option<bool> {
        match node.value {
            Value::Bool(value) => Some(value),
            _ => {
                self.expected(path, "boolean", node);
                None
            }
        }
    }

    /// A number between 0 and 1 inclusive.
    pub(crate) fn fraction(&mut self, node: &Node, path: &str) -> Option<f64> {
        let Value::Number(text) = &node.value else {
            self.expected(path, "number", node);
            return None;
        };
        let value: f64 = text.parse().ok()?;
        if !(0.0..=1.0).contains(&value) {
            self.issues.push(path, format!("{text} is outside 0–1"));
            return None;
        }
        Some(value)
    }
}

/// The value an author most likely meant when an unknown key of a flow mapping
/// (`{…}`) has no value of its own and follows a string: the two joined at the comma
/// YAML cut them at, as in `{ description: Amount, in EUR }`.
fn cut_at_comma(map: &Node, earlier: Option<&Entry>, entry: &Entry) -> Option<String> {
    if !map.flow || !matches!(entry.value.value, Value::Null) {
        return None;
    }
    match &earlier?.value.value {
        Value::String(text) => Some(format!("{text}, {}", entry.key)),
        _ => None,
    }
}
