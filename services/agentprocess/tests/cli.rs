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

/// A folder `name` holding a PROCESS.md with `content`, under a fresh temp dir that
/// goes when the value does.
struct Folder {
    root: PathBuf,
    dir: PathBuf,
}

impl std::ops::Deref for Folder {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn folder(name: &str, content: &str) -> Folder {
    let root = std::env::temp_dir().join(format!("agentprocess-cli-{}-{name}", std::process::id()));
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("PROCESS.md"), content).expect("write");
    Folder { root, dir }
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

/// `agentprocess admin --database-url <a fresh SQLite file> ARGS…`; the file goes
/// when the test ends.
struct AdminDb(String, PathBuf);

impl Drop for AdminDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.1.display()));
        }
    }
}

impl AdminDb {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!("agentprocess-cli-{}-{name}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let db = Self(format!("sqlite://{}?mode=rwc", path.display()), path);
        assert!(db.run(&["migrate"]).status.success());
        assert!(db.run(&["create-org", "acme"]).status.success());
        db
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut all = vec!["admin", "--database-url", &self.0];
        all.extend_from_slice(args);
        run(&all)
    }
}

#[test]
fn admin_import_refuses_with_every_issue_and_its_place() {
    let db = AdminDb::new("refusal");
    let dir = folder(
        "broken",
        "---\nname: broken\ndescription: Two mistakes.\nsteps:\n  - id: a\n    agent: Do it.\n    next: nowhere\n  \
         - id: b\n    wait: 3 weeks\n---\n",
    );
    let output = db.run(&["import", "--org", "acme", &show(&dir)]);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("7:5: steps[0] (a).next: no step \"nowhere\""),
        "{stderr}"
    );
    assert!(stderr.contains("9:5: steps[1] (b).wait:"), "{stderr}");
}

#[test]
fn admin_publishes_once_every_role_is_bound_and_versions_only_on_change() {
    let db = AdminDb::new("publish");
    let dir = fixtures().join("invoice-approval");
    let imported = db.run(&["import", "--org", "acme", &show(&dir)]);
    assert!(imported.status.success(), "{}", text(&imported.stderr));
    assert!(text(&imported.stdout).contains("role finance-controller: not bound yet"));
    let refused = db.run(&["publish", "--org", "acme", "invoice-approval"]);
    assert!(!refused.status.success());
    assert!(text(&refused.stderr).contains("role finance-controller: not bound to a group"));
    for (role, group) in [("finance-controller", "finance"), ("cfo", "executives")] {
        let bound = db.run(&["bind", "--org", "acme", "invoice-approval", role, group]);
        assert!(bound.status.success(), "{}", text(&bound.stderr));
    }
    let first = db.run(&["publish", "--org", "acme", "invoice-approval"]);
    assert!(
        text(&first.stdout).starts_with("invoice-approval version 1: "),
        "{}",
        text(&first.stderr)
    );
    let again = db.run(&["publish", "--org", "acme", "invoice-approval"]);
    assert!(text(&again.stdout).contains("version 1 (unchanged)"));
    let versions = db.run(&["versions", "--org", "acme", "invoice-approval"]);
    assert_eq!(text(&versions.stdout).lines().count(), 1);
}

#[test]
fn admin_identities_get_tokens_shown_once() {
    let db = AdminDb::new("identities");
    let made = db.run(&[
        "create-identity",
        "--org",
        "acme",
        "--kind",
        "person",
        "--person",
        "Mira@Acme.com",
        "mira",
        "--group",
        "finance",
    ]);
    assert!(made.status.success(), "{}", text(&made.stderr));
    let bad = db.run(&["create-identity", "--org", "acme", "--kind", "person", "Bad Id"]);
    let stderr = text(&bad.stderr);
    assert!(
        stderr.contains("identity id \"Bad Id\"") && stderr.contains("person: required for a person"),
        "{stderr}"
    );
    let token = db.run(&["issue-token", "--org", "acme", "mira"]);
    assert!(text(&token.stdout).starts_with("apt_"));
    let listed = text(&db.run(&["identities", "--org", "acme"]).stdout);
    assert_eq!(listed.trim(), "mira\tperson\tmira@acme.com\tfinance");
    let revoked = db.run(&["revoke-tokens", "--org", "acme", "mira"]);
    assert_eq!(text(&revoked.stdout).trim(), "1 token(s) of mira revoked");
    let again = db.run(&["revoke-tokens", "--org", "acme", "mira"]);
    assert_eq!(text(&again.stdout).trim(), "0 token(s) of mira revoked");
}
