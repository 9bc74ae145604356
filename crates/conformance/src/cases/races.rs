//! Concurrency: the server resolves concurrent writes to one run.

use futures_util::future::join_all;
use serde_json::{Value, json};

use super::{Env, Runner, agent_run, issues, no_agent_first, no_shared_item, shared_item};
use crate::report::{Outcome, ensure};
use crate::session::{Answer, Context, request_id};

/// Parallel claims of one step.
const CLAIMS: usize = 8;
/// Copies of one write sent at once.
const COPIES: usize = 16;

pub(crate) async fn cases(cx: &Context, env: &Env<'_>, runner: &mut Runner<'_>) {
    runner
        .case(
            "races/parallel-claims-give-one-token",
            "specification §4.1; tools.md, claim",
            async {
                let (_, run, step) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
                let calls = (0..CLAIMS).map(|index| {
                    cx.agents[index % 2].call(
                        "claim",
                        json!({ "runId": run, "stepId": step, "requestId": request_id() }),
                    )
                });
                let mut tokens = Vec::new();
                for answer in join_all(calls).await {
                    match answer? {
                        Answer::Ok(claimed) => tokens.push(claimed["token"].clone()),
                        Answer::Refused(error) => ensure!(
                            error["code"] == "conflict"
                                && matches!(issues(&error).as_slice(), ["claimed_by_other"] | ["claimed_by_you"]),
                            "a losing claim: {error}"
                        ),
                    }
                }
                ensure!(
                    tokens.len() == 1,
                    "{CLAIMS} parallel claims gave {} tokens",
                    tokens.len()
                );
                Ok(Outcome::Passed)
            },
        )
        .await;
    runner
        .case(
            "races/two-people-deciding-one-item-give-one-decision",
            "specification §4.4; tools.md, decide",
            async {
                let (run, [first, second]) = shared_item(cx, env).await?.ok_or_else(no_shared_item)?;
                let arguments = |item: &Value| {
                    let mut arguments = json!({
                        "runId": run, "workItemId": item["id"], "snapshot": item["snapshot"], "requestId": request_id()
                    });
                    if item["kind"] == "approve" {
                        arguments["decision"] = json!("approved");
                    } else {
                        arguments["decision"] = json!("failed");
                        arguments["note"] = json!("Stopping here.");
                    }
                    arguments
                };
                let (a, b) = tokio::join!(
                    cx.people[0].call("decide", arguments(&first)),
                    cx.people[1].call("decide", arguments(&second))
                );
                let answers = [a?, b?];
                let won = answers.iter().filter(|answer| matches!(answer, Answer::Ok(_))).count();
                ensure!(won == 1, "two simultaneous decisions on one item: {won} succeeded");
                for answer in &answers {
                    if let Answer::Refused(error) = answer {
                        ensure!(
                            error["code"] == "conflict"
                                && matches!(issues(error).as_slice(), ["already_decided"] | ["run_ended"]),
                            "the losing decision: {error}"
                        );
                    }
                }
                Ok(Outcome::Passed)
            },
        )
        .await;
    runner
        .case(
            "races/one-request-id-sent-at-once-gives-one-effect",
            "specification §4.2",
            async {
                let (fixture, _, _) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
                let arguments = super::start_arguments(cx, env, fixture);
                let calls = (0..COPIES).map(|_| cx.people[0].ok("start_run", arguments.clone()));
                let mut runs = Vec::new();
                for started in join_all(calls).await {
                    runs.push(started?["run"]["id"].clone());
                }
                runs.dedup();
                ensure!(
                    runs.len() == 1,
                    "{COPIES} copies of one start_run started {} runs",
                    runs.len()
                );
                Ok(Outcome::Passed)
            },
        )
        .await;
}
