//! Shared helpers: fixture paths, short ways to validate a document, and the
//! independent reference implementation in `tests/reference`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use agentprocess_format::{Capabilities, Options, ValidatedProcess, validate};

/// `../shared/agentprocess` beside the repository.
pub(crate) fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/agentprocess")
}

/// The twelve conformance fixtures: (folder name, PROCESS.md bytes).
pub(crate) fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = shared().join("conformance/fixtures");
    let mut found: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()))
        .map(|entry| {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().expect("a folder name").to_string_lossy().into_owned();
            let bytes = std::fs::read(path.join("PROCESS.md")).expect("a PROCESS.md");
            (name, bytes)
        })
        .collect();
    found.sort();
    assert_eq!(
        found.len(),
        12,
        "expected the twelve conformance fixtures in {}",
        dir.display()
    );
    found
}

/// Validates with every capability offered.
pub(crate) fn publish(source: &str) -> Result<ValidatedProcess, Vec<String>> {
    publish_with(source, Capabilities::ALL)
}

/// The official `process-document.json` schema, compiled once.
pub(crate) fn official_schema() -> &'static jsonschema::Validator {
    static SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let path = shared().join("schemas/core-2/process-document.json");
        let schema: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("the official schema")).expect("JSON");
        jsonschema::draft202012::new(&schema).expect("a valid schema")
    })
}

/// Validates as a server offering `capabilities`; issues as their displayed text.
/// Whatever publishes must also meet the official schema.
pub(crate) fn publish_with(source: &str, capabilities: Capabilities) -> Result<ValidatedProcess, Vec<String>> {
    let process = validate(
        source.as_bytes(),
        &Options {
            capabilities,
            folder: None,
        },
    )
    .map_err(|refusal| refusal.issues.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    let errors: Vec<String> = official_schema()
        .iter_errors(process.frontmatter())
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "published, but the official schema refuses it: {errors:?}\n{source}"
    );
    Ok(process)
}

/// The issues of a document that must be refused.
pub(crate) fn refuse(source: &str) -> Vec<String> {
    match publish(source) {
        Ok(_) => panic!("expected a refusal, but it published:\n{source}"),
        Err(issues) => issues,
    }
}

/// A whole document from a frontmatter body (without the fences).
pub(crate) fn doc(frontmatter: &str) -> String {
    format!("---\n{frontmatter}---\n# Body\n")
}

/// A valid document's frontmatter with `steps` replaced.
pub(crate) fn with_steps(steps: &str) -> String {
    doc(&format!(
        "name: sample\ndescription: A sample process.\nsteps:\n{steps}"
    ))
}

/// A fresh folder under the system temp dir, removed when dropped.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    /// `agentprocess-<label>-<pid>-<nanos>` under the system temp dir.
    pub(crate) fn new(label: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        let dir = std::env::temp_dir().join(format!("agentprocess-{label}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|error| panic!("cannot create {}: {error}", dir.display()));
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `node tests/reference/hash.mjs`, ready for arguments (see that script for its
/// modes). Fails the test, never skips it, when the npm packages are missing.
pub(crate) fn reference_hash_command() -> Command {
    let reference = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/reference");
    let node_modules = reference.join("node_modules");
    assert!(
        node_modules.join("yaml").is_dir() && node_modules.join("canonicalize").is_dir(),
        "the reference hash's npm packages are not installed in {}: run scripts/test \
         (it runs scripts/install-test-deps, which runs npm ci there)",
        node_modules.display()
    );
    let mut command = Command::new("node");
    command.arg(reference.join("hash.mjs"));
    command
}
