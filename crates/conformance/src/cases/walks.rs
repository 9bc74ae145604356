//! Every published fixture walked to its end along every route.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::{Env, Runner, no_agent_first, skip, start_arguments};
use crate::fixtures::Fixture;
use crate::report::{Failure, Outcome, ensure};
use crate::session::{Context, request_id};
use crate::walk::{End, Plan, Walker};

/// Walks of one fixture: at least this many (so rejections, escalations and returns
/// come round), and more until every route is taken, up to the most.
const LEAST_WALKS: usize = 8;
const MOST_WALKS: usize = 16;

pub(crate) async fn cases(cx: &Context, env: &Env<'_>, runner: &mut Runner<'_>) {
    for fixture in &env.published {
        let name = format!("walk/{}", fixture.name);
        runner
            .case(
                &name,
                "specification §3, §6; tools.md",
                walk_every_route(cx, env, fixture),
            )
            .await;
    }
    for fixture in env.published.iter().filter(|fixture| has_wait_for(fixture)) {
        let name = format!("walk/{}/event-before-its-wait", fixture.name);
        runner
            .case(
                &name,
                "tools.md, send_event (held events)",
                event_before_wait(cx, env, fixture),
            )
            .await;
    }
    runner
        .case(
            "walk/test-mode",
            "specification §3 (mode: test); tools.md, start_run",
            async {
                let fixture = env
                    .starting_with(&["agent"])
                    .into_iter()
                    .next()
                    .ok_or_else(no_agent_first)?;
                let mut plan = Plan::default();
                let mut walker = Walker::new(cx, fixture, &mut plan, 0);
                // The walker checks every get_work item and claim of the run for its mode.
                match walker.run(start_arguments(cx, env, fixture), "test").await? {
                    End::Ended(view) => {
                        ensure!(
                            view["run"]["mode"] == "test",
                            "the ended run's mode is {}",
                            view["run"]["mode"]
                        );
                        Ok(Outcome::Passed)
                    }
                    End::NeedsClock(reason) => skip(reason),
                }
            },
        )
        .await;
}

async fn walk_every_route(cx: &Context, env: &Env<'_>, fixture: &Fixture) -> Result<Outcome, Failure> {
    let declared: BTreeSet<(String, String)> = fixture.routes().into_iter().collect();
    let mut plan = Plan::default();
    let mut taken = BTreeSet::new();
    let mut decided: BTreeMap<String, (usize, BTreeSet<String>)> = BTreeMap::new();
    for choice in 0..MOST_WALKS {
        if choice >= LEAST_WALKS && declared.is_subset(&taken) {
            break;
        }
        let mut walker = Walker::new(cx, fixture, &mut plan, choice);
        let end = walker.run(start_arguments(cx, env, fixture), "live").await?;
        taken.extend(walker.routes.iter().cloned());
        for (step, decision) in &walker.decisions {
            let (walks, decisions) = decided.entry(step.clone()).or_default();
            *walks += 1;
            decisions.insert(decision.clone());
        }
        match end {
            End::Ended(view) => {
                ensure!(
                    view["run"]["state"] == "ended",
                    "walk {choice} ended in state {}: {}",
                    view["run"]["state"],
                    view["run"]
                );
            }
            End::NeedsClock(reason) => return skip(format!("{reason} (walk {choice}; every result until then held)")),
        }
    }
    let never: Vec<String> = declared
        .difference(&taken)
        .map(|(step, to)| format!("{step} → {to}"))
        .collect();
    ensure!(never.is_empty(), "routes never taken in {MOST_WALKS} walks: {never:?}");
    // An approval decided in three walks or more has been rejected in one of them.
    let never_rejected: Vec<&String> = decided
        .iter()
        .filter(|(_, (walks, decisions))| {
            *walks >= 3 && decisions.contains("approved") && !decisions.contains("rejected")
        })
        .map(|(step, _)| step)
        .collect();
    ensure!(
        never_rejected.is_empty(),
        "approvals never rejected: {never_rejected:?}"
    );
    Ok(Outcome::Passed)
}

fn has_wait_for(fixture: &Fixture) -> bool {
    fixture.frontmatter["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|step| step.get("wait_for").is_some())
}

/// An event sent before its wait is held (`consumedBy: null`) and consumed when the
/// wait is reached, so the run goes on without a second event.
async fn event_before_wait(cx: &Context, env: &Env<'_>, fixture: &Fixture) -> Result<Outcome, Failure> {
    let steps = fixture.frontmatter["steps"].as_array().cloned().unwrap_or_default();
    let Some(wait) = steps.iter().find(|step| step.get("wait_for").is_some()) else {
        return skip("no wait_for step");
    };
    let event = wait["wait_for"].as_str().unwrap_or_default();
    let run = super::start(cx, env, fixture).await?;
    let view = cx.agents[0].ok("get_run", json!({ "runId": run })).await?;
    let reached = view["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|step| step["id"] == wait["id"] && !step["state"].is_null());
    if reached {
        return skip(format!("{} is reached at start; there is no before", wait["id"]));
    }
    let sent = cx.agents[0]
        .ok(
            "send_event",
            json!({ "runId": run, "name": event, "data": { "reference": "early" }, "requestId": request_id() }),
        )
        .await?;
    ensure!(
        sent["consumedBy"].is_null(),
        "an event before its wait must be held: {sent}"
    );
    let mut plan = Plan::default();
    let mut walker = Walker::new(cx, fixture, &mut plan, 0);
    match walker.drive(&run).await? {
        End::NeedsClock(reason) => skip(reason),
        End::Ended(view) => {
            let id = wait["id"].as_str().unwrap_or_default();
            let recorded = &view["data"]["steps"][id];
            ensure!(
                walker.events_sent.get(id).copied().unwrap_or(0) == 0 || recorded.is_null(),
                "{id} waited for a second event although one was held for it"
            );
            ensure!(
                recorded.is_null() || recorded["output"]["reference"] == "early",
                "{id} should have consumed the held event's data: {recorded}"
            );
            Ok(Outcome::Passed)
        }
    }
}
