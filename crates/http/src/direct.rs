//! The direct path of `/mcp`: a plain stateless `tools/call` is answered here, without
//! rmcp building a service, a transport and a task for the one request.
//!
//! It takes only requests rmcp would serve the same way, with nothing for rmcp to
//! check that the front has not checked: a `tools/call` of a known tool with a string
//! or integer id, from a client on a protocol version before 2026-07-28 (no
//! per-request version, no `Mcp-Method` headers to check), accepting JSON and SSE,
//! with no `Origin` and a `Host` plainly among the allowed ones. Anything else goes on
//! to rmcp, which answers it as before. The answer is written from the envelope's
//! text in the shape of rmcp's own result, so the two paths answer byte for byte
//! alike (the tests hold them to that).

use agentprocess_mcp::{CallTrace, McpServer};
use agentprocess_service::Caller;
use agentprocess_telemetry::context::RequestSpan;
use agentprocess_tools::arguments::ToolSpec;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::model::{NumberOrString, RequestId};
use serde_json::{Map, Value};

/// Protocol versions whose stateless `tools/call` rmcp answers with no checks beyond
/// the front's: every known one before 2026-07-28.
const PLAIN_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// `_meta` keys that change nothing in how rmcp serves a call.
const PLAIN_META: [&str; 2] = ["traceparent", "tracestate"];

/// A call the direct path takes: its tool and its JSON-RPC id.
#[derive(Debug, PartialEq)]
pub(crate) struct PlainCall {
    spec: &'static ToolSpec,
    id: RequestId,
}

/// The direct path: the MCP server and the hosts `Host` may name.
pub(crate) struct Direct {
    server: McpServer,
    allowed_hosts: Vec<String>,
}

impl Direct {
    pub(crate) fn new(server: McpServer, allowed_hosts: &[String]) -> Self {
        Self {
            server,
            allowed_hosts: allowed_hosts
                .iter()
                .map(|host| host.trim().to_ascii_lowercase())
                .collect(),
        }
    }

    /// The call when this path takes `message` (a `tools/call` the front has read),
    /// else `None`: rmcp serves it.
    pub(crate) fn takes(&self, parts: &Parts, message: &Value) -> Option<PlainCall> {
        plain_call(parts, message, &self.allowed_hosts)
    }

    /// Answers a request [`Direct::takes`] took, with `arguments` as the front read them.
    pub(crate) async fn answer(
        &self,
        parts: &Parts,
        message: &Value,
        call: PlainCall,
        arguments: Map<String, Value>,
    ) -> Response {
        let Some(caller) = parts.extensions.get::<Caller>() else {
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        };
        let meta = &message["params"]["_meta"];
        let text = |key: &str| meta.get(key).and_then(Value::as_str).map(str::to_owned);
        let trace = CallTrace {
            parent: parts
                .extensions
                .get::<RequestSpan>()
                .map(|request| request.0.clone())
                .unwrap_or_else(tracing::Span::current),
            traceparent: text("traceparent"),
            tracestate: text("tracestate"),
            jsonrpc_id: agentprocess_mcp::request_id(&call.id),
        };
        let body = self
            .server
            .answer_directly(call.spec, caller, arguments, trace, call.id)
            .await;
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
            body,
        )
            .into_response()
    }
}

/// The call when `message` is a `tools/call` that rmcp would serve with no checks
/// beyond the front's (see the module's documentation).
fn plain_call(parts: &Parts, message: &Value, allowed_hosts: &[String]) -> Option<PlainCall> {
    let headers = &parts.headers;
    if message["method"] != "tools/call"
        || headers.contains_key(header::ORIGIN)
        || !crate::hosts::allowed(headers, &parts.uri, allowed_hosts)
        || !accepts_json_and_sse(headers)
        || !plain_version(headers)
        || parts.extensions.get::<Caller>().is_none()
    {
        return None;
    }
    let params = &message["params"];
    let spec = agentprocess_tools::arguments::spec(params["name"].as_str()?)?;
    if let Some(meta) = params.get("_meta") {
        let plain = meta
            .as_object()
            .is_some_and(|meta| meta.keys().all(|key| PLAIN_META.contains(&key.as_str())));
        if !plain {
            return None;
        }
    }
    let id = match &message["id"] {
        Value::String(id) => NumberOrString::String(id.as_str().into()),
        Value::Number(id) => NumberOrString::Number(id.as_i64()?),
        _ => return None,
    };
    Some(PlainCall { spec, id })
}

/// Whether `Accept` plainly names both `application/json` and `text/event-stream`;
/// weights and parameters are left to rmcp.
fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let mut json = false;
    let mut sse = false;
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        for media in value.split(',') {
            let media = media.trim();
            if media.contains(';') || media.contains('"') {
                return false;
            }
            json |= media.eq_ignore_ascii_case("application/json");
            sse |= media.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

/// Whether `MCP-Protocol-Version` is absent (2025-03-26 is assumed) or one of
/// [`PLAIN_VERSIONS`].
fn plain_version(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all("mcp-protocol-version").iter();
    match (values.next(), values.next()) {
        (None, _) => true,
        (Some(value), None) => value.to_str().is_ok_and(|version| PLAIN_VERSIONS.contains(&version)),
        (Some(_), Some(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn only_plain_accept_and_version_headers_are_taken() {
        assert!(accepts_json_and_sse(&headers(&[(
            "accept",
            "application/json, text/event-stream"
        )])));
        assert!(accepts_json_and_sse(&headers(&[
            ("accept", "application/json"),
            ("accept", "text/event-stream")
        ])));
        assert!(!accepts_json_and_sse(&headers(&[("accept", "application/json")])));
        assert!(!accepts_json_and_sse(&headers(&[(
            "accept",
            "application/json;q=0, text/event-stream"
        )])));
        assert!(plain_version(&headers(&[])));
        assert!(plain_version(&headers(&[("mcp-protocol-version", "2025-11-25")])));
        assert!(!plain_version(&headers(&[("mcp-protocol-version", "2026-07-28")])));
        assert!(!plain_version(&headers(&[("mcp-protocol-version", "1999-01-01")])));
        assert!(!plain_version(&headers(&[
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-protocol-version", "2025-11-25")
        ])));
    }

    fn parts(pairs: &[(&'static str, &'static str)]) -> Parts {
        let mut request = axum::http::Request::post("/mcp");
        for (name, value) in pairs {
            request = request.header(*name, *value);
        }
        let (mut parts, ()) = request.body(()).expect("request").into_parts();
        let identity = agentprocess_store::Identity {
            org: "acme".to_owned(),
            id: "bot".to_owned(),
            kind: agentprocess_store::IdentityKind::Agent,
            role: None,
            person: None,
            name: "bot".to_owned(),
            groups: Vec::new(),
            deactivated_at: None,
        };
        parts.extensions.insert(Caller::issued(identity, None));
        parts
    }

    const PLAIN: [(&str, &str); 3] = [
        ("host", "localhost:8080"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
    ];

    #[test]
    fn a_plain_tool_call_is_taken_and_anything_unusual_is_left_to_rmcp() {
        let hosts = ["localhost".to_owned()];
        let call = serde_json::json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": { "name": "get_work", "arguments": {}, "_meta": { "traceparent": "00-x-y-01" } },
        });
        let taken = plain_call(&parts(&PLAIN), &call, &hosts).expect("taken");
        assert_eq!(taken.id, NumberOrString::Number(7));
        assert_eq!(taken.spec.tool.name(), "get_work");
        let mut string_id = call.clone();
        string_id["id"] = "a".into();
        assert!(plain_call(&parts(&PLAIN), &string_id, &hosts).is_some());

        let mut other = Vec::new();
        for (key, value) in [
            ("/method", serde_json::json!("tools/list")),
            ("/params/name", serde_json::json!("no_such_tool")),
            ("/id", serde_json::json!(1.5)),
        ] {
            let mut message = call.clone();
            *message.pointer_mut(key).expect("field") = value;
            other.push(message);
        }
        let mut versioned = call.clone();
        versioned["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2026-07-28".into();
        other.push(versioned);
        for message in &other {
            assert_eq!(plain_call(&parts(&PLAIN), message, &hosts), None, "{message}");
        }
        for unusual in [
            &[("origin", "http://localhost:8080")][..],
            &[("mcp-protocol-version", "2026-07-28")],
        ] {
            let mut pairs = PLAIN.to_vec();
            pairs.retain(|(name, _)| unusual.iter().all(|(other, _)| other != name));
            pairs.extend_from_slice(unusual);
            assert_eq!(plain_call(&parts(&pairs), &call, &hosts), None, "{unusual:?}");
        }
        let elsewhere = [("host", "evil.example"), PLAIN[1], PLAIN[2]];
        assert_eq!(plain_call(&parts(&elsewhere), &call, &hosts), None);
        let mut anonymous = parts(&PLAIN);
        anonymous.extensions.remove::<Caller>();
        assert_eq!(plain_call(&anonymous, &call, &hosts), None);
    }
}
