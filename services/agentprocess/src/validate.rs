//! `validate` and `hash`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agentprocess_format::{Capabilities, Options, Refusal, ValidatedProcess, validate};
use anyhow::{Context, Result};
use serde_json::json;

use crate::Capability;
use crate::folders::{Source, source};

fn check(source: &Source, capabilities: Capabilities) -> Result<Result<ValidatedProcess, Refusal>> {
    let bytes = std::fs::read(&source.file).with_context(|| format!("cannot read {}", source.file.display()))?;
    Ok(validate(
        &bytes,
        &Options {
            capabilities,
            folder: source.folder.as_deref(),
        },
    ))
}

fn capabilities(without: &[Capability]) -> Capabilities {
    let mut offered = Capabilities::ALL;
    for capability in without {
        match capability {
            Capability::Parallel => offered.parallel = false,
            Capability::Check => offered.check = false,
            Capability::Upload => offered.upload = false,
            Capability::SendEvent => offered.send_event = false,
        }
    }
    offered
}

/// The processes `paths` name: a file as it is, a folder holding a PROCESS.md, and
/// each process folder of a folder of them (as `dev --processes` reads one).
fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut found = Vec::with_capacity(paths.len());
    for path in paths {
        if path.is_dir() && !path.join("PROCESS.md").exists() {
            found.extend(crate::folders::folders(path, &path.display().to_string())?);
        } else {
            found.push(path.clone());
        }
    }
    Ok(found)
}

/// Validates every path; prints issues; 1 when any file is refused.
pub(crate) fn run(paths: &[PathBuf], as_json: bool, without: &[Capability]) -> Result<ExitCode> {
    let offered = capabilities(without);
    let paths = expand(paths)?;
    let mut refused = 0;
    let mut files = Vec::with_capacity(paths.len());
    for path in &paths {
        let source = source(path)?;
        let shown = source.file.display().to_string();
        match check(&source, offered)? {
            Ok(process) => {
                if as_json {
                    files.push(json!({ "file": shown, "ok": true, "name": process.document().name, "contentHash": process.content_hash() }));
                } else {
                    println!("{shown}: ok ({})", process.document().name);
                }
            }
            Err(refusal) => {
                refused += 1;
                if as_json {
                    let issues: Vec<_> = refusal
                        .issues
                        .iter()
                        .map(|issue| {
                            json!({
                                "path": issue.path,
                                "message": issue.message,
                                "line": issue.position.map(|p| p.line),
                                "column": issue.position.map(|p| p.column),
                                "text": issue.to_string(),
                            })
                        })
                        .collect();
                    files.push(json!({ "file": shown, "ok": false, "issues": issues }));
                } else {
                    for issue in &refusal.issues {
                        match issue.position {
                            Some(at) => println!("{shown}:{}:{}: {issue}", at.line, at.column),
                            None => println!("{shown}: {issue}"),
                        }
                    }
                }
            }
        }
    }
    if as_json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "ok": refused == 0, "files": files }))?
        );
    } else if refused > 0 {
        eprintln!("{refused} of {} file(s) refused", paths.len());
    }
    Ok(if refused == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Prints the content hash of one valid file.
pub(crate) fn hash(path: &Path) -> Result<ExitCode> {
    let source = source(path)?;
    match check(&source, Capabilities::ALL)? {
        Ok(process) => {
            println!("{}", process.content_hash());
            Ok(ExitCode::SUCCESS)
        }
        Err(refusal) => {
            let shown = source.file.display();
            for issue in &refusal.issues {
                match issue.position {
                    Some(at) => eprintln!("{shown}:{}:{}: {issue}", at.line, at.column),
                    None => eprintln!("{shown}: {issue}"),
                }
            }
            Ok(ExitCode::from(1))
        }
    }
}
