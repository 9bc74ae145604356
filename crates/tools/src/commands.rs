//! The tool calls the web app's pages make, as typed commands. A command goes through
//! the same [`call`] as an MCP call with the same arguments: the same checks in the
//! same words, and the same hash for replay, because it is sent as those arguments.

use agentprocess_engine::ToolError;
use agentprocess_service::{Caller, Service};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::arguments::spec;
use crate::call;

/// A tool call as a typed command.
pub trait Command: Serialize {
    /// The tool's name.
    const TOOL: &'static str;
}

/// Calls the tool `command` names for `caller`: the result as the JSON `data` of the
/// answer, or the refusal.
pub async fn perform<C: Command>(service: &Service, caller: &Caller, command: &C) -> Result<Value, ToolError> {
    let spec =
        spec(C::TOOL).ok_or_else(|| ToolError::new(agentprocess_engine::Code::Retry, "no such tool", Vec::new()))?;
    match agentprocess_format::exact::to_value(command) {
        Ok(Value::Object(arguments)) => {
            let data = call(service, caller, spec, arguments).await?;
            agentprocess_format::exact::parse(data.get()).map_err(|error| {
                ToolError::new(
                    agentprocess_engine::Code::Retry,
                    format!("the answer could not be read: {error}"),
                    Vec::new(),
                )
            })
        }
        // Nested deeper than JSON is read here: refused as the arguments' problem.
        Ok(_) | Err(_) => Err(ToolError::new(
            agentprocess_engine::Code::Invalid,
            format!("the arguments of {} are not valid", C::TOOL),
            vec!["the arguments are nested too deeply".to_owned()],
        )),
    }
}

/// `start_run`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StartRun {
    /// The process's name.
    pub process: String,
    /// The version; the latest when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The inputs, as the form read them.
    pub inputs: Map<String, Value>,
    /// `live` or `test`, as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The request id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl Command for StartRun {
    const TOOL: &'static str = "start_run";
}

/// `decide`. What a form leaves out stays out, so the refusal names it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decide {
    /// The run.
    pub run_id: String,
    /// The work item.
    pub work_item_id: String,
    /// The request id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The snapshot the person decided on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// The decision, as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// The note.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The chosen route.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// Why that route.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A task's output, when it is completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Map<String, Value>>,
    /// A task's evidence, when it is completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Vec<Evidence>>,
}

impl Command for Decide {
    const TOOL: &'static str = "decide";
}

/// An evidence item: an upload's id, or a link.
#[derive(Debug, Serialize)]
pub struct Evidence {
    /// `file` or `link`.
    pub kind: agentprocess_format::EvidenceKind,
    /// The upload's id, or the URL.
    #[serde(rename = "ref")]
    pub reference: String,
}

/// `cancel`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cancel {
    /// The run.
    pub run_id: String,
    /// The request id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Command for Cancel {
    const TOOL: &'static str = "cancel";
}

/// `send_event`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendEvent {
    /// The run.
    pub run_id: String,
    /// The request id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The event's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The event's data: an object, or the text sent when it is not one (so the
    /// refusal names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl Command for SendEvent {
    const TOOL: &'static str = "send_event";
}
