//! Processes on disk: a PROCESS.md, a process folder holding one, or a folder of
//! process folders (as `validate` and `dev --processes` take them).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

/// A PROCESS.md to read and the folder name its process must carry, if any.
pub(crate) struct Source {
    pub(crate) file: PathBuf,
    pub(crate) folder: Option<String>,
}

/// `path` as a process: a folder holding PROCESS.md (named after the folder, resolved
/// so that `.` has a name too), or the file itself.
pub(crate) fn source(path: &Path) -> Result<Source> {
    if path.is_dir() {
        let folder = path
            .canonicalize()
            .with_context(|| format!("cannot read {}", path.display()))?
            .file_name()
            .map(|name| name.to_string_lossy().into_owned());
        Ok(Source {
            file: path.join("PROCESS.md"),
            folder,
        })
    } else {
        Ok(Source {
            file: path.to_owned(),
            folder: None,
        })
    }
}

/// The process folders under `path`: `path` itself when it holds a PROCESS.md, else
/// each folder in it that does, sorted. Refuses a path that is missing, not a folder,
/// or holds no process; refusals start with `named`, which says where the path came
/// from.
pub(crate) fn folders(path: &Path, named: &str) -> Result<Vec<PathBuf>> {
    let expected = "expected a folder of process folders (each holding a PROCESS.md), or one process folder";
    if !path.exists() {
        anyhow::bail!("{named}: no such folder; {expected}");
    }
    if !path.is_dir() {
        anyhow::bail!("{named}: not a folder; {expected}");
    }
    if path.join("PROCESS.md").is_file() {
        return Ok(vec![path.to_owned()]);
    }
    let mut folders = Vec::new();
    for item in std::fs::read_dir(path).with_context(|| format!("{named}: cannot read the folder"))? {
        let folder = item.with_context(|| format!("{named}: cannot read the folder"))?.path();
        if folder.join("PROCESS.md").is_file() {
            folders.push(folder);
        }
    }
    if folders.is_empty() {
        anyhow::bail!("{named}: no process folder in it; {expected}");
    }
    folders.sort();
    Ok(folders)
}
