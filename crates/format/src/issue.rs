//! Issues: what is wrong with a document, and where.

use std::collections::HashMap;
use std::fmt;

/// A place in the source file: 1-based line and column (columns count characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    /// Line in the file, from 1.
    pub line: usize,
    /// Column in the line, from 1, in characters.
    pub column: usize,
}

/// One reason a document is refused.
///
/// `path` says where in the frontmatter, in the notation authors read
/// (`steps[3] (approve).on_reject`); `position` is the place in the file when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// Where in the document: empty for the file as a whole.
    pub path: String,
    /// What is wrong, in the spec's words.
    pub message: String,
    /// Where in the file, when known.
    pub position: Option<Position>,
}

impl Issue {
    /// An issue at `path`, located later from the source map.
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
            position: None,
        }
    }

    /// An issue at a known place in the file.
    pub(crate) fn at(path: impl Into<String>, message: impl Into<String>, position: Position) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
            position: Some(position),
        }
    }
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Collects issues while a document is read, and the position of every path it saw,
/// so that rules checked after reading (references, the step graph) can still say
/// where in the file the problem is.
#[derive(Debug, Default)]
pub(crate) struct Issues {
    found: Vec<Issue>,
    positions: HashMap<String, Position>,
}

impl Issues {
    /// Records where `path` is in the file.
    pub(crate) fn locate(&mut self, path: &str, position: Position) {
        self.positions.entry(path.to_owned()).or_insert(position);
    }

    /// Records an issue at `path`.
    pub(crate) fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.found.push(Issue::new(path, message));
    }

    /// Records an issue that already carries its position.
    pub(crate) fn push_issue(&mut self, issue: Issue) {
        self.found.push(issue);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// The issues in a stable order: by place in the file (issues about the file as a
    /// whole first), then by path and message. Duplicates are dropped.
    pub(crate) fn finish(self) -> Vec<Issue> {
        let Issues { found, positions } = self;
        let mut issues: Vec<Issue> = found
            .into_iter()
            .map(|mut issue| {
                if issue.position.is_none() {
                    issue.position = locate(&positions, &issue.path);
                }
                issue
            })
            .collect();
        issues.sort_by(|a, b| (a.position, &a.path, &a.message).cmp(&(b.position, &b.path, &b.message)));
        issues.dedup();
        issues
    }
}

/// The position of `path`, or of the nearest enclosing path that has one.
fn locate(positions: &HashMap<String, Position>, path: &str) -> Option<Position> {
    let mut candidate = path;
    loop {
        if let Some(position) = positions.get(candidate) {
            return Some(*position);
        }
        match candidate.rfind(['.', '[']) {
            Some(cut) => candidate = &candidate[..cut],
            // A top-level path without a place of its own (a missing key) is placed
            // at the frontmatter's mapping.
            None if !candidate.is_empty() => candidate = "",
            None => return None,
        }
    }
}
