//! A minimal MCP client for the stateless Streamable HTTP endpoint: one JSON-RPC
//! `tools/call` per POST, answered with JSON. The server needs no `initialize` first.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

/// The protocol version sent on every request.
const PROTOCOL_VERSION: &str = "2025-11-25";

/// What a tool call answered.
#[derive(Debug)]
pub enum Answer {
    /// `{ ok: true, data }`: the data.
    Ok(Value),
    /// `{ ok: false, error }`: the tool refused the call.
    Refused {
        /// The error code.
        code: String,
        /// The error message.
        message: String,
        /// Every issue named.
        issues: Vec<String>,
    },
}

/// The data of an answer, or an error naming the tool and the refusal.
pub fn data(answer: anyhow::Result<Answer>, tool: &str) -> anyhow::Result<Value> {
    match answer.with_context(|| format!("{tool} failed"))? {
        Answer::Ok(data) => Ok(data),
        Answer::Refused { code, message, issues } => bail!("{tool}: {code}: {message} {issues:?}"),
    }
}

/// An MCP endpoint reached over HTTP/1.1 with a pool of keep-alive connections.
pub struct Mcp {
    http: reqwest::Client,
    url: String,
    next_id: AtomicU64,
}

impl Mcp {
    /// A client of the endpoint at `url` (`http://host:port/mcp`).
    pub fn new(url: &str, connections: usize) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(connections)
            .tcp_nodelay(true)
            .timeout(Duration::from_secs(60))
            .build()
            .context("cannot build the HTTP client")?;
        Ok(Self {
            http,
            url: url.to_owned(),
            next_id: AtomicU64::new(1),
        })
    }

    /// Calls `tool` with `arguments` as the bearer of `token`. An error means the call
    /// did not reach the tool or its answer was not a tool result (HTTP status,
    /// JSON-RPC error, malformed body).
    pub async fn call(&self, token: &str, tool: &str, arguments: Value) -> anyhow::Result<Answer> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": { "name": tool, "arguments": arguments },
        });
        let response = self
            .http
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", PROTOCOL_VERSION)
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .with_context(|| format!("{tool}: request failed"))?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            bail!("{tool}: HTTP {status}: {}", text.trim());
        }
        let reply: Value = response
            .json()
            .await
            .with_context(|| format!("{tool}: the answer is not JSON"))?;
        if let Some(error) = reply.get("error") {
            bail!("{tool}: JSON-RPC error {error}");
        }
        let content = &reply["result"]["structuredContent"];
        match content["ok"].as_bool() {
            Some(true) => Ok(Answer::Ok(content["data"].clone())),
            Some(false) => {
                let error = &content["error"];
                Ok(Answer::Refused {
                    code: error["code"].as_str().unwrap_or("?").to_owned(),
                    message: error["message"].as_str().unwrap_or_default().to_owned(),
                    issues: error["issues"]
                        .as_array()
                        .map(|issues| {
                            issues
                                .iter()
                                .map(|issue| issue.as_str().unwrap_or("?").to_owned())
                                .collect()
                        })
                        .unwrap_or_default(),
                })
            }
            None => bail!("{tool}: the answer has no structuredContent.ok: {reply}"),
        }
    }
}
