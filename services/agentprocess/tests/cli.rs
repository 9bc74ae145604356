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
fn refusals_suggest_the_closest_name_state_the_rules_in_words_and_hint_at_quoting() {
    let dir = folder(
        "Supplier_Onboarding",
        "---\nname: Supplier_Onboarding\ndescription: x\ninputs:\n  \
         amount: { type: number, description: Amount, in EUR }\nsteps:\n  \
         - id: collect_details\n    agent: Collect.\n    nxt: approve\n  \
         - id: Approve Order\n    approve: Approve?\n    person: inputs.aprover\n    next: collect_detials\n---\n",
    );
    let out = run(&["validate", &show(&dir)]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    for expected in [
        "name: \"Supplier_Onboarding\" is not a valid name: use 1–64 lowercase letters a–z and digits, with \
         single hyphens between words, such as \"supplier-onboarding\" (^[a-z0-9]+(-[a-z0-9]+)*$)",
        "inputs.amount.in EUR: unknown field (a comma ends a value inside {…}: quote \"Amount, in EUR\" if the \
         comma is part of it)",
        "steps[0] (collect_details).nxt: unknown field (did you mean \"next\"?)",
        "steps[1].id: \"Approve Order\" is not a valid step id: start with a lowercase letter a–z, then up to 63 \
         lowercase letters, digits, \"_\" or \"-\", such as \"approve_order\" (^[a-z][a-z0-9_-]{0,63}$)",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }
    let steps = folder(
        "misspelt",
        "---\nname: misspelt\ndescription: x\ninputs:\n  approver: { type: person }\nsteps:\n  \
         - id: collect_details\n    agent: Collect.\n    next: approve\n  \
         - id: approve\n    approve: Approve?\n    person: inputs.aprover\n    next: collect_detials\n---\n",
    );
    let stdout = text(&run(&["validate", &show(&steps)]).stdout);
    assert!(
        stdout.contains("steps[1] (approve).next: no step \"collect_detials\" (did you mean \"collect_details\"?)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("inputs.aprover names no declared input (did you mean \"approver\"?)"),
        "{stdout}"
    );
}

#[test]
fn validate_takes_a_folder_of_process_folders() {
    let good = folder(
        "good-one",
        "---\nname: good-one\ndescription: x\nsteps:\n  - id: done\n    finish: ok\n---\n",
    );
    let parent = good.root.clone();
    let bad = parent.join("bad-one");
    std::fs::create_dir_all(&bad).expect("dir");
    std::fs::write(bad.join("PROCESS.md"), "---\nname: bad-one\nsteps: []\n---\n").expect("write");
    std::fs::create_dir_all(parent.join("notes")).expect("a folder that is not a process");
    let out = run(&["validate", &show(&parent)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!("{}: ok (good-one)", show(&good.join("PROCESS.md")))),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{}:", show(&bad.join("PROCESS.md")))),
        "{stdout}"
    );
    assert_eq!(text(&out.stderr), "1 of 2 file(s) refused\n");
    let empty = parent.join("notes");
    let out = run(&["validate", &show(&empty)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no process folder in it"),
        "{}",
        text(&out.stderr)
    );
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
    assert!(
        text(&imported.stdout)
            .contains("(agentprocess admin bind --org acme invoice-approval finance-controller GROUP)"),
        "the hint is a whole command"
    );
    let typo = db.run(&[
        "bind",
        "--org",
        "acme",
        "invoice-approval",
        "finance-controller",
        "fnance",
    ]);
    assert!(!typo.status.success());
    assert!(
        text(&typo.stderr).contains("group \"fnance\": the organization has no such group"),
        "{}",
        text(&typo.stderr)
    );
    let made = db.run(&[
        "create-identity",
        "--org",
        "acme",
        "--kind",
        "person",
        "--person",
        "fin@acme.com",
        "fin",
        "--group",
        "finance",
    ]);
    assert!(made.status.success(), "{}", text(&made.stderr));
    let group = db.run(&["create-group", "--org", "acme", "executives"]);
    assert!(group.status.success(), "{}", text(&group.stderr));
    let empty = db.run(&["bind", "--org", "acme", "invoice-approval", "cfo", "executives"]);
    assert!(
        text(&empty.stderr).contains("has no members"),
        "{}",
        text(&empty.stderr)
    );
    for (role, group, force) in [
        ("finance-controller", "finance", None),
        ("cfo", "executives", Some("--force")),
    ] {
        let mut args = vec!["bind", "--org", "acme", "invoice-approval", role, group];
        args.extend(force);
        let bound = db.run(&args);
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
    // Binding the agent steps to one agent is a change of its own: version 2.
    let agent = db.run(&["create-identity", "--org", "acme", "--kind", "agent", "matcher"]);
    assert!(agent.status.success(), "{}", text(&agent.stderr));
    let nobody = db.run(&[
        "bind-agents",
        "--org",
        "acme",
        "invoice-approval",
        "*",
        "--agent",
        "matchr",
    ]);
    assert!(
        text(&nobody.stderr).contains("agent \"matchr\": the organization has no such agent"),
        "{}",
        text(&nobody.stderr)
    );
    let bound = db.run(&[
        "bind-agents",
        "--org",
        "acme",
        "invoice-approval",
        "*",
        "--agent",
        "matcher",
    ]);
    assert!(bound.status.success(), "{}", text(&bound.stderr));
    assert!(
        text(&bound.stdout).contains("agent step * of invoice-approval bound to the agent matcher"),
        "{}",
        text(&bound.stdout)
    );
    let second = db.run(&["publish", "--org", "acme", "invoice-approval"]);
    assert!(
        text(&second.stdout).starts_with("invoice-approval version 2: "),
        "{}",
        text(&second.stderr)
    );
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
        stderr.contains("id: \"Bad Id\"") && stderr.contains("person: a person needs one, their email"),
        "{stderr}"
    );
    let twice = db.run(&[
        "create-identity",
        "--org",
        "acme",
        "--kind",
        "person",
        "--person",
        "mira@acme.com",
        "mira",
    ]);
    let stderr = text(&twice.stderr);
    assert!(!twice.status.success());
    assert!(
        stderr.contains("conflict: an identity \"mira\" exists already") && !stderr.contains("duplicate key"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("exists already").count(), 1, "said once: {stderr}");
    let token = db.run(&["issue-token", "--org", "acme", "mira"]);
    assert!(text(&token.stdout).starts_with("apt_"));
    let listed = text(&db.run(&["identities", "--org", "acme"]).stdout);
    assert_eq!(listed.trim(), "mira\tperson\tmember\tmira@acme.com\tfinance");
    let revoked = db.run(&["revoke-tokens", "--org", "acme", "mira"]);
    assert_eq!(text(&revoked.stdout).trim(), "1 token(s) of mira revoked");
    let again = db.run(&["revoke-tokens", "--org", "acme", "mira"]);
    assert_eq!(text(&again.stdout).trim(), "0 token(s) of mira revoked");
}

/// The repository's example processes, the ones built into the binary, by name.
fn example_names() -> Vec<String> {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/processes");
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .expect("examples/processes")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.join("PROCESS.md").is_file())
        .map(|path| path.file_name().expect("a name").to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn every_example_validates_without_check_1() {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/processes");
    let dirs: Vec<String> = example_names().iter().map(|name| show(&folder.join(name))).collect();
    assert!(dirs.len() >= 4, "{dirs:?}");
    let mut args = vec!["validate", "--without", "check-1"];
    args.extend(dirs.iter().map(String::as_str));
    let out = run(&args);
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
}

/// A fresh, empty temp dir that goes when the value does.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!("agentprocess-cli-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("temp dir");
        Self(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `agentprocess dev ARGS…` on a free port with `cwd` as its working directory and its
/// data there, up to the end of its welcome text; killed when the value goes.
struct DevServer {
    child: std::process::Child,
    welcome: String,
    details: serde_json::Value,
}

impl Drop for DevServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl DevServer {
    fn start(cwd: &Path, args: &[&str]) -> Self {
        use std::io::BufRead as _;

        let mut child = Command::new(env!("CARGO_BIN_EXE_agentprocess"))
            .current_dir(cwd)
            .args([
                "dev",
                "--listen",
                "127.0.0.1:0",
                "--data-dir",
                "data",
                "--details",
                "details.json",
            ])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the binary runs");
        let stdout = child.stdout.take().expect("piped stdout");
        let (lines, received) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let mut welcome = String::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match received.recv_timeout(left) {
                Ok(line) => {
                    welcome.push_str(&line);
                    welcome.push('\n');
                    if line.contains("ctrl-c stops the server") {
                        break;
                    }
                }
                Err(error) => {
                    let _ = child.kill();
                    panic!("dev server gave no welcome ({error}); so far:\n{welcome}");
                }
            }
        }
        let details = std::fs::read(cwd.join("details.json")).expect("the details file, written before the welcome");
        let details = serde_json::from_slice(&details).expect("details JSON");
        Self {
            child,
            welcome,
            details,
        }
    }

    /// One MCP `tools/call` over plain HTTP/1.1 as `identity`, with an `Origin` header
    /// when given: the status and the body.
    fn call(&self, identity: &str, tool: &str, origin: Option<&str>) -> (u16, String) {
        let token = self.details["identities"][identity]["token"].as_str().expect("token");
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}}}}}"#
        );
        let origin = origin.map(|origin| format!("Origin: {origin}\r\n")).unwrap_or_default();
        let headers =
            format!("Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{origin}");
        let (status, body) = self.http("POST", "/mcp", token, &headers, &body);
        if status == 200 {
            assert_meets_contract(tool, &body);
        }
        (status, body)
    }

    /// One HTTP/1.1 request with `token` as the bearer and `headers` (each ending in
    /// CRLF) besides: the status and the body.
    fn http(&self, method: &str, path: &str, token: &str, headers: &str, body: &str) -> (u16, String) {
        use std::io::{Read as _, Write as _};

        let url = self.details["url"].as_str().expect("url");
        let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n{headers}\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let mut stream = std::net::TcpStream::connect(address).expect("connect");
        stream.write_all(request.as_bytes()).expect("send");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("receive");
        let status = response
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .expect("a status line");
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_owned())
            .unwrap_or_default();
        (status, body)
    }

    /// The names list_processes returns.
    fn listed(&self) -> Vec<String> {
        let (status, body) = self.call("agent-1", "list_processes", None);
        assert_eq!(status, 200, "{body}");
        let envelope: serde_json::Value = serde_json::from_str(&body).expect("JSON-RPC");
        let result = &envelope["result"]["structuredContent"];
        assert_eq!(result["ok"], true, "{body}");
        result["data"]["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|item| item["name"].as_str().expect("name").to_owned())
            .collect()
    }
}

#[test]
fn dev_publishes_the_built_in_examples_from_any_directory() {
    let elsewhere = Scratch::new("dev-elsewhere");
    let dev = DevServer::start(&elsewhere.0, &[]);
    for name in example_names() {
        assert!(
            dev.welcome.contains(&format!("    {name}: version 1\n")),
            "{}",
            dev.welcome
        );
    }
    assert!(
        dev.welcome
            .contains("processes from the examples built into agentprocess"),
        "{}",
        dev.welcome
    );
    assert_eq!(dev.listed(), example_names());
}

#[test]
fn dev_prints_the_web_sign_in_and_an_api_token_that_rest_takes() {
    let scratch = Scratch::new("dev-api-token");
    let dev = DevServer::start(&scratch.0, &[]);
    let base = dev.details["url"]
        .as_str()
        .expect("url")
        .trim_end_matches("/mcp")
        .to_owned();
    assert_eq!(dev.details["web"], format!("{base}/dev/sign-in"));
    assert_eq!(dev.details["api"], format!("{base}/api/v1"));
    assert!(
        dev.welcome.contains(&format!("web app:      {base}/dev/sign-in")),
        "{}",
        dev.welcome
    );
    assert!(
        dev.welcome.contains(&format!("REST API:     {base}/api/v1")),
        "{}",
        dev.welcome
    );
    let api_token = dev.details["identities"]["admin"]["apiToken"]
        .as_str()
        .expect("the admin's API token");
    assert!(api_token.starts_with("apr_"), "{api_token}");
    assert!(
        dev.welcome
            .contains(&format!("Authorization: Bearer {api_token}   (/api/v1)")),
        "{}",
        dev.welcome
    );
    let (status, session) = dev.http("GET", "/api/v1/session", api_token, "", "");
    assert_eq!(status, 200, "{session}");
    assert!(
        session.contains("admin@example.com") || session.contains("\"admin\""),
        "{session}"
    );
    // The MCP token is refused on REST with a word on which token REST takes.
    let mcp_token = dev.details["identities"]["admin"]["token"].as_str().expect("token");
    let (status, refused) = dev.http("GET", "/api/v1/session", mcp_token, "", "");
    assert_eq!(status, 401, "{refused}");
    assert!(refused.contains("/api/v1 takes an API token"), "{refused}");
}

#[test]
fn dev_refuses_a_processes_folder_that_is_missing_or_holds_no_process() {
    let scratch = Scratch::new("dev-refusals");
    let empty = scratch.0.join("empty");
    std::fs::create_dir_all(empty.join("not-a-process")).expect("dirs");
    let missing = scratch.0.join("missing");
    for (folder, complaint) in [(&empty, "no process folder in it"), (&missing, "no such folder")] {
        let out = run(&[
            "dev",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            &show(&scratch.0.join("data")),
            "--processes",
            &show(folder),
        ]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(&format!("--processes {}: {complaint}", show(folder))),
            "{stderr}"
        );
        assert!(
            stderr.contains("expected a folder of process folders (each holding a PROCESS.md), or one process folder"),
            "{stderr}"
        );
    }
    assert!(
        !scratch.0.join("data").exists(),
        "a refused start made its data directory"
    );
}

#[test]
fn dev_takes_one_process_folder_as_a_folder_of_one() {
    let one = folder(
        "one-step",
        "---\nname: one-step\ndescription: One agent step.\nsteps:\n  - id: work\n    agent: Do it.\n  - id: done\n    finish: done\n---\n\nOne step.\n",
    );
    let dev = DevServer::start(&one.root, &["--processes", "one-step"]);
    assert!(dev.welcome.contains("processes from one-step ("), "{}", dev.welcome);
    assert!(dev.welcome.contains("    one-step: version 1\n"), "{}", dev.welcome);
    assert_eq!(dev.listed(), ["one-step"]);
}

#[test]
fn dev_lets_only_the_allowed_browser_origins_call_mcp() {
    let scratch = Scratch::new("dev-origins");
    let dev = DevServer::start(
        &scratch.0,
        &[
            "--allowed-origin",
            "http://localhost:5173",
            "--allowed-origin",
            "https://app.example",
        ],
    );
    for origin in ["http://localhost:5173", "https://app.example"] {
        let (status, body) = dev.call("alice", "describe", Some(origin));
        assert_eq!(status, 200, "{origin}: {body}");
    }
    let (status, _) = dev.call("alice", "describe", Some("http://elsewhere.example"));
    assert_eq!(status, 403);

    let help = text(&run(&["dev", "--help"]).stdout);
    assert!(
        help.contains("--allowed-origin <ORIGIN>") && help.contains("Origin header"),
        "{help}"
    );
    assert!(
        help.contains("--processes <DIR>") && help.contains("built-in examples"),
        "{help}"
    );
}

#[test]
fn the_annotated_example_in_the_authors_guide_is_the_purchase_order_example() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let guide = std::fs::read_to_string(root.join("docs/process-authors.md")).expect("the guide");
    let (_, after) = guide.split_once("```markdown\n").expect("a markdown block");
    let (annotated, _) = after.split_once("\n```\n").expect("its end");
    assert!(annotated.contains("\n# "), "the copy has comments");
    let copy = folder("purchase-order", &format!("{annotated}\n"));
    let documented = run(&["hash", &show(&copy)]);
    assert!(documented.status.success(), "{}", text(&documented.stderr));
    let example = run(&["hash", &show(&root.join("examples/processes/purchase-order"))]);
    assert_eq!(
        text(&documented.stdout),
        text(&example.stdout),
        "the guide's copy differs from the example"
    );
}

/// A tool call's answer meets the tool's official result schema (or tool-error.json).
fn assert_meets_contract(tool: &str, body: &str) {
    static CONTRACT: std::sync::OnceLock<agentprocess_contract::Contract> = std::sync::OnceLock::new();
    let contract = CONTRACT.get_or_init(|| {
        agentprocess_contract::Contract::load(&agentprocess_contract::default_dir()).expect("the official schemas")
    });
    let envelope: serde_json::Value = serde_json::from_str(body).expect("JSON-RPC");
    let violations = contract.check_result(tool, &envelope["result"]["structuredContent"]);
    assert!(
        violations.is_empty(),
        "{tool} breaks the official schema: {violations:?}\n{body}"
    );
}
