#![doc = include_str!("../README.md")]

mod capabilities;
mod check;
mod document;
pub mod exact;
mod fields;
mod frontmatter;
mod graph;
mod hash;
mod issue;
mod json;
mod number;
mod path;
mod read;
mod references;
mod split;
mod steps;
mod suggest;
pub mod values;
mod yaml;

use std::fmt;
use std::rc::Rc;

pub use capabilities::Capabilities;
pub use document::{
    Check, DataPath, Duration, DurationError, DurationUnit, EvidenceKind, Field, FieldType, Fields, Next, PersonRef,
    ProcessDocument, Question, QuestionKind, Requires, Route, Step, StepKind,
};
pub use issue::{Issue, Position};
pub use yaml::{MAX_DEPTH, MAX_NODES};

use issue::Issues;
use read::Reader;

/// Largest `PROCESS.md` accepted, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// How to validate: what the server offers, and the folder the file came in.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    /// Profiles and optional tools the server offers.
    pub capabilities: Capabilities,
    /// The folder's name when the process travels as a folder; `name` must equal it.
    pub folder: Option<&'a str>,
}

/// A `PROCESS.md` that broke no rule: its typed frontmatter, the frontmatter as JSON,
/// the body byte for byte, and the content hash.
#[derive(Debug, Clone)]
pub struct ValidatedProcess {
    document: ProcessDocument,
    frontmatter: serde_json::Value,
    body: String,
    content_hash: String,
}

impl ValidatedProcess {
    /// The typed frontmatter, with every default `next` filled in.
    pub fn document(&self) -> &ProcessDocument {
        &self.document
    }

    /// The parsed frontmatter as JSON, exactly as written (this is what is hashed).
    pub fn frontmatter(&self) -> &serde_json::Value {
        &self.frontmatter
    }

    /// Every byte after the closing `---` line.
    pub fn body(&self) -> &str {
        &self.body
    }

    /// SHA-256 over the RFC 8785 canonical JSON of the frontmatter, `\n`, and the
    /// body; lowercase hex.
    pub fn content_hash(&self) -> &str {
        &self.content_hash
    }
}

/// Why a document was refused: every issue, in a stable order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The issues, sorted by place in the file.
    pub issues: Vec<Issue>,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "refused with {} issue(s)", self.issues.len())?;
        for issue in &self.issues {
            write!(f, "\n  {issue}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Refusal {}

/// What every reading of a file shares: the body and the YAML tree, with the issues
/// that did not stop reading.
struct Source<'a> {
    body: &'a str,
    root: Rc<yaml::Node>,
    issues: Issues,
}

/// Size and UTF-8 limits, the fences, and the YAML under the core schema.
fn read_source(source: &[u8]) -> Result<Source<'_>, Refusal> {
    let refuse = |issue: Issue| Refusal { issues: vec![issue] };
    if source.len() > MAX_DOCUMENT_BYTES {
        return Err(refuse(Issue::new(
            "",
            format!("the file is {} bytes; the limit is {MAX_DOCUMENT_BYTES}", source.len()),
        )));
    }
    let text = std::str::from_utf8(source).map_err(|error| {
        refuse(Issue::new(
            "",
            format!("the file is not UTF-8 (invalid byte at offset {})", error.valid_up_to()),
        ))
    })?;
    if text.starts_with('\u{feff}') {
        return Err(refuse(Issue::new(
            "",
            "the file starts with a byte order mark (U+FEFF); save it as UTF-8 without one so that its first line is `---`",
        )));
    }
    let parts = split::split(text).map_err(refuse)?;
    // The frontmatter starts on the file's second line.
    let read = yaml::read(parts.frontmatter, 2);
    let mut issues = Issues::default();
    for issue in read.issues {
        issues.push_issue(issue);
    }
    match read.root {
        Some(root) => Ok(Source {
            body: parts.body,
            root,
            issues,
        }),
        None => {
            if issues.is_empty() {
                issues.push("", "the frontmatter is empty");
            }
            Err(Refusal {
                issues: issues.finish(),
            })
        }
    }
}

/// The frontmatter as JSON, read under the YAML 1.2 core schema with the same limits
/// and refusals as [`validate`] (duplicate keys, non-string keys, numbers a double
/// cannot hold, unsupported tags), but without the publication rules. For tools that
/// need the data of a file that may not publish.
pub fn read_frontmatter(source: &[u8]) -> Result<serde_json::Value, Refusal> {
    read_parts(source).map(|(frontmatter, _)| frontmatter)
}

/// The frontmatter as JSON and the body, read as [`read_frontmatter`] reads them.
pub fn read_parts(source: &[u8]) -> Result<(serde_json::Value, String), Refusal> {
    let Source { body, root, issues } = read_source(source)?;
    if !issues.is_empty() {
        return Err(Refusal {
            issues: issues.finish(),
        });
    }
    Ok((json::to_json(&root), body.to_owned()))
}

/// Reads and validates a `PROCESS.md` against spec §2 and the profiles `options`
/// offers. Never panics; returns the process or every issue found.
pub fn validate(source: &[u8], options: &Options<'_>) -> Result<ValidatedProcess, Refusal> {
    let Source { body, root, mut issues } = read_source(source)?;
    let draft = frontmatter::draft(&mut Reader { issues: &mut issues }, &root, options.folder);
    let ids_unique = references::check(&draft.steps, &draft.inputs, draft.uses_parallel, &mut issues);
    let readable = draft.steps.iter().all(|slot| slot.step.is_some());
    let (paths, mut steps): (Vec<String>, Vec<Step>) = draft
        .steps
        .into_iter()
        .filter_map(|slot| Some((slot.path, slot.step?)))
        .unzip();
    capabilities::check(options.capabilities, &paths, &steps, &mut issues);
    if readable && ids_unique && !steps.is_empty() {
        graph::check(&mut steps, &paths, draft.uses_parallel, &mut issues);
    }

    match (draft.name, draft.description) {
        (Some(name), Some(description)) if issues.is_empty() => {
            let frontmatter = json::to_json(&root);
            let content_hash = hash::content_hash(&frontmatter, body);
            let document = ProcessDocument {
                name,
                description,
                inputs: draft.inputs,
                requires: draft.requires,
                steps,
            };
            Ok(ValidatedProcess {
                document,
                frontmatter,
                body: body.to_owned(),
                content_hash,
            })
        }
        _ => Err(Refusal {
            issues: issues.finish(),
        }),
    }
}
