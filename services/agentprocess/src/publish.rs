//! `publish`: import a process folder through the REST admin surface, bind its roles
//! and publish it; prints the version and its content hash, or every issue.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::folders::source;

/// Options of `agentprocess publish`.
#[derive(Debug, clap::Args)]
pub(crate) struct Publish {
    /// A process folder (holding PROCESS.md, named after the process) or a PROCESS.md.
    #[arg(value_name = "PATH")]
    path: PathBuf,
    /// Bind a role to a group before publishing, as ROLE=GROUP (repeat for each role).
    #[arg(long = "bind", value_name = "ROLE=GROUP")]
    bindings: Vec<String>,
    /// Bind the agent step STEP (or `*`, every agent step without a binding of its
    /// own) to the agents that alone may claim it, as STEP=WHO[,WHO…] where each WHO is
    /// `agent:ID` or `group:ID` (repeat for each step). Unbound, any agent may.
    #[arg(long = "agents", value_name = "STEP=WHO,…")]
    agents: Vec<String>,
    /// Bind even to groups that have no members (or no agents) yet.
    #[arg(long)]
    force: bool,
    /// The server's address, such as `https://process.example.com`.
    #[arg(long, env = "AGENTPROCESS_URL")]
    url: String,
    /// An API token with the admin scope (made on the server's REST surface).
    #[arg(long, env = "AGENTPROCESS_TOKEN", hide_env_values = true)]
    token: String,
}

pub(crate) fn run(options: Publish) -> Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(publish(options))
}

/// What a refusal of the REST surface says: its message and every issue.
fn refusal(body: &Value) -> String {
    let mut text = body["message"].as_str().unwrap_or("refused").to_owned();
    for issue in body["issues"].as_array().into_iter().flatten() {
        text.push_str("\n  ");
        text.push_str(issue.as_str().unwrap_or_default());
    }
    text
}

async fn publish(options: Publish) -> Result<ExitCode> {
    let mut bindings = Vec::new();
    for binding in &options.bindings {
        let Some((role, group)) = binding.split_once('=') else {
            anyhow::bail!("--bind {binding:?}: write ROLE=GROUP");
        };
        bindings.push((role.trim().to_owned(), group.trim().to_owned()));
    }
    let mut agent_bindings = Vec::new();
    for binding in &options.agents {
        agent_bindings.push(agent_binding(binding, options.force)?);
    }
    let source = source(&options.path)?;
    let bytes = std::fs::read(&source.file).with_context(|| format!("cannot read {}", source.file.display()))?;
    let base = format!("{}/api/v1", options.url.trim_end_matches('/'));
    let client = reqwest::Client::new();
    let send = |request: reqwest::RequestBuilder| {
        let token = options.token.clone();
        async move {
            let response = request
                .bearer_auth(token)
                .send()
                .await
                .context("the server could not be reached")?;
            let status = response.status();
            let body: Value = response.json().await.unwrap_or(Value::Null);
            anyhow::Ok((status, body))
        }
    };
    let mut form =
        reqwest::multipart::Form::new().part("file", reqwest::multipart::Part::bytes(bytes).file_name("PROCESS.md"));
    if let Some(folder) = &source.folder {
        form = form.text("folder", folder.clone());
    }
    let (status, draft) = send(client.post(format!("{base}/processes")).multipart(form)).await?;
    if !status.is_success() {
        eprintln!("{}: {}", source.file.display(), refusal(&draft));
        return Ok(ExitCode::FAILURE);
    }
    let process = draft["process"].as_str().unwrap_or_default().to_owned();
    println!("draft of {process} imported");
    let mut failed = false;
    for (role, group) in &bindings {
        let (status, body) = send(
            client
                .put(format!("{base}/processes/{process}/draft/roles/{role}"))
                .json(&json!({ "group": group, "force": options.force })),
        )
        .await?;
        if status.is_success() {
            println!("  role {role} → group {group}");
            print_notes(&body);
        } else {
            eprintln!("role {role}: {}", refusal(&body));
            failed = true;
        }
    }
    for (step, body) in &agent_bindings {
        let (status, reply) = send(
            client
                .put(format!("{base}/processes/{process}/draft/agent-steps/{step}"))
                .json(body),
        )
        .await?;
        if status.is_success() {
            println!("  agent step {step} → {}", who_of(body));
            print_notes(&reply);
        } else {
            eprintln!("agent step {step}: {}", refusal(&reply));
            failed = true;
        }
    }
    if failed {
        return Ok(ExitCode::FAILURE);
    }
    let (status, published) = send(client.post(format!("{base}/processes/{process}/publish"))).await?;
    if !status.is_success() {
        eprintln!("{process}: {}", refusal(&published));
        return Ok(ExitCode::FAILURE);
    }
    let note = if published["unchanged"] == json!(true) {
        " (unchanged)"
    } else {
        ""
    };
    println!(
        "{process} version {}{note}: {}",
        published["number"],
        published["contentHash"].as_str().unwrap_or_default()
    );
    Ok(ExitCode::SUCCESS)
}

/// What the server said to know about a binding just made.
fn print_notes(draft: &Value) {
    for note in draft["notes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|note| note.as_str())
    {
        println!("    {note}");
    }
}

/// `STEP=agent:ID,group:ID` as the step and the body of its binding.
fn agent_binding(text: &str, force: bool) -> Result<(String, Value)> {
    let Some((step, whom)) = text.split_once('=') else {
        anyhow::bail!("--agents {text:?}: write STEP=agent:ID or STEP=group:ID (several joined by commas)");
    };
    let (mut agents, mut groups) = (Vec::new(), Vec::new());
    for who in whom.split(',').map(str::trim).filter(|who| !who.is_empty()) {
        match who.split_once(':') {
            Some(("agent", id)) => agents.push(id.trim().to_owned()),
            Some(("group", id)) => groups.push(id.trim().to_owned()),
            _ => anyhow::bail!("--agents {text:?}: {who:?} is neither agent:ID nor group:ID"),
        }
    }
    let body = json!({ "agents": agents, "groups": groups, "force": force });
    Ok((step.trim().to_owned(), body))
}

/// Agents and groups of a binding's body, as the flag spells them.
fn who_of(body: &Value) -> String {
    let named = |key: &str, kind: &str| {
        body[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|id| id.as_str().map(|id| format!("{kind}:{id}")))
            .collect::<Vec<_>>()
    };
    [named("agents", "agent"), named("groups", "group")].concat().join(", ")
}
