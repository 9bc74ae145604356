//! Embeds the example processes (`examples/processes/*/PROCESS.md` at the repository
//! root) in the binary, so `agentprocess dev` publishes them from any directory.
//!
//! Writes `$OUT_DIR/examples.rs`: one `EXAMPLES` table of (folder name, file text),
//! sorted by name, each text an `include_str!` of the file's absolute path.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let folder = manifest.join("../../examples/processes");
    // A directory here makes cargo look at everything under it: a new, removed or
    // edited example rebuilds the table.
    println!("cargo:rerun-if-changed={}", folder.display());
    let examples = examples(&folder);
    let mut table = String::from(
        "/// The example processes built into the binary: (folder name, PROCESS.md), by name.\n\
         pub(crate) const EXAMPLES: &[(&str, &str)] = &[\n",
    );
    for (name, file) in &examples {
        println!("cargo:rerun-if-changed={}", file.display());
        // `{:?}` of a str is a valid Rust string literal, whatever the path holds.
        writeln!(table, "    ({name:?}, include_str!({:?})),", file.display().to_string())
            .expect("writing to a String");
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("examples.rs");
    std::fs::write(&out, table).unwrap_or_else(|error| panic!("cannot write {}: {error}", out.display()));
}

/// Every `<folder>/<name>/PROCESS.md`, sorted by name; the build fails when there is none,
/// because a binary without its examples would start `agentprocess dev` empty.
fn examples(folder: &Path) -> Vec<(String, PathBuf)> {
    let entries = std::fs::read_dir(folder).unwrap_or_else(|error| {
        panic!(
            "cannot read the example processes at {}: {error} (the build needs examples/ beside services/)",
            folder.display()
        )
    });
    let mut found = Vec::new();
    for entry in entries {
        let path = entry
            .unwrap_or_else(|error| panic!("cannot read {}: {error}", folder.display()))
            .path();
        let file = path.join("PROCESS.md");
        if !file.is_file() {
            continue;
        }
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_else(|| panic!("{} is not a UTF-8 folder name", path.display()))
            .to_owned();
        let file = file
            .canonicalize()
            .unwrap_or_else(|error| panic!("cannot resolve {}: {error}", file.display()));
        found.push((name, file));
    }
    assert!(
        !found.is_empty(),
        "no example process (a folder holding PROCESS.md) in {}",
        folder.display()
    );
    found.sort();
    found
}
