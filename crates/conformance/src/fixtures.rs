//! The conformance fixtures: each a folder holding a `PROCESS.md`, read and hashed
//! with the project's own format crate.

use std::path::Path;

use agentprocess_format::{Capabilities, Options, validate};
use serde_json::Value;

/// One fixture, as the file says.
#[derive(Debug, Clone)]
pub(crate) struct Fixture {
    /// The process name (and folder name).
    pub(crate) name: String,
    /// The parsed frontmatter.
    pub(crate) frontmatter: Value,
    /// The body, byte for byte.
    pub(crate) body: String,
    /// Its content hash (spec §7.5).
    pub(crate) hash: String,
    /// The profiles it needs beyond core-2 (`parallel-1`, `check-1`).
    pub(crate) profiles: Vec<&'static str>,
}

impl Fixture {
    /// A step's definition, by id (branch steps of a parallel step are top-level
    /// steps too).
    pub(crate) fn step(&self, id: &str) -> Option<&Value> {
        self.steps().find(|step| step["id"] == id)
    }

    fn steps(&self) -> impl Iterator<Item = &Value> {
        self.frontmatter["steps"].as_array().into_iter().flatten()
    }

    /// Every `(step, to)` that a step's route list allows.
    pub(crate) fn routes(&self) -> Vec<(String, String)> {
        let mut found: Vec<(String, String)> = self
            .steps()
            .filter_map(|step| Some((step["id"].as_str()?, step["next"].as_array()?)))
            .flat_map(|(id, routes)| {
                routes
                    .iter()
                    .map(move |route| (id.to_owned(), route_target(route).unwrap_or_default().to_owned()))
            })
            .collect();
        found.sort();
        found.dedup();
        found
    }
}

/// Every fixture in `dir`, by name.
pub(crate) fn load(dir: &Path) -> Result<Vec<Fixture>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|error| format!("cannot read the fixtures at {}: {error}", dir.display()))?;
    let mut fixtures = Vec::new();
    let mut problems = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path().join("PROCESS.md");
        let Ok(source) = std::fs::read(&path) else {
            continue;
        };
        let folder = entry.file_name().to_string_lossy().into_owned();
        let options = Options {
            capabilities: Capabilities::ALL,
            folder: Some(&folder),
        };
        match validate(&source, &options) {
            Ok(process) => {
                let mut profiles = Vec::new();
                if process.document().uses_parallel() {
                    profiles.push("parallel-1");
                }
                if uses_check(&process.frontmatter()["steps"]) {
                    profiles.push("check-1");
                }
                fixtures.push(Fixture {
                    name: folder,
                    frontmatter: process.frontmatter().clone(),
                    body: process.body().to_owned(),
                    hash: process.content_hash().to_owned(),
                    profiles,
                });
            }
            Err(refusal) => problems.push(format!("{}: {refusal}", path.display())),
        }
    }
    if !problems.is_empty() {
        return Err(format!("fixtures that do not validate:\n{}", problems.join("\n")));
    }
    if fixtures.is_empty() {
        return Err(format!("no fixture (a folder holding PROCESS.md) in {}", dir.display()));
    }
    fixtures.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(fixtures)
}

fn uses_check(steps: &Value) -> bool {
    steps
        .as_array()
        .into_iter()
        .flatten()
        .any(|step| step.get("check").is_some())
}

/// The step a route names: the route itself (`approve`), or its `to` (`{ to, when }`).
pub(crate) fn route_target(route: &Value) -> Option<&str> {
    route.as_str().or_else(|| route["to"].as_str())
}
