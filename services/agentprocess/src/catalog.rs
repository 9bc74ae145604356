//! The processes `agentprocess dev` publishes at start: the examples built into the
//! binary, or the process folders `--processes` names.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

include!(concat!(env!("OUT_DIR"), "/examples.rs"));

/// One process to publish: the name of the folder it came from and its PROCESS.md.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) folder: String,
    pub(crate) source: Vec<u8>,
}

/// Where the processes came from, for the welcome text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// `examples/processes` of the repository this binary was built from.
    BuiltIn,
    /// The folder `--processes` named.
    Folder(PathBuf),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BuiltIn => f.write_str("the examples built into agentprocess"),
            Self::Folder(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The examples built into the binary, by name.
pub(crate) fn built_in() -> Vec<Entry> {
    EXAMPLES
        .iter()
        .map(|(folder, text)| Entry {
            folder: (*folder).to_owned(),
            source: text.as_bytes().to_vec(),
        })
        .collect()
}

/// The processes under `path`, by folder name: each folder in it that holds a
/// PROCESS.md, or `path` itself when it holds one. Refuses a path that is missing,
/// not a folder, or holds no process at all, naming the path and what was expected.
pub(crate) fn read(path: &Path) -> anyhow::Result<Vec<Entry>> {
    let flag = format!("--processes {}", path.display());
    crate::folders::folders(path, &flag)?
        .iter()
        .map(|folder| entry(folder))
        .collect()
}

/// The process in `folder`, named after the folder.
fn entry(folder: &Path) -> anyhow::Result<Entry> {
    let crate::folders::Source { file, folder: name } = crate::folders::source(folder)?;
    let source = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
    Ok(Entry {
        folder: name.with_context(|| format!("{} has no folder name", folder.display()))?,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_example_would_publish_on_this_server() {
        let examples = built_in();
        assert!(examples.len() >= 4, "{examples:?}");
        for example in &examples {
            let options = agentprocess_format::Options {
                capabilities: agentprocess_service::CAPABILITIES,
                folder: Some(&example.folder),
            };
            let validated = agentprocess_format::validate(&example.source, &options);
            assert!(validated.is_ok(), "{}: {:?}", example.folder, validated.err());
        }
        let mut names: Vec<&str> = examples.iter().map(|example| example.folder.as_str()).collect();
        names.dedup();
        assert_eq!(names.len(), examples.len());
    }
}
