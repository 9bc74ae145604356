//! Every error code of tools.md, provoked.

use serde_json::{Value, json};

use super::{Env, Runner, agent_run, claim, issues, no_agent_first, no_shared_item, shared_item, skip};
use crate::report::{Outcome, ensure};
use crate::session::{Context, request_id};

pub(crate) async fn cases(cx: &Context, env: &Env<'_>, runner: &mut Runner<'_>) {
    runner
        .case(
            "errors/invalid-names-every-issue-at-once",
            "specification §4.3; tools.md",
            async {
                let error = cx.agents[0]
                    .refused(
                        "claim",
                        json!({ "runId": 5, "stepId": ["x"], "colour": "red" }),
                        "invalid",
                    )
                    .await?;
                ensure!(
                    issues(&error).len() >= 3,
                    "expected an issue each for runId, stepId, requestId and colour: {error}"
                );
                Ok(Outcome::Passed)
            },
        )
        .await;
    runner
        .case("errors/not-found-run", "specification §4.3; tools.md, get_run", async {
            cx.people[0]
                .refused("get_run", json!({ "runId": "r_conformance_no_such_run" }), "not_found")
                .await?;
            Ok(Outcome::Passed)
        })
        .await;
    runner
        .case("errors/not-found-work-item-of-another-run", "tools.md, decide", async {
            // An item of one run, decided on another run.
            let (_, [item, _]) = shared_item(cx, env).await?.ok_or_else(no_shared_item)?;
            let (other, _) = shared_item(cx, env).await?.ok_or_else(no_shared_item)?;
            let arguments = json!({
                "runId": other, "workItemId": item["id"], "snapshot": item["snapshot"], "decision": "failed",
                "note": "Wrong run.", "requestId": request_id()
            });
            cx.people[0].refused("decide", arguments, "not_found").await?;
            Ok(Outcome::Passed)
        })
        .await;
    runner
        .case(
            "errors/forbidden-agent-decides",
            "specification §5; tools.md, decide",
            async {
                let (run, [item, _]) = shared_item(cx, env).await?.ok_or_else(no_shared_item)?;
                let arguments = json!({
                    "runId": run, "workItemId": item["id"], "snapshot": item["snapshot"], "decision": "failed",
                    "note": "An agent must not decide.", "requestId": request_id()
                });
                cx.agents[0].refused("decide", arguments, "forbidden").await?;
                Ok(Outcome::Passed)
            },
        )
        .await;
    runner
        .case(
            "errors/forbidden-agent-cancels",
            "specification §5; tools.md, cancel",
            async {
                let (_, run, _) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
                cx.agents[0]
                    .refused(
                        "cancel",
                        json!({ "runId": run, "reason": "Agents never cancel.", "requestId": request_id() }),
                        "forbidden",
                    )
                    .await?;
                Ok(Outcome::Passed)
            },
        )
        .await;
    runner
        .case("errors/forbidden-person-sends-event", "tools.md, send_event", async {
            let (_, run, _) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
            cx.people[0]
                .refused(
                    "send_event",
                    json!({ "runId": run, "name": "anything", "requestId": request_id() }),
                    "forbidden",
                )
                .await?;
            Ok(Outcome::Passed)
        })
        .await;
    runner
        .case(
            "errors/conflict-claimed-by-other-and-by-you",
            "tools.md, claim",
            async {
                let (_, run, step) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
                claim(&cx.agents[0], &run, &step).await?;
                let arguments = || json!({ "runId": run, "stepId": step, "requestId": request_id() });
                let other = cx.agents[1].refused("claim", arguments(), "conflict").await?;
                ensure!(issues(&other) == ["claimed_by_other"], "another agent's claim: {other}");
                let again = cx.agents[0].refused("claim", arguments(), "conflict").await?;
                ensure!(
                    issues(&again) == ["claimed_by_you"],
                    "a second claim by the holder: {again}"
                );
                Ok(Outcome::Passed)
            },
        )
        .await;
    runner
        .case("errors/conflict-not-ready", "tools.md, claim", async {
            let (fixture, run, _) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
            let later = fixture.frontmatter["steps"]
                .as_array()
                .into_iter()
                .flatten()
                .skip(1)
                .find(|step| step.get("agent").is_some())
                .and_then(|step| step["id"].as_str());
            let Some(later) = later else {
                return skip(format!("{} has no second agent step", fixture.name));
            };
            let error = cx.agents[0]
                .refused(
                    "claim",
                    json!({ "runId": run, "stepId": later, "requestId": request_id() }),
                    "conflict",
                )
                .await?;
            ensure!(issues(&error) == ["not_ready"], "a step not yet reached: {error}");
            Ok(Outcome::Passed)
        })
        .await;
    runner
        .case("errors/stale-after-renew", "tools.md, renew", async {
            let (_, run, step) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
            let claimed = claim(&cx.agents[0], &run, &step).await?;
            let renewed = cx.agents[0]
                .ok(
                    "renew",
                    json!({ "token": claimed["token"], "progress": "Half done.", "requestId": request_id() }),
                )
                .await?;
            ensure!(renewed["token"] != claimed["token"], "renew must return a new token");
            cx.agents[0]
                .refused(
                    "renew",
                    json!({ "token": claimed["token"], "requestId": request_id() }),
                    "stale",
                )
                .await?;
            cx.agents[0]
                .refused(
                    "escalate",
                    json!({ "token": claimed["token"], "note": "Old token.", "requestId": request_id() }),
                    "stale",
                )
                .await?;
            Ok(Outcome::Passed)
        })
        .await;
    runner
        .case(
            "errors/invalid-token",
            "tools.md, claim (a token that does not verify)",
            async {
                cx.agents[0]
                    .refused(
                        "renew",
                        json!({ "token": "not-a-token", "requestId": request_id() }),
                        "invalid",
                    )
                    .await?;
                Ok(Outcome::Passed)
            },
        )
        .await;
    runner
        .case(
            "errors/already-decided-for-a-second-group-member",
            "specification §4.4; tools.md, decide",
            async {
                let (run, [first, second]) = shared_item(cx, env).await?.ok_or_else(no_shared_item)?;
                let decision = if first["kind"] == "approve" {
                    "approved"
                } else {
                    "failed"
                };
                let arguments = |item: &Value| {
                    json!({
                        "runId": run, "workItemId": item["id"], "snapshot": item["snapshot"], "decision": decision,
                        "note": if decision == "failed" { json!("Stopping here.") } else { Value::Null },
                        "requestId": request_id()
                    })
                };
                let strip = |mut value: Value| {
                    if value["note"].is_null() {
                        value.as_object_mut().map(|object| object.remove("note"));
                    }
                    value
                };
                cx.people[0].ok("decide", strip(arguments(&first))).await?;
                let error = cx.people[1]
                    .refused("decide", strip(arguments(&second)), "conflict")
                    .await?;
                let view = cx.people[0].ok("get_run", json!({ "runId": run })).await?;
                let expected = if view["run"]["ended"].is_null() {
                    "already_decided"
                } else {
                    "run_ended"
                };
                ensure!(issues(&error) == [expected], "the second member's decision: {error}");
                Ok(Outcome::Passed)
            },
        )
        .await;
    runner
        .case("errors/run-ended-checked-before-everything-else", "tools.md, submit, decide, cancel, send_event", async {
            let (_, run, step) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
            let claimed = claim(&cx.agents[0], &run, &step).await?;
            let view = cx.operator
                .ok("cancel", json!({ "runId": run, "reason": "Conformance: cancelled.", "requestId": request_id() }))
                .await?;
            ensure!(view["run"]["state"] == "cancelled", "cancel gave state {}", view["run"]["state"]);
            let calls = [
                (&cx.agents[0], "submit", json!({ "token": claimed["token"], "output": {}, "summary": "Late.", "requestId": request_id() })),
                (&cx.people[0], "decide", json!({ "runId": run, "workItemId": "w_none", "snapshot": "stale", "decision": "approved", "requestId": request_id() })),
                (&cx.operator, "cancel", json!({ "runId": run, "reason": "Again.", "requestId": request_id() })),
                (&cx.agents[0], "send_event", json!({ "runId": run, "name": "late", "requestId": request_id() })),
                (&cx.agents[1], "claim", json!({ "runId": run, "stepId": step, "requestId": request_id() })),
            ];
            for (session, tool, arguments) in calls {
                let error = session.refused(tool, arguments, "conflict").await?;
                ensure!(issues(&error) == ["run_ended"], "{tool} on a cancelled run: {error}");
            }
            Ok(Outcome::Passed)
        })
        .await;
    runner
        .case("errors/not-accepted-names-every-issue", "tools.md, submit", async {
            let (_, run, step) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
            let claimed = claim(&cx.agents[0], &run, &step).await?;
            let error = cx.agents[0]
                .refused(
                    "submit",
                    json!({ "token": claimed["token"], "output": { "conformance_undeclared": 1 }, "summary": "", "requestId": request_id() }),
                    "not_accepted",
                )
                .await?;
            let found = issues(&error);
            ensure!(found.contains(&"summary: missing"), "an empty summary: {error}");
            ensure!(
                found.contains(&"output.conformance_undeclared: not declared"),
                "an undeclared output field: {error}"
            );
            // Nothing changed: the claim stands.
            cx.agents[0]
                .ok("renew", json!({ "token": claimed["token"], "requestId": request_id() }))
                .await?;
            Ok(Outcome::Passed)
        })
        .await;
    runner
        .case("errors/retry", "tools.md (retry: transient server state)", async {
            skip("retry is transient server state; a client cannot provoke it")
        })
        .await;
}
