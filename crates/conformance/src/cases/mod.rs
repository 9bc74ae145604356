//! Every case, in the order they run, and what they share.

mod errors;
mod evidence;
mod leases;
mod lists;
mod races;
mod replays;
mod surface;
mod timers;
mod walks;

use std::future::Future;

use serde_json::{Value, json};

use crate::fixtures::Fixture;
use crate::report::{Failure, Outcome, Report, ensure, matches};
use crate::sample::fill;
use crate::session::{Context, Session, request_id};
use crate::walk::{Plan, Walker};

/// What the server told the runner before the cases: its `describe`, its catalog, and
/// which fixtures it publishes as written.
pub(crate) struct Env<'a> {
    pub(crate) describe: Value,
    pub(crate) catalog: Vec<Value>,
    pub(crate) fixtures: &'a [Fixture],
    /// Published with the fixture's content, needing only profiles the server offers.
    pub(crate) published: Vec<&'a Fixture>,
}

impl Env<'_> {
    /// The catalog entry of a process.
    pub(crate) fn listed(&self, name: &str) -> Option<&Value> {
        self.catalog.iter().find(|item| item["name"] == name)
    }

    /// The published fixtures whose first step is of `kind` (`agent`, `approve`, …).
    pub(crate) fn starting_with(&self, kinds: &[&str]) -> Vec<&Fixture> {
        self.published
            .iter()
            .copied()
            .filter(|fixture| {
                kinds
                    .iter()
                    .any(|kind| fixture.frontmatter["steps"][0].get(*kind).is_some())
            })
            .collect()
    }
}

/// Runs the cases whose names match `only` and records them.
pub(crate) async fn all(cx: &Context, fixtures: &[Fixture], only: Option<&str>, report: &mut Report) {
    let env = match surface::read_server(cx, fixtures).await {
        Ok(env) => env,
        Err(failure) => {
            report.record(
                "surface/describe-and-catalog".to_owned(),
                "tools.md, describe",
                failure.outcome(),
            );
            return;
        }
    };
    let mut runner = Runner { only, report };
    surface::cases(cx, &env, &mut runner).await;
    walks::cases(cx, &env, &mut runner).await;
    errors::cases(cx, &env, &mut runner).await;
    replays::cases(cx, &env, &mut runner).await;
    races::cases(cx, &env, &mut runner).await;
    leases::cases(cx, &env, &mut runner).await;
    evidence::cases(cx, &env, &mut runner).await;
    lists::cases(cx, &env, &mut runner).await;
    timers::cases(cx, &env, &mut runner).await;
}

/// Runs one case at a time, when its name matches the filter.
pub(crate) struct Runner<'a> {
    only: Option<&'a str>,
    report: &'a mut Report,
}

impl Runner<'_> {
    pub(crate) async fn case<F>(&mut self, name: &str, source: &'static str, body: F)
    where
        F: Future<Output = Result<Outcome, Failure>>,
    {
        if self.only.is_some_and(|pattern| !matches(pattern, name)) {
            return;
        }
        let outcome = match body.await {
            Ok(outcome) => outcome,
            Err(failure) => failure.outcome(),
        };
        self.report.record(name.to_owned(), source, outcome);
    }
}

/// `start_run` arguments for a run of `fixture`: its declared inputs filled, a fresh
/// `requestId`.
pub(crate) fn start_arguments(cx: &Context, env: &Env<'_>, fixture: &Fixture) -> Value {
    let inputs = env
        .listed(&fixture.name)
        .map(|item| item["inputs"].clone())
        .unwrap_or(json!({}));
    let person = cx.people[0].person.clone().unwrap_or_default();
    json!({ "process": fixture.name, "inputs": fill(&inputs, &person), "requestId": request_id() })
}

/// A run of `fixture` started by the first person; its id.
pub(crate) async fn start(cx: &Context, env: &Env<'_>, fixture: &Fixture) -> Result<String, Failure> {
    let view = cx.people[0].ok("start_run", start_arguments(cx, env, fixture)).await?;
    view["run"]["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| Failure::new("start_run returned no run id"))
}

/// A run whose first step is a ready agent step: its fixture, run id and step id.
pub(crate) async fn agent_run<'a>(
    cx: &Context,
    env: &'a Env<'a>,
) -> Result<Option<(&'a Fixture, String, String)>, Failure> {
    let Some(fixture) = env.starting_with(&["agent"]).into_iter().next() else {
        return Ok(None);
    };
    let run = start(cx, env, fixture).await?;
    let step = fixture.frontmatter["steps"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ok(Some((fixture, run, step)))
}

/// Claims `step` of `run` as `agent`; the claim result.
pub(crate) async fn claim(agent: &Session, run: &str, step: &str) -> Result<Value, Failure> {
    agent
        .ok(
            "claim",
            json!({ "runId": run, "stepId": step, "requestId": request_id() }),
        )
        .await
}

/// A run with an open work item that both people see in get_work: the run id and the
/// item as each of them is given it. Found by shape: first among the processes that
/// start with a person's step, then among the others that have one, whose runs agents
/// (and events) take up to their first work item.
pub(crate) async fn shared_item(cx: &Context, env: &Env<'_>) -> Result<Option<(String, [Value; 2])>, Failure> {
    let first = env.starting_with(&["approve", "task"]);
    let later = env.published.iter().copied().filter(|fixture| {
        !first.iter().any(|found| found.name == fixture.name)
            && fixture.frontmatter["steps"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|step| step.get("approve").is_some() || step.get("task").is_some())
    });
    let candidates: Vec<(&Fixture, bool)> = first
        .iter()
        .map(|fixture| (*fixture, false))
        .chain(later.map(|fixture| (fixture, true)))
        .collect();
    for (fixture, agents_first) in candidates {
        let run = start(cx, env, fixture).await?;
        if agents_first {
            let mut plan = Plan::default();
            if !Walker::new(cx, fixture, &mut plan, 0).until_work_item(&run).await? {
                continue;
            }
        }
        let mut seen = Vec::new();
        for person in &cx.people {
            let work = person
                .ok("get_work", json!({ "process": fixture.name, "limit": 100 }))
                .await?;
            if let Some(item) = work["items"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|item| item["runId"] == run.as_str())
            {
                seen.push(item["workItem"].clone());
            }
        }
        if let (Some(second), Some(first), true) = (seen.pop(), seen.pop(), seen.is_empty()) {
            ensure!(
                first["id"] == second["id"],
                "the two people see different items of one run"
            );
            return Ok(Some((run, [first, second])));
        }
    }
    Ok(None)
}

/// The `issues` of a refusal, as strings.
pub(crate) fn issues(error: &Value) -> Vec<&str> {
    error["issues"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The skip of a case that needs a fixture starting with an agent step.
pub(crate) fn no_agent_first() -> Failure {
    Failure::skip("no published fixture starts with an agent step")
}

/// The skip of a case that needs a work item both people see.
pub(crate) fn no_shared_item() -> Failure {
    Failure::skip("no published fixture opens a work item both people see")
}

/// A skip, with its reason.
pub(crate) fn skip(reason: impl Into<String>) -> Result<Outcome, Failure> {
    Ok(Outcome::Skipped(reason.into()))
}
