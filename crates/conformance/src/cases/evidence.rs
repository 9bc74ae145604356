//! File evidence: an upload cited in a submission is shown with its SHA-256 and a
//! short-lived URL that serves the same bytes.

use base64::Engine as _;
use serde_json::{Value, json};

use super::{Env, Runner, agent_run, claim, no_agent_first};
use crate::report::{Failure, Outcome, ensure};
use crate::sample::fill;
use crate::session::{Context, request_id};

/// What the runner uploads.
const BYTES: &[u8] = b"Conformance evidence: these bytes must come back.\n";

pub(crate) async fn cases(cx: &Context, env: &Env<'_>, runner: &mut Runner<'_>) {
    runner
        .case(
            "evidence/a-file-url-serves-the-uploaded-bytes",
            "specification §5; tools.md, upload",
            async {
                let (_, run, step) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
                let uploaded = cx.agents[0]
                    .ok(
                        "upload",
                        json!({
                            "fileName": "conformance.txt", "contentType": "text/plain",
                            "contentBase64": base64::engine::general_purpose::STANDARD.encode(BYTES),
                            "requestId": request_id()
                        }),
                    )
                    .await?;
                ensure!(
                    uploaded["bytes"] == BYTES.len(),
                    "upload reports {} bytes",
                    uploaded["bytes"]
                );
                let claimed = claim(&cx.agents[0], &run, &step).await?;
                let arguments = submission(cx, &claimed, uploaded["id"].clone());
                let view = cx.agents[0].ok("submit", arguments).await?;
                let item = view["data"]["steps"][step.as_str()]["evidence"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|item| item["ref"] == uploaded["id"])
                    .cloned()
                    .ok_or_else(|| Failure::new(format!("the upload is not in {step}'s evidence: {}", view["data"])))?;
                ensure!(
                    item["sha256"] == uploaded["sha256"],
                    "the evidence's sha256 is not the upload's: {item}"
                );
                let url = item["url"]
                    .as_str()
                    .ok_or_else(|| Failure::new(format!("no url on {item}")))?;
                let served = reqwest::Client::new()
                    .get(url)
                    .timeout(std::time::Duration::from_secs(30))
                    .send()
                    .await
                    .and_then(reqwest::Response::error_for_status)
                    .map_err(|error| Failure::new(format!("GET {url}: {error}")))?
                    .bytes()
                    .await
                    .map_err(|error| Failure::new(format!("GET {url}: {error}")))?;
                ensure!(
                    served.as_ref() == BYTES,
                    "{url} served other bytes ({} bytes)",
                    served.len()
                );
                Ok(Outcome::Passed)
            },
        )
        .await;
}

/// An accepted submission for the claimed step, with the upload attached besides what
/// the step asks for (spec §5: more items of any kind may be attached).
fn submission(cx: &Context, claimed: &Value, file: Value) -> Value {
    let step = &claimed["step"];
    let person = cx.people[0].person.clone().unwrap_or_default();
    let mut evidence = vec![json!({ "kind": "file", "ref": file })];
    if step["evidence"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|kind| kind == "link")
    {
        evidence.push(json!({ "kind": "link", "ref": "https://example.com/conformance" }));
    }
    let mut arguments = json!({
        "token": claimed["token"], "output": fill(&step["output"], &person), "evidence": evidence,
        "summary": "Done, with a file attached.", "requestId": request_id()
    });
    if let Some(route) = step["next"].as_array().and_then(|routes| routes.first()) {
        arguments["next"] = route["to"].clone();
        arguments["reason"] = json!("The conformance runner takes the first route.");
    }
    arguments
}
