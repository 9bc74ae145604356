//! The front of `/mcp`: every POST body is read once here, before rmcp sees it.
//!
//! - A body that is not JSON answers `400` with a JSON-RPC parse error (`-32700`); one
//!   that is JSON but not a JSON-RPC 2.0 message (an array, `"jsonrpc": "1.0"`, no
//!   method) answers `400` with `-32600`, as the Streamable HTTP transport expects.
//!   rmcp itself would answer both with a plain-text `415`.
//! - A `tools/call`'s arguments are parsed with their numbers' text kept exactly
//!   ([`agentprocess_format::exact`]) and left on the request for the tool handler,
//!   because rmcp's own parse respells exponents.
//! - A plain stateless `tools/call` is answered on the direct path
//!   ([`crate::direct`]); everything else goes on to rmcp.

use std::sync::Arc;

use agentprocess_mcp::CallArguments;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// JSON-RPC's "Parse error".
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's "Invalid Request".
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's "Invalid params".
const INVALID_PARAMS: i64 = -32602;
/// A server error of ours: the token lacks the scope the call needs.
const INSUFFICIENT_SCOPE: i64 = -32003;

/// Checks a POST's body and hands it on; `max_bytes` bounds what is read. A
/// `tools/call` that the caller's OAuth token has no scope for is refused here, with
/// 403 and the scope to ask for (RFC 6750 §3.1); `public_url` names the metadata.
/// With `direct`, the calls it takes are answered here.
pub(crate) async fn front(
    max_bytes: usize,
    public_url: Arc<str>,
    direct: Option<Arc<crate::direct::Direct>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST || !is_json(request.headers().get(header::CONTENT_TYPE)) {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, max_bytes).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                Value::Null,
                INVALID_REQUEST,
                format!("the request body exceeds {max_bytes} bytes"),
            );
        }
    };
    let mut message = match std::str::from_utf8(&bytes)
        .map_err(|error| error.to_string())
        .and_then(|text| agentprocess_format::exact::parse(text).map_err(|error| error.to_string()))
    {
        Ok(message) => message,
        Err(problem) => {
            return error(
                StatusCode::BAD_REQUEST,
                Value::Null,
                PARSE_ERROR,
                format!("Parse error: {problem}"),
            );
        }
    };
    let id = message.get("id").filter(|id| id.is_string() || id.is_number()).cloned();
    if let Err(problem) = shape(&message) {
        return error(
            StatusCode::BAD_REQUEST,
            id.unwrap_or(Value::Null),
            INVALID_REQUEST,
            format!("Invalid Request: {problem}"),
        );
    }
    if message["method"] == "tools/call" {
        if let Some(refused) = outside_scopes(&parts.extensions, &message, &public_url, id.clone()) {
            return refused;
        }
        // Read before the arguments are taken out of the message.
        let taken = direct
            .as_ref()
            .and_then(|direct| Some((direct, direct.takes(&parts, &message)?)));
        let arguments = match call_arguments(&mut message) {
            Ok(arguments) => arguments,
            // A request, well formed, whose parameters do not fit: a JSON-RPC error
            // answer (rmcp would call it an unknown method).
            Err(problem) => {
                return error(
                    StatusCode::OK,
                    id.unwrap_or(Value::Null),
                    INVALID_PARAMS,
                    format!("Invalid params: {problem}"),
                );
            }
        };
        if let Some((direct, call)) = taken {
            return direct
                .answer(&parts, &message, call, arguments.unwrap_or_default())
                .await;
        }
        if let Some(arguments) = arguments {
            parts.extensions.insert(CallArguments(arguments));
        }
    }
    let response = next
        .run(Request::from_parts(parts, Body::from(Bytes::clone(&bytes))))
        .await;
    // A well-formed message rmcp still could not read (`params` of the wrong shape for
    // its method) comes back as 415; it is a JSON-RPC error like any other.
    if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return error(
            StatusCode::BAD_REQUEST,
            id.unwrap_or(Value::Null),
            INVALID_PARAMS,
            "Invalid params: the parameters do not fit the method".to_owned(),
        );
    }
    response
}

/// 403 `insufficient_scope` for a tool the caller's token was not granted. The
/// challenge names the scopes the token holds and the one the call needs, so a client
/// that asks again for exactly those loses nothing.
fn outside_scopes(
    extensions: &axum::http::Extensions,
    message: &Value,
    public_url: &str,
    id: Option<Value>,
) -> Option<Response> {
    let caller = extensions.get::<agentprocess_service::Caller>()?;
    let tool = agentprocess_service::Tool::parse(message["params"]["name"].as_str()?)?;
    let challenge = scope_challenge(caller, tool, public_url)?;
    let needed = tool.scope();
    let mut response = error(
        StatusCode::FORBIDDEN,
        id.unwrap_or(Value::Null),
        INSUFFICIENT_SCOPE,
        format!(
            "this token was not granted {}, which {} needs",
            needed.name(),
            tool.name()
        ),
    );
    response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
    Some(response)
}

/// The `WWW-Authenticate` challenge for a tool the caller's token was not granted and
/// could still be: it names the scopes the token holds and the one the call needs, so
/// a client that asks again for exactly those loses nothing. None when there is
/// nothing to step up to: the token may call the tool, or it is `decide` (an admin
/// marked the client as operated by people, or it never will decide), or a scope an
/// agent's client is never granted (a client that asked for it would be refused
/// `invalid_scope` and give up); the tool's own `forbidden` then says who may.
pub(crate) fn scope_challenge(
    caller: &agentprocess_service::Caller,
    tool: agentprocess_service::Tool,
    public_url: &str,
) -> Option<HeaderValue> {
    if caller.may_call(tool) || tool == agentprocess_service::Tool::Decide || !caller.could_be_granted(tool.scope()) {
        return None;
    }
    let needed = tool.scope();
    let mut scopes: Vec<&str> = caller.scopes.iter().flatten().map(|scope| scope.name()).collect();
    scopes.push(needed.name());
    HeaderValue::from_str(&format!(
        "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}{}\", \
         error_description=\"{} needs {}\"",
        scopes.join(" "),
        public_url.trim_end_matches('/'),
        crate::oauth::RESOURCE_METADATA_PATH,
        tool.name(),
        needed.name()
    ))
    .ok()
}

fn is_json(content_type: Option<&HeaderValue>) -> bool {
    content_type.and_then(|value| value.to_str().ok()).is_some_and(|value| {
        let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
        essence.trim().eq_ignore_ascii_case("application/json")
    })
}

/// Why `message` is not one JSON-RPC 2.0 request, notification or response.
fn shape(message: &Value) -> Result<(), &'static str> {
    let Value::Object(object) = message else {
        return Err(if message.is_array() {
            "a batch (JSON array) is not accepted; send one message per request"
        } else {
            "a JSON-RPC message is a JSON object"
        });
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err("\"jsonrpc\" must be \"2.0\"");
    }
    if let Some(id) = object.get("id")
        && !(id.is_string() || id.is_number())
    {
        return Err("\"id\" must be a string or a number");
    }
    match object.get("method") {
        Some(Value::String(_)) => match object.get("params") {
            None | Some(Value::Object(_)) => Ok(()),
            Some(_) => Err("\"params\" must be an object"),
        },
        Some(_) => Err("\"method\" must be a string"),
        None if object.contains_key("id") && (object.contains_key("result") != object.contains_key("error")) => Ok(()),
        None => Err("a request needs a \"method\"; a response an \"id\" and one of \"result\" or \"error\""),
    }
}

/// The arguments of a `tools/call`, whose params must be `{ name: string, arguments?: object }`,
/// taken out of `message` (an upload's are up to the body limit; they are not copied).
fn call_arguments(message: &mut Value) -> Result<Option<serde_json::Map<String, Value>>, &'static str> {
    let params = message
        .get_mut("params")
        .ok_or("tools/call needs params { name, arguments }")?;
    if !params.get("name").is_some_and(Value::is_string) {
        return Err("params.name must be the tool's name, a string");
    }
    match params.get_mut("arguments").map(Value::take) {
        None => Ok(None),
        Some(Value::Object(arguments)) => Ok(Some(arguments)),
        Some(_) => Err("params.arguments must be an object"),
    }
}

fn error(status: StatusCode, id: Value, code: i64, message: String) -> Response {
    let body = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    (status, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_single_json_rpc_2_messages_pass() {
        for (message, passes) in [
            (json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }), true),
            (json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }), true),
            (json!({ "jsonrpc": "2.0", "id": "a", "result": {} }), true),
            (json!({ "jsonrpc": "1.0", "id": 1, "method": "tools/list" }), false),
            (json!([{ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }]), false),
            (json!({ "jsonrpc": "2.0", "id": null, "method": "tools/list" }), false),
            (json!({ "jsonrpc": "2.0", "id": 1, "method": 5 }), false),
            (
                json!({ "jsonrpc": "2.0", "id": 1, "method": "x", "params": [1] }),
                false,
            ),
            (json!({ "jsonrpc": "2.0", "id": 1 }), false),
            (json!("hello"), false),
        ] {
            assert_eq!(shape(&message).is_ok(), passes, "{message}");
        }
    }
}
