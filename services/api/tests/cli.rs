//! `agentprocess-api` as an operator first meets it: its help and its refusal of a
//! database without migrations.

use std::process::Command;

fn api(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_agentprocess-api"))
        .args(args)
        .env_remove("AGENTPROCESS_DATABASE_URL")
        .env_remove("AGENTPROCESS_MIGRATE")
        .output()
        .expect("the binary runs")
}

#[test]
fn help_names_everything_served() {
    let help = String::from_utf8_lossy(&api(&["--help"]).stdout).into_owned();
    for served in [
        "/mcp",
        "/oauth/token",
        "/.well-known/oauth-protected-resource",
        "web app",
        "/signup",
        "/api/v1",
        "/api/v1/openapi.json",
        "/v1/uploads",
        "/healthz",
        "--migrate",
    ] {
        assert!(help.contains(served), "--help does not name {served}:\n{help}");
    }
}

#[test]
fn serve_on_a_database_without_migrations_stops_at_start_in_one_line() {
    let dir = std::env::temp_dir().join(format!("agentprocess-api-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let database = format!("sqlite://{}?mode=rwc", dir.join("empty.db").display());
    let files = dir.join("files");
    let started = std::time::Instant::now();
    let output = api(&[
        "serve",
        "--database-url",
        &database,
        "--listen",
        "127.0.0.1:0",
        "--public-url",
        "http://127.0.0.1:1",
        "--url-secret",
        "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA==",
        "--secret-key",
        "a2V5LWtleS1rZXkta2V5LWtleS1rZXkta2V5LWtleS1rZXk=",
        "--blob-dir",
        files.to_str().expect("a UTF-8 path"),
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!output.status.success(), "{output:?}");
    // It stops at once, instead of serving and failing every call on a missing table.
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let lines: Vec<&str> = stderr.lines().filter(|line| line.contains("migrations")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("the database has none of this build's")
            && lines[0].contains("apply them with `agentprocess-api migrate`")
            && lines[0].contains("--migrate"),
        "{stderr}"
    );
}
