//! The `agentprocess` binary as process authors and scripts use it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/agentprocess/conformance/fixtures")
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentprocess"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A folder `name` holding a PROCESS.md with `content`, under a fresh temp dir.
fn folder(name: &str, content: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("agentprocess-cli-{}-{name}", std::process::id()));
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("PROCESS.md"), content).expect("write");
    dir
}

fn show(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn every_fixture_validates() {
    let dirs: Vec<String> = std::fs::read_dir(fixtures())
        .expect("fixtures")
        .map(|entry| show(&entry.expect("entry").path()))
        .collect();
    let mut args = vec!["validate"];
    args.extend(dirs.iter().map(String::as_str));
    let out = run(&args);
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(
        text(&out.stdout).lines().filter(|line| line.contains(": ok (")).count(),
        12
    );
}

#[test]
fn refusals_print_file_line_column_and_exit_1() {
    let dir = folder(
        "broken",
        "---\nname: broken\ndescription: x\nsteps:\n  - id: a\n    agent: A.\n    next: nowhere\n  - id: done\n    finish: ok\n---\n",
    );
    let out = run(&["validate", &show(&dir)]);
    assert_eq!(out.status.code(), Some(1));
    let file = show(&dir.join("PROCESS.md"));
    assert_eq!(
        text(&out.stdout),
        format!(
            "{file}:7:5: steps[0] (a).next: no step \"nowhere\"\n{file}:8:5: steps[1] (done): not reachable from the first step\n"
        )
    );
    assert_eq!(text(&out.stderr), "1 of 1 file(s) refused\n");
}

#[test]
fn json_output_for_machines() {
    let dir = folder(
        "wrong-name",
        "---\nname: other\ndescription: x\nsteps:\n  - id: done\n    finish: ok\n---\n",
    );
    let out = run(&["validate", "--json", &show(&dir)]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["ok"], false);
    let issue = &report["files"][0]["issues"][0];
    assert_eq!(issue["path"], "name");
    assert_eq!(
        issue["message"],
        "\"other\" does not match the folder name \"wrong-name\""
    );
    assert_eq!(issue["line"], 2);
    assert_eq!(issue["column"], 1);

    let ok = run(&["validate", "--json", &show(&fixtures().join("vendor-check"))]);
    assert!(ok.status.success());
    let report: serde_json::Value = serde_json::from_slice(&ok.stdout).expect("JSON");
    assert_eq!(report["files"][0]["ok"], true);
    assert_eq!(report["files"][0]["contentHash"].as_str().map(str::len), Some(64));
}

#[test]
fn without_flags_validate_as_a_server_lacking_a_profile_or_tool() {
    let incident = show(&fixtures().join("major-incident"));
    let out = run(&["validate", "--without", "parallel-1", &incident]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout)
            .contains("steps[1] (respond).parallel: needs the parallel-1 profile, which this server does not offer")
    );

    let vendor = show(&fixtures().join("vendor-check"));
    let out = run(&["validate", "--without", "check-1", "--without", "upload", &vendor]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("check: needs the check-1 profile"), "{stdout}");
    assert!(
        stdout.contains("evidence: file evidence needs the upload tool"),
        "{stdout}"
    );
}

#[test]
fn hash_prints_the_content_hash() {
    let out = run(&["hash", &show(&fixtures().join("supplier-rfp"))]);
    assert!(out.status.success());
    let hash = text(&out.stdout);
    assert_eq!(hash.trim().len(), 64);
    let again = run(&["hash", &show(&fixtures().join("supplier-rfp").join("PROCESS.md"))]);
    assert_eq!(text(&again.stdout), hash);

    let broken = folder("unhashable", "---\nname: unhashable\n---\n");
    let out = run(&["hash", &show(&broken)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("description: missing"));
}

#[test]
fn unreadable_paths_exit_2_and_help_explains() {
    let out = run(&["validate", "/nonexistent/PROCESS.md"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot read /nonexistent/PROCESS.md"));

    let help = run(&["validate", "--help"]);
    let help = text(&help.stdout);
    assert!(help.contains("FILE:LINE:COLUMN"), "{help}");
    assert!(help.contains("parallel-1") && help.contains("send_event"), "{help}");
}
