//! Idempotency: a `requestId` replays its original result to the caller that made it,
//! a reused one with other arguments (or by another caller) is `conflict`, and a
//! refused call records nothing.

use serde_json::json;

use super::{Env, Runner, agent_run, issues, no_agent_first};
use crate::report::{Outcome, ensure};
use crate::session::{Context, request_id};

pub(crate) async fn cases(cx: &Context, env: &Env<'_>, runner: &mut Runner<'_>) {
    runner
        .case(
            "replays/claim-returns-the-original-token",
            "specification §4.2; tools.md, claim",
            async {
                let (_, run, step) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
                let arguments = json!({ "runId": run, "stepId": step, "requestId": request_id() });
                let first = cx.agents[0].ok("claim", arguments.clone()).await?;
                let again = cx.agents[0].ok("claim", arguments).await?;
                ensure!(first["token"] == again["token"], "the replay gave another token");
                ensure!(
                    first["expiresAt"] == again["expiresAt"],
                    "the replay gave another expiry"
                );
                Ok(Outcome::Passed)
            },
        )
        .await;
    runner
        .case(
            "replays/start-run-returns-the-same-run",
            "specification §4.2; tools.md, start_run",
            async {
                let (fixture, _, _) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
                let arguments = super::start_arguments(cx, env, fixture);
                let first = cx.people[0].ok("start_run", arguments.clone()).await?;
                let again = cx.people[0].ok("start_run", arguments).await?;
                ensure!(
                    first["run"]["id"] == again["run"]["id"],
                    "the replay started another run"
                );
                Ok(Outcome::Passed)
            },
        )
        .await;
    runner
        .case(
            "replays/same-request-id-other-arguments-is-conflict",
            "specification §4.2",
            async {
                let (_, run, step) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
                let reused = request_id();
                cx.agents[0]
                    .ok("claim", json!({ "runId": run, "stepId": step, "requestId": reused }))
                    .await?;
                let other = cx.agents[0]
                    .refused(
                        "send_event",
                        json!({ "runId": run, "name": "conformance-reuse", "requestId": reused }),
                        "conflict",
                    )
                    .await?;
                ensure!(
                    !issues(&other).contains(&"run_ended"),
                    "the reuse was refused for another reason: {other}"
                );
                Ok(Outcome::Passed)
            },
        )
        .await;
    runner
        .case(
            "replays/answer-only-the-caller-that-made-the-call",
            "specification §4.2 (the caller is part of the call); docs/wire-contract.md",
            async {
                let (_, run, step) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
                // The kind of requestId a client derives from what it does: guessable.
                let arguments = json!({ "runId": run, "stepId": step, "requestId": format!("claim-{run}-{step}") });
                let first = cx.agents[0].ok("claim", arguments.clone()).await?;
                let other = cx.agents[1].refused("claim", arguments.clone(), "conflict").await?;
                let token = first["token"].as_str().unwrap_or_default();
                ensure!(
                    token.is_empty() || !other.to_string().contains(token),
                    "another agent reusing the requestId was given the first agent's claim token"
                );
                let again = cx.agents[0].ok("claim", arguments).await?;
                ensure!(
                    first["token"] == again["token"],
                    "the caller's own replay gave another token"
                );
                Ok(Outcome::Passed)
            },
        )
        .await;
    runner
        .case(
            "replays/a-refused-call-records-nothing",
            "specification §4.2 (a failed call changes nothing)",
            async {
                let (_, run, step) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
                let claimed = cx.agents[0]
                    .ok(
                        "claim",
                        json!({ "runId": run, "stepId": step, "requestId": request_id() }),
                    )
                    .await?;
                let reused = request_id();
                cx.agents[0]
                    .refused(
                        "escalate",
                        json!({ "token": claimed["token"], "note": "x".repeat(4001), "requestId": reused }),
                        "invalid",
                    )
                    .await?;
                let view = cx.agents[0]
                    .ok(
                        "escalate",
                        json!({ "token": claimed["token"], "note": "A person should look.", "requestId": reused }),
                    )
                    .await?;
                let escalated = view["workItems"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|item| !item["escalation"].is_null());
                ensure!(
                    escalated,
                    "the retried escalation should have opened a work item: {}",
                    view["workItems"]
                );
                Ok(Outcome::Passed)
            },
        )
        .await;
}
