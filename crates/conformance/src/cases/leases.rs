//! Leases: when one ends, its token is `stale` and its last progress note is handed to
//! whoever takes the step next, in `get_work` and in the claim.

use std::time::Duration;

use serde_json::json;

use super::{Env, Runner, agent_run, claim, no_agent_first};
use crate::report::{Failure, Outcome, ensure};
use crate::session::{Context, request_id};

/// The longest lease the runner waits out when it cannot move the server's clock.
const LONGEST_WAIT_SECONDS: u64 = 5;

pub(crate) async fn cases(cx: &Context, env: &Env<'_>, runner: &mut Runner<'_>) {
    runner
        .case(
            "leases/an-ended-lease-is-stale-and-hands-on-its-progress",
            "specification §3.3, §6 rule 2; tools.md, renew, get_work",
            async {
                let (fixture, run, step) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
                let claimed = claim(&cx.agents[0], &run, &step).await?;
                let progress = "Conformance: half of the work is done.";
                let renewed = cx.agents[0]
                    .ok(
                        "renew",
                        json!({ "token": claimed["token"], "progress": progress, "requestId": request_id() }),
                    )
                    .await?;
                outlast_lease(cx, env).await?;
                cx.agents[0]
                    .refused(
                        "escalate",
                        json!({ "token": renewed["token"], "note": "Too late.", "requestId": request_id() }),
                        "stale",
                    )
                    .await?;
                let handed = json!({ "progress": progress });
                let work = cx.agents[1]
                    .ok("get_work", json!({ "process": fixture.name, "limit": 100 }))
                    .await?;
                let item = work["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|item| item["runId"] == run.as_str() && item["stepId"] == step.as_str());
                let item =
                    item.ok_or_else(|| Failure::new(format!("{step} is not in get_work once its lease ended")))?;
                ensure!(
                    item["handoff"] == handed,
                    "the get_work item's handoff: {}",
                    item["handoff"]
                );
                let next = claim(&cx.agents[1], &run, &step).await?;
                ensure!(
                    next["handoff"] == handed,
                    "the next claim's handoff: {}",
                    next["handoff"]
                );
                Ok(Outcome::Passed)
            },
        )
        .await;
}

/// Waits until a lease taken now has ended: moves the server's clock past
/// `describe.leaseSeconds`, or waits it out when it is short.
async fn outlast_lease(cx: &Context, env: &Env<'_>) -> Result<(), Failure> {
    let lease = env.describe["leaseSeconds"].as_f64().unwrap_or(f64::MAX);
    if cx.advance(lease.ceil() as u64 + 1).await? {
        return Ok(());
    }
    ensure!(lease.is_finite(), "describe.leaseSeconds is not a number");
    if lease <= LONGEST_WAIT_SECONDS as f64 {
        tokio::time::sleep(Duration::from_secs_f64(lease + 1.0)).await;
        return Ok(());
    }
    Err(Failure::skip(format!(
        "a lease lasts {lease} s (describe.leaseSeconds); give --test-clock, or a server with a lease of \
         {LONGEST_WAIT_SECONDS} s or less"
    )))
}
