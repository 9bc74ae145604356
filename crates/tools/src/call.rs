//! A tool call: its arguments checked (every issue at once), decoded, hashed for
//! replay, and handed to the service; the result as the JSON text of the answer's
//! `data`, printed once from the typed result (never through a `serde_json::Value`,
//! whose numbers would have to be parsed back to keep their spelling).

use agentprocess_engine::{Code, Decide, Mode, ToolError};
use agentprocess_service::{Caller, ListRuns, Service, StartRunArgs, Tool, Write};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::arguments::{ToolSpec, check};
use crate::decoded;

/// Calls `spec`'s tool for `caller`.
pub async fn call(
    service: &Service,
    caller: &Caller,
    spec: &ToolSpec,
    arguments: Map<String, Value>,
) -> Result<Box<RawValue>, ToolError> {
    let admitted = async {
        // Held until the call is answered: its place among its organization's calls
        // in progress.
        let _admission = service.admit(&caller.identity, spec.tool.writes()).await?;
        answer(service, caller, spec, arguments).await
    };
    service
        .within_deadline(admitted)
        .await
        .map_err(agentprocess_service::Error::into_tool_error)
}

async fn answer(
    service: &Service,
    caller: &Caller,
    spec: &ToolSpec,
    arguments: Map<String, Value>,
) -> Result<Box<RawValue>, agentprocess_service::Error> {
    caller.permit(spec.tool, &service.settings().public_url)?;
    let issues = check(spec, &arguments);
    if !issues.is_empty() {
        return Err(invalid(spec, issues).into());
    }
    let write = |request_id: &str| Write::from_arguments(request_id, &arguments);
    let org = caller.org();
    match spec.tool {
        Tool::Describe => data(service.describe()),
        Tool::ListProcesses => {
            let call: decoded::ListProcesses = decode(spec, &arguments)?;
            data(service.list_processes(org, call.cursor.as_deref()).await?)
        }
        Tool::StartRun => {
            let call: decoded::StartRun = decode(spec, &arguments)?;
            let start = StartRunArgs {
                process: call.process,
                version: call.version,
                inputs: call.inputs.unwrap_or_default(),
                mode: call.mode.unwrap_or(Mode::Live),
            };
            data(service.start_run(caller, start, &write(&call.request_id)).await?)
        }
        Tool::GetRun => {
            let call: decoded::GetRun = decode(spec, &arguments)?;
            data(service.get_run(caller, &call.run_id).await?)
        }
        Tool::GetWork => {
            let call: decoded::GetWork = decode(spec, &arguments)?;
            let limit = call.limit.unwrap_or(DEFAULT_PAGE);
            data(
                service
                    .get_work(caller, limit, call.cursor.as_deref(), call.process)
                    .await?,
            )
        }
        Tool::Claim => {
            let call: decoded::Claim = decode(spec, &arguments)?;
            let write = write(&call.request_id);
            data(service.claim(caller, &call.run_id, &call.step_id, &write).await?)
        }
        Tool::Renew => {
            let call: decoded::Renew = decode(spec, &arguments)?;
            let write = write(&call.request_id);
            data(service.renew(caller, &call.token, call.progress, &write).await?)
        }
        Tool::Upload => {
            let call: decoded::Upload = decode(spec, &arguments)?;
            let bytes = decode_base64(&call.content_base64, service.settings().max_upload_bytes)?;
            let write = write(&call.request_id);
            data(
                service
                    .upload(caller, &call.file_name, &call.content_type, bytes, &write)
                    .await?,
            )
        }
        Tool::Submit => {
            let call: decoded::Submit = decode(spec, &arguments)?;
            let work: decoded::Work = decode(spec, &arguments)?;
            let write = write(&call.request_id);
            data(
                service
                    .submit(caller, &call.token, work.into_submission(), &write)
                    .await?,
            )
        }
        Tool::Escalate => {
            let call: decoded::Escalate = decode(spec, &arguments)?;
            let write = write(&call.request_id);
            data(service.escalate(caller, &call.token, &call.note, &write).await?)
        }
        Tool::Decide => {
            let call: decoded::Decide = decode(spec, &arguments)?;
            let work: decoded::Work = decode(spec, &arguments)?;
            let decide = Decide {
                work_item: call.work_item_id,
                snapshot: call.snapshot,
                decision: call.decision,
                sent_work: work.sent(),
                submission: work.into_submission(),
                note: call.note,
            };
            let write = write(&call.request_id);
            data(service.decide(caller, &call.run_id, decide, &write).await?)
        }
        Tool::Cancel => {
            let call: decoded::Cancel = decode(spec, &arguments)?;
            let write = write(&call.request_id);
            data(service.cancel(caller, &call.run_id, &call.reason, &write).await?)
        }
        Tool::SendEvent => {
            let call: decoded::SendEvent = decode(spec, &arguments)?;
            let write = write(&call.request_id);
            let data_sent = call.data.unwrap_or_default();
            data(
                service
                    .send_event(caller, &call.run_id, &call.name, data_sent, &write)
                    .await?,
            )
        }
        Tool::ListRuns => {
            let call: decoded::ListRuns = decode(spec, &arguments)?;
            let list = ListRuns {
                process: call.process,
                state: call.state,
                inputs: call.inputs.unwrap_or_default(),
                limit: call.limit.unwrap_or(DEFAULT_PAGE),
                cursor: call.cursor,
                // The tool's own arguments only: the rest is the pages'.
                ..ListRuns::default()
            };
            data(service.list_runs(caller, list).await?)
        }
    }
}

/// The arguments of `spec`'s tool, typed; `check` has passed them.
fn decode<T: serde::de::DeserializeOwned>(spec: &ToolSpec, arguments: &Map<String, Value>) -> Result<T, ToolError> {
    decoded::decode(arguments).map_err(|issue| invalid(spec, vec![issue]))
}

fn invalid(spec: &ToolSpec, issues: Vec<String>) -> ToolError {
    ToolError::new(
        Code::Invalid,
        format!("the arguments of {} are not valid", spec.tool.name()),
        issues,
    )
}

/// The page size of a list call that names none.
const DEFAULT_PAGE: u32 = 20;

/// A result as the `data` of the envelope. serde_json's printer writes a held
/// number's text as it is, so numbers keep their spelling.
fn data(result: impl serde::Serialize) -> Result<Box<RawValue>, agentprocess_service::Error> {
    serde_json::value::to_raw_value(&result).map_err(agentprocess_service::Error::internal)
}

/// Decoded bytes, refused before decoding when the text is longer than any upload
/// within the limit could be.
fn decode_base64(text: &str, max_bytes: usize) -> Result<Vec<u8>, ToolError> {
    let refused =
        |issue: String| ToolError::new(Code::Invalid, "the upload was refused; nothing was stored", vec![issue]);
    let longest = max_bytes.div_ceil(3).saturating_mul(4);
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if compact.len() > longest {
        return Err(refused(format!(
            "contentBase64: more than maxUploadBytes ({max_bytes}) once decoded"
        )));
    }
    STANDARD
        .decode(compact.as_bytes())
        .map_err(|error| refused(format!("contentBase64: not valid base64 ({error})")))
}
