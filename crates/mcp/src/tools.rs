//! `tools/call`: decode the arguments, call the service, wrap the answer as
//! `{ ok: true, data }` or `{ ok: false, error: { code, message, issues? } }`.

use agentprocess_blobs::Blobs;
use agentprocess_engine::{Code, Decide, Decision, EvidenceItem, Mode, Submission, ToolError};
use agentprocess_format::EvidenceKind;
use agentprocess_service::{Caller, ListRuns, Service, StartRunArgs, Tool, Write};
use agentprocess_store::Store;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use crate::arguments::{ToolSpec, check};

/// The envelope of a result.
pub fn envelope(result: Result<Value, ToolError>) -> Value {
    match result {
        // Built by hand: `json!` would respell the numbers in `data`.
        Ok(data) => {
            let mut body = Map::new();
            body.insert("ok".to_owned(), Value::Bool(true));
            body.insert("data".to_owned(), data);
            Value::Object(body)
        }
        Err(error) => {
            let mut body = Map::new();
            body.insert("code".to_owned(), json!(error.code.as_str()));
            body.insert("message".to_owned(), json!(error.message));
            if !error.issues.is_empty() {
                body.insert("issues".to_owned(), json!(error.issues));
            }
            json!({ "ok": false, "error": body })
        }
    }
}

/// Calls `spec`'s tool for `caller`.
pub async fn call<S: Store, B: Blobs>(
    service: &Service<S, B>,
    caller: &Caller,
    spec: &ToolSpec,
    arguments: Map<String, Value>,
) -> Result<Value, ToolError> {
    let issues = check(spec, &arguments);
    if !issues.is_empty() {
        return Err(ToolError::new(
            Code::Invalid,
            format!("the arguments of {} are not valid", spec.tool.name()),
            issues,
        ));
    }
    let args = Args(&arguments);
    let write = || Write::from_arguments(args.text("requestId"), &arguments);
    let org = caller.org();
    match spec.tool {
        Tool::Describe => Ok(service.describe()),
        Tool::ListProcesses => service.list_processes(org, args.optional_text("cursor")).await,
        Tool::StartRun => {
            let start = StartRunArgs {
                process: args.text("process").to_owned(),
                version: args.integer("version").and_then(|n| u32::try_from(n).ok()),
                inputs: args.object("inputs"),
                mode: match args.optional_text("mode") {
                    Some("test") => Mode::Test,
                    _ => Mode::Live,
                },
            };
            service.start_run(caller, start, &write()).await
        }
        Tool::GetRun => service.get_run(caller, args.text("runId")).await,
        Tool::GetWork => {
            let limit = args.integer("limit").map_or(20, |n| u32::try_from(n).unwrap_or(20));
            let process = args.optional_text("process").map(str::to_owned);
            service
                .get_work(caller, limit, args.optional_text("cursor"), process)
                .await
        }
        Tool::Claim => {
            service
                .claim(caller, args.text("runId"), args.text("stepId"), &write())
                .await
        }
        Tool::Renew => {
            let progress = args.optional_text("progress").map(str::to_owned);
            service.renew(caller, args.text("token"), progress, &write()).await
        }
        Tool::Upload => {
            let bytes = decode_base64(args.text("contentBase64"), service.settings().max_upload_bytes)?;
            service
                .upload(caller, args.text("fileName"), args.text("contentType"), bytes, &write())
                .await
        }
        Tool::Submit => {
            service
                .submit(caller, args.text("token"), args.submission(), &write())
                .await
        }
        Tool::Escalate => {
            service
                .escalate(caller, args.text("token"), args.text("note"), &write())
                .await
        }
        Tool::Decide => {
            let decide = Decide {
                work_item: args.text("workItemId").to_owned(),
                snapshot: args.text("snapshot").to_owned(),
                decision: decision(args.text("decision")),
                sent_work: ["output", "evidence", "summary"].iter().any(|name| args.present(name)),
                submission: args.submission(),
                note: args.optional_text("note").map(str::to_owned),
            };
            service.decide(caller, args.text("runId"), decide, &write()).await
        }
        Tool::Cancel => {
            service
                .cancel(caller, args.text("runId"), args.text("reason"), &write())
                .await
        }
        Tool::SendEvent => {
            let data = args.object("data");
            service
                .send_event(caller, args.text("runId"), args.text("name"), data, &write())
                .await
        }
        Tool::ListRuns => {
            let list = ListRuns {
                process: args.optional_text("process").map(str::to_owned),
                state: args.optional_text("state").map(str::to_owned),
                inputs: args.object("inputs"),
                limit: args.integer("limit").map_or(20, |n| u32::try_from(n).unwrap_or(20)),
                cursor: args.optional_text("cursor").map(str::to_owned),
            };
            service.list_runs(caller, list).await
        }
    }
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

fn decision(text: &str) -> Decision {
    match text {
        "completed" => Decision::Completed,
        "approved" => Decision::Approved,
        "rejected" => Decision::Rejected,
        "returned" => Decision::Returned,
        _ => Decision::Failed,
    }
}

/// Typed reads of arguments that [`check`] has passed.
struct Args<'a>(&'a Map<String, Value>);

impl Args<'_> {
    fn present(&self, name: &str) -> bool {
        self.0.get(name).is_some_and(|value| !value.is_null())
    }

    fn text(&self, name: &str) -> &str {
        self.optional_text(name).unwrap_or_default()
    }

    fn optional_text(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }

    fn integer(&self, name: &str) -> Option<u64> {
        self.0.get(name).and_then(Value::as_u64)
    }

    fn object(&self, name: &str) -> Map<String, Value> {
        self.0.get(name).and_then(Value::as_object).cloned().unwrap_or_default()
    }

    fn submission(&self) -> Submission {
        let evidence = self
            .0
            .get("evidence")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|item| EvidenceItem {
                        kind: if item["kind"] == "file" {
                            EvidenceKind::File
                        } else {
                            EvidenceKind::Link
                        },
                        reference: item["ref"].as_str().unwrap_or_default().to_owned(),
                        sha256: None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        Submission {
            output: self.object("output"),
            evidence,
            summary: self.optional_text("summary").map(str::to_owned),
            next: self.optional_text("next").map(str::to_owned),
            reason: self.optional_text("reason").map(str::to_owned),
        }
    }
}
