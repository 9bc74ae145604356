//! The rmcp `ServerHandler`: `tools/list` and `tools/call`.

use std::sync::Arc;

use agentprocess_service::{Caller, Service};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use agentprocess_telemetry::KeyValue;
use agentprocess_telemetry::context::RequestSpan;
use tracing::Instrument as _;

use agentprocess_tools::arguments::{ARGUMENTS, ToolSpec, input_schema, spec};
use agentprocess_tools::call;

use crate::envelope::envelope;

/// What the server tells a client at `initialize`.
const INSTRUCTIONS: &str = "An Agent Process server (protocol core-2). Agents: call get_work, claim a step, do the \
    work the step's instructions and the process body describe, then submit output, evidence and a summary (or \
    escalate). People: get_work lists your work items, each with the exact decide call. Every write takes a new \
    requestId; repeat it only to retry the same call. Every result is { ok, data } or { ok: false, error }.";

/// A `tools/call`'s arguments as the HTTP layer read them, numbers spelled as sent
/// (rmcp's own parse respells exponents). Left in the request's extensions.
#[derive(Debug, Clone)]
pub struct CallArguments(pub serde_json::Map<String, serde_json::Value>);

/// One MCP server over a shared service. Cheap to clone: rmcp makes one per request.
pub struct McpServer {
    service: Arc<Service>,
    tools: Arc<Vec<Tool>>,
}

impl Clone for McpServer {
    fn clone(&self) -> Self {
        Self {
            service: Arc::clone(&self.service),
            tools: Arc::clone(&self.tools),
        }
    }
}

impl McpServer {
    /// A server answering with `service`.
    pub fn new(service: Arc<Service>) -> Self {
        let tools = ARGUMENTS
            .iter()
            .map(|spec| Tool::new(spec.tool.name(), spec.description, input_schema(spec)))
            .collect();
        Self {
            service,
            tools: Arc::new(tools),
        }
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agentprocess", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(spec) = spec(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {}", request.name),
                None,
            ));
        };
        // The HTTP layer authenticated the request and left the caller on it.
        let caller = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .cloned()
            .ok_or_else(|| ErrorData::internal_error("the request carries no authenticated caller", None))?;
        // The HTTP layer's parse of the same message, whose numbers keep their text;
        // taken, not copied (an upload's arguments are up to the body limit).
        let exact = context
            .extensions
            .get_mut::<http::request::Parts>()
            .and_then(|parts| parts.extensions.remove::<CallArguments>())
            .map(|arguments| arguments.0);
        // The `_meta` that carries a trace context: the request's, else rmcp's copy.
        let meta = request
            .meta
            .as_ref()
            .filter(|meta| meta.get_traceparent().is_some())
            .unwrap_or(&context.meta);
        let trace = CallTrace {
            parent: context
                .extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<RequestSpan>())
                .map(|request| request.0.clone())
                .unwrap_or_else(tracing::Span::current),
            traceparent: meta.get_traceparent().map(str::to_owned),
            tracestate: meta.get_tracestate().map(str::to_owned),
            jsonrpc_id: request_id(&context.id),
        };
        let arguments = exact.or(request.arguments).unwrap_or_default();
        let answer = self.answer(spec, &caller, arguments, trace).await;
        Ok(answer.into_result()?.into())
    }
}

/// Where a tool call's span hangs: the HTTP request's span, the caller's trace
/// context from `params._meta`, and the JSON-RPC id.
#[derive(Debug, Clone)]
pub struct CallTrace {
    /// The HTTP request's span.
    pub parent: tracing::Span,
    /// `params._meta.traceparent`, when given.
    pub traceparent: Option<String>,
    /// `params._meta.tracestate`, when given.
    pub tracestate: Option<String>,
    /// The JSON-RPC request's id, as text.
    pub jsonrpc_id: String,
}

impl McpServer {
    /// Runs one tool call for an authenticated caller and gives its answer (a refusal
    /// is an answer too). The one path of every `tools/call`, whether rmcp or the HTTP
    /// layer's direct path received it.
    pub async fn answer(
        &self,
        spec: &'static ToolSpec,
        caller: &Caller,
        arguments: serde_json::Map<String, serde_json::Value>,
        trace: CallTrace,
    ) -> Answer {
        let span = tool_span(spec.tool.name(), caller, &trace);
        if let Some(run) = named_run(&arguments) {
            span.record("agentprocess.run", run);
        }
        if let Some(step) = arguments.get("stepId").and_then(serde_json::Value::as_str) {
            span.record("agentprocess.step", step);
        }
        // The process a run is started of (or work is asked for): a tenant's name, so
        // traces carry it and metrics do not.
        if let Some(process) = arguments.get("process").and_then(serde_json::Value::as_str) {
            span.record("agentprocess.process", process);
        }
        let started = std::time::Instant::now();
        let result = call(&self.service, caller, spec, arguments)
            .instrument(span.clone())
            .await;
        observe_call(&span, spec.tool.name(), caller.org(), &result, started.elapsed());
        // Refusals are the protocol working (a claim lost to another agent, say): debug.
        if let Err(error) = &result {
            tracing::debug!(
                parent: &span,
                tool = spec.tool.name(),
                org = caller.org(),
                code = error.code.as_str(),
                "tool call refused"
            );
        }
        Answer {
            failed: result.is_err(),
            body: envelope(result),
        }
    }

    /// The whole JSON-RPC answer to a `tools/call` of `spec`'s tool from a client on
    /// a protocol version before 2026-07-28, byte for byte what rmcp's handler would
    /// send for the same result.
    pub async fn answer_directly(
        &self,
        spec: &'static ToolSpec,
        caller: &Caller,
        arguments: serde_json::Map<String, serde_json::Value>,
        trace: CallTrace,
        id: rmcp::model::RequestId,
    ) -> Vec<u8> {
        self.answer(spec, caller, arguments, trace)
            .await
            .into_legacy_response(&id)
    }
}

/// A tool call's answer: its envelope as JSON text, and whether it is a refusal.
#[derive(Debug, Clone)]
pub struct Answer {
    failed: bool,
    body: Box<serde_json::value::RawValue>,
}

impl Answer {
    /// The answer as rmcp's result, the envelope both as text and as structured
    /// content (the envelope is parsed for rmcp; numbers keep their spelling).
    pub fn into_result(self) -> Result<CallToolResult, ErrorData> {
        let body = agentprocess_format::exact::parse(self.body.get())
            .map_err(|error| ErrorData::internal_error(format!("the answer is not JSON: {error}"), None))?;
        Ok(if self.failed {
            CallToolResult::structured_error(body)
        } else {
            CallToolResult::structured(body)
        })
    }

    /// The JSON-RPC response carrying this answer, as rmcp writes it for a peer on a
    /// version before 2026-07-28: `CallToolResult::structured` (or `_error`) without
    /// its `resultType`. Written from the envelope's text, which rmcp would print
    /// from a parsed copy to the same bytes (the tests hold the two to that).
    pub fn into_legacy_response(self, id: &rmcp::model::RequestId) -> Vec<u8> {
        let response = LegacyResponse {
            jsonrpc: "2.0",
            id,
            result: LegacyResult {
                content: [TextContent {
                    kind: "text",
                    text: self.body.get(),
                }],
                structured_content: &self.body,
                is_error: self.failed,
            },
        };
        serde_json::to_vec(&response).expect("a response of strings and printed JSON prints")
    }
}

/// rmcp's `ServerJsonRpcMessage::response` of a `CallToolResult`, field for field.
#[derive(serde::Serialize)]
struct LegacyResponse<'a> {
    jsonrpc: &'static str,
    id: &'a rmcp::model::RequestId,
    result: LegacyResult<'a>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct LegacyResult<'a> {
    content: [TextContent<'a>; 1],
    structured_content: &'a serde_json::value::RawValue,
    is_error: bool,
}

#[derive(serde::Serialize)]
struct TextContent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

/// The span of a tool call (the MCP semantic conventions' server span): a child of the
/// caller's `params._meta.traceparent` when given, else of the HTTP request's span.
fn tool_span(tool: &'static str, caller: &Caller, trace: &CallTrace) -> tracing::Span {
    let span = tracing::info_span!(
        parent: &trace.parent,
        "tools/call",
        otel.name = %format_args!("tools/call {tool}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        jsonrpc.request.id = %trace.jsonrpc_id,
        agentprocess.organization = caller.org(),
        agentprocess.run = tracing::field::Empty,
        agentprocess.step = tracing::field::Empty,
        agentprocess.process = tracing::field::Empty,
        agentprocess.outcome = tracing::field::Empty,
        error.type = tracing::field::Empty,
    );
    agentprocess_telemetry::context::continue_from_traceparent(
        &span,
        trace.traceparent.as_deref(),
        trace.tracestate.as_deref(),
    );
    span
}

/// A JSON-RPC id as text.
pub fn request_id(id: &rmcp::model::RequestId) -> String {
    match id {
        rmcp::model::NumberOrString::Number(number) => number.to_string(),
        rmcp::model::NumberOrString::String(text) => text.to_string(),
    }
}

/// The run a call names: `runId`, or the run of a claim token.
fn named_run(arguments: &serde_json::Map<String, serde_json::Value>) -> Option<&str> {
    let text = |key| arguments.get(key).and_then(serde_json::Value::as_str);
    text("runId").or_else(|| text("token").and_then(agentprocess_service::token_run))
}

/// Records an MCP tool call's outcome and its duration.
fn observe_call(
    span: &tracing::Span,
    tool: &'static str,
    org: &str,
    result: &Result<Box<serde_json::value::RawValue>, agentprocess_engine::ToolError>,
    took: std::time::Duration,
) {
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", "tools/call"),
        KeyValue::new("gen_ai.tool.name", tool),
        agentprocess_telemetry::labels::organization(org),
    ];
    if let Err(error) = result {
        attributes.push(KeyValue::new("error.type", error.code.as_str()));
    }
    record_outcome(span, tool, org, result);
    agentprocess_telemetry::metrics()
        .tool_duration
        .record(took.as_secs_f64(), &attributes);
}

/// Records a tool's outcome on its span (`agentprocess.outcome`, `error.type`, the new
/// run's id) and counts `org`'s call in `agentprocess.tool.calls`; for every surface
/// that calls tools (MCP, REST). The span declares those fields.
pub fn record_outcome(
    span: &tracing::Span,
    tool: &'static str,
    org: &str,
    result: &Result<Box<serde_json::value::RawValue>, agentprocess_engine::ToolError>,
) {
    let outcome = match result {
        Ok(data) => {
            // A new run's id is only known from the answer.
            if tool == "start_run"
                && let Some(run) = started_run(data)
            {
                span.record("agentprocess.run", run.as_str());
            }
            "ok"
        }
        Err(error) => error.code.as_str(),
    };
    span.record("agentprocess.outcome", outcome);
    if let Err(error) = result {
        span.record("error.type", outcome);
        // Refusals are answers; only a failure on the server's side marks the span.
        if error.code == agentprocess_engine::Code::Retry {
            span.record("otel.status_code", "error");
        }
    }
    agentprocess_telemetry::metrics().tool_calls.add(
        1,
        &[
            KeyValue::new("gen_ai.tool.name", tool),
            KeyValue::new("agentprocess.outcome", outcome),
            agentprocess_telemetry::labels::organization(org),
        ],
    );
}

/// The id of the run a `start_run` answer's `data` holds.
fn started_run(data: &serde_json::value::RawValue) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Started {
        run: Named,
    }
    #[derive(serde::Deserialize)]
    struct Named {
        id: String,
    }
    serde_json::from_str::<Started>(data.get())
        .ok()
        .map(|started| started.run.id)
}

#[cfg(test)]
mod tests {
    use rmcp::model::{NumberOrString, ServerJsonRpcMessage, ServerResult};

    use super::*;

    /// What rmcp's handler sends for `answer` to a peer on a version before 2026-07-28.
    fn through_rmcp(answer: Answer, id: rmcp::model::RequestId) -> String {
        let mut result = ServerResult::CallToolResult(answer.into_result().expect("a result"));
        result.strip_result_type_for_legacy_peer();
        result.strip_non_object_output_for_legacy_peer();
        serde_json::to_string(&ServerJsonRpcMessage::response(result, id)).expect("prints")
    }

    #[test]
    fn the_legacy_response_is_written_byte_for_byte_as_rmcp_writes_it() {
        let bodies = [
            (
                false,
                r#"{"ok":true,"data":{"amount":1.20E3,"tiny":-5e-324,"big":123456789012345678901234567890}}"#,
            ),
            (
                false,
                r#"{"ok":true,"data":{"text":"Ünïcode, \"quoted\", \\ slash, tab\t, nul \u0000, </script>"}}"#,
            ),
            (false, r#"{"ok":true,"data":{"items":[],"nextCursor":null}}"#),
            (
                true,
                r#"{"ok":false,"error":{"code":"invalid","message":"no","issues":["a: required","b: \"x\""]}}"#,
            ),
        ];
        for (failed, body) in bodies {
            for id in [NumberOrString::Number(7), NumberOrString::String("call-\"3\"".into())] {
                let answer = Answer {
                    failed,
                    body: serde_json::value::RawValue::from_string(body.to_owned()).expect("json"),
                };
                let direct = String::from_utf8(answer.clone().into_legacy_response(&id)).expect("utf-8");
                assert_eq!(direct, through_rmcp(answer, id), "{body}");
            }
        }
    }

    #[test]
    fn a_started_run_is_named_from_the_answer() {
        let data = serde_json::value::RawValue::from_string(
            r#"{"run":{"state":"running","id":"run_1","steps":[{"id":"x"}]},"id":"not this"}"#.to_owned(),
        )
        .expect("json");
        assert_eq!(started_run(&data).as_deref(), Some("run_1"));
        let other = serde_json::value::RawValue::from_string(r#"{"items":[]}"#.to_owned()).expect("json");
        assert_eq!(started_run(&other), None);
    }
}
