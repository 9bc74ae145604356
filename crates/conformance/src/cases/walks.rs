//! Every published fixture walked to its end along every route.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::{Env, Runner, no_agent_first, skip, start_arguments};
use crate::aim::Aim;
use crate::fixtures::Fixture;
use crate::report::{Failure, Outcome, ensure};
use crate::session::{Context, request_id};
use crate::walk::{End, Plan, Walker};

/// Round-robin walks of one fixture, so that rejections, escalations and returns come
/// round; then one walk aimed at each route none of them took.
const ROUND_ROBIN_WALKS: usize = 8;

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
    let mut verdicts = BTreeSet::new();
    let mut walks = Vec::new();
    let mut unreachable = Vec::new();
    for choice in 0..ROUND_ROBIN_WALKS {
        let walker = Walker::new(cx, fixture, &mut plan, choice);
        let walked = walk(cx, env, fixture, walker, choice, "round robin").await?;
        for (step, decision) in &walked.decisions {
            let (walks, decisions) = decided.entry(step.clone()).or_default();
            *walks += 1;
            decisions.insert(decision.clone());
        }
        walks.push(describe(choice, "round robin", &walked.routes));
        taken.extend(walked.routes);
        verdicts.extend(walked.verdicts);
    }
    let left: Vec<(String, String)> = declared.difference(&taken).cloned().collect();
    for (index, target) in left.into_iter().enumerate() {
        if taken.contains(&target) {
            continue;
        }
        let aim = Aim::new(fixture, target);
        let label = format!("aimed at {}", aim.label());
        if aim.needs_time && cx.clocks.is_empty() {
            unreachable.push(aim.label());
            continue;
        }
        let choice = ROUND_ROBIN_WALKS + index;
        let walker = Walker::new(cx, fixture, &mut plan, choice).aimed(aim);
        let walked = walk(cx, env, fixture, walker, choice, &label).await?;
        walks.push(describe(choice, &label, &walked.routes));
        taken.extend(walked.routes);
        verdicts.extend(walked.verdicts);
    }
    let never: Vec<String> = declared
        .difference(&taken)
        .map(|(step, to)| format!("{step} → {to}"))
        .filter(|route| !unreachable.contains(route))
        .collect();
    ensure!(
        never.is_empty(),
        "routes never taken, though a walk was aimed at each: {never:?}\n{}",
        walks.join("\n")
    );
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
    if !unreachable.is_empty() {
        return skip(format!(
            "routes behind a wait_for's timeout, and the runner was given no way to move the server's clock: \
             {unreachable:?} (every other route taken)\n{}",
            walks.join("\n")
        ));
    }
    let checks = if verdicts.is_empty() {
        String::new()
    } else {
        let read: Vec<String> = verdicts
            .iter()
            .map(|(step, verdict)| format!("{step} {verdict}"))
            .collect();
        format!("; check records read: {}", read.join(", "))
    };
    Ok(Outcome::PassedWith(format!(
        "{} of {} routes taken in {} walks{checks}\n{}",
        taken.intersection(&declared).count(),
        declared.len(),
        walks.len(),
        walks.join("\n")
    )))
}

/// What one walk did: the routes it took, the decisions it made, the check verdicts
/// it read.
struct Walked {
    routes: BTreeSet<(String, String)>,
    decisions: BTreeSet<(String, String)>,
    verdicts: BTreeSet<(String, String)>,
}

/// One walk to the end of its run.
async fn walk(
    cx: &Context,
    env: &Env<'_>,
    fixture: &Fixture,
    mut walker: Walker<'_>,
    choice: usize,
    label: &str,
) -> Result<Walked, Failure> {
    match walker.run(start_arguments(cx, env, fixture), "live").await? {
        End::Ended(view) => {
            ensure!(
                view["run"]["state"] == "ended",
                "walk {choice} ({label}) ended in state {}: {}",
                view["run"]["state"],
                view["run"]
            );
        }
        End::NeedsClock(reason) => {
            return Err(Failure::skip(format!(
                "{reason} (walk {choice}, {label}; every result until then held)"
            )));
        }
    }
    Ok(Walked {
        routes: walker.routes,
        decisions: walker.decisions,
        verdicts: walker.verdicts,
    })
}

/// `walk 3 (aimed at verify → recover): triage → verify, verify → recover`.
fn describe(choice: usize, label: &str, routes: &BTreeSet<(String, String)>) -> String {
    let taken: Vec<String> = routes.iter().map(|(step, to)| format!("{step} → {to}")).collect();
    let taken = if taken.is_empty() {
        "no route".to_owned()
    } else {
        taken.join(", ")
    };
    format!("walk {choice} ({label}): {taken}")
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
