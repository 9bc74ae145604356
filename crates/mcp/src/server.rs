//! The rmcp `ServerHandler`: `tools/list` and `tools/call`.

use std::sync::Arc;

use agentprocess_blobs::Blobs;
use agentprocess_service::{Caller, Service};
use agentprocess_store::Store;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::arguments::{ARGUMENTS, input_schema, spec};
use crate::tools::{call, envelope};

/// What the server tells a client at `initialize`.
const INSTRUCTIONS: &str = "An Agent Process server (protocol core-2). Agents: call get_work, claim a step, do the \
    work the step's instructions and the process body describe, then submit output, evidence and a summary (or \
    escalate). People: get_work lists your work items, each with the exact decide call. Every write takes a new \
    requestId; repeat it only to retry the same call. Every result is { ok, data } or { ok: false, error }.";

/// One MCP server over a shared service. Cheap to clone: rmcp makes one per request.
pub struct McpServer<S, B> {
    service: Arc<Service<S, B>>,
    tools: Arc<Vec<Tool>>,
}

impl<S, B> Clone for McpServer<S, B> {
    fn clone(&self) -> Self {
        Self {
            service: Arc::clone(&self.service),
            tools: Arc::clone(&self.tools),
        }
    }
}

impl<S: Store, B: Blobs> McpServer<S, B> {
    /// A server answering with `service`.
    pub fn new(service: Arc<Service<S, B>>) -> Self {
        let tools = ARGUMENTS
            .iter()
            .map(|spec| Tool::new(spec.name, spec.description, input_schema(spec)))
            .collect();
        Self {
            service,
            tools: Arc::new(tools),
        }
    }
}

impl<S: Store, B: Blobs> ServerHandler for McpServer<S, B> {
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
        context: RequestContext<RoleServer>,
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
        let arguments = request.arguments.unwrap_or_default();
        let result = call(&self.service, &caller, spec, arguments).await;
        // Refusals are the protocol working (a claim lost to another agent, say): debug.
        if let Err(error) = &result {
            tracing::debug!(
                tool = spec.name,
                org = caller.org(),
                code = error.code.as_str(),
                "tool call refused"
            );
        }
        let failed = result.is_err();
        let body = envelope(result);
        let result = if failed {
            CallToolResult::structured_error(body)
        } else {
            CallToolResult::structured(body)
        };
        Ok(result.into())
    }
}
